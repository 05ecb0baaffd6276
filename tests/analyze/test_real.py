"""`msdoctor analyze` on the real Ascend captures (copied from public repositories, see each SOURCE.md).

samples/profiles/msinsight_gpt3_2rank: 2 ranks of a torch_npu GPT-3 PP=2 run (2023-09);
real_kernel_details_2023/2025: msprof-analyze's real kernel_details.csv in the old and new column sets;
real_torchnpu_trace_2024: one real torch_npu trace_view.json without profiler_info.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from msdoctor.facts import profile as prof
from msdoctor.facts import profile_readers as rdr
from tests.conftest import run_cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "profiles"
GPT3 = SAMPLES / "msinsight_gpt3_2rank"
KD2023 = SAMPLES / "real_kernel_details_2023"
KD2025 = SAMPLES / "real_kernel_details_2025"
TRACE2024 = SAMPLES / "real_torchnpu_trace_2024"


@pytest.fixture(scope="module")
def gpt3(tmp_path_factory):
    return prof.collect(GPT3, tmpdir=tmp_path_factory.mktemp("td"))


def test_every_file_of_the_capture_is_read(gpt3):
    files = gpt3.facts["profile.files"]
    on_disk = sorted(str(p) for p in GPT3.glob("test_rank_*/ASCEND_PROFILER_OUTPUT/*"))
    assert sorted(r["path"] for r in files["read"]) == on_disk
    assert files["skipped"] == [] and files["ignored"] == []


def test_ragged_kernel_row_is_skipped_and_counted_not_the_file(gpt3):
    kd = {r["rank"]: r for r in gpt3.facts["profile.files"]["read"] if r["file"] == "kernel_details"}
    # rank 0: the FlashAttentionScore row with 31 fields under a 32-field header (line 17 of the file)
    assert kd[0]["bad_row_count"] == 1 and kd[0]["bad_rows"] == [17] and kd[0]["rows"] == 20
    assert "bad_rows" not in kd[1]


def test_csv_reader_never_sniffs_the_delimiter(tmp_path):
    """Triple-quoted shapes holding `|`-free text and one ragged row: DuckDB's sniffer once picked `|`."""
    src = GPT3 / "test_rank_0" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    ops, comm, rec, skip = rdr.kernel_rows(src, 0)
    assert skip is None and rec.rows == 20 and len(comm) == 4
    assert {o["op"] for o in ops} == {"ZerosLike", "Cast", "Slice", "DSAStatelessGenBitMask", "FlashAttentionScore",
                                      "NonZero", "NonZero_MemSet"}  # fmt: skip


def test_hccl_kernels_are_communication_not_compute(gpt3):
    ops = [o["op"] for o in gpt3.facts["profile.top_ops"]]
    assert ops and not any(o.startswith("hcom_") for o in ops)
    kd = next(r for r in gpt3.facts["profile.files"]["read"] if r["file"] == "kernel_details" and r["rank"] == 0)
    assert "4 HCCL task(s) counted as communication" in kd["note"]


def test_kernel_details_only_capture_times_collectives_from_hccl_rows(tmp_path):
    """The 2023 column set (Step Id, Block Dim): HCCL rows are 346 of its 397 ms, all communication."""
    d = prof.collect(KD2023, tmpdir=tmp_path)
    comm = {c["type"]: c for c in d.facts["profile.comm_ops"]}
    assert sum(c["total_ms"] for c in comm.values()) == pytest.approx(346.4, abs=0.1)
    assert not any(o["op"].startswith("hcom_") for o in d.facts["profile.top_ops"])
    assert d.model is not None and set(d.model.comm_ev["step"]) == {1}  # from "Step Id"


def test_trailing_tab_in_start_times_is_read(tmp_path):
    d = prof.collect(KD2025, tmpdir=tmp_path)
    rec = d.facts["profile.files"]["read"][0]
    assert rec["rows"] == 29 and "bad_rows" not in rec
    assert d.facts["profile.top_ops"][0]["op"] == "MatMulV3"


def test_missing_preparing_column_means_data_wait_not_evaluated(gpt3):
    assert not gpt3.facts.is_known("profile.data_gaps")
    assert "no Preparing column" in gpt3.facts["profile.data_gaps"].reason
    assert all(r["data_ms"] is None for r in gpt3.facts["profile.ranks"])


def test_torch_npu_profiler_info_keys(gpt3):
    world = gpt3.facts["profile.world"]
    assert world["frameworks"] == ["torch_npu"] and world["torch_npu_level"] == "Level1"
    assert world["kinds"] == ["ascend"] and world["ranks"] == [0, 1]


def test_device_kind_from_ascend_hardware_events(tmp_path):
    d = prof.collect(TRACE2024, tmpdir=tmp_path)
    assert d.facts["profile.world"]["kinds"] == ["ascend"]  # no profiler_info: the trace's Ascend Hardware says so


def test_memory_is_per_component(gpt3):
    mem = {(m["rank"], m["component"]): m for m in gpt3.facts["profile.memory"]}
    assert set(c for r, c in mem if r == 0) == {"APP", "GE", "PTA", "PTA+GE"}
    assert mem[(0, "APP")]["peak_allocated_mb"] is None and mem[(0, "APP")]["peak_reserved_mb"] == 11224.375
    assert mem[(0, "PTA")]["peak_reserved_mb"] == 8664.0


def test_operator_memory_module_and_static_memory_are_read(gpt3):
    f = gpt3.facts
    assert [x["rank"] for x in f["profile.operator_memory"]] == [0, 1]
    assert {x["rank"] for x in f["profile.module_memory"]} == {0}  # only rank 0 has npu_module_mem.csv
    assert [x["rank"] for x in f["profile.static_memory"]] == [1] and f["profile.static_memory"][0]["ops"] > 0
    assert f["profile.operators"][0]["ops"] > 0


def test_free_ratio_denominator_is_msprof_analyzes(gpt3):
    """free / (compute + exposed comm + free): msprof-analyze's advisor divides so (op_schedule_advice.get_ratio)."""
    r0 = next(r for r in gpt3.facts["profile.ranks"] if r["rank"] == 0)
    assert r0["free_ratio"] == pytest.approx(69.9095 / (75.1746 + 146.6140 + 69.9095), abs=1e-4)


def test_cli_on_the_real_capture():
    res = run_cli("analyze", str(GPT3))
    assert res.rc == 0, res.err
    assert "19.25" in res.out and "HCCS" in res.out
    assert "hcom_" not in res.out.split("top operators")[1].split("communication ops")[0]
    assert "from torch_npu" in res.out and "1 malformed row(s) skipped" in res.out
    j = json.loads(run_cli("analyze", "--json", str(GPT3)).out)
    assert "DATA301" in {n["rule"] for n in j["not_evaluated"]}


def test_parent_of_several_captures_is_not_merged(tmp_path):
    for name in ("msinsight_gpt3_2rank", "real_kernel_details_2023", "real_torchnpu_trace_2024"):
        shutil.copytree(SAMPLES / name, tmp_path / name)
    res = run_cli("analyze", str(tmp_path))
    assert res.rc == 2 and res.out == ""
    line = res.err.strip()
    assert "\n" not in line and "3 separate profiler captures" in line and "not merged" in line
    assert f"msdoctor analyze {tmp_path / 'msinsight_gpt3_2rank'}" in line


def test_two_copies_of_one_capture_with_rank_clash_are_separate(tmp_path):
    shutil.copytree(GPT3, tmp_path / "run_a")
    shutil.copytree(GPT3, tmp_path / "run_b")
    res = run_cli("analyze", str(tmp_path))
    assert res.rc == 2 and "rank 0 is in run_a and run_b" in res.err


def test_packet_sizes_per_transport(gpt3):
    """communication.json's bandwidth info per op: RDMA ops below 1 MB and SDMA-class below 16 MB are small
    (msprof-analyze advisor packet.yaml thresholds)."""
    p = {x["transport"]: x for x in gpt3.facts["profile.packets"]}
    assert p["RDMA"]["small_below_mb"] == 1.0 and p["HCCS"]["small_below_mb"] == 16.0
    assert 0 < p["RDMA"]["small_ops"] < p["RDMA"]["ops"]
    assert p["HCCS"]["bandwidth_gbps"] == pytest.approx(p["HCCS"]["size_mb"] / p["HCCS"]["time_ms"], abs=1e-3)


def test_one_job_with_a_subfolder_per_node_is_still_one_job(tmp_path):
    """Rank folders in different top folders (one per node) with distinct rank numbers are one capture."""
    shutil.copytree(GPT3 / "test_rank_0", tmp_path / "node_a" / "test_rank_0")
    shutil.copytree(GPT3 / "test_rank_1", tmp_path / "node_b" / "test_rank_1")
    facts = prof.collect(tmp_path, tmpdir=tmp_path).facts
    assert facts["profile.world"]["ranks"] == [0, 1] and len(facts["profile.links"]) == 4
