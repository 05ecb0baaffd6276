"""Rank-table facts (``hccl.json``, schema 1.0 and 1.2; shared/faults.md §3.2).

The collector reads the file and normalises it without judging: values are kept as written (the
schema wants JSON strings; a check decides what is wrong). A file that is not JSON, or JSON that is
not a rank table, becomes the fact ``ranktable.error`` — a finding, never a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError
from msdoctor.facts.system import under
from msdoctor.safeio import MiB, not_regular, read_input

FACTS = ("ranktable.status", "ranktable.version", "ranktable.server_count", "ranktable.servers",
         "ranktable.super_pods")  # fmt: skip
_COMMENT = re.compile(r"^\s*(//|/\*|#)", re.M)


def _s(v: Any) -> Any:
    """Scalars as written; containers reduced to a short text so the snapshot stays small."""
    return v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v)[:80]


def normalise(doc: Any) -> tuple[dict[str, Any], str | None]:
    """The parsed JSON → rank-table facts, or the reason it is not a rank table."""
    if not isinstance(doc, dict):
        return {}, f"top level is a JSON {type(doc).__name__}, expected an object with server_list"
    servers_raw = doc.get("server_list")
    if not isinstance(servers_raw, list):
        return {}, "no 'server_list' array: not an HCCL rank table"
    servers: list[dict[str, Any]] = []
    for i, s in enumerate(servers_raw):
        if not isinstance(s, dict):
            return {}, f"server_list[{i}] is not an object"
        devs_raw = s.get("device")
        devices: list[dict[str, Any]] = []
        if isinstance(devs_raw, list):
            for d in devs_raw:
                if isinstance(d, dict):
                    devices.append({k: _s(d.get(k)) for k in ("device_id", "rank_id", "device_ip", "super_device_id")})
                else:
                    devices.append({"device_id": None, "rank_id": None, "device_ip": None, "invalid": _s(d)})
        servers.append(
            {
                "index": i,
                "server_id": _s(s.get("server_id")),
                "host_ip": _s(s.get("host_ip")),
                "pod_ip": _s(s.get("pod_ip")),
                "device_list_ok": isinstance(devs_raw, list),
                "devices": devices,
            }
        )
    pods = doc.get("super_pod_list")
    super_pods: list[dict[str, Any]] | None = None
    if isinstance(pods, list):
        super_pods = [
            {
                "super_pod_id": _s(p.get("super_pod_id")),
                "server_ids": [_s(x.get("server_id")) for x in p.get("server_list", []) if isinstance(x, dict)],
            }
            for p in pods
            if isinstance(p, dict)
        ]
    values = {
        "ranktable.status": _s(doc.get("status")),
        "ranktable.version": _s(doc.get("version")),
        "ranktable.server_count": _s(doc.get("server_count")),
        "ranktable.servers": servers,
        "ranktable.super_pods": super_pods,
    }
    return values, None


def collect_ranktable(root: Path, path: str | None, environ: Mapping[str, str]) -> Facts:
    """From ``--rank-table`` (a missing file is bad usage → exit 2) or ``RANK_TABLE_FILE``."""
    facts = Facts()
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise InputError(f"{p}: no such rank table")
        if p.is_dir():
            raise InputError(f"{p}: is a directory, expected a rank table JSON file")
        origin = "--rank-table"
    else:
        env_path = environ.get("RANK_TABLE_FILE") or environ.get("MINDSPORE_HCCL_CONFIG_PATH")
        if not env_path:
            reason = "no rank table: neither --rank-table nor RANK_TABLE_FILE (msrun dynamic cluster needs none)"
            facts.unknown("ranktable.path", reason, "")
            facts.unknown("ranktable.error", reason, "")
            for name in FACTS:
                facts.unknown(name, reason, "")
            return facts
        # The variable names a path on the target node: look under --root first.
        p = under(root, env_path) if Path(env_path).is_absolute() else Path(env_path)
        origin = "RANK_TABLE_FILE"
    facts.set("ranktable.path", str(p), origin)
    error: str | None = None
    values: dict[str, Any] = {}
    why = not_regular(p)
    text = ""
    if why == "no such file":
        error = f"{origin}={p}: no such file"
    elif why:
        error = f"{origin}={p}: {why}"
    else:
        try:
            text = read_input(p, origin, cap=64 * MiB).decode("utf-8")
        except InputError as exc:
            error = str(exc)
        except UnicodeDecodeError:
            error = f"{p}: not UTF-8 text (binary file?)"
    if error is None:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = " — it contains comments, which JSON (and HCCL) reject" if _COMMENT.search(text) else ""
            error = f"{p}: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}){hint}"
        except (ValueError, RecursionError) as exc:  # a 5,000-digit integer; nesting past the stack
            error = f"{p}: not a rank table JSON HCCL can read ({type(exc).__name__}: {str(exc)[:120]})"
        else:
            values, error = normalise(doc)
            if error:
                error = f"{p}: {error}"
    facts.set("ranktable.error", error, str(p))
    for name in FACTS:
        if error:
            facts.unknown(name, "rank table unreadable (see RT101)", str(p))
        else:
            facts.set(name, values[name], str(p))
    return facts
