"""Checks over ``ckpt.*`` facts (rules CKPT601-606): replica drift, naming, shapes, unreadable files, NaN,
files whose tensors cannot all be read.

Pure functions of the facts snapshot (see ``msdoctor/facts/checkpoint.py`` for its shape).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from msdoctor.engine.facts import Facts, Missing
from msdoctor.engine.model import Evidence, Hit, check_params

# Hugging Face names LayerNorm and Embedding parameters differently from MindSpore's nn.LayerNorm
# (gamma/beta) and nn.Embedding (embedding_table): seed §2.3, MindSpore's nn API.
HF_MS_LEAVES = (("weight", "gamma"), ("bias", "beta"), ("weight", "embedding_table"))


def _readable(facts: Facts) -> list[dict[str, Any]]:
    """Files read without error, each once (a path given twice is one file)."""
    return [f for f in facts.need("ckpt.files") if not f.get("error") and not f.get("duplicate_of")]


def _cut(f: Mapping[str, Any]) -> bool:
    return bool((f.get("framing") or {}).get("truncated"))


def _head_of(f: Mapping[str, Any], ref: Mapping[str, Any]) -> bool:
    """``f`` holds only the first tensors of ``ref``, in the same order: a file cut exactly between two
    tensors (well-formed, so neither its framing nor MindSpore's loader can tell)."""
    names, ref_names = list(f.get("params") or {}), list(ref.get("params") or {})
    return 0 < len(names) < len(ref_names) and ref_names[: len(names)] == names


def _complete(f: Mapping[str, Any]) -> bool:
    present = f.get("present")
    read = f.get("read", len(f.get("params") or {}))
    return not f.get("error") and not _cut(f) and (present is None or read >= present)


def _pairs(facts: Facts) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(reference, file) for every readable non-reference file, within its group.

    Raises Missing when nothing can be compared, so the rule is *not evaluated* rather than passed.
    """
    groups: Mapping[str, str | None] = facts.need("ckpt.groups")
    by_path = {f["path"]: f for f in _readable(facts)}
    pairs = [
        (by_path[ref], f)
        for f in by_path.values()
        if (ref := groups.get(f.get("group", ""))) is not None and ref in by_path and f["path"] != ref
    ]
    if not pairs:
        raise Missing("ckpt.groups", "fewer than two readable checkpoints in every group: nothing to compare")
    return pairs


def _label(f: Mapping[str, Any]) -> str:
    return f"rank {f['rank']} ({f['path']})" if f.get("rank") is not None else str(f["path"])


def _rank(f: Mapping[str, Any]) -> int | None:
    r = f.get("rank")
    return r if isinstance(r, int) else None


@check_params(max_listed=int | None, tolerance=float | None)
def replicas_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """Files that should be identical replicas hold different values for the same parameter."""
    tol = float(params.get("tolerance", 0.0))
    top = int(params.get("max_listed", 5))
    for ref, f in _pairs(facts):
        ref_path = ref["path"]
        diffs = sorted(
            ((name, p["diff"]) for name, p in f["params"].items() if p.get("diff") is not None and p["diff"] > tol),
            key=lambda nd: -nd[1],
        )
        if not diffs:
            continue
        listed = ", ".join(f"{name} (max |Δ| {d:.3g})" for name, d in diffs[:top])
        more = f" and {len(diffs) - top} more" if len(diffs) > top else ""
        yield Hit(
            message=f"{_label(f)} differs from the reference {ref_path} in {len(diffs)} parameter(s): {listed}{more}",
            evidence=tuple(Evidence(text=f"{name}: max |Δ| = {d:.6g} (tolerance {tol:g})", file=f["path"]) for name, d in diffs[:top]),
            rank=_rank(f),
            data={"reference": ref_path, "file": f["path"], "params": {n: d for n, d in diffs}, "tolerance": tol},
        )


def _hf_pairs(only_a: Iterable[str], only_b: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs (a, b) whose names differ only by a Hugging Face vs MindSpore leaf name."""
    b_set = set(only_b)
    pairs = []
    for a in only_a:
        stem, dot, leaf = a.rpartition(".")
        for hf, ms in HF_MS_LEAVES:
            other = ms if leaf == hf else hf if leaf == ms else None
            if other is not None and f"{stem}{dot}{other}" in b_set:
                pairs.append((a, f"{stem}{dot}{other}"))
    return pairs


@check_params(max_listed=int | None)
def names_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """Parameter names present in some files and missing in others (and the HF↔MindSpore naming pattern)."""
    top = int(params.get("max_listed", 5))
    for ref, f in _pairs(facts):
        if not (_complete(ref) and _complete(f)) or _head_of(f, ref) or _head_of(ref, f):
            continue  # missing names of a cut file are CKPT606's finding, not a naming difference
        ref_names = set(ref["params"])
        names = set(f["params"])
        only_ref, only_f = sorted(ref_names - names), sorted(names - ref_names)
        if not only_ref and not only_f:
            continue
        pairs = _hf_pairs(only_ref, only_f)
        hint = ""
        if pairs:
            shown = ", ".join(f"{a} ↔ {b}" for a, b in pairs[:top])
            hint = (
                f"; {len(pairs)} differ only by Hugging Face vs MindSpore naming (weight/bias vs gamma/beta"
                f" or embedding_table): {shown}"
            )
        yield Hit(
            message=(
                f"{_label(ref)} and {_label(f)} hold different parameter names: {len(only_ref)} only in the"
                f" first, {len(only_f)} only in the second{hint}"
            ),
            evidence=tuple(
                [Evidence(text=f"only here: {n}", file=ref["path"]) for n in only_ref[:top]]
                + [Evidence(text=f"only here: {n}", file=f["path"]) for n in only_f[:top]]
            ),
            rank=_rank(f),
            data={"reference": ref["path"], "file": f["path"], "only_reference": only_ref, "only_file": only_f,
                  "naming_pairs": [list(p) for p in pairs]},
        )  # fmt: skip


@check_params(max_listed=int | None)
def shapes_differ(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """The same parameter name with another shape (a sharded slice vs the full tensor, or another model)."""
    top = int(params.get("max_listed", 5))
    for ref, f in _pairs(facts):
        bad = [
            (n, ref["params"][n]["shape"], p["shape"])
            for n, p in f["params"].items()
            if n in ref["params"] and ref["params"][n]["shape"] != p["shape"]
        ]
        if not bad:
            continue
        listed = ", ".join(f"{n} {a}→{b}" for n, a, b in bad[:top])
        yield Hit(
            message=f"{_label(f)}: {len(bad)} parameter(s) have another shape than in {ref['path']}: {listed}",
            evidence=tuple(Evidence(text=f"{n}: {a} in reference, {b} here", file=f["path"]) for n, a, b in bad[:top]),
            rank=_rank(f),
            data={"reference": ref["path"], "file": f["path"], "shapes": {n: [a, b] for n, a, b in bad}},
        )


@check_params()
def unreadable(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """A checkpoint file that cannot be read (truncated, corrupt, not a checkpoint)."""
    for f in facts.need("ckpt.files"):
        if f.get("error") and not _cut(f):  # a cut file: CKPT606 says how much of it is there
            yield Hit(
                message=f"{_label(f)} cannot be read: {f['error']}",
                evidence=(Evidence(text=str(f["error"]), file=f["path"]),),
                rank=_rank(f),
                data={"file": f["path"]},
            )


@check_params(max_listed=int | None)
def nonfinite_values(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """Parameters holding NaN or Inf: the run diverged before this save."""
    top = int(params.get("max_listed", 5))
    for f in _readable(facts):
        bad = [(n, p["nonfinite"]) for n, p in f["params"].items() if p.get("nonfinite")]
        if bad:
            listed = ", ".join(f"{n} ({c} values)" for n, c in bad[:top])
            yield Hit(
                message=f"{_label(f)}: {len(bad)} parameter(s) hold NaN/Inf: {listed}",
                evidence=tuple(Evidence(text=f"{n}: {c} non-finite values", file=f["path"]) for n, c in bad[:top]),
                rank=_rank(f),
                data={"file": f["path"], "params": dict(bad)},
            )


@check_params()
def incomplete(facts: Facts, params: Mapping[str, Any]) -> Iterator[Hit]:
    """A file whose tensors cannot all be read: cut short (its framing ends inside a tensor), the reader
    returned fewer tensors than the file holds, or it holds only the first tensors of its group's
    replica in the same order (cut between two tensors). MindSpore's loader reads the first tensors of
    a cut checkpoint without an error."""
    files = facts.need("ckpt.files")
    groups: Mapping[str, str | None] = facts.get_known("ckpt.groups", {}) or {}
    by_path = {f["path"]: f for f in files}
    for f in files:
        ref = by_path.get(groups.get(f.get("group", "")) or "")
        ref = ref if ref is not None and ref is not f and _complete(ref) else None
        boundary = ref is not None and _complete(f) and _head_of(f, ref)
        if f.get("duplicate_of") or (f.get("error") and not _cut(f)) or (_complete(f) and not boundary):
            continue
        fr = f.get("framing") or {}
        present, read = f.get("present"), f.get("read", len(f.get("params") or {}))
        parts = []
        if _cut(f):
            where = f"inside tensor '{fr['cut_tag']}'" if fr.get("cut_tag") else "inside a tensor record"
            short = f", {fr['missing_bytes']} byte(s) short" if fr.get("missing_bytes") else ""
            parts.append(f"the file is cut: it ends {where} at byte {fr.get('bytes')}{short}")
        elif boundary:
            last = list(f["params"])[-1]
            parts.append(f"the file holds only the first {read} tensors of its replica, in the same order, and ends"
                         f" right after '{last}': cut between two tensors")  # fmt: skip
        if f.get("error"):
            parts.append(f"the reader read no tensor ({f['error']})")
        elif not boundary:
            parts.append(f"the reader returned {read} of the {present} tensor(s) present")
        ref_n = None
        if ref is not None:
            ref_n = ref.get("present") or len(ref.get("params") or {})
            parts.append(f"the complete replica {ref['path']} holds {ref_n}")
        missing = [n for n in (ref or {}).get("params", {}) if n not in (f.get("params") or {})]
        yield Hit(
            message=f"{_label(f)}: not every tensor can be read — " + "; ".join(parts),
            evidence=tuple(
                [Evidence(text="; ".join(parts[:1]), file=f["path"])]
                + [Evidence(text=f"not read: {n}", file=f["path"]) for n in missing[:5]]
            ),
            rank=_rank(f),
            data={"file": f["path"], "read": read, "present": present, "reference_tensors": ref_n,
                  "truncated": _cut(f), "boundary": boundary, "cut_tag": fr.get("cut_tag"),
                  "missing_bytes": fr.get("missing_bytes"), "not_read": missing},  # fmt: skip
        )
