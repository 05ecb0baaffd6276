"""The generator writes what the documented schemas say, and records the truth it injected."""

from __future__ import annotations

import csv
import io
import json

import orjson

from msdoctor.facts.profile_files import SCHEMA, double_hash


def test_generated_files_follow_the_schema(tmp_path):
    import gen_profile as gp

    out = io.StringIO()
    assert gp.main([str(tmp_path), "--ranks", "4", "--pp", "2", "--steps", "2", "--kernels", "8", "--slow-rank", "1"], out) == 0
    truth = json.loads((tmp_path / "truth.json").read_text())
    assert truth["stages"] == [[0, 1], [2, 3]] and truth["config"]["slow_rank"] == 1
    folders = sorted(p for p in tmp_path.iterdir() if p.name.endswith("_ascend_ms"))
    assert len(folders) == 4
    for r, folder in enumerate(folders):
        assert (folder / f"profiler_info_{r}.json").is_file()
        outdir = folder / "ASCEND_PROFILER_OUTPUT"
        for key in ("step_trace_time", "kernel_details", "op_statistic", "memory_record", "dataset"):
            header = next(csv.reader((outdir / f"{key}.csv").open()))
            assert set(SCHEMA["files"][key]["required"]) <= set(header), key
        events = orjson.loads((outdir / "trace_view.json").read_bytes())
        assert all(isinstance(e["ts"], str) for e in events if e["ph"] == "X")  # µs as decimal strings
        assert sum(e["name"].startswith("ProfilerStep#") for e in events) == 2
        comm = orjson.loads((outdir / "communication.json").read_bytes())
        assert set(comm) == {"step1", "step2"}
        meta = orjson.loads((folder / "profiler_metadata.json").read_bytes())["parallel_group_info"]
        groups = {str(double_hash(name)) for name in meta}
        suffixes = {k.split("@")[1] for kinds in comm.values() for ops in kinds.values() for k in ops}
        assert suffixes <= groups  # op-name group ids are the double hash of the communicator names
