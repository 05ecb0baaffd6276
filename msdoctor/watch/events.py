"""The ranks' event streams: kept as a name for :mod:`msdoctor.rundir`, where the format lives."""

from msdoctor.rundir import (
    EVENTS_DIR,
    Tail,
    append,
    dumps_event,
    events_dir,
    rank_file,
    rank_files,
    read_all,
    stack_file,
)

__all__ = ["EVENTS_DIR", "Tail", "append", "dumps_event", "events_dir", "rank_file", "rank_files", "read_all",
           "stack_file"]
