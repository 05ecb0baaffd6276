"""`msdoctor ckpt` on real MindSpore checkpoints (see conftest.build_checkpoints)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msdoctor.cli import main
from msdoctor.engine.facts import Facts
from msdoctor.facts.checkpoint import collect_checkpoints, rank_of


def ckpt_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["ckpt", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def rules_of(payload: dict) -> set[str]:
    return {f["rule"] for f in payload["findings"]}


def test_identical_replicas_pass(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["rank1"]))
    assert code == 0 and out["findings"] == []
    assert {"CKPT601", "CKPT602", "CKPT603", "CKPT604", "CKPT605"} <= set(out["passed"])
    assert [f["rank"] for f in out["files"]] == [0, 1] and out["groups"] == {"": str(ckpts["rank0"])}


def test_drifted_gamma_is_named_with_its_difference(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["rank1"]), str(ckpts["drift"]))
    assert code == 1
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT601"]
    assert f["rank"] == 2 and "1.gamma" in f["message"]
    assert list(f["data"]["params"]) == ["1.gamma"]
    assert f["data"]["params"]["1.gamma"] == pytest.approx(1e-3, rel=1e-3)


def test_tolerance_accepts_small_drift(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["drift"]), "--tolerance", "0.01")
    assert code == 0 and "CKPT601" not in rules_of(out)
    assert main(["ckpt", str(ckpts["rank0"]), "--tolerance", "-1"]) == 2
    assert "tolerance" in capsys.readouterr().err


def test_hf_naming_is_recognised(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["hf"]))
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT602"]
    assert sorted(map(tuple, f["data"]["naming_pairs"])) == [("1.beta", "1.bias"), ("1.gamma", "1.weight")]
    assert "Hugging Face" in f["message"] and code == 0  # a warning, not an error


def test_shape_difference(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["wide"]))
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT603"]
    assert f["data"]["shapes"]["0.weight"] == [[3, 4], [6, 4]] and code == 1
    assert "CKPT601" not in rules_of(out)  # different shapes are not compared element-wise


def test_truncated_file_is_a_finding_and_the_rest_is_compared(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["trunc"]), str(ckpts["rank0"]), str(ckpts["drift"]))
    assert code == 1
    (bad,) = [f for f in out["findings"] if f["rule"] == "CKPT606"]  # cut short: not merely "unreadable"
    assert bad["rank"] == 3 and "the file is cut" in bad["message"] and "corrupted" in bad["message"]
    assert "CKPT604" not in rules_of(out)
    assert out["groups"] == {"": str(ckpts["rank0"])}  # the first *readable* file is the reference
    assert "CKPT601" in rules_of(out)


def test_nan_parameters(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["nan"]))
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT605"]
    assert f["data"]["params"] == {"0.weight": 1} and f["rank"] == 4 and code == 1
    assert out["findings"][0]["rule"] in {"CKPT601", "CKPT605"}


def test_safetensors_compares_with_ckpt(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]), str(ckpts["safetensors"]))
    assert code == 0 and out["findings"] == [], out["findings"]
    assert out["files"][1]["format"] == "safetensors" and out["files"][1]["params"] == 4


def test_folder_expansion_and_facts_replay(ckpts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "facts.json"
    code = main(["ckpt", str(ckpts["rank0"].parent), str(ckpts["drift"].parent), "--dump-facts", str(snap)])
    text = capsys.readouterr().out
    assert code == 1 and "CKPT601" in text and "1.gamma" in text
    code, out = ckpt_json(capsys, "--facts", str(snap))
    assert code == 1 and rules_of(out) == {"CKPT601"}
    assert Facts.load(snap).need("ckpt.groups") == {"net.ckpt": str(ckpts["rank0"])}


def test_per_rank_folders_pair_files_by_step(ckpts: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rank_0/ and rank_1/ of the trainer's layout: step 20 is compared with step 20, never with step 10."""
    layout = {
        "rank_0/step_000010.ckpt": "rank0", "rank_0/step_000020.ckpt": "drift",
        "rank_1/step_000010.ckpt": "rank1", "rank_1/step_000020.ckpt": "drift",
        "rank_1/.tmp-99-step_000030.ckpt": "trunc",  # a partial save in progress: skipped
    }  # fmt: skip
    for rel, key in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(ckpts[key].read_bytes())
    code, out = ckpt_json(capsys, str(tmp_path / "rank_0"), str(tmp_path / "rank_1"))
    assert code == 0 and out["findings"] == [], out["findings"]
    assert sorted(out["groups"]) == ["step_000010.ckpt", "step_000020.ckpt"] and len(out["files"]) == 4
    (tmp_path / "rank_1/step_000020.ckpt").write_bytes(ckpts["rank0"].read_bytes())
    code, out = ckpt_json(capsys, str(tmp_path / "rank_0"), str(tmp_path / "rank_1"))
    (f,) = out["findings"]
    assert code == 1 and f["rule"] == "CKPT601" and f["rank"] == 1
    assert f["data"]["file"].endswith("rank_1/step_000020.ckpt") and list(f["data"]["params"]) == ["1.gamma"]


def test_one_file_is_not_evaluated_not_passed(ckpts: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(ckpts["rank0"]))
    assert code == 0 and out["findings"] == []
    assert {n["rule"] for n in out["not_evaluated"]} == {"CKPT601", "CKPT602", "CKPT603"}
    assert {"CKPT604", "CKPT605"} <= set(out["passed"])


@pytest.mark.parametrize("argv", [["/nonexistent/x.ckpt"], [], ["--facts", "/nonexistent.json"]])
def test_bad_input_exits_2(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ckpt", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msdoctor ckpt:") and len(err.strip().splitlines()) == 1


def test_empty_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ckpt", str(tmp_path)]) == 2
    assert "no .ckpt or .safetensors" in capsys.readouterr().err


def test_garbage_file_only_is_reported_not_raised(tmp_path: Path) -> None:
    junk = tmp_path / "rank_7" / "junk.ckpt"
    junk.parent.mkdir()
    junk.write_bytes(bytes(range(256)) * 4)
    facts = collect_checkpoints([junk])
    (entry,) = facts.need("ckpt.files")
    assert entry["error"] and entry["rank"] == 7 and facts.need("ckpt.groups") == {"": None}


def test_empty_file_is_named_empty_not_a_filter_prefix_problem(tmp_path: Path) -> None:
    empty = tmp_path / "rank_1" / "net.ckpt"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    (entry,) = collect_checkpoints([empty]).need("ckpt.files")
    assert entry["error"].startswith("empty file (0 bytes)") and entry["rank"] == 1


def test_rank_of() -> None:
    assert rank_of(Path("ckpt/rank_12/net.ckpt")) == 12
    assert rank_of(Path("out/net_rank3.ckpt")) == 3
    assert rank_of(Path("out/net.ckpt")) is None
