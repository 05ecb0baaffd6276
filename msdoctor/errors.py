"""Exit codes and the one error hierarchy, printed once at the CLI boundary."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # no error-severity finding
    FINDINGS = 1  # at least one error-severity finding (or the launched job failed, or `logs` read an error no rule names)
    INPUT = 2  # the input itself could not be read / bad usage
    INTERNAL = 3  # a bug in msdoctor (an uncaught exception); `--debug` shows the trace


class MsDoctorError(Exception):
    """Base of every error msdoctor reports itself; the CLI prints ``str(err)`` on one line."""

    exit_code: ExitCode = ExitCode.INPUT


class InputError(MsDoctorError):
    """The input (a path, a file, a snapshot) could not be read at all."""


class UsageError(MsDoctorError):
    """The command line asks for something that does not exist (unknown rule id, bad option value)."""


class CatalogueError(MsDoctorError):
    """A rule file is malformed; the message names the file and the field."""
