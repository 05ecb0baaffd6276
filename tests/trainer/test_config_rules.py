"""The config collector and the PAR4xx rules, and `msdoctor train` refusing bad input before launch."""

from __future__ import annotations

import pytest
from msdoctor_trainer.config import llama_7b_shaped, tiny

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.engine.model import Unknown
from msdoctor.facts.config import collect_config

RULES = load_catalogue().select(source="config")


def judge(cfg: dict, world: int, backend: str = "CPU"):
    return run_checks(RULES, collect_config(cfg, world, backend))


def test_config_rules_are_the_par4_family():
    assert {r.id for r in RULES} >= {f"PAR4{n:02d}" for n in range(1, 12)}


def test_tiny_on_two_cpu_ranks_passes_every_rule():
    ev = judge(tiny(2).to_dict(), 2)
    assert ev.findings == [] and ev.not_evaluated == []
    assert len(ev.passed) == len(RULES)


def test_7b_is_valid_on_ascend_but_not_runnable_on_cpu():
    assert judge(llama_7b_shaped(64).to_dict(), 64, "Ascend").findings == []
    ev = judge(llama_7b_shaped(64).to_dict(), 64, "CPU")
    assert [f.rule for f in ev.findings] == ["PAR409", "PAR411"]  # mp/pp and bf16 both need a device


def test_several_problems_each_named():
    cfg = llama_7b_shaped(64).to_dict()
    cfg["model"]["num_heads"] = 12  # 12 % mp 8, and 4096 % 12
    cfg["parallel"]["micro_batch_num"] = 1  # < pp 2
    ev = judge(cfg, 48, "Ascend")  # 4·8·2 = 64 ≠ 48
    assert {f.rule for f in ev.findings} == {"PAR401", "PAR403", "PAR404", "PAR405"}
    par401 = next(f for f in ev.findings if f.rule == "PAR401")
    assert "num_heads=12" in par401.message and "model_parallel=8" in par401.message
    assert {e.fact for e in par401.evidence} == {"config.model.num_heads", "config.parallel.model_parallel"}


def test_collector_never_raises_on_garbage():
    f = collect_config({"model": "nonsense", "parallel": {"data_parallel": "2", "recompute": 3}}, None, None)
    assert isinstance(f["config.model.num_heads"], Unknown)
    assert isinstance(f["config.parallel.data_parallel"], Unknown)
    assert isinstance(f["config.parallel.recompute"], Unknown)
    assert isinstance(f["config.world_size"], Unknown)
    ev = run_checks(RULES, f)
    assert ev.findings == [] and {n.rule for n in ev.not_evaluated} == {r.id for r in RULES}


# -- the command refuses before launching anything (no MindSpore job runs in these tests) ---------


def test_train_7b_on_cpu_reports_par409_and_launches_nothing(cli, tmp_path):
    run = tmp_path / "run"
    r = cli("train", "--config", "7b", "--workers", "64", "--run-dir", str(run), "--json")
    assert r.rc == 1, r.err
    out = r.json()
    assert out["command"] == "train" and out["launched"] is False
    assert [f["rule"] for f in out["findings"]] == ["PAR409", "PAR411"]
    assert not run.exists()


def test_train_three_workers_tiny_batch_does_not_split(cli, tmp_path):
    r = cli("train", "--workers", "3", "--validate-only", "--json")
    assert r.rc == 1
    assert [f["rule"] for f in r.json()["findings"]] == ["PAR406"]


def test_train_validate_only_ok(cli):
    r = cli("train", "--workers", "2", "--validate-only")
    assert r.rc == 0, r.err


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--inject", "teleport"], "unknown kind 'teleport'"),
        (["--inject", "crash:rank=5"], "rank 5 does not exist"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--config", "/nonexistent/cfg.toml"], "no such config file"),
        (["--profile", "5-2"], "START-STOP"),
        (["--save-every", "0"], "--save-every"),
        # --validate-only: should the check go, these must not launch a job
        (["--timeout", "-5", "--validate-only"], "--timeout must be positive"),
        (["--collective-timeout", "0", "--validate-only"], "--collective-timeout must be at least 1"),
    ],
)
def test_train_bad_arguments_exit_2_with_one_line(cli, tmp_path, args, needle):
    r = cli("train", "--run-dir", str(tmp_path / "r"), *args)
    assert r.rc == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.err


def test_train_binary_config_exit_2(cli, tmp_path):
    bad = tmp_path / "cfg.toml"
    bad.write_bytes(b"\x00\x01\xfe\xff")
    r = cli("train", "--config", str(bad), "--validate-only")
    assert r.rc == 2 and "not a valid TOML" in r.err


def test_train_resume_needs_a_run(cli, tmp_path):
    r = cli("train", "--run-dir", str(tmp_path / "none"), "--resume")
    assert r.rc == 2 and "no run to resume" in r.err


def test_train_refuses_to_overwrite_a_run(cli, tmp_path):
    (tmp_path / "run.json").write_text("{}")
    r = cli("train", "--run-dir", str(tmp_path))
    assert r.rc == 2 and "--resume" in r.err


def test_train_bf16_config_on_cpu_is_refused(cli, tmp_path):
    cfg = tmp_path / "bf16.toml"
    cfg.write_text('[train]\ndtype = "bfloat16"\n')
    r = cli("train", "--config", str(cfg), "--validate-only", "--json")
    assert r.rc == 1 and [f["rule"] for f in r.json()["findings"]] == ["PAR411"]


def test_default_run_dirs_started_in_the_same_second_do_not_collide(tmp_path, monkeypatch):
    import argparse

    from msdoctor.commands import train

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(train.time, "strftime", lambda fmt: "run-20261129-212718")
    args = argparse.Namespace(run_dir=None, resume=False)
    first = train._run_dir(args)
    (first / "run.json").write_text("{}")  # the first run has started
    second = train._run_dir(args)
    third = train._run_dir(args)
    assert [p.name for p in (first, second, third)] == ["run-20261129-212718", "run-20261129-212718-2",
                                                         "run-20261129-212718-3"]
    assert all((p / "events").is_dir() for p in (first, second, third))


def test_resume_without_run_dir_is_a_usage_error(cli):
    r = cli("train", "--resume", "--validate-only")
    assert r.rc == 0  # validate-only never needs a run dir
    r = cli("train", "--resume", "--steps", "1", "--corpus", "/nonexistent")
    assert r.rc == 2 and "--resume needs the --run-dir" in r.err
