"""Issue 13 item 3 on real MindSpore checkpoints: a cut file is an error with the count read against the
count present; ranks of a flat folder are recognised and compared; the same file twice is one file;
coverage is in the summary and in --json; nothing read is exit 2."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from msdoctor.cli import main
from msdoctor.facts.checkpoint import ckpt_framing, group_key, safetensors_framing


def ckpt_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["ckpt", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_mindspore_reads_half_a_checkpoint_without_error(replicas: dict[str, Path]) -> None:
    """The premise, measured on the installed MindSpore: its loader does not notice the cut."""
    import mindspore as ms

    assert len(ms.load_checkpoint(str(replicas["full"]))) == 16
    assert len(ms.load_checkpoint(str(replicas["half"]))) == 8


def test_framing_counts_the_tensors_and_finds_the_cut(replicas: dict[str, Path]) -> None:
    full = ckpt_framing(replicas["full"])
    assert full["records"] == 16 and not full["truncated"] and full["error"] is None
    half = ckpt_framing(replicas["half"])  # cut between two tensors: well-formed, 8 records
    assert half["records"] == 8 and not half["truncated"]
    cut = ckpt_framing(replicas["cut"])
    assert cut["truncated"] and cut["records"] == 8 and cut["cut_tag"] == "4.weight"
    assert cut["missing_bytes"] > 0 and cut["bytes"] == replicas["cut"].stat().st_size
    st = safetensors_framing(replicas["safetensors"])
    assert st["records"] == 16 and not st["truncated"]


def test_cut_safetensors_is_found(replicas: dict[str, Path], tmp_path: Path) -> None:
    cut = tmp_path / "cut.safetensors"
    data = replicas["safetensors"].read_bytes()
    cut.write_bytes(data[: len(data) - 100])
    fr = safetensors_framing(cut)
    assert fr["truncated"] and fr["records"] < 16 and fr["missing_bytes"] == 100


def test_file_cut_inside_a_tensor_alone_is_an_error_with_counts(replicas: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = ckpt_json(capsys, str(replicas["cut"]))
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT606"]
    assert code == 1 and f["data"]["read"] == 0 and f["data"]["present"] == 9 and f["data"]["truncated"]
    assert "it ends inside tensor '4.weight'" in f["message"] and "the reader read no tensor (ValueError" in f["message"]
    assert out["coverage"]["tensors_read"] == 0 and out["coverage"]["tensors_present"] == 9
    assert "CKPT604" not in {f["rule"] for f in out["findings"]}


def test_half_alone_is_not_a_clean_bill(replicas: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Cut between two tensors and alone: no file says what is missing, so nothing may read as ✓."""
    code = main(["ckpt", str(replicas["half"])])
    text = capsys.readouterr().out
    assert code == 0 and "✓" not in text and "[ok]" not in text
    assert "no findings in what could be checked; 3 rule(s) could not be evaluated" in text
    assert "alone (nothing to compare)" in text


@pytest.mark.parametrize("order", [("half", "full"), ("full", "half")])
def test_half_next_to_the_intact_file_is_cut_not_a_naming_difference(
    replicas: dict[str, Path], order: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = ckpt_json(capsys, *(str(replicas[k]) for k in order))
    rules = {f["rule"] for f in out["findings"]}
    assert code == 1 and "CKPT606" in rules and "CKPT602" not in rules, out["findings"]
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT606"]
    assert f["data"]["reference_tensors"] == 16 and f["data"]["read"] == 8 and f["data"]["boundary"]
    assert f["data"]["not_read"][:2] == ["4.weight", "4.bias"] and len(f["data"]["not_read"]) == 8
    assert "holds only the first 8 tensors of its replica" in f["message"]
    assert out["groups"] == {"": str(replicas["full"])}  # the complete, larger file is the reference


@pytest.mark.parametrize(
    "names",
    [
        ("net_rank_0.ckpt", "net_rank_1.ckpt"),
        ("rank_0_net.ckpt", "rank_1_net.ckpt"),
        ("rank_0/checkpoint_0-1_10.ckpt", "rank_1/checkpoint_1-1_10.ckpt"),
        ("rank_0/net.ckpt", "rank_1/net.ckpt"),
    ],
)
def test_flat_folder_ranks_are_compared(replicas: dict[str, Path], tmp_path: Path, names: tuple[str, str],
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    for name, src in zip(names, (replicas["full"], replicas["drift"]), strict=True):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / name)
    code, out = ckpt_json(capsys, str(tmp_path))
    (f,) = [f for f in out["findings"] if f["rule"] == "CKPT601"]
    assert code == 1 and f["rank"] == 1 and list(f["data"]["params"]) == ["3.gamma"]
    assert out["coverage"]["comparisons"] == 1 and len(out["groups"]) == 1


def test_group_keys() -> None:
    assert group_key("rank_3/checkpoint_3-1_10.ckpt") == group_key("rank_0/checkpoint_0-1_10.ckpt")
    assert group_key("rank_3/checkpoint_3-1_10.ckpt") != group_key("rank_3/checkpoint_3-1_20.ckpt")
    assert group_key("net_rank_12.ckpt") == "net_rank_*.ckpt" and group_key("step_10.ckpt") == "step_10.ckpt"


def test_same_file_twice_is_said(replicas: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "alias.ckpt"
    os.symlink(replicas["full"], link)
    code, out = ckpt_json(capsys, str(replicas["full"]), str(link))
    assert code == 0 and out["findings"] == []
    assert out["files"][1]["status"] == f"same file as {replicas['full']}"
    assert out["coverage"]["duplicates"] == 1 and out["coverage"]["comparisons"] == 0
    assert {n["rule"] for n in out["not_evaluated"]} >= {"CKPT601", "CKPT602", "CKPT603"}  # nothing compared: no ✓
    assert main(["ckpt", str(replicas["full"]), str(replicas["full"])]) == 0
    text = capsys.readouterr().out
    assert "same file as" in text and "no findings in what could be checked" in text and "✓" not in text
    assert "coverage: read 1 of 1 file(s); 16 tensor(s) read of 16 present" in text
    assert "1 path(s) named a file already given (read once)" in text


def test_text_summary_states_coverage(replicas: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ckpt", str(replicas["full"]), str(replicas["drift"]), str(replicas["cut"])])
    text = capsys.readouterr().out
    assert code == 1
    assert "coverage: read 2 of 3 file(s); 32 tensor(s) read of 41 present, 16 not read from cut file(s); 1 file(s) compared" in text
    assert "0 of 9" in text  # the table shows the cut file's count


def test_nothing_read_is_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"\x00" * 64)
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    assert main(["ckpt", str(junk), str(empty)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    assert cap.err.startswith(f"msdoctor ckpt: no tensor could be read: {junk}") and "and 1 more file(s)" in cap.err
