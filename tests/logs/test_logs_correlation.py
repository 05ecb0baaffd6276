"""Root-cause verdicts on the real samples and on synthetic clusters (stopped rank, missing rank, skew)."""

from __future__ import annotations

import os
import time

from msdoctor.engine.catalogue import load_catalogue
from msdoctor.engine.evaluate import run_checks
from msdoctor.facts.logs import collect
from tests.logs.conftest import SAMPLES

LOG_CHECKS = load_catalogue().select(source="log", kind="check")


def _evaluate(*paths: str):
    facts, scan = collect(list(paths))
    return facts, scan, run_checks(LOG_CHECKS, facts)


def test_hang_sample_names_the_rank_that_stopped_not_the_one_the_scheduler_blamed():
    facts, _, ev = _evaluate(str(SAMPLES / "hang"))
    verdicts = [f for f in ev.findings if f.rule in ("COMM501", "COMM502", "COMM504")]
    assert [(f.rule, f.rank) for f in verdicts] == [("COMM501", 1)]
    chain = " | ".join(verdicts[0].data["root_cause"]["chain"])
    assert "rank 0 waited for data from rank 1" in chain and "wait receiving [1," in chain
    assert "rank 1 logged no error; its last progress was step 2" in chain
    assert "names node 0: a consequence" in chain  # the scheduler blamed node 0
    assert verdicts[0].data["root_cause"]["consequences"] == [0]
    files = {os.path.basename(e.file or "") for e in verdicts[0].evidence}
    assert {"worker_0.log", "worker_1.log", "scheduler.log"} <= files
    assert facts["logs.world_size"] == 2 and facts["logs.missing_ranks"] == []


def test_shape_sample_blames_the_matmul_error_with_its_line():
    _, _, ev = _evaluate(str(SAMPLES / "shape"))
    (v,) = [f for f in ev.findings if f.rule == "COMM502"]
    rc = v.data["root_cause"]
    assert rc["signature"] == "NUM096" and rc["same_error"] == [1 - v.rank]
    assert "MatMulExt" in v.evidence[0].text and v.evidence[0].file.endswith(f"worker_{v.rank}.log")
    assert v.evidence[0].line and "same error" in " ".join(rc["chain"])


def test_nan_sample_blames_the_loss_monitor_stop():
    _, _, ev = _evaluate(str(SAMPLES / "nan"))
    (v,) = [f for f in ev.findings if f.rule == "COMM502"]
    assert v.data["root_cause"]["signature"] == "NUM001"
    assert "loss is NAN or INF" in v.evidence[0].text
    assert "its last progress was step 6" in v.data["root_cause"]["chain"][0]


def test_synthetic_1024_ranks_finds_the_injected_culprit(tmp_path, gen_cluster):
    info = gen_cluster.generate(tmp_path, ranks=1024, culprit=613, noise=2, seed=3)
    t0 = time.perf_counter()
    facts, scan, ev = _evaluate(str(tmp_path))
    elapsed = time.perf_counter() - t0
    (v,) = [f for f in ev.findings if f.rule == "COMM501"]
    assert v.rank == info["culprit"] == 613
    assert info["blamed_by_scheduler"] in v.data["root_cause"]["consequences"]
    assert len(v.data["root_cause"]["consequences"]) == 1023
    reasons = {os.path.basename(s["file"]): s["reason"] for s in scan.skipped}
    assert "binary" in reasons["plog-4242_20261129100000000.log"]
    assert "truncated" in reasons[f"worker_{info['truncated_rank']}.log"]
    assert "not UTF-8" in reasons[f"worker_{info['gb18030_rank']}.log"]
    assert len(facts["logs.ranks"]) == 1024
    print(f"1024-rank scan + verdict: {elapsed:.1f} s")


def test_missing_culprit_log_is_named(tmp_path, gen_cluster):
    info = gen_cluster.generate(tmp_path, ranks=16, culprit=5, noise=1)
    (tmp_path / "node_0000" / "worker_5.log").unlink()
    facts, _, ev = _evaluate(str(tmp_path))
    assert facts["logs.missing_ranks"] == [5]
    (miss,) = [f for f in ev.findings if f.rule == "COMM503"]
    assert miss.data["missing"] == [5]
    (v,) = [f for f in ev.findings if f.rule == "COMM501"]
    assert v.rank == info["culprit"] and v.data["root_cause"]["missing"]
    assert "rank 5 has no log at all" in v.data["root_cause"]["chain"]


def test_unreadable_culprit_log_is_not_called_missing_or_silent(tmp_path, gen_cluster):
    info = gen_cluster.generate(tmp_path, ranks=16, culprit=5, noise=1)
    (tmp_path / "node_0000" / "worker_5.log").write_bytes(os.urandom(8192))
    facts, _, ev = _evaluate(str(tmp_path))
    assert any(k["rank"] == 5 for k in facts["logs.skipped"])
    (v,) = [f for f in ev.findings if f.rule == "COMM501"]
    chain = " | ".join(v.data["root_cause"]["chain"])
    assert v.rank == info["culprit"]
    assert "rank 5's log" in chain and "could not be read" in chain and "has no log at all" not in chain


def test_clock_skew_is_detected_and_does_not_change_the_verdict(tmp_path, gen_cluster):
    gen_cluster.generate(tmp_path, ranks=32, culprit=20, noise=1, skew_node=1, skew=-3600.0)
    _, _, ev = _evaluate(str(tmp_path))
    (skew,) = [f for f in ev.findings if f.rule == "COMM505"]
    assert "3600" in skew.message and set(skew.data["offsets"]) <= {str(r) for r in range(8, 16)}
    (v,) = [f for f in ev.findings if f.rule == "COMM501"]
    assert v.rank == 20 and "Clocks disagree" in v.message


def test_skewed_first_failure_is_ordered_after_alignment(tmp_path):
    """Rank 1's clock runs an hour behind: its raw time looks earliest, but aligned it failed after rank 0."""
    def log(rank: int, hour: int, up: str, err: str) -> str:
        return (f"[WARNING] DISTRIBUTED(1{rank},7f,python):2026-11-29-{hour:02d}:00:{up}.000.000 [c.cc:319] BuildCluster] "
                f"Cluster is successfully initialized.\n"
                f"[WARNING] DISTRIBUTED(1{rank},7f,python):2026-11-29-{hour:02d}:00:{up}.000.000 [c.cc:428] PostProcess] "
                f"This node {rank} rank id: {rank}\nepoch: 1 step: 1, loss is 0.5\n"
                f"[ERROR] ME(1{rank}:1,MainProcess):2026-11-29-{hour:02d}:00:{err}.000.000 [t.py:1] boom\n"
                f"ValueError: rank {rank} broke\n")
    (tmp_path / "worker_0.log").write_text(log(0, 10, "01", "20"))
    (tmp_path / "worker_1.log").write_text(log(1, 9, "01", "30"))
    _, _, ev = _evaluate(str(tmp_path))
    (v,) = [f for f in ev.findings if f.rule == "COMM502"]
    assert v.rank == 0
    assert any(f.rule == "COMM505" for f in ev.findings)


def test_all_ranks_time_out_at_the_same_step_blames_no_single_rank(tmp_path, gen_cluster):
    gen_cluster.generate(tmp_path, ranks=8, culprit=3, noise=1)
    w3 = tmp_path / "node_0000" / "worker_3.log"
    w2 = (tmp_path / "node_0000" / "worker_2.log").read_text().splitlines()
    w3.write_text("\n".join(w2).replace("rank id: 2", "rank id: 3").replace("[1,", "[2,") + "\n")
    _, _, ev = _evaluate(str(tmp_path))
    rules = {f.rule for f in ev.findings}
    assert "COMM504" in rules and not rules & {"COMM501", "COMM502"}


def test_glog_plog_and_device_trees_map_to_ranks(tmp_path):
    """GLOG `rank_N/logs/mindspore.*`, a plog whose HCCL block names the rank, and `device-N/` dirs."""
    glog = tmp_path / "rank_3" / "logs" / "mindspore.host.user.log.ERROR.20261129-100000.4242"
    glog.parent.mkdir(parents=True)
    glog.write_text("[ERROR] ME(4242:1,MainProcess):2026-11-29-10:00:05.000.000 [t.py:1] boom\n")
    plog = tmp_path / "ascend" / "debug" / "plog" / "plog-17381_20221201030229001.log"
    plog.parent.mkdir(parents=True)
    plog.write_text("[ERROR] HCCL(17381,python):2022-12-01-03:02:29.001.104 [hccl_comm.cc:100][hccl-17381-0-1669834948-"
                    "hccl_world_group][5][HcclComm][Init]errNo[0x0000000005000007] hccl initialize failed\n")
    dev = tmp_path / "ascend" / "debug" / "device-6" / "device-2272_20220617234019449.log"
    dev.parent.mkdir(parents=True)
    dev.write_text("[INFO] AICPU(2272,aicpu_scheduler):2025-02-25-18:40:56.176.403 [a.cc:1][tid:1] ok\n")
    facts, scan, _ = _evaluate(str(tmp_path))
    ranks = {os.path.relpath(f["file"], tmp_path): (f["rank"], f["rank_source"]) for f in facts["logs.files"]}
    assert ranks[os.path.relpath(glog, tmp_path)] == (3, "path:rank_N")
    assert ranks[os.path.relpath(plog, tmp_path)] == (5, "content:HCCL [rank] block")
    assert ranks[os.path.relpath(dev, tmp_path)] == (6, "path:device-N")
    assert set(facts["logs.ranks"]) == {"3", "5", "6"}


def test_a_quoted_commands_worker_count_names_no_missing_rank(tmp_path):
    # paddle#52394 (round 78 b): a paste quoting `paddle.distributed.launch --server_num=2 --worker_num=4`; no file
    # is a rank's log and no launcher lists its workers, so no rank is known to be missing (before: "4 of 4 ranks
    # have no log" headed the paste, over the missing PADDLE_CURRENT_ENDPOINT it was about)
    (tmp_path / "paste.log").write_text(
        "使用python37 -m paddle.distributed.launch --server_num=2 --worker_num=4 trainer_offline_debug.py 报错"
        "ValueError: paddle.distributed initialize error, environment variable PADDLE_CURRENT_ENDPOINT is needed, "
        "but not set.\n", encoding="utf-8")
    facts, _, ev = _evaluate(str(tmp_path))
    assert facts["logs.world_size"] == 4 and facts["logs.missing_ranks"] == []
    assert not [f for f in ev.findings if f.rule == "COMM503"]
