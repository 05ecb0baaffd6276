"""Preflight checks of HCCL variables, the msrun master port and host firewall rules."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from msdoctor.checks.env import differing
from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params


def _env(facts: Facts) -> dict[str, str]:
    env: dict[str, str] = facts.need("env.vars")
    return env


def _var(env: Mapping[str, str], k: str) -> Evidence:
    return Evidence(text=f"{k}={env[k]!r}" if k in env else f"{k} unset", fact="env.vars")


def _num(v: str) -> int | None:
    return int(v) if re.fullmatch(r"\s*-?\d{1,18}\s*", v) else None


@check_params(max=int | None, min=int | None)
def connect_timeout(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM101: HCCL_CONNECT_TIMEOUT not an integer in [120, 7200] s."""
    env = _env(facts)
    if "HCCL_CONNECT_TIMEOUT" not in env:
        return  # unset: CANN default 120 s, and MindSpore 2.10 sets 600 at import (context.py)
    lo, hi = int(params.get("min", 120)), int(params.get("max", 7200))
    v = _num(env["HCCL_CONNECT_TIMEOUT"])
    if v is None or not lo <= v <= hi:
        yield Hit(
            message=f"HCCL_CONNECT_TIMEOUT={env['HCCL_CONNECT_TIMEOUT']!r} is outside [{lo}, {hi}] s: HCCL rejects it "
            "at communicator init (EI0001) — set a value in range, or unset it (MindSpore 2.10 then uses 600)",
            evidence=(_var(env, "HCCL_CONNECT_TIMEOUT"),),
            data={"value": env["HCCL_CONNECT_TIMEOUT"], "min": lo, "max": hi},
        )


@check_params(choices=dict | None, ranges=dict | None)
def hccl_ranges(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM102: an HCCL variable outside its documented range / value set."""
    env = _env(facts)
    ranges: Mapping[str, Any] = params.get("ranges", {})
    choices: Mapping[str, Any] = params.get("choices", {})
    for name, (lo, hi) in ranges.items():
        if name in env:
            v = _num(env[name])
            if v is None or v < lo or (hi is not None and hi >= 0 and v > hi):
                bound = f"[{lo}, {hi}]" if hi is not None and hi >= 0 else f">= {lo}"
                yield Hit(message=f"{name}={env[name]!r} is outside {bound}", evidence=(_var(env, name),),
                          data={"variable": name, "value": env[name]})  # fmt: skip
    for name, allowed in choices.items():
        if name in env and env[name] not in allowed:
            yield Hit(message=f"{name}={env[name]!r} must be one of {', '.join(allowed)}", evidence=(_var(env, name),),
                      data={"variable": name, "value": env[name]})  # fmt: skip
    tc = env.get("HCCL_RDMA_TC")
    tc_n = _num(tc) if tc is not None else None
    if tc is not None and (tc_n is None or tc_n % 4 != 0 or not 0 <= tc_n <= 255):
        yield Hit(message=f"HCCL_RDMA_TC={tc!r} must be a multiple of 4 in [0, 255]", evidence=(_var(env, "HCCL_RDMA_TC"),))
    if env.get("HCCL_INTRA_PCIE_ENABLE") == "1" and env.get("HCCL_INTRA_ROCE_ENABLE") == "1":
        yield Hit(message="HCCL_INTRA_PCIE_ENABLE and HCCL_INTRA_ROCE_ENABLE cannot both be 1",
                  evidence=(_var(env, "HCCL_INTRA_PCIE_ENABLE"), _var(env, "HCCL_INTRA_ROCE_ENABLE")))  # fmt: skip


@check_params()
def whitelist(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM103: the trust list is enabled (HCCL_WHITELIST_DISABLE=0) without HCCL_WHITELIST_FILE."""
    env = _env(facts)
    if env.get("HCCL_WHITELIST_DISABLE") == "0" and not env.get("HCCL_WHITELIST_FILE"):
        yield Hit(message="HCCL_WHITELIST_DISABLE=0 enables the trust list, but HCCL_WHITELIST_FILE is not set",
                  evidence=(_var(env, "HCCL_WHITELIST_DISABLE"), _var(env, "HCCL_WHITELIST_FILE")))  # fmt: skip


@check_params(known=list | None)
def unknown_hccl(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM104 (info): an HCCL_* variable that is not in the CANN variable reference."""
    env = _env(facts)
    known = set(params.get("known", ()))
    for name in sorted(k for k in env if k.startswith("HCCL_") and k not in known):
        yield Hit(message=f"{name} is not an HCCL variable of the CANN reference: it has no effect that can be verified",
                  evidence=(_var(env, name),), data={"variable": name})  # fmt: skip


@check_params()
def master_port(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM105: the msrun master port is taken on this host."""
    p: dict[str, Any] = facts.need("net.master_port")
    if p.get("error") == "out of range":
        yield Hit(message=f"master port {p['port']} is not a TCP port (1024–65535)",
                  evidence=(Evidence(text=str(p), fact="net.master_port"),))  # fmt: skip
        return
    if p.get("bindable") is None:
        raise Missing("net.master_port", "port not probed")
    if not p["bindable"]:
        what = "something is listening on it" if p.get("listening") else p.get("error") or "bind failed"
        yield Hit(
            message=f"master port {p['port']} cannot be bound here ({what}): if this node runs the msrun scheduler, "
            "pick another --master_port; if the scheduler already runs here, this is it",
            evidence=(Evidence(text=f"port {p['port']}: bindable={p['bindable']} listening={p.get('listening')} "
                               f"({facts.source('net.master_port')})", fact="net.master_port"),),  # fmt: skip
            data={"port": p["port"], "listening": p.get("listening")},
        )


def _covers(rule: dict[str, Any], port: int, proto: str) -> bool:
    if rule.get("proto", "all") not in (proto, "all"):
        return False
    return any(lo <= port <= hi for lo, hi in rule.get("ports", []))


def _is_input(rule: dict[str, Any]) -> bool:
    return "input" in str(rule.get("chain", "")).lower() or rule.get("hook") == "input"


def firewall_verdict(fw: dict[str, Any], port: int, proto: str) -> tuple[str, dict[str, Any]] | None:
    """Whether ``proto/port`` is dropped: each rules file is its own table (a packet must pass all
    of them); inside one, the first input rule that covers the port decides, else the input policy.
    """
    files = list(dict.fromkeys([r["file"] for r in fw.get("rules", [])] + [p["file"] for p in fw.get("policies", [])]
                               + list(fw.get("files", []))))  # fmt: skip
    ufw = fw.get("ufw") or {}
    for file in files:
        first = next((r for r in fw.get("rules", []) if r["file"] == file and _is_input(r) and _covers(r, port, proto)), None)
        if first is not None:
            if first["action"] in ("drop", "reject"):
                return first["action"], first
            continue
        if "/ufw/" in file and ufw.get("enabled") and ufw.get("default_input_policy") in ("drop", "reject"):
            pol = ufw["default_input_policy"].upper()
            return "policy", {"file": ufw.get("file"), "line": None, "text": f'DEFAULT_INPUT_POLICY="{pol}" and no ufw rule allows it'}
        for pol in fw.get("policies", []):
            if pol["file"] == file and (pol.get("chain") == "INPUT" or pol.get("hook") == "input") and pol["policy"] in ("drop", "reject"):
                return "policy", pol
    return None


@check_params(port=int | None)
def roce_firewall(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM106: a host firewall rule drops UDP 4791 (RoCEv2)."""
    fw: dict[str, Any] = facts.need("net.firewall")
    port = int(params.get("port", 4791))
    verdict = firewall_verdict(fw, port, "udp")
    if verdict:
        kind, rule = verdict
        how = "an explicit rule" if kind != "policy" else "the default input policy with no rule accepting it"
        yield Hit(message=f"UDP {port} (RoCEv2) is dropped by {how}",
                  evidence=(Evidence(text=rule["text"], file=rule.get("file"), line=rule.get("line")),),
                  data={"port": port, "proto": "udp"})  # fmt: skip


@check_params(default_master_port=int | None, hccl_base_port=int | None, hccl_port_count=int | None)
def control_ports_firewall(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM107: the firewall drops the msrun master port or HCCL's host ports (TCP)."""
    fw: dict[str, Any] = facts.need("net.firewall")
    env = facts.get_known("env.vars") or {}
    mp = facts.get_known("net.master_port") or {}
    master = int(mp.get("port") or params.get("default_master_port", 8118))
    base = _num(env.get("HCCL_IF_BASE_PORT", "")) if env.get("HCCL_IF_BASE_PORT") else None
    base = base if base is not None else int(params.get("hccl_base_port", 60000))
    ports = [(master, "msrun master port")] + [(base + i, "HCCL host port") for i in range(int(params.get("hccl_port_count", 32)))]
    seen: set[tuple[str, int | None]] = set()
    for port, what in ports:
        verdict = firewall_verdict(fw, port, "tcp")
        if not verdict:
            continue
        rule = verdict[1]
        key = (str(rule.get("file")), rule.get("line"))
        if key in seen:
            continue
        seen.add(key)
        yield Hit(message=f"TCP {port} ({what}) is dropped by the host firewall",
                  evidence=(Evidence(text=rule["text"], file=rule.get("file"), line=rule.get("line")),),
                  data={"port": port, "what": what})  # fmt: skip


@check_params(prefixes=list | None)
def launch_vars_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM108: variables that must be identical on every node differ between snapshots."""
    prefixes = tuple(params.get("prefixes", ("env.vars.HCCL_", "env.vars.MS_SCHED_", "env.vars.MS_WORKER_NUM")))
    for name, per in differing(facts, prefixes):
        yield Hit(message=f"{name.removeprefix('env.vars.')} differs across nodes: " + ", ".join(f"{n}={v}" for n, v in per.items()),
                  evidence=tuple(Evidence(text=f"{n}: {v}", fact=name) for n, v in per.items()),
                  data={"fact": name, "values": per})  # fmt: skip


@check_params()
def hccl_host_ports(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """COMM110: HCCL's host ports are taken, or unreserved inside the kernel's ephemeral range."""
    if facts.need("cann.installed") is False:
        raise Missing("cann.installed", "CANN not installed: HCCL does not run on this node")
    ports: dict[str, Any] = facts.need("net.hccl_ports")
    base, count = int(ports["base"]), int(ports["count"])
    span = f"{base}-{base + count - 1}"
    if ports.get("in_use"):
        yield Hit(message=f"HCCL host port(s) {ports['in_use']} (of {span}) are already taken on this host",
                  evidence=(Evidence(text=str(ports), fact="net.hccl_ports"),), data={"in_use": ports["in_use"]})  # fmt: skip
    eph: list[list[int]] = facts.need("net.ephemeral_ports")
    reserved: list[list[int]] = facts.get_known("net.reserved_ports") or []
    exposed = [p for p in range(base, base + count)
               if any(lo <= p <= hi for lo, hi in eph) and not any(lo <= p <= hi for lo, hi in reserved)]  # fmt: skip
    if exposed:
        e = ", ".join(f"{lo}-{hi}" for lo, hi in eph)
        yield Hit(
            message=f"HCCL host ports {span} lie in the kernel's ephemeral range {e} and are not reserved: any outgoing "
            f"connection can take one before HCCL binds it — `sysctl -w net.ipv4.ip_local_reserved_ports={span}`",
            evidence=(Evidence(text=e, fact="net.ephemeral_ports"),
                      Evidence(text=str(reserved or "none"), fact="net.reserved_ports")),  # fmt: skip
            data={"exposed": [exposed[0], exposed[-1]], "span": span},
        )
