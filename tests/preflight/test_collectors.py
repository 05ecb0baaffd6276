"""Collectors: parsers, Unknown-with-reason, and one failing collector not stopping the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from msdoctor.checks.env import parse_requirement, satisfies, vtuple
from msdoctor.checks.network import firewall_verdict
from msdoctor.engine.model import Unknown
from msdoctor.facts import ascend, env, network, preflight, system
from msdoctor.facts.ranktable import collect_ranktable

ROOTS = Path(__file__).resolve().parents[2] / "samples" / "roots"


def test_env_text_export_quotes_comments_and_skipped_lines():
    values, skipped = env.parse_env_text(
        "# comment\nexport A=1\nB='two words'\nC=\"x\" # trailing\nnot a line\n\nD=\n"
    )
    assert values == {"A": "1", "B": "two words", "C": "x", "D": ""}
    assert skipped == [5]


def test_env_keeps_only_relevant_variables():
    facts = env.collect_env({"HCCL_BUFFSIZE": "200", "AWS_SECRET_ACCESS_KEY": "s", "DEVICE_ID": "0"}, "test")
    assert facts["env.vars"] == {"DEVICE_ID": "0", "HCCL_BUFFSIZE": "200"}


def test_version_cfg_and_info():
    cfg = ascend.parse_version_cfg("runtime_running_version=[7.3.0.1.231:8.0.RC2]\ntoolkit_running_version=[7.3.0.1.231:8.0.RC2]\n")
    assert cfg["toolkit"] == ("7.3.0.1.231", "8.0.RC2")
    assert ascend.parse_version_info("Version=8.5.0.1.100\nversion_dir=8.5.0\n") == "8.5.0.1.100"
    assert ascend.parse_version_info("nothing here") is None


def test_cann_missing_is_unknown_with_the_paths_looked_at(tmp_path):
    facts = ascend.collect_cann(tmp_path, {})
    assert facts["cann.installed"] is False
    v = facts["cann.toolkit.version"]
    assert isinstance(v, Unknown) and "ascend-toolkit/latest" in v.reason


def test_cann_with_broken_version_files_is_unknown_not_a_crash(tmp_path):
    tk = tmp_path / "usr/local/Ascend/ascend-toolkit/latest"
    (tk / "compiler").mkdir(parents=True)
    (tk / "version.cfg").write_bytes(b"\x00\xff garbage")
    facts = ascend.collect_cann(tmp_path, {"ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest"})
    assert isinstance(facts["cann.toolkit.version"], Unknown)
    assert "missing" in facts["cann.compiler.version"].reason
    assert facts["cann.env_sourced"]["ASCEND_HOME_PATH"] is True


def test_versions():
    assert vtuple("8.0.RC2") == (8, 0) and vtuple("2.10.0") == (2, 10, 0) and vtuple("24.1.rc2") == (24, 1)
    assert satisfies("7.36.2", ">=7.34.1") and not satisfies("3.20.3", ">=7.34.1")
    assert satisfies("3.20.3", "==3.20.*") and not satisfies("7.36.2", "==3.20.*")
    assert satisfies("1.26.4", ">=1.20.0,<2.0.0") and not satisfies("2.1.3", ">=1.20.0,<2.0.0")
    assert satisfies("3.10", ">=3.10,<3.13") and not satisfies("3.9", ">=3.10,<3.13")
    assert parse_requirement("numpy (>=1.25.0)") == ("numpy", ">=1.25.0", "")
    assert parse_requirement('pytest>=8; extra == "dev"') == ("pytest", ">=8", 'extra == "dev"')


def test_packages_under_a_root_without_site_packages_are_unknown(tmp_path):
    facts = system.collect_packages(tmp_path)
    assert isinstance(facts["pkg.mindspore.version"], Unknown)
    assert "dist-info" in facts["pkg.mindspore.version"].reason


def test_packages_under_a_sample_root_read_metadata_without_import():
    facts = system.collect_packages(ROOTS / "drift")
    assert facts["pkg.mindspore.version"] == "2.10.0"
    assert facts["pkg.protobuf.version"] == "3.20.3"
    assert "protobuf>=7.34.1" in facts["pkg.mindspore.requires"]
    assert facts.source("pkg.protobuf.version").endswith("protobuf-3.20.3.dist-info/METADATA")


def test_shm_from_mounts(tmp_path):
    p = tmp_path / "mounts"
    p.write_text("shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n")
    assert system._shm_from_mounts(p) == 64 * 2**20
    p.write_text("tmpfs /dev/shm tmpfs rw 0 0\n")
    assert "without size=" in str(system._shm_from_mounts(p))
    assert "No such file" in str(system._shm_from_mounts(tmp_path / "none"))


def test_firewall_parsers_and_verdicts():
    rules, pols = network.parse_iptables(
        "*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\n"
        "-A INPUT -p udp -m multiport --dports 4791,4792 -j ACCEPT\nCOMMIT\n", "rules.v4"
    )
    fw = {"files": ["rules.v4"], "rules": rules, "policies": pols, "ufw": None}
    assert firewall_verdict(fw, 4791, "udp") is None  # explicitly accepted
    kind, rule = firewall_verdict(fw, 8118, "tcp")
    assert kind == "policy" and rule["text"].startswith(":INPUT DROP")
    nrules, npols = network.parse_nft(
        "table inet filter {\n chain input {\n  type filter hook input priority 0; policy accept;\n"
        "  udp dport 4791 drop\n  tcp dport 60000-60031 accept\n }\n}\n", "nftables.conf"
    )
    fw = {"files": ["nftables.conf"], "rules": nrules, "policies": npols, "ufw": None}
    assert firewall_verdict(fw, 4791, "udp")[0] == "drop"
    assert firewall_verdict(fw, 60010, "tcp") is None
    assert firewall_verdict(fw, 8118, "tcp") is None  # policy accept


def test_firewall_without_files_is_not_evaluated(tmp_path):
    facts = network.collect_firewall(tmp_path)
    assert isinstance(facts["net.firewall"], Unknown)


def test_rank_table_values_kept_as_written(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"status": "completed", "version": "1.0", "server_count": 1, "server_list": '
                 '[{"server_id": "a", "device": [{"device_id": 0, "rank_id": "0"}, "junk"]}]}')
    facts = collect_ranktable(tmp_path, str(p), {})
    assert facts["ranktable.error"] is None
    devs = facts["ranktable.servers"][0]["devices"]
    assert devs[0]["device_id"] == 0 and devs[1]["invalid"] == "junk"


def test_one_failing_collector_never_stops_the_others(monkeypatch):
    def boom(root: Path, ckpt: str | None = None) -> None:
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(system, "collect_host", boom)
    facts, warnings = preflight.collect(preflight.Options(root=ROOTS / "good", environ={}, run_npu_smi=False))
    assert isinstance(facts["collector.host.error"], Unknown)
    assert "probe exploded" in facts["collector.host.error"].reason
    assert any("collector host failed" in w for w in warnings)
    assert facts["cann.toolkit.version"] == "8.5.0" and facts["pkg.mindspore.version"] == "2.10.0"


@pytest.mark.parametrize("port", [0, 70000])
def test_master_port_out_of_range_recorded(port):
    facts = network.collect_ports({}, port)
    assert facts["net.master_port"]["error"] == "out of range"


def test_npu_smi_is_run_when_on_path(monkeypatch, tmp_path):
    exe = tmp_path / "npu-smi"
    exe.write_text("#!/bin/sh\necho 'Total Count                    : 8'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = ascend.collect_devices(Path("/"))
    assert facts["ascend.npu_smi"]["total_count"] == 8 and facts["ascend.npu_smi"]["rc"] == 0
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert "not on PATH" in ascend.collect_devices(Path("/"))["ascend.npu_smi"].reason


def test_npu_smi_never_run_under_an_emulated_root():
    facts = ascend.collect_devices(ROOTS / "good")
    assert facts["ascend.devices"] == list(range(8))
    assert "not run under --root" in facts["ascend.npu_smi"].reason


def test_emulated_cpus_and_memory_come_from_the_root():
    facts = system.collect_host(ROOTS / "cramped")
    assert facts["host.cpu_count"] == 16 and facts["host.mem.total_bytes"] == 128 * 2**30
    assert facts.source("host.cpu_count").endswith("proc/cpuinfo")
    live = system.collect_host(Path("/"))
    assert "live host" not in live.source("host.cpu_count")


def test_cann_found_under_a_versioned_directory(tmp_path):
    tk = tmp_path / "usr/local/Ascend/cann-9.1.0"
    (tk / "compiler").mkdir(parents=True)
    (tk / "version.cfg").write_text("toolkit_running_version=[9.1.0.1.100:9.1.0]\n")
    (tk / "compiler/version.info").write_text("Version=9.1.0.1.100\n")
    facts = ascend.collect_cann(tmp_path, {})
    assert facts["cann.toolkit.path"] == "/usr/local/Ascend/cann-9.1.0"
    assert facts["cann.toolkit.version"] == "9.1.0" and facts["cann.compiler.version"] == "9.1.0.1.100"


def test_port_ranges_and_hccl_ports_in_use():
    import socket

    assert network.parse_port_ranges("32768\t60999") == [[32768, 60999]]
    assert network.parse_port_ranges("8118,60000-60031") == [[8118, 8118], [60000, 60031]]
    assert network.parse_port_ranges("") == []
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        facts = network.collect_hccl_ports(Path("/"), {"HCCL_IF_BASE_PORT": str(port)})
    finally:
        s.close()
    assert facts["net.hccl_ports"]["base"] == port and port in facts["net.hccl_ports"]["in_use"]
    assert network.collect_hccl_ports(ROOTS / "good", {})["net.hccl_ports"]["in_use"] is None  # never probed for a root
