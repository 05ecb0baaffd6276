"""Static validation of an HCCL rank table (shared/faults.md §3.2, checks 1–9).

Each hit names the offending server (``server_list[i]`` and its ``server_id``), device and rank.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params


def _where(s: dict[str, Any], d: dict[str, Any] | None = None) -> str:
    w = f"server_list[{s['index']}] (server_id {s.get('server_id')!r})"
    if d is not None:
        w += f" device_id {d.get('device_id')!r} rank_id {d.get('rank_id')!r}"
    return w


def _ev(text: str, facts: Facts, name: str = "ranktable.servers") -> Evidence:
    path = facts.get_known("ranktable.path")
    return Evidence(text=text, file=path) if path else Evidence(text=text, fact=name)


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"\d{1,18}", v.strip()):  # longer is no id HCCL can hold
        return int(v)
    return None


def _servers(facts: Facts) -> list[dict[str, Any]]:
    servers: list[dict[str, Any]] = facts.need("ranktable.servers")
    return servers


def _devices(facts: Facts) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(s, d) for s in _servers(facts) for d in s["devices"]]


@check_params()
def readable(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT101: the rank table is not JSON (comments, truncation) or not a rank table at all."""
    error = facts.need("ranktable.error")
    if error:
        yield Hit(message=str(error), evidence=(Evidence(text=str(error), file=facts.get_known("ranktable.path")),))


@check_params()
def status_version(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT102: status must be "completed"; version "1.0" or "1.2" (1.2 iff SuperPoD fields)."""
    status, version = facts.need("ranktable.status"), facts.need("ranktable.version")
    pods = facts.need("ranktable.super_pods")
    if status != "completed":
        shown = "missing" if status is None else repr(status)
        yield Hit(
            message=f"status is {shown}: HCCL only uses a table whose status is \"completed\""
            + (" (\"initializing\" = the cluster manager has not finished writing it)" if status == "initializing" else ""),
            evidence=(_ev(f'"status": {shown}', facts, "ranktable.status"),),
        )
    if version not in ("1.0", "1.2"):
        shown = "missing" if version is None else repr(version)
        yield Hit(message=f"version is {shown}, expected \"1.0\" (or \"1.2\" for Atlas A3 SuperPoD)",
                  evidence=(_ev(f'"version": {shown}', facts, "ranktable.version"),))  # fmt: skip
    has_super = pods is not None or any(d.get("super_device_id") is not None for _, d in _devices(facts))
    if version == "1.0" and has_super:
        yield Hit(message="version \"1.0\" but the table has SuperPoD fields (super_pod_list / super_device_id): use \"1.2\"",
                  evidence=(_ev('"version": "1.0"', facts, "ranktable.version"),))  # fmt: skip
    if version == "1.2" and not has_super:
        yield Hit(message="version \"1.2\" (SuperPoD) but no super_pod_list / super_device_id",
                  evidence=(_ev('"version": "1.2"', facts, "ranktable.version"),))  # fmt: skip


@check_params()
def server_count(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT103: server_count must equal the number of entries in server_list."""
    raw = facts.need("ranktable.server_count")
    n = len(_servers(facts))
    if _int(raw) != n:
        shown = "missing" if raw is None else repr(raw)
        yield Hit(message=f"server_count is {shown} but server_list has {n} server(s)",
                  evidence=(_ev(f'"server_count": {shown}; len(server_list) = {n}', facts, "ranktable.server_count"),),
                  data={"server_count": raw, "servers": n})  # fmt: skip


@check_params(max_len=int | None)
def server_ids(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT104: server_id missing, duplicated, or 64 characters and longer."""
    servers = _servers(facts)
    counts = Counter(s.get("server_id") for s in servers)
    for s in servers:
        sid = s.get("server_id")
        if not isinstance(sid, str) or not sid:
            yield Hit(message=f"{_where(s)}: server_id missing or not a string", evidence=(_ev(_where(s), facts),))
        elif len(sid) >= int(params.get("max_len", 64)):
            yield Hit(message=f"{_where(s)}: server_id is {len(sid)} characters (must be < 64)", evidence=(_ev(_where(s), facts),))
    for sid, c in counts.items():
        if sid and c > 1:
            idx = [s["index"] for s in servers if s.get("server_id") == sid]
            yield Hit(message=f"server_id {sid!r} is used by {c} servers: server_list{idx}",
                      evidence=(_ev(f"server_id {sid!r} at server_list{idx}", facts),), data={"server_id": sid, "servers": idx})  # fmt: skip


@check_params()
def server_id_ip(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT105 (info): server_id is a hostname, not an IP (valid, but not what MindCluster writes)."""
    for s in _servers(facts):
        sid = s.get("server_id")
        if not isinstance(sid, str) or not sid:
            continue
        try:
            ipaddress.ip_address(sid)
        except ValueError:
            yield Hit(message=f"{_where(s)}: server_id {sid!r} is not an IP address (allowed by the schema; "
                      "cluster tools write the node IP, and msrun's rank re-assignment matches `pod_ip`)",
                      evidence=(_ev(_where(s), facts),), data={"server_id": sid})  # fmt: skip


@check_params(max_devices_per_server=int | None)
def device_ids(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT106: device_id missing, not an integer, duplicated on a server, or out of range."""
    local = facts.get_known("ascend.devices") or []
    limit = len(local) if local else int(params.get("max_devices_per_server", 16))
    bound = f"this node has {len(local)} /dev/davinci devices" if local else f"at most {limit} devices per server"
    for s in _servers(facts):
        if not s.get("device_list_ok"):
            yield Hit(message=f"{_where(s)}: no 'device' array", evidence=(_ev(_where(s), facts),))
            continue
        ids = [_int(d.get("device_id")) for d in s["devices"]]
        for d, i in zip(s["devices"], ids, strict=True):
            if i is None:
                yield Hit(message=f"{_where(s, d)}: device_id is not a non-negative integer", evidence=(_ev(_where(s, d), facts),))
            elif i >= limit:
                yield Hit(message=f"{_where(s, d)}: device_id {i} out of range [0, {limit}) ({bound})",
                          evidence=(_ev(_where(s, d), facts),), rank=_int(d.get("rank_id")))  # fmt: skip
        for i, c in Counter(x for x in ids if x is not None).items():
            if c > 1:
                yield Hit(message=f"{_where(s)}: device_id {i} appears {c} times on the same server",
                          evidence=(_ev(_where(s), facts),), data={"device_id": i})  # fmt: skip


@check_params()
def rank_ids(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT107: rank_id missing, duplicated, or not 0…N−1 without gaps."""
    devs = _devices(facts)
    n = len(devs)
    where: dict[int, list[str]] = {}
    for s, d in devs:
        r = _int(d.get("rank_id"))
        if r is None:
            yield Hit(message=f"{_where(s, d)}: rank_id missing or not a non-negative integer", evidence=(_ev(_where(s, d), facts),))
            continue
        where.setdefault(r, []).append(_where(s, d))
        if r >= n:
            yield Hit(message=f"{_where(s, d)}: rank_id {r} out of range [0, {n}) ({n} devices in the table)",
                      evidence=(_ev(_where(s, d), facts),), rank=r)  # fmt: skip
    for r, places in sorted(where.items()):
        if len(places) > 1:
            yield Hit(message=f"rank_id {r} is used {len(places)} times: " + "; ".join(places),
                      evidence=tuple(_ev(p, facts) for p in places), rank=r)  # fmt: skip
    gaps = [r for r in range(n) if r not in where]
    if gaps and where:
        yield Hit(message=f"rank_id must cover 0…{n - 1} without gaps; missing {gaps}",
                  evidence=(_ev(f"rank_ids present: {sorted(where)}", facts),), data={"missing": gaps})  # fmt: skip


@check_params()
def device_ips(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT108: device_ip missing (multi-server), invalid, duplicated, or IPv4 mixed with IPv6."""
    servers = _servers(facts)
    multi = len(servers) > 1
    seen: dict[str, list[str]] = {}
    families: dict[int, list[str]] = {}
    for s, d in _devices(facts):
        ip = d.get("device_ip")
        if ip in (None, ""):
            if multi:
                yield Hit(message=f"{_where(s, d)}: device_ip missing (required when the table has several servers)",
                          evidence=(_ev(_where(s, d), facts),), rank=_int(d.get("rank_id")))  # fmt: skip
            continue
        try:
            addr = ipaddress.ip_address(str(ip))
        except ValueError:
            yield Hit(message=f"{_where(s, d)}: device_ip {ip!r} is not an IP address",
                      evidence=(_ev(_where(s, d), facts),), rank=_int(d.get("rank_id")))  # fmt: skip
            continue
        seen.setdefault(str(addr), []).append(_where(s, d))
        families.setdefault(addr.version, []).append(_where(s, d))
    for ip, places in seen.items():
        if len(places) > 1:
            yield Hit(message=f"device_ip {ip} is used {len(places)} times: " + "; ".join(places),
                      evidence=tuple(_ev(p, facts) for p in places), data={"device_ip": ip})  # fmt: skip
    if len(families) > 1:
        minority = min(families.values(), key=len)
        yield Hit(message=f"device_ip mixes IPv4 and IPv6 (HCCL: 'RankIpFamily … is not same with others'); e.g. {minority[0]}",
                  evidence=tuple(_ev(p, facts) for p in minority[:5]))  # fmt: skip


@check_params()
def rank_size(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT109: RANK_SIZE differs from the number of devices in the rank table."""
    env: dict[str, str] = facts.need("env.vars")
    n = len(_devices(facts))
    if "RANK_SIZE" not in env:
        raise Missing("env.vars", "RANK_SIZE not set in the launch environment")
    size = _int(env["RANK_SIZE"])
    if size != n:
        yield Hit(message=f"RANK_SIZE={env['RANK_SIZE']!r} but the rank table lists {n} device(s)",
                  evidence=(Evidence(text=f"RANK_SIZE={env['RANK_SIZE']!r}", fact="env.vars"),
                            _ev(f"{n} devices in server_list", facts)),
                  data={"rank_size": env["RANK_SIZE"], "devices": n})  # fmt: skip


@check_params()
def super_pods(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT110: super_pod_list names a server_id that is not in server_list (schema 1.2)."""
    pods = facts.need("ranktable.super_pods")
    if pods is None:
        return  # a schema 1.0 table has no super_pod_list to reference anything
    known = {s.get("server_id") for s in _servers(facts)}
    for p in pods:
        for sid in p["server_ids"]:
            if sid not in known:
                yield Hit(message=f"super_pod {p['super_pod_id']!r} lists server_id {sid!r}, which is not in server_list",
                          evidence=(_ev(f"super_pod_list: super_pod_id {p['super_pod_id']!r} server_id {sid!r}", facts),))  # fmt: skip


@check_params()
def visible_devices(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """RT111: the NPUs visible to the process (ASCEND_RT_VISIBLE_DEVICES) do not match the table."""
    from msdoctor.checks.env import parse_visible

    env: dict[str, str] = facts.need("env.vars")
    raw = env.get("ASCEND_RT_VISIBLE_DEVICES")
    if raw is None:
        raise Missing("env.vars", "ASCEND_RT_VISIBLE_DEVICES not set (all NPUs visible)")
    visible = parse_visible(raw)
    ev = Evidence(text=f"ASCEND_RT_VISIBLE_DEVICES={raw!r}", fact="env.vars")
    if visible is None or len(set(visible)) != len(visible):
        yield Hit(message=f"ASCEND_RT_VISIBLE_DEVICES={raw!r} is not a comma-separated list of distinct NPU ids", evidence=(ev,))
        return
    local = facts.get_known("ascend.devices") or []
    absent = [v for v in visible if local and v not in local]
    if absent:
        yield Hit(message=f"ASCEND_RT_VISIBLE_DEVICES names NPU(s) {absent} that this node does not have "
                  f"(/dev/davinci{{{','.join(map(str, local))}}})", evidence=(ev,))  # fmt: skip
    counts = {s["server_id"]: len(s["devices"]) for s in _servers(facts)}
    if counts and len(visible) not in counts.values():
        shown = ", ".join(f"{k}: {v}" for k, v in counts.items())
        yield Hit(message=f"{len(visible)} NPU(s) visible to the process but every server of the rank table lists "
                  f"another number of devices ({shown})", evidence=(ev, _ev(f"devices per server: {shown}", facts)),
                  data={"visible": visible, "per_server": counts})  # fmt: skip
