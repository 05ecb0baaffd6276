"""Line grammars (shared/faults.md §4, real lines) and where a file's rank comes from."""

from __future__ import annotations

from msdoctor.facts.logformats import (
    file_kind,
    parse_line,
    parse_ts,
    rank_from_path,
    rank_hints,
    split_banner,
    world_size_hint,
)


def test_mindspore_cpp_line():
    r = parse_line("[WARNING] DISTRIBUTED(162146,ffffb85d0c80,python):2025-03-10-09:40:25.507.237 "
                   "[mindspore/ccsrc/distributed/cluster/topology/meta_server_node.cc:98] Finalize] The meta server "
                   "node can not be finalized because there are still 4 alive nodes.")
    assert (r.grammar, r.level, r.module, r.pid, r.func) == ("mindspore", "WARNING", "DISTRIBUTED", 162146, "Finalize")
    assert r.src == "mindspore/ccsrc/distributed/cluster/topology/meta_server_node.cc" and r.src_line == 98
    assert r.message.startswith("The meta server node can not be finalized")
    assert r.ts_text == "2025-03-10-09:40:25.507.237"
    assert r.time is not None and abs((r.time % 60) - 25.507237) < 1e-6


def test_mindspore_python_side_line():
    r = parse_line("[ERROR] ME(130371:281473296949264,MainProcess):2024-12-26-14:22:26.839.923 "
                   "[mindspore/parallel/cluster/process_entity/_api.py:268] Worker process 130673 exit with exception.")
    assert (r.grammar, r.level, r.module, r.pid, r.src_line) == ("mindspore", "ERROR", "ME", 130371, 268)
    assert r.func is None and r.message == "Worker process 130673 exit with exception."
    assert r.is_error


def test_cann_plog_variants():
    hccl = parse_line("[ERROR] HCCL(17381,python):2022-12-01-03:02:29.001.129 [hcom.cc:94][hccl-17381-0-1669834948-"
                      "hccl_world_group][0][Init][Result]hcom init failed, rankNum[8], rank[0], server[10.*.*.*], device[0], return[83951623]")
    assert (hccl.grammar, hccl.module, hccl.pid, hccl.src, hccl.src_line) == ("plog", "HCCL", 17381, "hcom.cc", 94)
    runtime = parse_line("[ERROR] RUNTIME(160186,python):2023-01-10-09:25:45.324.830 [api_c.cc:721]163618 "
                         "rtStreamSynchronize:ErrCode=507011, desc=[the model stream execute failed], InnerCode=0x7150050")
    assert (runtime.module, runtime.src, runtime.src_line) == ("RUNTIME", "api_c.cc", 721)
    nospace = parse_line("[ERROR]HCCL(3729526,python3.11):2025-10-23-17:30:40.098.973 [externalinput.cc:963] "
                         "[3729526][Parse][rdmaServerLevel]HCCL_RDMA_SL[1000] is invalid. except: [0, 7]")
    assert (nospace.grammar, nospace.module, nospace.src_line) == ("plog", "HCCL", 963)
    trace = parse_line("[TRACE] HCCL(83434,python):2022-11-30-23:31:10.455.138 [status:stop] [hcom.cc:264][hccl-83434-0-"
                       "1669821563-hccl_world_group][1]hcom destroy complete,take time [323391]us, rankNum[8], rank[1]")
    assert (trace.level, trace.src) == ("TRACE", "hcom.cc")
    drv = parse_line("[ERROR] DRV(17381,python):2022-12-01-03:02:29.391.021 [ascend][curpid: 17381, 17381][drv][tsdrv]"
                     "[share_log_read 552]hdc connect down, devid(0) fid(0) tsid(0) hdc connect down, devid(0) fid(0) tsid(0)")
    assert drv.grammar == "plog" and drv.src is None and drv.time is not None


def test_torch_npu_pylog_exception_and_traceback():
    t = parse_line("[ERROR] 2024-04-20-10:42:34 (PID:2090824, Device:0, RankID:0) ERR02200 DIST call hccl api failed.")
    assert (t.grammar, t.pid, t.rank, t.message) == ("torch-npu", 2090824, 0, "ERR02200 DIST call hccl api failed.")
    m = parse_line("2025-07-24 10:00:01,123 - mindformers[mindformers/core/callback/callback.py:300] - INFO - { Epoch:[  1/  2], "
                   "step:[    1/ 6500], loss: 0.000, per_step_time: 166756ms")
    assert (m.grammar, m.level) == ("pylog", "INFO") and m.time is not None and m.message.startswith("{ Epoch:")
    e = parse_line("ValueError: In epoch: 1 step: 7, loss is NAN or INF, training process cannot continue, terminating training.")
    assert (e.grammar, e.exc_type, e.is_error) == ("python-exc", "ValueError", True)
    assert parse_line("Traceback (most recent call last):").grammar == "traceback"
    assert parse_line("epoch: 1 step: 2, loss is 3.13").grammar == "plain"


def test_parse_ts_rejects_garbage():
    assert parse_ts("no time here") is None
    assert parse_ts("2026-11-29-19:47:33.357.872") - parse_ts("2026-11-29-19:47:33.357.871") < 2e-6


def test_banner_sections_split():
    text = "RuntimeError: " + """
----------------------------------------------------
- Ascend Error Message:
----------------------------------------------------
EI0002: The wait execution of the Notify register times out.

----------------------------------------------------
- Framework Error Message: (For framework developers)
----------------------------------------------------
Run task for graph:kernel_graph_1 error!

----------------------------------------------------
- C++ Call Stack: (For framework developers)
----------------------------------------------------
mindspore/ccsrc/plugin/device/ascend/hal/hardware/ascend_graph_executor.cc:240 RunGraph
"""
    s = split_banner(text)
    assert s["Ascend Error Message"].startswith("EI0002: The wait execution")
    assert s["Framework Error Message"] == "Run task for graph:kernel_graph_1 error!"
    assert s["C++ Call Stack"].endswith("RunGraph")
    assert s["message"] == "RuntimeError:"


def test_rank_from_path_and_kind():
    assert rank_from_path("logs/worker_12.log") == (12, "path:worker_N")
    assert rank_from_path("out/rank_3/logs/mindspore.host.user.log.ERROR.20260101.123") == (3, "path:rank_N")
    assert rank_from_path("ascend/log/debug/device-5/device-2272_20220617234019449.log") == (5, "path:device-N")
    assert rank_from_path("ascend/log/debug/plog/plog-16027_20220618001623878.log") == (None, "")
    assert file_kind("a/scheduler.log") == "scheduler" and file_kind("plog-1_2.log") == "plog"
    assert file_kind("rank_0/logs/mindspore.h.u.log.INFO.1.2") == "glog"


def test_rank_hints_from_content():
    head = (b"[WARNING] DISTRIBUTED(1,7f,python):2026-11-29-19:47:25.198.796 [x.cc:428] PostProcess] This node 3 rank id: 3\n"
            b"export RANK_ID=3\n")
    assert rank_hints(head) == {"content:rank id": {3}, "content:RANK_ID": {3}}
    hccl = b"[ERROR] HCCL(1,python):2022-12-01-03:02:29.001.104 [hccl_comm.cc:100][hccl-17381-0-1669834948-hccl_world_group][6][HcclComm]x\n"
    assert rank_hints(hccl) == {"content:HCCL [rank] block": {6}}
    ei0007 = (b"Allocation_Failure(EI0007): Failed to allocate resource[qp] with info [aicpu rank:15,localUserrank:15,"
              b"localIpAddr: 100.97.1.32,deviceLogicId:3,send_cq_depth:32768]. Reason: Memory resources are exhausted.\n")
    assert rank_hints(ei0007) == {"content:HCCL aicpu rank": {15}}  # vllm-ascend #5993: the reporting rank's own
    assert world_size_hint(b"Currently registered node number: 1, expected node number: 16") == 16
    assert world_size_hint(b"nothing") is None
