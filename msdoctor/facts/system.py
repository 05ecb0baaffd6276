"""Host and Python-package facts for ``msdoctor preflight``.

Collectors never raise: each fact is a value or ``Unknown(reason, source)``. Everything that can be
read from a filesystem is read under ``root`` (default ``/``) so an emulated Ascend node in
``samples/roots/`` carries its own OS release, Python site-packages and package versions. Facts that
only the live machine can know (CPU count, memory, limits) come from psutil / the OS and are marked
as such.

MindSpore is never imported: versions and ``Requires-Dist`` come from package metadata
(``importlib.metadata`` for the running interpreter, ``*.dist-info/METADATA`` files under a root).
"""

from __future__ import annotations

import os
import platform
import re
import sys
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from msdoctor.engine.facts import Facts

# Distribution names we report (normalised: lower case, "-"/"." → "_"). "mindspore_ascend" is the
# name of the Ascend-only wheels before the unified "mindspore" package.
PACKAGES = ("mindspore", "mindformers", "protobuf", "numpy")
MINDSPORE_DISTS = ("mindspore", "mindspore_ascend")
SITE_GLOBS = (
    "usr/local/lib/python3*/site-packages",
    "usr/local/lib/python3*/dist-packages",
    "usr/lib/python3*/site-packages",
    "usr/lib/python3/dist-packages",
    "opt/*/lib/python3*/site-packages",
    "root/miniconda3/envs/*/lib/python3*/site-packages",
    "home/*/.local/lib/python3*/site-packages",
)


def under(root: Path, path: str | Path) -> Path:
    """``path`` (absolute on the target node) seen under ``root``."""
    return root / str(path).lstrip("/")


def is_live(root: Path) -> bool:
    return root.resolve() == Path("/")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def parse_metadata(text: str) -> dict[str, Any]:
    """The fields of a METADATA / PKG-INFO document that preflight needs."""
    msg = HeaderParser().parsestr(text)
    return {
        "name": msg.get("Name", ""),
        "version": msg.get("Version", ""),
        "requires_python": msg.get("Requires-Python"),
        "requires": [str(r) for r in (msg.get_all("Requires-Dist") or [])],
    }


def site_dirs(root: Path) -> list[Path]:
    out: list[Path] = []
    for pattern in SITE_GLOBS:
        out.extend(sorted(p for p in root.glob(pattern) if p.is_dir()))
    return out


def _dists_under(root: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every ``*.dist-info/METADATA`` under the root's site-packages, by normalised name."""
    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    for site in site_dirs(root):
        for meta in sorted(site.glob("*.dist-info/METADATA")):
            try:
                info = parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            name = _norm(info["name"] or meta.parent.name.split("-")[0])
            found.setdefault(name, (meta, info))
    return found


def _live_dist(name: str) -> tuple[str, dict[str, Any]] | None:
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    md: Any = dist.metadata  # an email.message.Message at runtime (has .get)
    info = {
        "name": md.get("Name", name),
        "version": dist.version,
        "requires_python": md.get("Requires-Python"),
        "requires": list(dist.requires or []),
    }
    where = getattr(dist, "_path", None)
    return (f"{where}/METADATA" if where else f"importlib.metadata:{name}"), info


def collect_packages(root: Path) -> Facts:
    """``pkg.<name>.version`` for the packages that matter, plus MindSpore's own requirements."""
    facts = Facts()
    live = is_live(root)
    dists = {} if live else _dists_under(root)
    if not live and not dists:
        reason = f"no *.dist-info/METADATA under {root} ({', '.join(SITE_GLOBS[:3])}, …)"
        for name in PACKAGES:
            facts.unknown(f"pkg.{name}.version", reason, str(root))
        facts.unknown("pkg.mindspore.requires", reason, str(root))
        facts.unknown("pkg.mindspore.requires_python", reason, str(root))
        return facts
    for name in PACKAGES:
        candidates = MINDSPORE_DISTS if name == "mindspore" else (name,)
        hit: tuple[str, dict[str, Any]] | None = None
        for cand in candidates:
            if live:
                hit = _live_dist(cand)
            elif cand in dists:
                meta, info = dists[cand]
                hit = (str(meta), info)
            if hit:
                break
        key = f"pkg.{name}.version"
        if hit is None:
            # "Not installed" is a known fact (None), not an unknown: we looked where pip installs.
            where = "importlib.metadata (this interpreter)" if live else f"site-packages under {root}"
            facts.set(key, None, where)
            continue
        src, info = hit
        facts.set(key, info["version"], src)
        if name == "mindspore":
            facts.set("pkg.mindspore.dist", info["name"], src)
            facts.set("pkg.mindspore.requires", info["requires"], src)
            facts.set("pkg.mindspore.requires_python", info["requires_python"], src)
    if not facts.is_known("pkg.mindspore.requires"):
        facts.unknown("pkg.mindspore.requires", "MindSpore is not installed", "importlib.metadata")
        facts.unknown("pkg.mindspore.requires_python", "MindSpore is not installed", "importlib.metadata")
    # The versions of what MindSpore requires (asttokens, scipy, …) and of the four above, so its
    # Requires-Dist can be checked against what is really there. Only those names are looked up on a
    # live interpreter: reading every installed distribution's METADATA costs ~0.1 s.
    versions: dict[str, str] = {}
    if live:
        from importlib import metadata

        wanted = set(PACKAGES) | {_norm(re.split(r"[\s;(\[<>=!~]", r, maxsplit=1)[0])
                                  for r in facts.get_known("pkg.mindspore.requires") or []}  # fmt: skip
        for name in sorted(wanted):
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
    else:
        versions = {n: info["version"] for n, (_, info) in dists.items()}
    facts.set("pkg.installed", dict(sorted(versions.items())), "importlib.metadata" if live else str(root))
    return facts


def _python_under(root: Path) -> tuple[str, str] | None:
    """An emulated node's Python: the ``pythonX.Y`` of the site-packages that holds MindSpore."""
    for site in site_dirs(root):
        if any(site.glob("mindspore*.dist-info")):
            m = re.search(r"python(3\.\d+)", str(site))
            if m:
                return m.group(1), str(site)
    return None


def _os_release(root: Path) -> tuple[str, str] | None:
    path = under(root, "etc/os-release")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = dict(
        (k, v.strip().strip('"')) for k, _, v in (line.partition("=") for line in text.splitlines()) if v
    )
    name = fields.get("PRETTY_NAME") or " ".join(x for x in (fields.get("NAME"), fields.get("VERSION_ID")) if x)
    return (name, str(path)) if name else None


def _cpuinfo(root: Path) -> int | None:
    """Processors listed in an emulated node's ``proc/cpuinfo``."""
    try:
        text = under(root, "proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    n = len(re.findall(r"^processor\s*:", text, re.M))
    return n or None


def _meminfo(root: Path) -> dict[str, int] | None:
    try:
        text = under(root, "proc/meminfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    out = {m.group(1): int(m.group(2)) * 1024 for m in re.finditer(r"^(\w+):\s+(\d+)\s*kB", text, re.M)}
    return out if "MemTotal" in out else None


_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def _shm_from_mounts(path: Path) -> int | str:
    """The ``size=`` of the tmpfs mounted on /dev/shm in a mounts file, or why it is unknown."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "/dev/shm":
            m = re.search(r"(?:^|,)size=(\d+)([kmgtKMGT]?)", parts[3])
            if m:
                return int(m.group(1)) * _UNITS[m.group(2).lower()]
            return f"{path}: /dev/shm mounted without size= (tmpfs default: half of RAM)"
    return f"{path}: no /dev/shm mount"


def collect_host(root: Path, ckpt_dir: str | None = None) -> Facts:
    """Python, OS, CPU, memory, disk, /dev/shm and the open-files limit."""
    facts = Facts()
    live = is_live(root)
    if live:
        facts.set("host.python.version", platform.python_version(), sys.executable)
    else:
        py = _python_under(root)
        if py:
            facts.set("host.python.version", py[0], py[1])
        else:
            facts.unknown("host.python.version", f"no site-packages holding MindSpore under {root}", str(root))
    rel = _os_release(root)
    if rel:
        facts.set("host.os", rel[0], rel[1])
    elif live:
        facts.set("host.os", platform.platform(), "platform.platform()")
    else:
        facts.unknown("host.os", "no etc/os-release under the root", str(root))
    facts.set("host.arch", platform.machine(), "platform.machine()" + ("" if live else " (live host)"))

    import psutil

    cpuinfo, meminfo = (None, None) if live else (_cpuinfo(root), _meminfo(root))
    if cpuinfo:
        facts.set("host.cpu_count", cpuinfo, str(under(root, "proc/cpuinfo")))
        facts.set("host.cpu_affinity", cpuinfo, str(under(root, "proc/cpuinfo")))
    else:
        where = "" if live else " (live host: no proc/cpuinfo under the root)"
        facts.set("host.cpu_count", os.cpu_count() or 0, "os.cpu_count()" + where)
        try:
            facts.set("host.cpu_affinity", len(os.sched_getaffinity(0)), "sched_getaffinity(0)" + where)
        except (AttributeError, OSError) as exc:
            facts.unknown("host.cpu_affinity", f"sched_getaffinity: {exc}", "os")
    if meminfo:
        src = str(under(root, "proc/meminfo"))
        facts.set("host.mem.total_bytes", meminfo.get("MemTotal"), src)
        facts.set("host.mem.available_bytes", meminfo.get("MemAvailable"), src)
    else:
        where = "" if live else " (live host: no proc/meminfo under the root)"
        try:
            vm = psutil.virtual_memory()
            facts.set("host.mem.total_bytes", int(vm.total), "psutil.virtual_memory" + where)
            facts.set("host.mem.available_bytes", int(vm.available), "psutil.virtual_memory" + where)
        except (OSError, RuntimeError) as exc:
            facts.unknown("host.mem.total_bytes", f"psutil failed: {exc}", "psutil")
            facts.unknown("host.mem.available_bytes", f"psutil failed: {exc}", "psutil")

    if live:
        try:
            du = psutil.disk_usage("/dev/shm")
            facts.set("host.shm.total_bytes", int(du.total), "statvfs(/dev/shm)")
        except OSError as exc:
            facts.unknown("host.shm.total_bytes", f"/dev/shm: {exc.strerror or exc}", "/dev/shm")
    else:
        # An emulated node cannot carry a tmpfs; it carries the mount table that says its size.
        shm = _shm_from_mounts(under(root, "proc/mounts"))
        if isinstance(shm, int):
            facts.set("host.shm.total_bytes", shm, str(under(root, "proc/mounts")))
        else:
            facts.unknown("host.shm.total_bytes", shm, str(under(root, "proc/mounts")))

    if ckpt_dir is None:
        facts.unknown("host.disk.ckpt_free_bytes", "no --ckpt-dir given", "")
    else:
        # The nearest existing parent: the checkpoint directory is often created by the job itself.
        p = under(root, ckpt_dir) if not live and Path(ckpt_dir).is_absolute() else Path(ckpt_dir)
        probe = p
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            du = psutil.disk_usage(str(probe))
            facts.set("host.disk.ckpt_dir", str(p), "--ckpt-dir")
            facts.set("host.disk.ckpt_free_bytes", int(du.free), f"statvfs({probe})")
        except OSError as exc:
            facts.unknown("host.disk.ckpt_free_bytes", f"{probe}: {exc.strerror or exc}", str(probe))

    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        inf = resource.RLIM_INFINITY
        facts.set("host.nofile.soft", None if soft == inf else int(soft), "getrlimit(RLIMIT_NOFILE) (live host)")
        facts.set("host.nofile.hard", None if hard == inf else int(hard), "getrlimit(RLIMIT_NOFILE) (live host)")
    except (ImportError, OSError, ValueError) as exc:
        facts.unknown("host.nofile.soft", f"getrlimit failed: {exc}", "resource")
        facts.unknown("host.nofile.hard", f"getrlimit failed: {exc}", "resource")
    return facts
