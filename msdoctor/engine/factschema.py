"""The shape of every known fact, so a ``--facts`` snapshot is validated when it is loaded.

A hand-edited or corrupted snapshot (a list where a mapping belongs, a string where a number belongs)
must be an input error that names the fact and the place inside it — never a ``TypeError`` deep inside
a check. The shapes are learnt from real snapshots (the rule fixtures, and the commands' own dumps of
the bundled samples) by ``python -m msdoctor.schemagen --write`` and kept in
``msdoctor/data/facts_schema.json``; a test fails when a fixture does not fit the recorded shapes.

Validation is lenient where real snapshots vary: ``null`` fits where a real snapshot had one, integers
and floats are one kind, a mapping may carry keys the schema does not know, and a fact the schema does not know is
accepted as it is (a newer msdoctor's fact).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

Shape = dict[str, Any]  # {"t": [scalar kinds], "list": Shape, "dict": {key: Shape}, "map": Shape}
_SCHEMA: dict[str, Shape] | None = None
MAP_KEYS = 24  # a mapping with more keys than this, or with numeric keys, is a map (rank → value)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "num"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


def _is_map(d: dict[str, Any]) -> bool:
    return len(d) > MAP_KEYS or (bool(d) and all(str(k).lstrip("-").isdigit() for k in d))


def learn(v: Any, into: Shape | None = None) -> Shape:
    """Merge the shape of ``v`` into ``into`` (a new shape when None)."""
    s: Shape = into if into is not None else {}
    k = _kind(v)
    if k == "list":
        for item in v:
            s["list"] = learn(item, s.get("list"))
        s.setdefault("list", {})
    elif k == "dict":
        if _is_map(v) or "map" in s:
            m = s.get("map")
            for item in v.values():
                m = learn(item, m)
            if "dict" in s:  # seen as a record before: fold its fields into the map's value shape
                for sub in s.pop("dict").values():
                    m = _merge(m, sub)
            s["map"] = m if m is not None else {}
        else:
            d = s.setdefault("dict", {})
            for key, item in v.items():
                d[str(key)] = learn(item, d.get(str(key)))
    else:
        kinds = set(s.get("t", []))
        kinds.add(k)
        s["t"] = sorted(kinds)
    return s


def _merge(a: Shape | None, b: Shape) -> Shape:
    out: Shape = dict(a or {})
    if "t" in b:
        out["t"] = sorted(set(out.get("t", [])) | set(b["t"]))
    if "list" in b:
        out["list"] = _merge(out.get("list"), b["list"])
    if "map" in b:
        out["map"] = _merge(out.get("map"), b["map"])
    if "dict" in b:
        d = dict(out.get("dict", {}))
        for key, sub in b["dict"].items():
            d[key] = _merge(d.get(key), sub)
        out["dict"] = d
    return out


def check(v: Any, s: Shape, path: str) -> str | None:
    """Where ``v`` does not fit ``s`` (``path: expected …, got …``), or None."""
    k = _kind(v)
    if not s:
        return None
    if k == "list":
        if "list" not in s:
            return f"{path}: expected {_describe(s)}, got a list"
        for i, item in enumerate(v):
            err = check(item, s["list"], f"{path}[{i}]")
            if err:
                return err
        return None
    if k == "dict":
        if "dict" in s:
            for key, item in v.items():
                sub = s["dict"].get(str(key))
                if sub is not None:
                    err = check(item, sub, f"{path}.{key}")
                    if err:
                        return err
            return None
        if "map" in s:
            for key, item in v.items():
                err = check(item, s["map"], f"{path}[{key!r}]")
                if err:
                    return err
            return None
        return f"{path}: expected {_describe(s)}, got a mapping"
    if k not in s.get("t", []):
        return f"{path}: expected {_describe(s)}, got {k} {str(v)[:40]!r}"
    return None


def _describe(s: Shape) -> str:
    kinds = list(s.get("t", []))
    kinds += ["a list"] if "list" in s else []
    kinds += ["a mapping"] if ("dict" in s or "map" in s) else []
    names = {"num": "a number", "str": "a string", "bool": "true/false", "null": "null"}
    return " or ".join(names.get(x, x) for x in kinds) or "nothing"


def schema() -> dict[str, Shape]:
    global _SCHEMA
    if _SCHEMA is None:
        try:
            text = resources.files("msdoctor.data").joinpath("facts_schema.json").read_text(encoding="utf-8")
            _SCHEMA = json.loads(text)
        except (OSError, ValueError):
            _SCHEMA = {}
    return _SCHEMA


def validate(name: str, value: Any) -> str | None:
    """``None`` when the value fits the known shape of fact ``name`` (or the fact is not known)."""
    s = schema().get(name)
    return None if s is None else check(value, s, name)
