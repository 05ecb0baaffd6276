"""`msdoctor preflight` as a user runs it: this machine, emulated Ascend roots, rank tables, replay, compare."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from msdoctor.cli import main
from tests.conftest import ROOT, run_cli

ROOTS = ROOT / "samples" / "roots"
ENVS = ROOTS / "envs"
RT = ROOT / "samples" / "ranktables"


def pf(capsys, *args: str) -> tuple[int, dict, str]:
    """In-process `msdoctor preflight --json ARGS` (fast); returns rc, payload, stderr."""
    rc = main(["preflight", "--json", "--no-npu-smi", *args])
    cap = capsys.readouterr()
    return rc, orjson.loads(cap.out), cap.err


def rules(payload: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in payload["findings"]:
        out.setdefault(f["rule"], []).append(f)
    return out


def node(root: str = "good", env: str = "good", *extra: str) -> list[str]:
    return ["--root", str(ROOTS / root), "--env-file", str(ENVS / f"{env}.env"), *extra]


# -- this machine -------------------------------------------------------------------------------


def test_this_machine_is_honest_about_cann(capsys):
    rc, payload, _ = pf(capsys)
    groups = {g["group"]: g for g in payload["groups"]}
    assert groups["cann"]["status"] == "not_evaluated"
    assert not groups["cann"]["passed"], "a CPU-only machine must never pass a CANN check"
    skipped = {n["rule"]: n["reason"] for n in payload["not_evaluated"]}
    assert "CANN not installed" in skipped["ENV101"]
    assert "ENV101" not in payload["passed"]
    # Real facts from this machine: MindSpore 2.10 is installed in the venv, Python is the running one.
    assert groups["packages"]["status"] in ("ok", "warning", "error")
    assert {g["group"] for g in payload["groups"]} == {"host", "packages", "cann", "env", "ranktable", "network"}
    assert all(isinstance(g["collect_ms"], float) for g in payload["groups"])
    assert rc in (0, 1)


def test_preflight_does_not_import_mindspore():
    code = (
        "import sys\nfrom msdoctor.cli import main\nrc = main(['preflight', '--json', '--no-npu-smi'])\n"
        "bad = [m for m in sys.modules if m == 'mindspore' or m.startswith('mindspore.') or m.startswith('textual')]\n"
        "print('LOADED', bad, file=sys.stderr)\nsys.exit(3 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "LOADED []" in proc.stderr


def test_text_view_one_line_per_group_and_ascii_fallback():
    import os

    env = dict(os.environ, MSDOCTOR_ASCII="1")
    r = run_cli("preflight", "--no-npu-smi", *node("cann-8.0rc2"), env=env, timeout=120)
    assert r.rc == 1, r.err
    lines = r.out.splitlines()
    heads = [ln for ln in lines if ln.startswith("[")]
    assert len(heads) == 6, r.out
    assert any(ln.startswith("[x] CANN, driver and NPUs") for ln in heads), r.out
    assert "✓" not in r.out and "✗" not in r.out
    assert "ENV101" in r.out and "8.5.0" in r.out
    assert lines[-1].startswith(("Doctor summary:", "No issues found:")) or "summary" in r.out.lower()
    v = run_cli("preflight", "--no-npu-smi", "-v", *node("good"), env=env, timeout=120)
    assert any(ln.strip().startswith("checks:") and "MEM101" in ln for ln in v.out.splitlines()) and " ms" in v.out  # -v: the time every check took
    assert "evidence:" not in r.out and "evidence:" in v.out


def test_non_utf8_stdout_gets_ascii_marks_and_no_encoding_error():
    import os

    env = dict(os.environ, PYTHONIOENCODING="ascii")
    env.pop("MSDOCTOR_ASCII", None)
    r = run_cli("preflight", "--no-npu-smi", *node("cann-8.0rc2", "bad-hccl"), "--rank-table", str(RT / "rank_gap.json"),
                env=env, timeout=120)  # fmt: skip
    assert r.rc == 1 and "Traceback" not in r.err, r.err[-500:]
    assert "[x] CANN, driver and NPUs - CANN 8.0.RC2" in r.out and "0...7" in r.out
    r.out.encode("ascii")  # every character printable on that stream


# -- emulated nodes -------------------------------------------------------------------------------


def test_cann_80rc2_under_mindspore_210_is_an_error_with_the_pairing(capsys):
    rc, payload, _ = pf(capsys, *node("cann-8.0rc2"))
    assert rc == 1
    (hit,) = rules(payload)["ENV101"]
    assert hit["severity"] == "error"
    assert hit["data"]["cann"] == "8.0.RC2" and hit["data"]["cann_internal"] == "7.3"
    assert hit["data"]["install_cann"] == "8.5.0"
    assert "MindSpore 2.3" in hit["message"]  # the MindSpore that does accept 7.3
    assert any("version.cfg" in e["text"] for e in hit["evidence"])


def test_good_node_has_no_error(capsys):
    # The default master port 8118 is the one the node's ufw allows; COMM105 (is 8118 free on
    # this live host?) is the only verdict that depends on the machine the test runs on.
    rc, payload, _ = pf(capsys, *node("good"))
    found = rules(payload)
    errors = [f["message"] for f in payload["findings"] if f["severity"] == "error" and f["rule"] != "COMM105"]
    assert not errors and (rc == 0 or "COMM105" in found)
    assert "ENV101" in payload["passed"] and "ENV104" in payload["passed"] and "RT107" in payload["passed"]
    # The honest warning: MindSpore 2.10 needs protobuf >= 7.34.1, CANN 8.5 documents 3.20.x.
    assert [f["data"]["package"] for f in found["ENV105"]] == ["protobuf"]


def test_clean_91_node_is_silent_about_the_node(capsys):
    rc, payload, _ = pf(capsys, *node("clean-9.1"))
    assert not {f["rule"] for f in payload["findings"]} - {"DATA101", "COMM105"}, payload["findings"]
    assert "ENV105" in payload["passed"] and "ENV101" in payload["passed"]


@pytest.mark.parametrize(
    ("root", "rule", "text"),
    [
        ("drift", "ENV104", "protobuf 3.20.3"),
        ("numpy2", "ENV104", "numpy 2.1.3"),
        ("py39", "ENV103", "Python 3.9"),
        ("old-driver", "ENV106", "24.1.rc2"),
        ("cramped", "MEM101", "64 MiB"),
        ("cramped", "DATA102", "8 ranks share 16 CPUs (2 per rank)"),
        ("firewall", "COMM106", "UDP 4791"),
        ("firewall", "COMM107", "TCP 8118"),
        ("nft-drop", "COMM106", "UDP 4791"),
        ("nft-drop", "COMM107", "TCP 8118"),
        ("unreserved", "COMM110", "60000-60031 lie in the kernel's ephemeral range 32768-60999 and are not reserved"),
    ],
)
def test_emulated_roots_fire(capsys, root, rule, text):
    _, payload, _ = pf(capsys, *node(root))
    hits = rules(payload).get(rule, [])
    assert any(text in h["message"] for h in hits), [f["message"] for f in payload["findings"]]


def test_no_cann_root_is_not_evaluated_never_passed(capsys):
    _, payload, _ = pf(capsys, *node("no-cann"))
    skipped = {n["rule"] for n in payload["not_evaluated"]}
    assert {"ENV101", "ENV105", "ENV106"} <= skipped
    assert not {"ENV101", "ENV105", "ENV106"} & set(payload["passed"])


@pytest.mark.parametrize(
    ("env", "rule", "text"),
    [
        ("bad-hccl", "COMM101", "HCCL_CONNECT_TIMEOUT='60' is outside [120, 7200]"),
        ("bad-hccl", "COMM102", "HCCL_RDMA_RETRY_CNT='9'"),
        ("bad-hccl", "COMM102", "HCCL_RDMA_TC='7'"),
        ("bad-hccl", "COMM102", "HCCL_SOCKET_FAMILY='AF_INET4'"),
        ("bad-hccl", "COMM102", "cannot both be 1"),
        ("bad-hccl", "COMM103", "HCCL_WHITELIST_FILE is not set"),
        ("seed", "COMM104", "HCCL_OVER_OFI"),
        ("no-setenv", "ENV102", "ASCEND_HOME_PATH"),
        ("stale-home", "ENV102", "ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/8.0.RC2 does not exist"),
        ("no-device-id", "ENV107", "DEVICE_ID not exported"),
        ("bad-ranks", "ENV107", "RANK_ID=8 is not below RANK_SIZE=8"),
        ("bad-ranks", "ENV107", "DEVICE_ID=9"),
        ("bad-ranks", "ENV107", "MS_WORKER_NUM=16 differs from RANK_SIZE=8"),
        ("visible-4", "ENV107", "makes only logical ids 0…3 visible"),
        ("visible-4", "RT111", "4 NPU(s) visible"),
        ("msrun-bad", "ENV108", "MS_ROLE='WORKER'"),
        ("msrun-bad", "ENV108", "MS_SCHED_PORT='80'"),
        ("msrun-bad", "ENV108", "MS_SCHED_HOST"),
    ],
)
def test_launch_environments_fire(capsys, env, rule, text):
    _, payload, _ = pf(capsys, *node("good", env))
    assert any(text in h["message"] for h in rules(payload).get(rule, [])), [f["message"] for f in payload["findings"]]


def test_seed_exports_are_not_errors(capsys):
    """The seed's three exports: 600 is in range, WHITELIST_DISABLE=1 is the default, OVER_OFI unknown (info)."""
    _, payload, _ = pf(capsys, *node("good", "seed"))
    found = rules(payload)
    assert "COMM101" not in found and "COMM103" not in found
    assert [f["severity"] for f in found["COMM104"]] == ["info"]


def test_visible_devices_matching_the_table_pass(capsys):
    _, payload, _ = pf(capsys, *node("good", "visible-8"))
    assert "RT111" in payload["passed"] and "ENV107" in payload["passed"]


def test_msrun_worker_environment_needs_no_device_export(capsys):
    _, payload, _ = pf(capsys, *node("good", "msrun-worker"))
    assert "ENV107" in payload["passed"] and "ENV108" in payload["passed"]


def test_master_port_taken(capsys):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        _, payload, _ = pf(capsys, *node("good"), "--master-port", str(port))
    finally:
        s.close()
    (hit,) = rules(payload)["COMM105"]
    assert f"master port {port}" in hit["message"] and hit["data"]["listening"] is True
    _, payload, _ = pf(capsys, *node("good"), "--master-port", str(port))
    assert "COMM105" in payload["passed"]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


# -- rank tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "rule", "text"),
    [
        ("status_initializing.json", "RT102", "'initializing'"),
        ("seed_hccl.json", "RT102", "status is missing"),
        ("a3_fields_version_10.json", "RT102", 'use "1.2"'),
        ("server_count_mismatch.json", "RT103", "server_count is '3' but server_list has 2"),
        ("duplicate_server_id.json", "RT104", "server_id '10.10.10.1' is used by 2 servers: server_list[0, 1]"),
        ("hostname_server_id.json", "RT105", "server_id 'node1' is not an IP"),
        ("duplicate_device_id.json", "RT106", "server_list[1] (server_id '10.10.10.2'): device_id 4 appears 2 times"),
        ("device_id_out_of_range.json", "RT106", "device_id '16' rank_id '7': device_id 16 out of range [0, 8)"),
        ("rank_gap.json", "RT107", "missing [4]"),
        ("rank_gap.json", "RT107", "rank_id '8': rank_id 8 out of range"),
        ("duplicate_rank_id.json", "RT107", "rank_id 3 is used 2 times"),
        ("missing_device_ip.json", "RT108", "device_id '6' rank_id '14': device_ip missing"),
        ("duplicate_device_ip.json", "RT108", "device_ip 192.168.1.10 is used 2 times"),
        ("mixed_ip_family.json", "RT108", "mixes IPv4 and IPv6"),
        ("good_1x8.json", "RT109", "RANK_SIZE='16' but the rank table lists 8"),
        ("a3_v12_unknown_pod_server.json", "RT110", "'node_9'"),
        ("with_comments.json", "RT101", "contains comments"),
        ("truncated.json", "RT101", "not valid JSON"),
        ("not_a_ranktable.json", "RT101", "expected an object"),
        ("binary.json", "RT101", "not UTF-8"),
        ("seed_hccl_as_extracted.txt", "RT101", "not valid JSON"),
    ],
)
def test_rank_table_mistakes_name_the_offender(capsys, table, rule, text):
    rc, payload, err = pf(capsys, *node("good"), "--rank-table", str(RT / table))
    hits = rules(payload).get(rule, [])
    assert any(text in h["message"] for h in hits), [f["message"] for f in payload["findings"]]
    assert "Traceback" not in err
    if rule != "RT105":
        assert rc == 1


@pytest.mark.parametrize("table", ["good_2x8.json", "a3_v12_good.json"])
def test_good_rank_tables_pass(capsys, table):
    _, payload, _ = pf(capsys, *node("good"), "--rank-table", str(RT / table))
    rt = {f["rule"] for f in payload["findings"] if f["rule"].startswith("RT")} - {"RT105", "RT109"}
    assert not rt
    assert {"RT101", "RT102", "RT103", "RT104", "RT106", "RT107", "RT108", "RT110"} <= set(payload["passed"])


def test_rank_table_from_env_that_does_not_exist_is_a_finding(capsys, tmp_path):
    envf = tmp_path / "e.env"
    envf.write_text("RANK_TABLE_FILE=/nonexistent/hccl.json\nRANK_SIZE=8\nRANK_ID=0\nDEVICE_ID=0\n")
    rc, payload, _ = pf(capsys, "--root", str(ROOTS / "good"), "--env-file", str(envf))
    assert "no such file" in rules(payload)["RT101"][0]["message"] and rc == 1


def test_env_file_lines_that_are_not_key_value_are_reported_and_the_rest_used(capsys, tmp_path):
    envf = tmp_path / "launch.env"
    envf.write_text("HCCL_CONNECT_TIMEOUT=60\nthis is not an assignment\nRANK_SIZE=8\n")
    _, payload, err = pf(capsys, "--root", str(ROOTS / "good"), "--env-file", str(envf))
    assert "skipped line(s) 2" in err
    assert "COMM101" in rules(payload)  # the readable lines were still used


# -- bad input → exit 2 with one line -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--rank-table", "/nonexistent/hccl.json"], "no such rank table"),
        (["--env-file", "/nonexistent.env"], "no such env file"),
        (["--env-file", str(RT / "binary.json")], "binary data"),
        (["--root", "/nonexistent-root"], "not a directory"),
        (["--facts", str(RT / "truncated.json")], "not valid JSON"),
        (["--facts", str(RT / "good_2x8.json")], "not an msdoctor facts snapshot"),
        (["--compare", str(RT / "good_2x8.json")], "at least two"),
        (["--root", str(ROOTS / "good"), "--dump-facts", "/nonexistent-dir/x.json"], "cannot write"),
    ],
)
def test_bad_input_exit_2_one_line(args, text):
    r = run_cli("preflight", *args, timeout=120)
    assert r.rc == 2, (r.out, r.err)
    assert text in r.err and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


# -- snapshots: dump / replay / compare -----------------------------------------------------------


def test_dump_and_replay_round_trip(capsys, tmp_path):
    snap = tmp_path / "node.json"
    rc1, live, _ = pf(capsys, *node("cann-8.0rc2", "bad-hccl"), "--dump-facts", str(snap))
    rc2, replay, _ = pf(capsys, "--facts", str(snap))
    assert rc1 == rc2 == 1
    key = lambda p: sorted((f["rule"], f["message"]) for f in p["findings"])  # noqa: E731
    assert key(live) == key(replay)
    assert [g["collect_ms"] for g in live["groups"]] == [g["collect_ms"] for g in replay["groups"]]
    assert orjson.loads(snap.read_bytes())["format"] == "msdoctor-facts/1"


def test_compare_reports_every_difference(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    pf(capsys, *node("good", "good"), "--dump-facts", str(a))
    pf(capsys, *node("cann-8.0rc2", "seed"), "--dump-facts", str(b))
    rc, payload, _ = pf(capsys, "--compare", str(a), str(b))
    found = rules(payload)
    facts = {h["data"]["fact"] for h in found["ENV109"]}
    assert {"cann.toolkit.version", "cann.compiler.version", "ascend.driver.version"} <= facts
    var = {h["data"]["fact"] for h in found["COMM109"]}
    assert {"env.vars.HCCL_CONNECT_TIMEOUT", "env.vars.HCCL_OVER_OFI"} <= var
    assert set(found["ENV109"][0]["data"]["values"]) == {"a", "b"}  # nodes named after their snapshots
    other = {h["data"]["fact"] for h in found["ENV110"]}
    assert "env.vars.RANK_TABLE_FILE" in other and not any(o.startswith("env.vars.HCCL_") for o in other)
    assert rc == 1 and [g["group"] for g in payload["groups"]] == ["compare"]
    rc, payload, _ = pf(capsys, "--compare", str(a), str(a))
    assert rc == 0 and not payload["findings"]


def test_compare_msrun_variables(capsys, tmp_path):
    a, b = tmp_path / "node-a.json", tmp_path / "node-b.json"
    pf(capsys, *node("good", "msrun-worker"), "--dump-facts", str(a))
    pf(capsys, *node("good", "msrun-worker-8119"), "--dump-facts", str(b))
    rc, payload, _ = pf(capsys, "--compare", str(a), str(b))
    (hit,) = rules(payload)["COMM108"]
    assert hit["data"]["values"] == {"node-a": "8118", "node-b": "8119"} and rc == 1


def test_cli_help_lists_options():
    r = run_cli("preflight", "--help", timeout=60)
    assert r.rc == 0 and "--root" in r.out and "--compare" in r.out
    assert Path(ROOT / "msdoctor" / "data" / "compat.toml").is_file()
