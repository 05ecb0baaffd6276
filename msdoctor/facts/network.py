"""Network facts: the msrun master port on this host, HCCL host ports, and firewall rules files.

The port probes are of the live host (a bind with ``SO_REUSEADDR`` fails only when a socket is
listening, like msrun's scheduler would; a connect on loopback says whether something answers).
Firewall rules are parsed from the files the usual tools persist (``ufw``, ``nftables``,
``iptables-save``) under ``root``; reading the live kernel tables needs root privileges and a
subprocess, so without such a file the firewall is *not evaluated*.
"""

from __future__ import annotations

import errno
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.facts.system import under

DEFAULT_MASTER_PORT = 8118  # msrun --master_port default (mindspore/parallel/cluster/run.py, 2.10)
FIREWALL_FILES = (
    "etc/ufw/user.rules", "etc/ufw/user6.rules", "etc/nftables.conf", "etc/iptables/rules.v4",
    "etc/iptables/rules.v6", "etc/sysconfig/iptables",
)  # fmt: skip
_IPT_POLICY = re.compile(r"^:(\S+)\s+(ACCEPT|DROP|REJECT)\b")
_NFT_RULE = re.compile(r"\b(tcp|udp)\s+dport\s+(\{[^}]*\}|\S+)(.*?)\b(accept|drop|reject)\b")
_NFT_CHAIN = re.compile(r"^\s*chain\s+(\S+)\s*\{")
_NFT_POLICY = re.compile(r"hook\s+(\w+)\b.*?policy\s+(accept|drop)")


def probe_port(port: int, host: str = "127.0.0.1") -> dict[str, Any]:
    """Can a server bind ``port`` here, and does anything answer on loopback?"""
    out: dict[str, Any] = {"port": port, "bindable": None, "listening": None, "error": None}
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        out["bindable"] = True
    except OSError as exc:
        out["bindable"] = False
        out["error"] = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
    finally:
        s.close()
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.settimeout(0.2)
    try:
        out["listening"] = c.connect_ex((host, port)) == 0
    except OSError:
        out["listening"] = False
    finally:
        c.close()
    return out


def _ports(spec: str) -> list[list[int]]:
    """``4791`` / ``4000:5000`` / ``4000-5000`` / ``{ 4791, 8118 }`` / ``4791,8118`` → ranges."""
    out: list[list[int]] = []
    for part in re.split(r"[,\s{}]+", spec):
        m = re.fullmatch(r"(\d{1,9})(?:[:-](\d{1,9}))?", part)  # no port has more digits
        if m:
            lo = int(m.group(1))
            out.append([lo, int(m.group(2) or lo)])
    return out


def parse_iptables(text: str, file: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """iptables-save syntax (also ufw's user.rules): rules with ports, and chain policies."""
    rules: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = _IPT_POLICY.match(s)
        if m:
            policies.append({"file": file, "line": n, "chain": m.group(1), "policy": m.group(2).lower(), "text": s})
            continue
        if not s.startswith(("-A ", "-I ")):
            continue
        tok = s.split()
        opt = {tok[i]: tok[i + 1] for i in range(len(tok) - 1) if tok[i].startswith("-")}
        action = opt.get("-j", "").lower()
        spec = opt.get("--dport") or opt.get("--dports") or opt.get("--destination-port")
        if action not in ("accept", "drop", "reject") or spec is None:
            continue
        rules.append({
            "file": file, "line": n, "chain": opt.get("-A") or opt.get("-I"), "proto": opt.get("-p", "all"),
            "ports": _ports(spec), "action": action, "text": s,
        })  # fmt: skip
    return rules, policies


def parse_nft(text: str, file: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rules: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    chain = ""
    hooks: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        m = _NFT_CHAIN.match(s)
        if m:
            chain = m.group(1)
            continue
        m = _NFT_POLICY.search(s)
        if m:
            hooks[chain] = m.group(1)
            policies.append({"file": file, "line": n, "chain": chain, "hook": m.group(1), "policy": m.group(2), "text": s})
        elif "hook" in s and (h := re.search(r"hook\s+(\w+)", s)):
            hooks[chain] = h.group(1)
        for r in _NFT_RULE.finditer(s):
            rules.append({
                "file": file, "line": n, "chain": chain, "hook": hooks.get(chain), "proto": r.group(1),
                "ports": _ports(r.group(2)), "action": r.group(4), "text": s,
            })  # fmt: skip
    return rules, policies


def _kv(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and not k.strip().startswith("#"):
            out[k.strip()] = v.strip().strip('"')
    return out


def collect_firewall(root: Path) -> Facts:
    facts = Facts()
    read: list[str] = []
    unreadable: list[str] = []
    rules: list[dict[str, Any]] = []
    policies: list[dict[str, Any]] = []
    for rel in FIREWALL_FILES:
        path = under(root, rel)
        if not path.exists():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
            continue
        read.append(str(path))
        r, p = parse_nft(text, str(path)) if rel.endswith("nftables.conf") else parse_iptables(text, str(path))
        rules.extend(r)
        policies.extend(p)
    ufw: dict[str, Any] | None = None
    conf, default = under(root, "etc/ufw/ufw.conf"), under(root, "etc/default/ufw")
    if conf.exists() or default.exists():
        try:
            enabled = _kv(conf.read_text(encoding="utf-8", errors="replace")).get("ENABLED") if conf.exists() else None
            pol = _kv(default.read_text(encoding="utf-8", errors="replace")).get("DEFAULT_INPUT_POLICY") if default.exists() else None
            ufw = {"enabled": None if enabled is None else enabled.lower() == "yes",
                   "default_input_policy": pol.lower() if pol else None, "file": str(default)}  # fmt: skip
        except OSError as exc:
            unreadable.append(f"{conf}: {exc.strerror or exc}")
    if not read and ufw is None:
        why = "; ".join(unreadable) if unreadable else "no " + ", ".join("/" + f for f in FIREWALL_FILES) + f" under {root}"
        facts.unknown("net.firewall", f"{why} (live kernel rules need root and are not read)", str(root))
        return facts
    facts.set(
        "net.firewall",
        {"files": read, "unreadable": unreadable, "rules": rules, "policies": policies, "ufw": ufw},
        ", ".join(read) or str(default),
    )
    return facts


HCCL_BASE_PORT = 60000  # HCCL_IF_BASE_PORT default (faults.md §3.1)
HCCL_PORT_COUNT = 32  # ports used from the base in CANN >= 8.2.RC1 docs (16 in older docs)


def parse_port_ranges(text: str) -> list[list[int]]:
    """``ip_local_port_range`` ("32768\t60999") or ``ip_local_reserved_ports`` ("8118,60000-60031")."""
    parts = text.split()
    if len(parts) == 2 and all(p.isdigit() and len(p) < 10 for p in parts):
        return [[int(parts[0]), int(parts[1])]]
    return _ports(text.replace("\n", ","))


def collect_sysctl_ports(root: Path) -> Facts:
    """The kernel's ephemeral port range and reserved ports (read under ``root``)."""
    facts = Facts()
    for name, rel in (("net.ephemeral_ports", "proc/sys/net/ipv4/ip_local_port_range"),
                      ("net.reserved_ports", "proc/sys/net/ipv4/ip_local_reserved_ports")):  # fmt: skip
        path = under(root, rel)
        try:
            facts.set(name, parse_port_ranges(path.read_text(encoding="utf-8", errors="replace").strip()), str(path))
        except OSError as exc:
            facts.unknown(name, f"{path}: {exc.strerror or exc}", str(path))
    return facts


def collect_hccl_ports(root: Path, environ: Mapping[str, str]) -> Facts:
    """Which of HCCL's host ports (HCCL_IF_BASE_PORT … +31) are taken on the live host."""
    facts = Facts()
    raw = environ.get("HCCL_IF_BASE_PORT", "")
    base = int(raw) if raw.isdigit() and len(raw) < 10 and 0 < int(raw) <= 65535 - HCCL_PORT_COUNT else HCCL_BASE_PORT
    info: dict[str, Any] = {"base": base, "count": HCCL_PORT_COUNT, "in_use": None}
    if root.resolve() == Path("/"):
        in_use = []
        for port in range(base, base + HCCL_PORT_COUNT):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("0.0.0.0", port))
            except OSError:
                in_use.append(port)
            finally:
                s.close()
        info["in_use"] = in_use
    src = "HCCL_IF_BASE_PORT" if raw else "HCCL_IF_BASE_PORT default 60000"
    facts.set("net.hccl_ports", info, src + (" (probed on the live host)" if info["in_use"] is not None else ""))
    return facts


def collect_ports(environ: Mapping[str, str], master_port: int | None) -> Facts:
    facts = Facts()
    if master_port is not None:
        port, src = master_port, "--master-port"
    elif environ.get("MS_SCHED_PORT", "").isdigit() and len(environ["MS_SCHED_PORT"]) < 10:
        port, src = int(environ["MS_SCHED_PORT"]), "env MS_SCHED_PORT"
    else:
        port, src = DEFAULT_MASTER_PORT, "msrun default --master_port"
    if not 0 < port < 65536:
        facts.set("net.master_port", {"port": port, "bindable": None, "listening": None, "error": "out of range"}, src)
        return facts
    facts.set("net.master_port", probe_port(port), f"{src} (probed on the live host)")
    return facts
