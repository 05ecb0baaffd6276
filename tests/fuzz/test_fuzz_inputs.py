"""Every reader, fed arbitrary bytes and structure-aware mutations of real samples.

Property, for each input: the command gives a result (exit 0 or 1) or one clear line on stderr and
exit 2 — never an uncaught exception (exit 3, "internal error") and never a hang. The number of
examples per reader is ``MSDOCTOR_FUZZ_EXAMPLES`` (default 25; set e.g. 500 for a longer run); the
cases run are counted and printed at the end of the session. Inputs that once found a bug are kept
in ``regressions/<reader>/`` and replayed on every run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
FIXTURES = ROOT / "tests" / "rules" / "fixtures"
REGRESSIONS = Path(__file__).with_name("regressions")
EXAMPLES = int(os.environ.get("MSDOCTOR_FUZZ_EXAMPLES", "25"))
# A hang guard, not a speed target: one input that takes this long is a hang (a blocked read, a
# super-linear regex); the limit leaves room for a loaded 2-core host.
HANG_S = int(os.environ.get("MSDOCTOR_FUZZ_HANG_S", "60"))
COUNT: dict[str, int] = {}


_TMP = tempfile.TemporaryDirectory(prefix="msdoctor-fuzz-")


def fresh() -> Path:
    """A new empty folder for one example (pytest's tmp_path is shared by every example of a test)."""
    return Path(tempfile.mkdtemp(dir=_TMP.name))


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ANN001
    raise Hang(f"no answer in {HANG_S} s")


def run(argv: list[str]) -> tuple[int, str, str]:
    """`msdoctor ARGV` in process, with a hang guard; returns (rc, stdout, stderr)."""
    from msdoctor.cli import main

    # Text streams over bytes, as a real stdout is: the JSON view writes bytes to sys.stdout.buffer.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        out.flush()
        err.flush()
    text = [s.buffer.getvalue().decode("utf-8", "replace") for s in (out, err)]  # type: ignore[attr-defined]
    return rc, text[0], text[1]


def check(reader: str, argv: list[str]) -> None:
    COUNT[reader] = COUNT.get(reader, 0) + 1
    rc, out, err = run(argv)
    assert rc in (0, 1, 2), f"{reader}: exit {rc}: {err.strip()[-500:]}"
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert lines, f"{reader}: exit 2 without a reason on stderr"
        assert "Traceback" not in err, err


# ---------------------------------------------------------------------------------------------
# Mutations of real samples (structure-aware) and arbitrary bytes


def _mutate_json(doc: object, draw: Callable, depth: int = 0) -> object:
    """One random structural change somewhere in a JSON document."""
    if isinstance(doc, dict) and doc and depth < 6:
        keys = list(doc)
        key = keys[draw(st.integers(0, len(keys) - 1))]
        op = draw(st.sampled_from(["drop", "type", "recurse", "recurse", "dup"]))
        new = dict(doc)
        if op == "drop":
            del new[key]
        elif op == "dup":
            new[key + "_copy"] = new[key]
        elif op == "type":
            new[key] = draw(WEIRD)
        else:
            new[key] = _mutate_json(doc[key], draw, depth + 1)
        return new
    if isinstance(doc, list) and doc and depth < 6:
        i = draw(st.integers(0, len(doc) - 1))
        op = draw(st.sampled_from(["drop", "type", "recurse", "recurse", "dup"]))
        new_list = list(doc)
        if op == "drop":
            del new_list[i]
        elif op == "dup":
            new_list.append(new_list[i])
        elif op == "type":
            new_list[i] = draw(WEIRD)
        else:
            new_list[i] = _mutate_json(doc[i], draw, depth + 1)
        return new_list
    return draw(WEIRD)


WEIRD = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.sampled_from(["NaN", "Infinity", "-inf", "", "0x10", "1e999", "[", "\u202e", "\x1b[2J"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.text(max_size=20),
)


@st.composite
def json_bytes(draw: Callable, seed: Path) -> bytes:
    doc = json.loads(seed.read_text(encoding="utf-8"))
    kind = draw(st.sampled_from(["mutate", "mutate", "mutate", "truncate", "bytes", "huge", "deep", "nan"]))
    text = json.dumps(doc)
    if kind == "mutate":
        return json.dumps(_mutate_json(doc, draw)).encode()
    if kind == "truncate":
        return text.encode()[: draw(st.integers(0, len(text)))]
    if kind == "huge":
        return text.replace("1", "9" * 5000, 1).encode()
    if kind == "deep":
        n = draw(st.sampled_from([100, 5000, 100_000]))
        return ("[" * n + "]" * n).encode()
    if kind == "nan":
        return text.replace("1", "NaN", 1).encode()
    return draw(st.binary(max_size=2000))


@st.composite
def text_bytes(draw: Callable, seed: Path) -> bytes:
    data = seed.read_bytes()
    kind = draw(st.sampled_from(["truncate", "splice", "bytes", "longline", "utf8", "control"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "splice":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(max_size=200)) + data[at:]
    if kind == "longline":
        return data + b"x" * draw(st.sampled_from([10_000, 300_000])) + b"\n" + data
    if kind == "utf8":
        at = draw(st.integers(0, len(data)))
        return data[:at] + b"\xff\xfe\xc3\x28" + data[at:]
    if kind == "control":
        return data + b"\x1b]0;pwned\x07\x1b[2J [/x] [link=http://x]y[/link]\n"
    return draw(st.binary(max_size=3000))


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


# ---------------------------------------------------------------------------------------------
# The readers


@FUZZ
@given(data=json_bytes(SAMPLES / "ranktables" / "good_2x8.json"))
def test_rank_table(data: bytes) -> None:
    tmp_path = fresh()
    f = tmp_path / "rt.json"
    f.write_bytes(data)
    check("rank table", ["preflight", "--rank-table", str(f), "--json"])


@FUZZ
@given(data=st.one_of(
    st.binary(max_size=2000),
    st.text(alphabet=st.sampled_from("HCCL_X=\"'\\# $`\nexport\t=a1"), max_size=300).map(str.encode),
))
def test_env_file(data: bytes) -> None:
    tmp_path = fresh()
    f = tmp_path / "launch.env"
    f.write_bytes(data)
    check("env file", ["preflight", "--env-file", str(f), "--json"])


SNAPSHOTS = {
    "logs": FIXTURES / "COMM501.fire.json",
    "analyze": FIXTURES / "PERF301.fire.json",
    "ckpt": FIXTURES / "CKPT601.fire.json",
    "preflight": FIXTURES / "ENV101.fire.json",
}


@pytest.mark.parametrize("command", sorted(SNAPSHOTS))
@FUZZ
@given(data=st.data())
def test_facts_snapshot(command: str, data: st.DataObject) -> None:
    tmp_path = fresh()
    seed = SNAPSHOTS[command]
    if not seed.exists():
        pytest.skip(f"{seed.name} not in the fixtures")
    f = tmp_path / "facts.json"
    f.write_bytes(data.draw(json_bytes(seed)))
    check(f"{command} --facts", [command, "--facts", str(f), "--json"])


@FUZZ
@given(data=st.data())
def test_log(data: st.DataObject) -> None:
    tmp_path = fresh()
    seed = SAMPLES / "logs" / "hang" / "logs" / "worker_0.log"
    d = tmp_path / "logs"
    d.mkdir()
    (d / "worker_0.log").write_bytes(data.draw(text_bytes(seed)))
    shutil.copy(SAMPLES / "logs" / "hang" / "logs" / "worker_1.log", d / "worker_1.log")
    check("worker log", ["logs", str(d), "--json"])


def _profile_seed() -> Path:
    return next((SAMPLES / "profiles" / "cpu_2rank").glob("*_ascend_ms"))


@FUZZ
@given(data=st.data())
def test_trace(data: st.DataObject) -> None:
    tmp_path = fresh()
    src = _profile_seed()
    dst = tmp_path / "prof" / src.name
    shutil.copytree(src, dst)
    trace = dst / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace.write_bytes(data.draw(st.one_of(text_bytes(trace), json_bytes(trace))))
    check("trace_view.json", ["analyze", str(tmp_path / "prof"), "--json"])


@FUZZ
@given(data=st.data())
def test_profile_csv(data: st.DataObject) -> None:
    tmp_path = fresh()
    src = _profile_seed()
    dst = tmp_path / "prof" / src.name
    shutil.copytree(src, dst)
    csv = next((dst / "FRAMEWORK").glob("cpu_op_detail_info_*.csv"))
    csv.write_bytes(data.draw(text_bytes(csv)))
    check("cpu_op csv", ["analyze", str(tmp_path / "prof"), "--json"])


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run directory: the fake loop's hang scenario (real Watchdogs, real events)."""
    run_dir = tmp_path_factory.mktemp("fuzzrun") / "run"
    fake = ROOT / "tests" / "watch" / "fakeloop.py"
    env = dict(os.environ, FAKE_BARRIER_TIMEOUT="3")
    procs = [subprocess.Popen([sys.executable, str(fake), str(run_dir), str(r), "2", "exception", "12"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env) for r in range(2)]
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
    assert (run_dir / "events").is_dir()
    return run_dir


@FUZZ
@given(data=st.data())
def test_events(recorded_run: Path, data: st.DataObject) -> None:
    tmp_path = fresh()
    run_dir = tmp_path / "run"
    shutil.copytree(recorded_run, run_dir)
    ev = sorted((run_dir / "events").glob("rank_*.jsonl"))[0]
    ev.write_bytes(data.draw(text_bytes(ev)))
    check("events jsonl", ["report", str(run_dir), "--json"])


@FUZZ
@given(data=st.binary(max_size=4000))
def test_checkpoint(data: bytes) -> None:
    tmp_path = fresh()
    f = tmp_path / "rank_0.ckpt"
    f.write_bytes(data)
    check("checkpoint", ["ckpt", str(f), "--json"])


# ---------------------------------------------------------------------------------------------
# Special files in place of a file, and output paths that must not be replaced


def _special(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "dir":
        p.mkdir()
    elif kind == "loop":
        p.symlink_to(p)
    elif kind == "dangling":
        p.symlink_to(tmp_path / "nowhere")
    return p


OPTIONS = [
    ("preflight", "--rank-table"), ("preflight", "--env-file"), ("preflight", "--facts"),
    ("logs", "--facts"), ("analyze", "--facts"), ("ckpt", "--facts"),
]


@pytest.mark.parametrize("kind", ["fifo", "dir", "loop", "dangling"])
@pytest.mark.parametrize(("command", "option"), OPTIONS)
def test_special_file_in_place_of_an_option_file(tmp_path: Path, command: str, option: str, kind: str) -> None:
    p = _special(tmp_path, kind)
    COUNT["special files"] = COUNT.get("special files", 0) + 1
    rc, out, err = run([command, option, str(p), "--json"])
    if option == "--rank-table" and rc in (0, 1):
        assert str(p) in out  # a rank table that cannot be read may be a finding (RT101) naming it
    else:
        assert rc == 2, (rc, err)
        assert len(err.strip().splitlines()) == 1 and str(p) in err


@pytest.mark.parametrize("kind", ["fifo", "dir", "symlink", "device"])
def test_output_path_is_never_replaced(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "victim"
    target.write_text("keep me")
    if kind == "symlink":
        out = tmp_path / "out.json"
        out.symlink_to(target)
    elif kind == "device":
        out = Path("/dev/null")
    else:
        out = _special(tmp_path, kind)
    before = os.lstat(out).st_mode
    rc, _, err = run(["ckpt", "--facts", str(FIXTURES / "CKPT601.fire.json"), "--dump-facts", str(out)])
    assert rc == 2 and "refusing" in err, (rc, err)
    assert os.lstat(out).st_mode == before and target.read_text() == "keep me"


def test_regressions_replayed(tmp_path: Path) -> None:
    """Every input that once found a bug: regressions/<reader>/<name> with the argv in ARGV beside it."""
    cases = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file() and p.name != "ARGV")
    assert cases, "regressions/ holds the inputs that found bugs"
    for case in cases:
        argv = (case.parent / "ARGV").read_text().split()
        check(f"regression {case.parent.name}", [a.replace("{}", str(case)) for a in argv])
