"""Collector: the logs of every rank → per-rank facts (first anomaly, last progress, consequences, peers).

It never judges which rank is the culprit (that is ``msdoctor/checks/logs.py``); it finds the files,
streams them (:mod:`msdoctor.facts.logscan`), maps each file to its rank and merges what the files of one
rank say. Facts (all under ``logs.``): ``ranks``, ``launcher``, ``world_size``, ``missing_ranks``,
``clock``, ``files``, ``skipped``, ``hits`` (per signature rule: count, ranks, earliest lines with their parsed
values); ``msdoctor logs --dump-facts`` adds ``verdict`` (the root cause it drew from them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msdoctor.engine.catalogue import Catalogue, load_catalogue
from msdoctor.engine.evaluate import signature_set
from msdoctor.engine.facts import Facts
from msdoctor.errors import InputError
from msdoctor.facts.logformats import rank_from_path
from msdoctor.facts.logscan import ScanSpec, scan_files

SOURCE = "logs"
LOG_NAME_RE = re.compile(
    r"(\.log(\.\S*)?$|\.(out|err|txt)$|^(plog|device)-\d+|^mindspore\.|^worker_\d+|^scheduler|\.log\.gz$)"
)
SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".pytest_cache"}
PEER_GROUPS = ("peer", "node", "nodes", "first", "remote", "remote_rank", "dest_rank", "src_rank")
INT_RE = re.compile(r"\d+")


@dataclass
class LogScan:
    """Everything the command needs besides the facts: the raw per-file scans, rank of each file."""

    files: list[dict[str, Any]] = field(default_factory=list)
    file_rank: dict[str, int | None] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)


def discover(paths: Sequence[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """Log files under ``paths``. A path that does not exist is an :class:`InputError` (exit 2).

    Files named on the command line are always read; inside folders only names that look like logs
    (``*.log``, ``*.log.*``, ``plog-*``, ``device-*``, ``worker_*``, GLOG ``mindspore.*``, ``*.out``/``*.txt``).
    """
    files: list[str] = []
    skipped: list[dict[str, Any]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"{raw}: no such file or directory")
        if p.is_file():
            files.append(str(p))
            continue
        if not p.is_dir():
            raise InputError(f"{raw}: not a file or directory")
        found = 0
        for root, dirs, names in os.walk(p, onerror=lambda e: skipped.append({"file": e.filename, "reason": str(e.strerror)})):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if LOG_NAME_RE.search(name):
                    path = os.path.join(root, name)
                    if not os.path.isfile(path):  # a FIFO would block the reader forever; a dangling link holds nothing
                        skipped.append({"file": path, "reason": "not a regular file"})
                        continue
                    files.append(path)
                    found += 1
        if not found:
            skipped.append({"file": str(p), "reason": "no log files in this folder"})
    seen: set[str] = set()
    uniq = [f for f in files if not (os.path.realpath(f) in seen or seen.add(os.path.realpath(f)))]  # type: ignore[func-returns-value]
    return uniq, skipped


def _assign_ranks(scans: list[dict[str, Any]]) -> dict[str, tuple[int | None, str]]:
    """Rank of each file: msrun's own mapping, else one rank named by the content, else the path."""
    msrun_map: dict[str, int] = {}
    for s in scans:
        msrun_map.update(s.get("msrun_workers") or {})
    out: dict[str, tuple[int | None, str]] = {}
    for s in scans:
        path = s["path"]
        if not s.get("readable"):
            out[path] = (None, "")
            continue
        if s["kind"] in ("scheduler", "msrun") or s.get("msrun_workers") or s.get("scheduler_nodes"):
            out[path] = (None, "launcher")
            continue
        base = os.path.basename(path)
        if base in msrun_map:
            out[path] = (msrun_map[base], "msrun:Start worker process with rank id")
            continue
        hints: dict[str, list[int]] = s.get("rank_hints") or {}
        values = {v for vs in hints.values() for v in vs}
        if len(values) == 1:
            out[path] = (values.pop(), ",".join(sorted(hints)))
            continue
        if len(values) > 1:  # several ranks write here (a console or a shared log): no single rank
            out[path] = (None, "several ranks: " + ",".join(str(v) for v in sorted(values)[:8]))
            continue
        out[path] = (s.get("path_rank"), s.get("path_rank_source") or "")
    return out


def _rank_views(s: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The ranks of a file that several ranks write, each line prefixed with its rank (torchrun's `[rank3]:`,
    Ray's `(RayWorkerWrapper pid=…) [rank3]:`, mpirun's `[1,3]<stderr>:`, job 1 rank 3), as one view per rank: the lines whose
    prefix names it. Then the correlation sees which rank failed with an error of its own first and which only
    waited, as with one log per rank. Only when exactly one rank's lines hold an error of its own (a root-cause
    or an unclassified error) and other ranks' lines hold only what follows from it (consequences, warnings): a
    console where every rank reports the same fault, or several ranks their own (a console has no per-line time
    to order them by), stays one file, read in file order."""
    if not s.get("readable") or len(s.get("prefix_ranks") or {}) < 2:
        return {}
    events = list(s.get("first_events", [])) + [e for e in s.get("since_progress", []) if e not in s.get("first_events", [])]
    mine: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("prank") is not None:
            mine.setdefault(int(e["prank"]), []).append(e)
    own_error = [r for r, evs in mine.items()
                 if any(e.get("severity") == "error" and e.get("role") in ("root", "unclassified") for e in evs)]  # fmt: skip
    if len(own_error) != 1 or len(mine) < 2:
        return {}
    since = s.get("since_progress", [])
    return {r: {"path": s["path"], "kind": s["kind"], "readable": True,
                "first_events": [e for e in s.get("first_events", []) if e.get("prank") == r],
                "since_progress": [e for e in since if e.get("prank") == r], "anomalies": len(evs),
                "progress": {"count": 0, "first": None, "last": None}, "last_traceback": None, "exceptions": [],
                "open_traceback": None, "last_time": s.get("last_time"), "cluster_up": None, "pids": []}
            for r, evs in sorted(mine.items())}  # fmt: skip


def _peers(groups: dict[str, str] | None) -> list[int]:
    if not groups:
        return []
    peers: list[int] = []
    for key in PEER_GROUPS:
        if key in groups:
            peers.extend(int(v) for v in INT_RE.findall(groups[key]))
    return sorted(set(peers))


def _slim(ev: dict[str, Any], path: str) -> dict[str, Any]:
    d: dict[str, Any] = {k: ev[k] for k in ("rule", "role", "severity", "line", "text", "time", "ts") if k in ev}
    d["file"] = path
    peers = _peers(ev.get("groups"))
    if peers:
        d["peers"] = peers
    if "step" in ev:
        d["step"] = ev["step"]
    if ev.get("frames"):
        d["frames"] = ev["frames"]
    if ev.get("echo"):
        d["echo"] = True
    if ev.get("prank") is not None:
        d["prank"] = ev["prank"]
    if ev.get("groups"):
        d["groups"] = dict(list(ev["groups"].items())[:12])
    return d


def _time_key(ev: dict[str, Any]) -> tuple[float, int]:
    t = ev.get("time")
    return (t if t is not None else float("inf"), ev.get("line") or 0)


def _merge_rank(rank: int, scans: list[dict[str, Any]]) -> dict[str, Any]:
    """What all files of one rank say together."""
    progress: dict[str, Any] | None = None
    progress_file = ""
    steps = 0
    for s in scans:
        last = (s.get("progress") or {}).get("last")
        steps += (s.get("progress") or {}).get("count", 0)
        if last is None:
            continue
        key = (last.get("step") or -1, last.get("time") or 0.0)
        if progress is None or key > (progress.get("step") or -1, progress.get("time") or 0.0):
            progress, progress_file = last, s["path"]
    p_time = progress.get("time") if progress else None
    after: list[dict[str, Any]] = []
    first: list[dict[str, Any]] = []
    for s in scans:
        first.extend(_slim(e, s["path"]) for e in s.get("first_events", []))
        if progress is None or s["path"] == progress_file:
            evs = s.get("since_progress", [])
        else:  # another file of the same rank (plog, GLOG): keep what happened after the progress line
            evs = [e for e in s.get("first_events", []) + s.get("since_progress", [])
                   if p_time is None or e.get("time") is None or e["time"] >= p_time]  # fmt: skip
        after.extend(_slim(e, s["path"]) for e in evs)
    first.sort(key=_time_key)
    after.sort(key=_time_key)
    dedup: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for e in after:
        k = (e["file"], e["line"])
        if k not in seen and not (e.get("rule") is None and any(x["line"] == e["line"] for x in dedup)):
            seen.add(k)
            dedup.append(e)
    notable = [e for e in first if e.get("severity") != "info"]
    tracebacks = [(s["path"], s["last_traceback"]) for s in scans if s.get("last_traceback")]
    exceptions = [dict(x, file=s["path"]) for s in scans for x in s.get("exceptions", [])]
    last_times = [s["last_time"] for s in scans if s.get("last_time") is not None]
    ups = [s["cluster_up"] for s in scans if s.get("cluster_up") is not None]
    return {
        "rank": rank,
        "files": [s["path"] for s in scans],
        "progress": (dict(_slim(progress, progress_file), count=steps) if progress else None),
        "first_anomaly": notable[0] if notable else None,
        "after_progress": dedup[:60],
        "anomalies": sum(s.get("anomalies", 0) for s in scans),
        "last_traceback": [{"file": f, "line": n} for f, n in tracebacks],
        "exceptions": exceptions[-3:],
        "open_traceback": _open_tb(scans),
        "last_time": max(last_times) if last_times else None,
        "cluster_up": min(ups) if ups else None,
        "pids": sorted({p for s in scans for p in s.get("pids", [])}),
        "losses": _loss_curves(scans),
    }


def _loss_curves(scans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each file's loss curve (its progress lines' losses, [step, loss, line]): NUM204 reads a divergence there."""
    return [{"file": s["path"], "points": s["losses"]} for s in scans if s.get("losses")]


def _open_tb(scans: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first file's traceback that ends without its exception line (the paste stops inside its frames)."""
    for s in scans:
        tb = s.get("open_traceback")
        if tb:
            return dict(tb, file=s["path"])
    return None


PASTE_MAX = 4 << 20  # a plain paste is read as such up to this size (a bigger text is not a paste)
# rules that say only how the process ended (a shell's bare `Killed`, MEM021), which ends many pastes: their lines do
# not make a text a log of a known grammar, so the lines before them with error words are still read as errors, and
# beside such an error no rule knows, their finding steps down to info (commands/logs.py) — MindIE's `Failed to init
# endpoint!` before its launcher kills the server is not a memory kill
EXIT_ONLY_RULES = frozenset({"MEM021"})


def _recognised(s: dict[str, Any]) -> int:
    """The lines of a scanned file that show a known grammar (those of EXIT_ONLY_RULES left out)."""
    hits = s.get("hits") or {}
    only = sum(int((hits.get(r) or {}).get("count") or 0) for r in EXIT_ONLY_RULES) if isinstance(hits, dict) else 0
    return max(int(s.get("recognised", 1)) - only, 0)


def _cut_only(readable: list[dict[str, Any]]) -> bool:
    """No readable file holds an event (an error, a warning, a rule's line) and one holds a traceback cut before
    its exception line: all that the known grammar read is the frames of an error it cannot see."""
    return (any(s.get("open_traceback") for s in readable) and not any(s.get("first_events") for s in readable)
            and not any(s.get("exceptions") for s in readable))  # fmt: skip


def _rule_alarm(scans: list[dict[str, Any]], cat: Catalogue) -> bool:
    """A rule of the catalogue (not an info rule) read a line of a readable file."""
    for s in scans:
        for rid in (s.get("hits") or {}) if s.get("readable") else ():
            rule = cat.get(rid)
            if rule is not None and rule.severity.value != "info":
                return True
    return False


def _holds_error(s: dict[str, Any]) -> bool:
    """A scanned file holds an error: an error-level event (a rule's or one no rule knows; among the first events
    kept or the last ones, as a long log may fill the first with warnings), a Python exception or a traceback."""
    events = [*(s.get("first_events") or []), *(s.get("since_progress") or [])]
    return bool(s.get("exceptions") or s.get("open_traceback") is not None or s.get("last_traceback") is not None
                or any(e.get("severity") == "error" for e in events))  # fmt: skip


def collect(paths: Sequence[str], catalogue: Catalogue | None = None, jobs: int | None = None,
            engine: str = "auto", reread_quiet: bool = True) -> tuple[Facts, LogScan]:  # fmt: skip
    """Scan the logs under ``paths``; facts for the checks plus the raw scan for the signature findings.

    ``reread_quiet``: a text of a known grammar with no error in it is read again as a paste (its bare lines with
    failure words are errors), and one in which no rule fired again with its longest lines re-joined (a terminal's
    hard wrap) — for a finished job or a pasted excerpt. A live job's logs (the watchdog's tail) are quiet most of
    the time and print bare status lines: read by levels only, once per poll."""
    files, skipped = discover(paths)
    if not files:
        raise InputError(f"{', '.join(paths)}: no log files found")
    cat = catalogue or load_catalogue()
    spec = ScanSpec(signature_set(cat), engine=engine)
    mode: dict[str, bool] = {}  # the reading the scans below were adopted with (paste, mixed)
    scans = scan_files(files, spec, jobs=jobs)
    known = [s for s in scans if s.get("readable") and _recognised(s)]
    readable = [s for s in scans if s.get("readable")]
    paste_sized = sum(int(s.get("size") or 0) for s in readable) <= PASTE_MAX
    if not known and readable and paste_sized:
        # no line of a known grammar: a pasted excerpt (`NCCL WARN …`, a bare message)? Read its lines with
        # error words as errors; a text without any stays unreadable input (exit 2)
        paste = ScanSpec(spec.sigs, engine="python", paste=True)
        rescans = scan_files(files, paste, jobs=1)
        if any(s.get("readable") and s.get("recognised") for s in rescans):
            scans = [dict(s, paste=True) for s in rescans]
            known = [s for s in scans if s.get("readable") and s.get("recognised")]
            mode = {"paste": True}
    elif known and paste_sized and _cut_only(readable):
        # the only known grammar is a traceback cut before its exception line, and no line is an error: the
        # text is a paste whose error is in the lines around the frames (`CMake Error at CMakeLists.txt:14`
        # before pip's traceback, `gmake: *** […] Error 2` before setup.py's): read them as a paste is read
        rescans = scan_files(files, ScanSpec(spec.sigs, engine="python", paste=True), jobs=1)
        if any(s.get("readable") and s.get("first_events") for s in rescans):
            scans = [dict(s, paste=True) for s in rescans]
            mode = {"paste": True}
    elif reread_quiet and known and paste_sized and not any(map(_holds_error, readable)):
        # a known grammar's lines and not one error among them: an issue's paste whose error is in a line of no
        # grammar — the prose around the log (`… 执行过程中D节点输出kv cache传输失败`), a line a tool printed bare
        # (`llama-box: error while loading shared libraries: libascend_dump.so: …` among gpustack's log lines).
        # Those lines with error words are read as a plain paste's are, save a line that names its level (a Go
        # daemon's `[INFO]`: ScanSpec.mixed); a text whose rescan finds no error either keeps its reading
        rescans = scan_files(files, ScanSpec(spec.sigs, engine="python", paste=True, mixed=True), jobs=1)
        if any(s.get("readable") and _holds_error(s) for s in rescans):
            scans = [dict(s, paste=True) for s in rescans]
            mode = {"paste": True, "mixed": True}
    if (reread_quiet and readable and paste_sized and any(s.get("wrap_weak") for s in scans)
            and not _rule_alarm(scans, cat)):  # fmt: skip
        # a paste no rule's error or warning was found in, whose longest lines read as cut at a terminal's width
        # (logstate.wrap_width_weak: one or two long lines, too few to read the width from): read again with
        # those lines re-joined to the lines that continue them (as a paste, if no known grammar was read), and
        # keep that reading only if a rule finds an error or a warning in it
        mode = mode or ({} if known else {"paste": True})
        rescans = scan_files(files, ScanSpec(spec.sigs, engine="python", weak_wrap=True, **mode), jobs=1)
        if _rule_alarm(rescans, cat):
            scans = [dict(s, paste=True) for s in rescans] if mode else rescans
            known = [s for s in scans if s.get("readable") and s.get("recognised")]
    if not known and readable:
        unread = sum(1 for s in scans if not s.get("readable"))
        cut = [str(k["reason"]) for s in scans for k in s.get("skipped") or []
               if "MiB" in str(k.get("reason", ""))]  # fmt: skip
        raise InputError(f"{', '.join(paths)}: {len(scans)} file(s) read ({unread} unreadable), none holds a line of a "
                         f"known log grammar (MindSpore, CANN plog, torch_npu, Python logging or exceptions)"
                         + (f"; {'; '.join(cut[:2])}" if cut else ""))  # fmt: skip
    found_jobs = jobs_of(scans)
    if len(found_jobs) > 1:
        where = "; ".join(f"{d or '.'} ({n} file(s))" for d, n in sorted(found_jobs.items())[:6])
        raise InputError(f"{', '.join(paths)} holds the logs of {len(found_jobs)} separate jobs (the same rank's log in "
                         f"several folders: {where}); run msdoctor logs on one job's folder at a time")  # fmt: skip
    return facts_from_scans(scans, skipped, catalogue)


def jobs_of(scans: list[dict[str, Any]]) -> dict[str, int]:
    """Folders that each hold a whole job's logs, when a folder tree holds several jobs.

    Two files with the same name that claim the same rank (three ``worker_0.log`` in three run folders,
    each from its own msrun start) cannot belong to one job. Then each folder holding such a file is a job;
    one job → ``{}``-like single entry.
    """
    by_name: dict[tuple[str, Any], set[str]] = {}
    assigned = _assign_ranks(scans)  # the rank the content names wins over the path (multi-node folders)
    for s in scans:
        if not s.get("readable"):
            continue
        rank = assigned.get(s["path"], (None, ""))[0]
        if rank is None:
            continue
        by_name.setdefault((os.path.basename(s["path"]), rank), set()).add(os.path.dirname(s["path"]))
    clash = [dirs for dirs in by_name.values() if len(dirs) > 1]
    if not clash:
        return {"": len(scans)}
    job_dirs = sorted(set().union(*clash))
    out: dict[str, int] = {}
    for s in scans:
        d = os.path.dirname(s["path"])
        owner = next((j for j in job_dirs if d == j or d.startswith(j + os.sep)), None)
        if owner is not None:
            out[owner] = out.get(owner, 0) + 1
    return out


def facts_from_scans(scans: list[dict[str, Any]], skipped: Iterable[dict[str, Any]] = (),
                     catalogue: Catalogue | None = None) -> tuple[Facts, LogScan]:  # fmt: skip
    facts = Facts()
    scan = LogScan(files=scans, skipped=list(skipped))
    layout = next(({"text": s["parallel_layout"], "file": s["path"]} for s in scans
                   if s.get("readable") and s.get("parallel_layout")), None)  # fmt: skip
    if layout is None:
        _report_as_twins(scans, (catalogue or load_catalogue()).twins())
    for s in scans:
        scan.skipped.extend(s.get("skipped", []))
        if s.get("readable") and s.get("recognised", 1) == 0 and len(scans) > 1:
            # a README or a config beside the logs: not a log, so it names no rank and no missing rank
            s["readable"] = False
            scan.skipped.append({"file": s["path"], "reason": "no line of a known log grammar (not a log)"})
    ranks = _assign_ranks(scans)
    by_rank: dict[int, list[dict[str, Any]]] = {}
    launcher: list[dict[str, Any]] = []
    pid_rank: dict[int, int] = {}
    split = False
    for s in scans:
        r, how = ranks[s["path"]]
        scan.file_rank[s["path"]] = r
        s["rank"], s["rank_source"] = r, how
        if not s.get("readable"):
            continue
        views = _rank_views(s) if r is None and how.startswith("several ranks") else {}
        if views:  # one console of several ranks: each rank's prefixed lines are that rank's log
            split = True
            for pr, view in views.items():
                by_rank.setdefault(pr, []).append(view)
            launcher.append(dict(s, first_events=[e for e in s.get("first_events", []) if e.get("prank") is None],
                                 since_progress=[e for e in s.get("since_progress", []) if e.get("prank") is None]))  # fmt: skip
        elif r is None:
            launcher.append(s)
        else:
            by_rank.setdefault(r, []).append(s)
            for pid in s.get("pids", [])[:1]:  # the writer of a rank's own log is its main pid
                pid_rank[pid] = r
    readable = [s for s in scans if s.get("readable")]
    if not readable:
        raise InputError("no readable log file: " + "; ".join(f"{k['file']}: {k['reason']}" for k in scan.skipped[:3]))
    rank_facts = {str(r): _merge_rank(r, ss) for r, ss in sorted(by_rank.items())}
    facts.set("logs.ranks", rank_facts, SOURCE)
    facts.set("logs.launcher", _launcher_facts(launcher, pid_rank, set(by_rank)), SOURCE)
    world = _world_size(scans)
    if world is not None:
        facts.set("logs.world_size", world, SOURCE)
        # a console's paste shows the ranks that wrote to it: the others are not known to be missing; nor are they
        # where no file is a rank's log and no launcher's log lists its workers (a pasted excerpt whose world size is
        # a quoted command's `--worker_num=4`, Paddle's parameter-server launch in paddle#52394: "4 of 4 ranks have
        # no log" headed the missing environment variable the paste was about)
        excerpt = not by_rank and not any(s.get("msrun_workers") or s.get("scheduler_nodes") for s in scans)
        facts.set("logs.missing_ranks", [] if split or excerpt else [r for r in range(world) if r not in by_rank], SOURCE)
    else:
        facts.unknown("logs.world_size", "no log states the world size (RANK_SIZE, scheduler's expected node number)", SOURCE)
        facts.unknown("logs.missing_ranks", "world size unknown", SOURCE)
    facts.set("logs.clock", {
        "anchor": "Cluster is successfully initialized",
        "per_rank": {k: v["cluster_up"] for k, v in rank_facts.items() if v["cluster_up"] is not None},
    }, SOURCE)  # fmt: skip
    facts.set("logs.files", [{"file": s["path"], "rank": s.get("rank"), "rank_source": s.get("rank_source"),
                              "kind": s["kind"], "lines": s.get("lines"), "size": s.get("size")} for s in scans], SOURCE)  # fmt: skip
    elastic = [dict(e, file=s["path"]) for s in scans if s.get("readable") for e in s.get("elastic") or []]
    facts.set("logs.elastic", elastic[:MAX_ELASTIC], SOURCE)
    for s in scans:
        _elastic_kill_hit(s)
    facts.set("logs.hits", signature_hits(scan), SOURCE)
    facts.set("logs.parallel_layout", layout or {}, SOURCE)
    # A skipped file still says, by its name, whose log it was: a rank whose only log is unreadable is not
    # "silent", and the verdict must say so rather than read its silence as a hang.
    facts.set("logs.skipped", [dict(k, rank=rank_from_path(str(k.get("file", "")))[0]) for k in scan.skipped], SOURCE)
    return facts, scan


def _report_as_twins(scans: list[dict[str, Any]], twins: dict[str, str]) -> None:
    """In an input that names no parallel layout (msdoctor/facts/layout.py), the lines of a rule that has a twin
    (`twin_of` in the twin's TOML: an operator's shape or dtype refusal, PAR → NUM) are the twin's: every event and
    hit of the scans is renamed in place, before the ranks' facts and the hits are built from them."""
    if not twins:
        return

    def rename(ev: Any) -> None:
        if isinstance(ev, dict) and ev.get("rule") in twins:
            ev["rule"] = twins[ev["rule"]]

    for s in scans:  # a scan's rule ids: its hits and its kept events (exceptions and torchrun rows carry none)
        hits = s.get("hits") or {}
        for rid in [r for r in hits if r in twins]:
            h = hits.pop(rid)
            rename(h.get("first"))
            rename(h.get("last"))
            hits[twins[rid]] = h
        for key in ("first_events", "since_progress"):
            for ev in s.get(key) or []:
                rename(ev)


MAX_FIRSTS = 5
MAX_ELASTIC = 64
KILL_RULE = "MEM017"  # a process killed by SIGKILL without an error of its own: usually the host's OOM killer


def _elastic_kill_hit(s: dict[str, Any]) -> None:
    """torchrun's first observed failure killed by SIGKILL (exit code -9) is a hit of KILL_RULE.

    Only the Root Cause row: torchrun SIGKILLs the surviving workers itself once one failed, so a -9 row under
    `Failures:` is as often the consequence. The hit carries the row's values (rank, local rank, host, exit
    code, pid, signal) and the rank as the line's prank, so the finding names that rank."""
    root = next((e for e in s.get("elastic") or [] if e.get("section") == "root"), None)
    if root is None or root.get("signal") != 9 or KILL_RULE in (s.get("hits") or {}):
        return
    rule = load_catalogue().get(KILL_RULE)
    if rule is None:
        return
    groups = {k: str(root[k]) for k in ("rank", "local_rank", "host", "exitcode", "pid", "signal_name") if k in root}
    text = (f"traceback : {root['traceback']}" if root.get("traceback")
            else f"exitcode  : {root.get('exitcode')} (pid: {root.get('pid')})")  # fmt: skip
    ev: dict[str, Any] = {"rule": KILL_RULE, "role": rule.role, "severity": rule.severity.value,
                          "line": root.get("traceback_line") or root.get("line"), "text": text, "time": None,
                          "ts": None, "groups": groups, "prank": root.get("rank")}  # fmt: skip
    s.setdefault("hits", {})[KILL_RULE] = {"count": 1, "first": ev, "last": ev, "pids": {"-1": 1}, "values": groups}


def signature_hits(scan: LogScan) -> list[dict[str, Any]]:
    """Per signature rule over all files: the count, the count per rank, and its earliest lines with what
    the rule parsed from them (fact ``logs.hits``; ``msdoctor logs`` renders one finding per entry).

    msrun's console repeats the lines of the workers and the scheduler: a line of the console written by a
    process that has its own log file is counted there only. Plain progress lines are not hits.
    """
    agg: dict[str, dict[str, Any]] = {}
    own = {str(s["pids"][0]) for s in scan.files if s.get("readable") and s.get("pids") and s["kind"] != "msrun"}
    own_rules = {rid for s in scan.files if s["kind"] != "msrun" for rid in (s.get("hits") or {})}
    for s in scan.files:
        rank = scan.file_rank.get(s["path"])
        echo = s["kind"] == "msrun" or bool(s.get("msrun_workers"))
        for rid, h in (s.get("hits") or {}).items():
            first = h["first"]
            if first.get("role") == "progress" and first.get("severity") == "info":
                continue
            count = h["count"]
            if echo:
                count -= sum(n for pid, n in h.get("pids", {}).items() if pid in own or (pid == "-1" and rid in own_rules))
                if count <= 0:
                    continue
            a = agg.setdefault(rid, {"count": 0, "per_rank": {}, "firsts": []})
            a["count"] += count
            key = "launcher" if rank is None else str(rank)
            a["per_rank"][key] = a["per_rank"].get(key, 0) + count
            ev = {k: first[k] for k in ("line", "text", "time", "ts", "groups", "prank", "role", "severity", "step") if first.get(k) is not None}
            if first.get("logged_as") and not h.get("loud"):
                ev["logged_as"] = first["logged_as"]
            later = {k: v for k, v in (h.get("values") or {}).items() if not (first.get("groups") or {}).get(k)}
            if later:  # a value only a later line of the same rule gave (the port, the peer) still reaches the headline
                ev["groups"] = {**(first.get("groups") or {}), **later}
            a["firsts"].append(dict(ev, file=s["path"]))
    out = []
    for rid, a in sorted(agg.items()):
        firsts = sorted(a["firsts"], key=lambda e: (e.get("time") if e.get("time") is not None else float("inf"), e["file"]))
        out.append({"rule": rid, "count": a["count"], "per_rank": dict(list(a["per_rank"].items())[:1000]),
                    "ranks": sorted(int(k) for k in a["per_rank"] if k != "launcher")[:1000],
                    "firsts": firsts[:MAX_FIRSTS], "one_file": len(scan.files) == 1})  # fmt: skip
    return out


def _launcher_facts(scans: list[dict[str, Any]], pid_rank: dict[int, int], has_file: set[int]) -> dict[str, Any]:
    """Events of files that belong to no single rank (scheduler.log, the msrun console).

    A console repeats the workers' lines; a line whose pid is a rank with its own log is dropped here
    (that rank's file already holds it).
    """
    events: list[dict[str, Any]] = []
    for s in scans:
        for e in s.get("first_events", []) + s.get("since_progress", []):
            m = re.search(r"\((\d+)[,:]", e.get("text", "")[:80])
            if m and pid_rank.get(int(m.group(1))) in has_file:
                continue
            events.append(_slim(e, s["path"]))
    uniq = {(e["file"], e["line"], e.get("rule")): e for e in events}
    ordered = sorted(uniq.values(), key=_time_key)
    out: dict[str, Any] = {"files": [s["path"] for s in scans], "events": ordered[:80]}
    losses = _loss_curves(scans)
    if losses:  # a pasted excerpt's loss curve (no rank): NUM204 reads it as a rank's
        out["losses"] = losses
    tb = _open_tb(scans)
    if tb:
        out["open_traceback"] = tb
    return out


def _world_size(scans: list[dict[str, Any]]) -> int | None:
    sizes = [s["world_size"] for s in scans if s.get("world_size")]
    msrun = max((len(s.get("msrun_workers") or {}) for s in scans), default=0)
    sched = max((len(s.get("scheduler_nodes") or {}) for s in scans), default=0)
    cands = sizes + [n for n in (msrun, sched) if n]
    return max(cands) if cands else None
