"""Preflight checks over the environment facts: versions, CANN, launch variables, host limits.

Pure functions of the facts (``facts.need`` raises ``Missing`` → the rule is *not evaluated*). The
compatibility matrix is reference knowledge, not an observation, so it is loaded from the package
data ``msdoctor/data/compat.toml`` rather than collected.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params

# -- versions -----------------------------------------------------------------------------------


def vtuple(v: str) -> tuple[int, ...]:
    """The leading numeric release of a version (``"8.0.RC2"`` → (8, 0); ``"2.10.0"`` → (2, 10, 0))."""
    parts: list[int] = []
    for p in str(v).split("."):
        m = re.match(r"\d{1,18}", p)  # a longer run of digits is no version part (and int() refuses 4,300+)
        if not m:
            break
        parts.append(int(m.group()))
        if m.group() != p:
            break
    return tuple(parts)


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def satisfies(version: str, spec: str) -> bool:
    """A small PEP 440 subset (``>= <= < > == != ~=`` and ``==X.Y.*``), enough for Requires-Dist."""
    v = vtuple(version)
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = re.fullmatch(r"(~=|==|!=|>=|<=|>|<)\s*([\w.*+!-]+)", clause)
        if not m:
            continue  # an unparseable clause constrains nothing we can verify
        op, target = m.groups()
        if target.endswith(".*"):
            prefix = vtuple(target[:-2])
            same = v[: len(prefix)] == prefix
            if (op == "==" and not same) or (op == "!=" and same):
                return False
            continue
        c = _cmp(v, vtuple(target))
        ok = {
            "==": c == 0, "!=": c != 0, ">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0,
            "~=": c >= 0 and v[: len(vtuple(target)) - 1] == vtuple(target)[:-1],
        }[op]  # fmt: skip
        if not ok:
            return False
    return True


def major_minor(v: str) -> str:
    return ".".join(str(x) for x in vtuple(v)[:2])


@cache
def compat() -> dict[str, Any]:
    return tomllib.loads((resources.files("msdoctor.data") / "compat.toml").read_text(encoding="utf-8"))


def ms_entry(version: str) -> tuple[str, dict[str, Any]] | None:
    """The matrix row of a MindSpore version: exact ``X.Y.Z`` first, then ``X.Y``."""
    table = compat()["mindspore"]
    t = vtuple(version)
    for key in (".".join(map(str, t[:3])), ".".join(map(str, t[:2]))):
        if key in table:
            return key, table[key]
    return None


def cann_entry(marketing: str) -> tuple[str, dict[str, Any]] | None:
    table = compat()["cann"]
    if marketing in table:
        return marketing, table[marketing]
    mm = major_minor(marketing)
    return (mm, table[mm]) if mm in table else None


def _ev(facts: Facts, name: str, text: Any = None) -> Evidence:
    value = facts.get_known(name) if text is None else text
    src = facts.source(name)
    return Evidence(text=f"{value}" + (f"  (from {src})" if src else ""), fact=name)


def _mindspore(facts: Facts) -> str:
    v = facts.need("pkg.mindspore.version")
    if v is None:
        raise Missing("pkg.mindspore.version", "MindSpore is not installed")
    return str(v)


# -- CANN ---------------------------------------------------------------------------------------


def cann_internal(facts: Facts) -> tuple[str, str, str]:
    """(internal major.minor, marketing or "", fact used): version.info first, as MindSpore reads it."""
    marketing = facts.get_known("cann.toolkit.version") or ""
    if facts.is_known("cann.compiler.version"):
        return major_minor(facts["cann.compiler.version"]), marketing, "cann.compiler.version"
    if facts.is_known("cann.toolkit.internal"):
        return major_minor(facts["cann.toolkit.internal"]), marketing, "cann.toolkit.internal"
    facts.need("cann.compiler.version")  # raises Missing with the collector's reason
    raise AssertionError  # pragma: no cover


@check_params()
def cann_matches_mindspore(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV101: CANN's version.info major.minor is not in the list the MindSpore wheel accepts."""
    ms = _mindspore(facts)
    internal, marketing, used = cann_internal(facts)
    row = ms_entry(ms)
    if row is None or "accepted_cann" not in row[1]:
        raise Missing("compat.toml", f"no accepted-CANN list for MindSpore {ms} in msdoctor/data/compat.toml")
    key, entry = row
    accepted: list[str] = entry["accepted_cann"]
    if internal in accepted:
        return
    install = compat()["install"]
    want = [install.get(a, a) for a in accepted]
    pick = install.get("8.5", "8.5.0") if "8.5" in accepted else want[-1]
    others = sorted(
        k for k, e in compat()["mindspore"].items() if internal in e.get("accepted_cann", [])
    )
    shown = f"CANN {marketing} (internal {internal})" if marketing else f"CANN internal version {internal}"
    alt = f"; or keep this CANN and install MindSpore {' / '.join(others)}, which accepts {internal}" if others else ""
    yield Hit(
        message=(
            f"{shown} is not among the versions MindSpore {ms} accepts ({', '.join(accepted)}): install CANN "
            f"{pick} (accepted: {', '.join(want)}){alt}"
        ),
        evidence=(_ev(facts, "pkg.mindspore.version"), _ev(facts, used)) + (
            (_ev(facts, "cann.toolkit.version"),) if marketing else ()
        ),
        data={"mindspore": ms, "cann_internal": internal, "cann": marketing, "accepted": accepted,
              "install_cann": pick, "matrix_row": key},  # fmt: skip
    )


@check_params()
def cann_env_sourced(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV102: CANN is installed but set_env.sh was not sourced into the launch environment."""
    if facts.need("cann.installed") is False:
        raise Missing("cann.installed", "CANN not installed")
    flags: dict[str, bool] = facts.need("cann.env_sourced")
    missing = [k for k, ok in flags.items() if not ok]
    if facts.get_known("cann.ascend_home_exists") is False:
        home = facts.get_known("cann.ascend_home_path")
        yield Hit(
            message=f"ASCEND_HOME_PATH={home} does not exist on this node: MindSpore reads "
            "$ASCEND_HOME_PATH/compiler/version.info and skips its CANN version check when it is missing",
            evidence=(_ev(facts, "cann.ascend_home_path"), _ev(facts, "cann.ascend_home_exists")),
            data={"ascend_home_path": home},
        )
    if missing:
        tk = facts.get_known("cann.toolkit.path", "/usr/local/Ascend/ascend-toolkit/latest")
        yield Hit(
            message=f"set_env.sh not sourced: {', '.join(missing)} — MindSpore skips its CANN version check "
            f"and cannot find the driver/op libraries; run `source {tk.rsplit('/', 1)[0]}/set_env.sh` before launching",
            evidence=tuple(Evidence(text=f"{k}: {'yes' if ok else 'no'}", fact="cann.env_sourced") for k, ok in flags.items()),
            data={"missing": missing},
        )


@check_params()
def python_supported(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV103: the Python interpreter is outside the range MindSpore ships wheels for."""
    ms = _mindspore(facts)
    py = str(facts.need("host.python.version"))
    row = ms_entry(ms)
    spec = (row[1].get("python") if row else None) or facts.get_known("pkg.mindspore.requires_python")
    if not spec:
        raise Missing("pkg.mindspore.requires_python", f"no Python range known for MindSpore {ms}")
    if not satisfies(py, spec):
        note = row[1].get("python_note", "") if row else ""
        yield Hit(
            message=f"Python {py} is outside MindSpore {ms}'s supported range {spec}" + (f" ({note})" if note else ""),
            evidence=(_ev(facts, "host.python.version"), _ev(facts, "pkg.mindspore.version")),
            data={"python": py, "spec": spec},
        )


_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?([^;)]*)\)?\s*(?:;(.*))?$")


def parse_requirement(req: str) -> tuple[str, str, str] | None:
    m = _REQ.match(req)
    if not m:
        return None
    return re.sub(r"[-_.]+", "_", m.group(1)).lower(), m.group(2).strip(), (m.group(3) or "").strip()


@check_params()
def mindspore_requirements(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV104: an installed package violates the MindSpore wheel's own Requires-Dist (drift)."""
    ms = _mindspore(facts)
    reqs: list[str] = facts.need("pkg.mindspore.requires")
    installed: dict[str, str] = facts.need("pkg.installed")
    for req in reqs:
        parsed = parse_requirement(req)
        if parsed is None:
            continue
        name, spec, marker = parsed
        if "extra" in marker:  # optional extras are not installed by `pip install mindspore`
            continue
        have = installed.get(name)
        if have is None:
            yield Hit(
                message=f"{name} is required by MindSpore {ms} ({req}) but not installed",
                evidence=(Evidence(text=req, fact="pkg.mindspore.requires"),),
                data={"package": name, "required": spec, "installed": None},
            )
        elif spec and not satisfies(have, spec):
            yield Hit(
                message=f"{name} {have} does not satisfy MindSpore {ms}'s requirement {name}{spec}: "
                f"`pip install \"{name}{spec}\"`",
                evidence=(Evidence(text=req, fact="pkg.mindspore.requires"),
                          Evidence(text=f"{name} {have}", fact="pkg.installed")),  # fmt: skip
                data={"package": name, "required": spec, "installed": have},
            )
    row = ms_entry(ms)
    runtime: dict[str, str] = dict(row[1].get("runtime", {})) if row else {}
    for name, spec in runtime.items():
        if name.endswith("_note"):
            continue
        have = installed.get(name)
        if have is not None and not satisfies(have, spec):
            yield Hit(
                message=f"{name} {have} breaks MindSpore {ms} although its METADATA allows it: {runtime.get(name + '_note', '')}"
                f" — `pip install \"{name}{spec}\"`",
                evidence=(Evidence(text=f"{name} {have}", fact="pkg.installed"),
                          Evidence(text=f"msdoctor/data/compat.toml [mindspore.\"{row[0] if row else ms}\".runtime] {name} = \"{spec}\""),),  # fmt: skip
                data={"package": name, "required": spec, "installed": have, "declared": False},
            )


@check_params()
def cann_python_deps(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV105: protobuf / numpy / Python outside what the installed CANN release documents."""
    marketing = facts.need("cann.toolkit.version")
    row = cann_entry(str(marketing))
    if row is None:
        raise Missing("compat.toml", f"CANN {marketing} has no Python-dependency row in compat.toml")
    key, entry = row
    checks = [("protobuf", "pkg.protobuf.version"), ("numpy", "pkg.numpy.version"), ("python", "host.python.version")]
    for name, fact in checks:
        spec = entry.get(name)
        have = facts.get_known(fact)
        if spec and have and not satisfies(str(have), spec):
            yield Hit(
                message=f"{name} {have} is outside CANN {marketing}'s documented requirement {spec}",
                evidence=(_ev(facts, fact), _ev(facts, "cann.toolkit.version")),
                data={"package": name, "installed": have, "cann_requires": spec, "cann": key},
            )


@check_params()
def driver_matches_cann(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV106: the Ascend driver (HDK) is outside the range the CANN release notes support."""
    marketing = str(facts.need("cann.toolkit.version"))
    drv = str(facts.need("ascend.driver.version"))
    row = cann_entry(marketing)
    if row is None or not ({"hdk", "hdk_min"} & set(row[1])):
        raise Missing("compat.toml", f"no driver (HDK) range for CANN {marketing} in compat.toml")
    entry = row[1]
    d = vtuple(drv)[:2]
    ok = True
    if "hdk" in entry:
        ok = major_minor(drv) in entry["hdk"]
        want = ", ".join(f"{h}.X" for h in entry["hdk"])
    else:
        lo, hi = entry["hdk_min"], entry.get("hdk_max")
        ok = _cmp(d, vtuple(lo)) >= 0 and (hi is None or _cmp(d, vtuple(hi)) <= 0)
        want = f">= {lo}" + (f" and <= {hi}.x" if hi else "")
    if not ok:
        yield Hit(
            message=f"driver {drv} is outside the HDK range CANN {marketing} supports ({want})",
            evidence=(_ev(facts, "ascend.driver.version"), _ev(facts, "cann.toolkit.version")),
            data={"driver": drv, "cann": marketing},
        )


# -- launch variables ---------------------------------------------------------------------------


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and re.fullmatch(r"\s*\d{1,18}\s*", v) else None


def parse_visible(value: str | None) -> list[int] | None:
    """``ASCEND_RT_VISIBLE_DEVICES="0,1,2"`` → [0, 1, 2]; None when unset or not a list of ids."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    return [int(p) for p in parts] if parts and all(p.isdigit() and len(p) < 19 for p in parts) else None


@check_params()
def rank_variables(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV107: DEVICE_ID / RANK_ID / RANK_SIZE missing, malformed or inconsistent."""
    env: dict[str, str] = facts.need("env.vars")

    def ev(k: str) -> Evidence:
        return Evidence(text=f"{k}={env[k]!r}" if k in env else f"{k} unset", fact="env.vars")

    for k in ("DEVICE_ID", "RANK_ID", "RANK_SIZE"):
        if k in env and _int(env[k]) is None:
            yield Hit(message=f"{k}={env[k]!r} is not a non-negative integer", evidence=(ev(k),))
    rank_table = env.get("RANK_TABLE_FILE") or env.get("MINDSPORE_HCCL_CONFIG_PATH")
    msrun = env.get("MS_ROLE") is not None
    if rank_table and not msrun:
        # A rank-table launch (no msrun): every process needs its own RANK_ID and DEVICE_ID.
        missing = [k for k in ("RANK_ID", "DEVICE_ID", "RANK_SIZE") if k not in env]
        if missing:
            yield Hit(
                message=f"rank-table launch (RANK_TABLE_FILE set, no msrun) but {', '.join(missing)} not exported: "
                "MindSpore fails with 'make sure [RANK_TABLE_FILE,RANK_ID,DEVICE_ID] all be set in ENV'",
                evidence=tuple(ev(k) for k in ("RANK_TABLE_FILE", *missing)),
                data={"missing": missing},
            )
    rid, size, dev = _int(env.get("RANK_ID")), _int(env.get("RANK_SIZE")), _int(env.get("DEVICE_ID"))
    if rid is not None and size is not None and rid >= size:
        yield Hit(message=f"RANK_ID={rid} is not below RANK_SIZE={size}", evidence=(ev("RANK_ID"), ev("RANK_SIZE")), rank=rid)
    devices = facts.get_known("ascend.devices")
    visible = parse_visible(env.get("ASCEND_RT_VISIBLE_DEVICES"))
    if dev is not None and visible is not None:
        # With ASCEND_RT_VISIBLE_DEVICES the runtime renumbers the visible NPUs 0…k-1.
        if dev >= len(visible):
            yield Hit(
                message=f"DEVICE_ID={dev} but ASCEND_RT_VISIBLE_DEVICES={env['ASCEND_RT_VISIBLE_DEVICES']!r} makes only "
                f"logical ids 0…{len(visible) - 1} visible",
                evidence=(ev("DEVICE_ID"), ev("ASCEND_RT_VISIBLE_DEVICES")),
            )
    elif dev is not None and devices and dev not in devices:
        yield Hit(
            message=f"DEVICE_ID={dev} but this node has /dev/davinci{{{','.join(map(str, devices))}}}: "
            "set device fails ('valid device range is [0, N)')",
            evidence=(ev("DEVICE_ID"), _ev(facts, "ascend.devices")),
        )
    wn = _int(env.get("MS_WORKER_NUM"))
    if wn is not None and size is not None and wn != size:
        yield Hit(message=f"MS_WORKER_NUM={wn} differs from RANK_SIZE={size}", evidence=(ev("MS_WORKER_NUM"), ev("RANK_SIZE")))


@check_params()
def msrun_variables(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV108: msrun's dynamic-cluster variables malformed (role, scheduler port, worker count)."""
    env: dict[str, str] = facts.need("env.vars")
    roles = ("MS_SCHED", "MS_WORKER", "MS_PSERVER")
    if "MS_ROLE" in env and env["MS_ROLE"] not in roles:
        yield Hit(message=f"MS_ROLE={env['MS_ROLE']!r} is not one of {', '.join(roles)}",
                  evidence=(Evidence(text=f"MS_ROLE={env['MS_ROLE']!r}", fact="env.vars"),))  # fmt: skip
    if "MS_SCHED_PORT" in env:
        p = _int(env["MS_SCHED_PORT"])
        if p is None or not 1024 <= p <= 65535:
            yield Hit(message=f"MS_SCHED_PORT={env['MS_SCHED_PORT']!r} is outside 1024–65535 (msrun --master_port range)",
                      evidence=(Evidence(text=f"MS_SCHED_PORT={env['MS_SCHED_PORT']!r}", fact="env.vars"),))  # fmt: skip
    if "MS_WORKER_NUM" in env and not (_int(env["MS_WORKER_NUM"]) or 0) > 0:
        yield Hit(message=f"MS_WORKER_NUM={env['MS_WORKER_NUM']!r} is not a positive integer",
                  evidence=(Evidence(text=f"MS_WORKER_NUM={env['MS_WORKER_NUM']!r}", fact="env.vars"),))  # fmt: skip
    if "MS_ROLE" in env:
        missing = [k for k in ("MS_SCHED_HOST", "MS_SCHED_PORT", "MS_WORKER_NUM") if k not in env]
        if missing:
            yield Hit(message=f"MS_ROLE is set but {', '.join(missing)} is not: the process cannot join the cluster",
                      evidence=(Evidence(text=f"MS_ROLE={env['MS_ROLE']!r}", fact="env.vars"),), data={"missing": missing})  # fmt: skip


# -- host ---------------------------------------------------------------------------------------

GiB = 1024**3


@check_params(min_bytes=int | None)
def shm_size(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """MEM101: /dev/shm smaller than the data pipeline's shared-memory needs."""
    total = int(facts.need("host.shm.total_bytes"))
    need = int(params.get("min_bytes", GiB))
    if total < need:
        yield Hit(
            message=f"/dev/shm is {total / 2**20:.0f} MiB (< {need / 2**20:.0f} MiB): multiprocess dataset workers "
            "exchange rows through shared memory",
            evidence=(_ev(facts, "host.shm.total_bytes"),),
            data={"shm_bytes": total, "min_bytes": need},
        )


@check_params(min_soft=int | None)
def open_files_limit(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """DATA101: the open-files soft limit is low for a training job."""
    soft = facts.need("host.nofile.soft")
    need = int(params.get("min_soft", 65536))
    if soft is not None and int(soft) < need:
        hard = facts.get_known("host.nofile.hard")
        yield Hit(
            message=f"open-files soft limit is {soft} (< {need}); hard limit {hard if hard is not None else 'unlimited'}",
            evidence=(_ev(facts, "host.nofile.soft"), _ev(facts, "host.nofile.hard")),
            data={"soft": soft, "hard": hard},
        )


@check_params(min_bytes=int | None)
def ckpt_disk_free(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """MEM102: too little free disk where checkpoints will be written."""
    free = int(facts.need("host.disk.ckpt_free_bytes"))
    need = int(params.get("min_bytes", 50 * GiB))
    if free < need:
        yield Hit(
            message=f"{facts.get_known('host.disk.ckpt_dir')}: {free / GiB:.1f} GiB free (< {need / GiB:.0f} GiB)",
            evidence=(_ev(facts, "host.disk.ckpt_free_bytes"),),
            data={"free_bytes": free, "min_bytes": need},
        )


@check_params(default_workers=int | None)
def dataset_workers_per_rank(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """DATA102: the ranks of one node share too few CPUs for each rank's default dataset workers."""
    cpus = int(facts.need("host.cpu_count"))
    affinity = facts.get_known("host.cpu_affinity")
    usable = min(cpus, int(affinity)) if affinity else cpus
    devices = facts.need("ascend.devices")
    if not devices:
        raise Missing("ascend.devices", "no /dev/davinci devices: the number of ranks on this node is unknown")
    ranks = len(devices)
    default = min(int(params.get("default_workers", 8)), cpus)  # MindSpore's own default: min(8, CPU count)
    per_rank = usable // ranks
    if per_rank < default:
        yield Hit(
            message=f"{ranks} ranks share {usable} CPUs ({per_rank} per rank) but each rank's dataset operations "
            f"default to min(8, cpu_count) = {default} workers: set num_parallel_workers <= {max(1, per_rank)}",
            evidence=(_ev(facts, "host.cpu_count"), _ev(facts, "host.cpu_affinity"), _ev(facts, "ascend.devices")),
            data={"cpus": usable, "ranks": ranks, "per_rank": per_rank, "default_workers": default},
        )


# -- across nodes -------------------------------------------------------------------------------


def differing(
    facts: Facts, prefixes: tuple[str, ...], exclude: tuple[str, ...] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """Fact names (under ``prefixes``, not under ``exclude``) whose value differs between the compared nodes."""
    nodes: dict[str, dict[str, Any]] = facts.need("compare.nodes")
    if len(nodes) < 2:
        raise Missing("compare.nodes", "fewer than two snapshots to compare")
    names = sorted(
        {k for vals in nodes.values() for k in vals if k.startswith(prefixes) and not (exclude and k.startswith(exclude))}
    )
    out = []
    for name in names:
        per = {node: vals.get(name, "<absent>") for node, vals in nodes.items()}
        if len({repr(v) for v in per.values()}) > 1:
            out.append((name, per))
    return out


@check_params(prefixes=list | None)
def versions_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV109: a version differs between nodes (HCCL reports EI0008 only after init)."""
    for name, per in differing(facts, tuple(params.get("prefixes", ("pkg.", "cann.", "ascend.", "host.python")))):
        yield Hit(
            message=f"{name} differs across nodes: " + ", ".join(f"{n}={v}" for n, v in per.items()),
            evidence=tuple(Evidence(text=f"{n}: {v}", fact=name) for n, v in per.items()),
            data={"fact": name, "values": per},
        )


@check_params(exclude=list | None, prefixes=list | None)
def other_vars_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV110 (info): any other launch variable that differs between nodes (per-rank ones excluded)."""
    prefixes = tuple(params.get("prefixes", ("env.vars.",)))
    exclude = tuple(params.get("exclude", ()))
    for name, per in differing(facts, prefixes, exclude):
        yield Hit(
            message=f"{name.removeprefix('env.vars.')} differs across nodes: " + ", ".join(f"{n}={v}" for n, v in per.items()),
            evidence=tuple(Evidence(text=f"{n}: {v}", fact=name) for n, v in per.items()),
            data={"fact": name, "values": per},
        )


# -- MindSpore's own log variables ---------------------------------------------------------------

# mindspore/log.py (2.10) `_get_env_config` strips each non-empty GLOG_* value and `_verify_config`
# raises ValueError at `import mindspore` for a level outside 0-4, a GLOG_logtostderr other than 0/1,
# and GLOG_logtostderr=0 without GLOG_log_dir (checked by running `import mindspore` with each).
GLOG_LEVELS = ("0", "1", "2", "3", "4")


@check_params()
def glog_values(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """ENV111: GLOG_* values that make `import mindspore` raise ValueError on every rank."""
    env: dict[str, str] = facts.need("env.vars")
    value = {k: str(v).strip() for k, v in env.items() if k.startswith("GLOG_") and str(v).strip()}
    for name in ("GLOG_v", "GLOG_stderrthreshold"):
        if name in value and value[name] not in GLOG_LEVELS:
            yield Hit(message=f"{name}={env[name]!r} is not a MindSpore log level (0 DEBUG … 4 CRITICAL): "
                              "`import mindspore` raises ValueError: Incorrect log level",
                      evidence=(Evidence(text=f"{name}={env[name]!r}", fact="env.vars"),), data={"variable": name})  # fmt: skip
    console = value.get("GLOG_logtostderr")
    if console is not None and console not in ("0", "1"):
        yield Hit(message=f"GLOG_logtostderr={env['GLOG_logtostderr']!r} is neither 0 nor 1: `import mindspore` raises ValueError",
                  evidence=(Evidence(text=f"GLOG_logtostderr={env['GLOG_logtostderr']!r}", fact="env.vars"),),
                  data={"variable": "GLOG_logtostderr"})  # fmt: skip
    elif console == "0" and "GLOG_log_dir" not in value:
        yield Hit(message="GLOG_logtostderr=0 (log to files) without GLOG_log_dir: `import mindspore` raises ValueError",
                  evidence=(Evidence(text="GLOG_logtostderr='0', GLOG_log_dir unset", fact="env.vars"),),
                  data={"variable": "GLOG_log_dir"})  # fmt: skip
