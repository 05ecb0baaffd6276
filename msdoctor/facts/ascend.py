"""Ascend software and hardware facts: CANN toolkit, driver, firmware, NPU devices, npu-smi.

Read under ``root`` so emulated nodes in ``samples/roots/`` can be checked. Where the files are
absent the facts are ``Unknown`` with the path that was looked at — a CPU-only machine never
"passes" a CANN check, it is *not evaluated*.

Files (verified paths, see shared/faults.md §2.1):
* ``<toolkit>/version.cfg``: ``toolkit_running_version=[<internal>:<marketing>]`` (e.g.
  ``[7.3.0.1.231:8.0.RC2]``), both numbers at once;
* ``<toolkit>/compiler/version.info``: ``Version=<internal>`` — what MindSpore ≥2.7.2 reads from
  ``$ASCEND_HOME_PATH/compiler/version.info`` (``run_check/_check_version.py``);
* ``/usr/local/Ascend/driver/version.info`` and ``/usr/local/Ascend/firmware/version.info``
  (``Version=``); ``/dev/davinci<N>`` device nodes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from msdoctor.engine.facts import Facts
from msdoctor.facts.system import is_live, under

TOOLKIT_DIRS = ("usr/local/Ascend/ascend-toolkit/latest", "usr/local/Ascend/nnae/latest")
_CFG = re.compile(r"^(\w+)_running_version=\[([^:\]]*):([^\]]*)\]", re.M)
_VERSION = re.compile(r"^\s*Version\s*=\s*(\S+)", re.M | re.I)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_version_cfg(text: str) -> dict[str, tuple[str, str]]:
    """``{component: (internal, marketing)}`` from a CANN ``version.cfg``."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _CFG.finditer(text)}


def parse_version_info(text: str) -> str | None:
    m = _VERSION.search(text)
    return m.group(1) if m else None


def collect_cann(root: Path, environ: Mapping[str, str]) -> Facts:
    facts = Facts()
    home = environ.get("ASCEND_HOME_PATH")
    facts.set("cann.ascend_home_path", home, "env ASCEND_HOME_PATH")
    # MindSpore >= 2.7.2 reads $ASCEND_HOME_PATH/compiler/version.info; a stale path skips its check.
    facts.set("cann.ascend_home_exists", under(root, home).is_dir() if home else None, f"{root} + ASCEND_HOME_PATH")
    # Newer CANN releases may install as /usr/local/Ascend/cann-<ver> (+ a `cann` link) instead of
    # ascend-toolkit/latest; the newest such directory is tried last.
    cann_dirs = sorted((p for p in under(root, "usr/local/Ascend").glob("cann*") if p.is_dir()), reverse=True)
    candidates: list[str] = (
        [v for v in (home, environ.get("ASCEND_TOOLKIT_HOME")) if v]
        + list(TOOLKIT_DIRS)
        + ["/" + str(p.relative_to(root)) for p in cann_dirs]
    )
    toolkit = next((c for c in candidates if under(root, c).is_dir()), None)
    if toolkit is None:
        reason = f"CANN not installed: none of {', '.join('/' + c.lstrip('/') for c in candidates)} under {root}"
        facts.set("cann.installed", False, str(root))
        for name in ("cann.toolkit.version", "cann.toolkit.internal", "cann.compiler.version"):
            facts.unknown(name, reason, str(root))
        facts.unknown("cann.env_sourced", reason, str(root))
        return facts
    tk = under(root, toolkit)
    facts.set("cann.installed", True, str(tk))
    facts.set("cann.toolkit.path", "/" + toolkit.lstrip("/"), str(tk))
    cfg_path = tk / "version.cfg"
    cfg_text = _read(cfg_path)
    cfg = parse_version_cfg(cfg_text) if cfg_text is not None else {}
    entry = cfg.get("toolkit") or cfg.get("compiler") or cfg.get("runtime")
    if entry:
        facts.set("cann.toolkit.internal", entry[0], str(cfg_path))
        facts.set("cann.toolkit.version", entry[1], str(cfg_path))
    else:
        why = "missing" if cfg_text is None else "no *_running_version=[internal:marketing] line"
        facts.unknown("cann.toolkit.version", f"{cfg_path}: {why}", str(cfg_path))
        facts.unknown("cann.toolkit.internal", f"{cfg_path}: {why}", str(cfg_path))
    info_path = tk / "compiler" / "version.info"
    info_text = _read(info_path)
    ver = parse_version_info(info_text) if info_text is not None else None
    if ver:
        facts.set("cann.compiler.version", ver, str(info_path))
    else:
        why = "missing" if info_text is None else "no Version= line"
        facts.unknown("cann.compiler.version", f"{info_path}: {why}", str(info_path))
    # What `source set_env.sh` leaves behind, i.e. the three paths MindSpore's AscendEnvChecker
    # tests (run_check/_check_version.py check_env) plus ASCEND_HOME_PATH for its version check.
    ld = environ.get("LD_LIBRARY_PATH", "")
    opp = environ.get("ASCEND_OPP_PATH", "")
    facts.set(
        "cann.env_sourced",
        {
            "ASCEND_HOME_PATH": bool(home),
            "LD_LIBRARY_PATH has /lib64": "/lib64" in ld,
            "ASCEND_OPP_PATH has /opp": "/opp" in opp,
        },
        "environment",
    )
    facts.set("cann.set_env_sh", (tk.parent / "set_env.sh").is_file() or (tk / "set_env.sh").is_file(), str(tk))
    return facts


def collect_driver(root: Path) -> Facts:
    facts = Facts()
    for name, rel in (("driver", "usr/local/Ascend/driver/version.info"),
                      ("firmware", "usr/local/Ascend/firmware/version.info")):  # fmt: skip
        path = under(root, rel)
        text = _read(path)
        ver = parse_version_info(text) if text is not None else None
        if ver:
            facts.set(f"ascend.{name}.version", ver, str(path))
        else:
            why = "missing" if text is None else "no Version= line"
            facts.unknown(f"ascend.{name}.version", f"{path}: {why}", str(path))
    return facts


def collect_devices(root: Path, run_npu_smi: bool = True) -> Facts:
    facts = Facts()
    dev = under(root, "dev")
    ids = sorted(
        int(m.group(1)) for p in dev.glob("davinci*") if (m := re.fullmatch(r"davinci(\d+)", p.name))
    )
    facts.set("ascend.devices", ids, f"{dev}/davinci*")
    if not is_live(root):
        facts.unknown("ascend.npu_smi", "not run under --root (an emulated node's binaries are not executed)", "")
        return facts
    exe = shutil.which("npu-smi")
    if exe is None:
        facts.unknown("ascend.npu_smi", "npu-smi not on PATH", "PATH")
        return facts
    if not run_npu_smi:
        facts.unknown("ascend.npu_smi", "skipped (--no-npu-smi)", exe)
        return facts
    try:
        proc = subprocess.run([exe, "info", "-l"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired) as exc:
        facts.unknown("ascend.npu_smi", f"{exe} info -l failed: {exc}", exe)
        return facts
    m = re.search(r"Total Count\s*:\s*(\d+)", proc.stdout)
    facts.set(
        "ascend.npu_smi",
        {"rc": proc.returncode, "total_count": int(m.group(1)) if m else None, "stderr": proc.stderr.strip()[:300]},
        f"{exe} info -l",
    )
    return facts
