"""The bootstrap that `msdoctor run` puts on the job's PYTHONPATH: who is a rank, chaining, packaging."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from msdoctor.watch.bootstrap import ENV_BOOT_PID, ENV_RUN_DIR, PATH_DIR, identify, job_env
from msdoctor.watch.bootstrap.hooks import stack_phase

ROOT = Path(__file__).resolve().parents[2]
RUN = {ENV_RUN_DIR: "/tmp/run"}


@pytest.mark.parametrize(
    ("env", "cmdline", "kind", "rank", "world", "lazy"),
    [
        # msrun's scheduler runs the same script with MS_ROLE=MS_SCHED and RANK_ID=0: not a rank
        ({"MS_ROLE": "MS_SCHED", "RANK_ID": "0", "MS_WORKER_NUM": "2"}, ["python", "train.py"], "scheduler", None, None, False),
        ({"MS_ROLE": "MS_WORKER", "RANK_ID": "1", "MS_NODE_ID": "1", "MS_WORKER_NUM": "2"}, ["python", "train.py"], "rank", 1, 2, False),
        # several nodes without --node_rank: msrun exports no RANK_ID; the rank is known after init()
        ({"MS_ROLE": "MS_WORKER", "MS_WORKER_NUM": "16"}, ["python", "train.py"], "rank", None, 16, True),
        ({}, ["/venv/bin/python", "/venv/bin/msrun", "--worker_num=2", "train.py"], "launcher", None, None, False),
        ({}, ["/venv/bin/msrun", "--worker_num=2", "train.py"], "launcher", None, None, False),
        ({}, ["python", "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "train.py"], "launcher", None, None, False),
        # a rank-table launch script: RANK_ID/RANK_SIZE per process
        ({"RANK_ID": "3", "RANK_SIZE": "8"}, ["python", "train.py"], "rank", 3, 8, True),
        ({}, ["python", "train.py"], "rank", 0, 1, True),
    ],
)
def test_identify_from_the_launchers_environment(env, cmdline, kind, rank, world, lazy) -> None:
    ident = identify({**RUN, **env}, cmdline, pid=100)
    assert (ident.kind, ident.rank, ident.world, ident.lazy) == (kind, rank, world, lazy)


def test_processes_started_by_a_rank_are_not_ranks_and_nothing_runs_without_a_run_dir() -> None:
    env = {**RUN, "MS_ROLE": "MS_WORKER", "RANK_ID": "1", ENV_BOOT_PID: "99"}
    assert identify(env, ["python", "-c", "worker"], pid=100).kind == "child"
    assert identify(env, ["python", "train.py"], pid=99).kind == "rank"  # the rank itself (same pid)
    assert identify({"MS_ROLE": "MS_WORKER", "RANK_ID": "1"}, ["python", "train.py"], pid=1).kind == "off"


def test_job_env_puts_the_bootstrap_first_and_keeps_the_users_path(tmp_path: Path) -> None:
    env = job_env({"PYTHONPATH": "/a:/b", ENV_BOOT_PID: "5"}, tmp_path)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(PATH_DIR), "/a", "/b"]
    assert env[ENV_RUN_DIR] == str(tmp_path.resolve())
    assert ENV_BOOT_PID not in env
    off = job_env({"PYTHONPATH": "/a"}, tmp_path, inject=False)
    assert off == {"PYTHONPATH": "/a"}


def test_sitecustomize_chains_to_the_one_it_shadows(tmp_path: Path) -> None:
    theirs = tmp_path / "site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = 'yes'\n")
    env = job_env(dict(os.environ), tmp_path / "run")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(theirs)])
    out = subprocess.run([sys.executable, "-c", "import os, sitecustomize; print(os.environ.get('THEIRS_RAN'), sitecustomize.__file__)"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    ran, path = out.stdout.split()
    assert ran == "yes" and Path(path).parent == theirs
    # a process that never imports MindSpore (a helper of a launch script) starts no watchdog
    assert not (tmp_path / "run" / "events").exists()


def test_stack_phase_from_the_innermost_framework_frame() -> None:
    class Code:
        def __init__(self, f: str) -> None:
            self.co_filename = f

    class Frame:
        def __init__(self, f: str, back: Frame | None) -> None:
            self.f_code, self.f_back = Code(f), back

    user = Frame("/home/me/train.py", None)
    sp = "/venv/lib/python3.11/site-packages"
    assert stack_phase(Frame(f"{sp}/mindspore/dataset/engine/iterators.py", user)) == "data"
    assert stack_phase(Frame(f"{sp}/mindspore/communication/management.py", user)) == "collective"
    assert stack_phase(Frame(f"{sp}/mindspore/nn/optim/sgd.py", Frame(f"{sp}/mindspore/nn/cell.py", user))) == "optimizer"
    assert stack_phase(Frame(f"{sp}/mindspore/common/api.py", user)) == "step"
    assert stack_phase(user) is None  # the job's own code: the watchdog's phase stands


def test_every_package_with_python_files_is_in_the_wheel() -> None:
    """pyproject lists packages explicitly: a new one (the bootstrap and its _path) must be listed."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = []
    for d in (ROOT / "msdoctor").rglob("*"):
        if d.is_dir() and "__pycache__" not in d.parts and any(d.glob("*.py")):
            name = ".".join(d.relative_to(ROOT).parts)
            if name not in listed:
                missing.append(name)
    assert not missing, f"add to [tool.setuptools] packages: {missing}"
    assert (PATH_DIR / "sitecustomize.py").is_file()
