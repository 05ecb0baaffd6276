"""An issue's title kept beside a log that holds no error of its own is read (collect()'s quiet-log rescan), its error
the root cause; a title of prose whose only failure word is 无法 stays "not a log".

Round 60 (collector i) reported a title skipped as "not a log"; that happens only beside a log with an error of its own,
where the log's error is the one to name. Reading such a title too (kept when a rule reads it) was tried: it changed no
corpus or holdout verdict, and reading titles by error words alone put three titles' prose over their logs' errors."""

from __future__ import annotations

from pathlib import Path

from msdoctor.facts.logs import collect
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
TITLE = (ROOT / "tests/realworld/logs/ms-swift-5846-megatron-qwen25-vl-sft-conv3d-runtimeerror-ptrdesc-finalize-torch-260-2025"
         / "title.log").read_text(encoding="utf-8")  # `Qwen2.5-VL sft with megatron swift -- RuntimeError: ptrDesc->finalize()`
# the first lines of a real worker log of the bundled trainer (a known grammar, no error of its own)
QUIET = "".join((ROOT / "samples/logs/hang/logs/worker_0.log").read_text(encoding="utf-8").splitlines(True)[:3])


def _files(tmp_path: Path, title: str) -> list[str]:
    (tmp_path / "worker_0.log").write_text(QUIET, encoding="utf-8")
    (tmp_path / "title.log").write_text(title, encoding="utf-8")
    return [str(tmp_path)]


def test_a_title_whose_error_a_rule_reads_is_kept_beside_the_log(tmp_path: Path) -> None:
    _, scan = collect(_files(tmp_path, TITLE))
    assert not [k for k in scan.skipped if k["file"].endswith("title.log")]
    hits = {r for s in scan.files for r in (s.get("hits") or {})}
    assert "ENV896" in hits
    rc = run_cli("logs", "--json", str(tmp_path)).json()["root_cause"]
    assert rc["rule"] == "ENV896", rc  # the log itself holds no error: the title's is the root cause


def test_prose_with_error_words_only_is_still_not_a_log(tmp_path: Path) -> None:
    _, scan = collect(_files(tmp_path, "[Bug]: 2个A2节点部署glm-4.7-w8a8 EP版，无法成功 torch.compile and initial profiling/warmup\n"))
    assert [k for k in scan.skipped if k["file"].endswith("title.log")]
