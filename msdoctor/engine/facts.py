"""The facts snapshot: a flat, serialisable mapping from dotted names to values or ``Unknown``.

Collectors fill it and never judge; checks read it through :meth:`Facts.need`, which raises
:class:`Missing` when a fact is absent or unknown, so the engine can report the rule as
*not evaluated* instead of passed. ``--dump-facts`` / ``--facts`` round-trip it as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from msdoctor.engine.model import Unknown
from msdoctor.errors import InputError

SNAPSHOT_FORMAT = "msdoctor-facts/1"
T = TypeVar("T")


class Missing(Exception):
    """Raised by :meth:`Facts.need`: the fact a check needs is absent or unknown."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class Facts(Mapping[str, Any]):
    def __init__(
        self, values: Mapping[str, Any] | None = None, sources: Mapping[str, str] | None = None
    ) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self._sources: dict[str, str] = dict(sources or {})
        self.meta: dict[str, Any] = {}
        self._derived: dict[str, Any] = {}  # what checks compute from the facts; dropped on any change

    def derived(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per state of the facts: several check rules read one derivation (the fallback's
        classification of the first unrecognised error is read by every area's X099 and X097). Not part of
        the snapshot; any :meth:`set` or :meth:`update` forgets it."""
        if key not in self._derived:
            self._derived[key] = compute()
        value: T = self._derived[key]
        return value

    # -- building (collectors) ------------------------------------------------------------
    def set(self, name: str, value: Any, source: str = "") -> None:
        self._derived.clear()
        self._values[name] = value
        if source:
            self._sources[name] = source

    def unknown(self, name: str, reason: str, source: str = "") -> None:
        self.set(name, Unknown(reason, source), source)

    def update(self, other: Facts) -> None:
        self._derived.clear()
        self._values.update(other._values)
        self._sources.update(other._sources)

    # -- reading (checks) -------------------------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def need(self, name: str) -> Any:
        """The value, or raise :class:`Missing` (absent or ``Unknown``)."""
        if name not in self._values:
            raise Missing(name, "not collected")
        value = self._values[name]
        if isinstance(value, Unknown):
            raise Missing(name, value.reason)
        return value

    def get_known(self, name: str, default: Any = None) -> Any:
        value = self._values.get(name, default)
        return default if isinstance(value, Unknown) else value

    def is_known(self, name: str) -> bool:
        return name in self._values and not isinstance(self._values[name], Unknown)

    def source(self, name: str) -> str:
        return self._sources.get(name, "")

    def prefixed(self, prefix: str) -> dict[str, Any]:
        return {k: v for k, v in self._values.items() if k.startswith(prefix)}

    # -- serialisation ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in sorted(self._values.items()):
            if isinstance(value, Unknown):
                entry: dict[str, Any] = value.to_dict()
            else:
                entry = {"value": value}
            src = self._sources.get(name)
            if src:
                entry["source"] = src
            out[name] = entry
        return {"format": SNAPSHOT_FORMAT, "meta": self.meta, "facts": out}

    def dumps(self) -> bytes:
        return orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)

    def dump(self, path: str | Path) -> None:
        """Write the snapshot for ``--dump-facts``; a path that cannot be written is the user's input
        error (one line, exit 2), not a traceback after the whole collection ran."""
        from msdoctor.safeio import write_output

        write_output(path, self.dumps(), "--dump-facts")

    @classmethod
    def from_json(cls, data: Any, origin: str = "snapshot") -> Facts:
        if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
            raise InputError(f"{origin}: not an msdoctor facts snapshot (expected format {SNAPSHOT_FORMAT!r})")
        from msdoctor.engine.factschema import validate

        facts = cls()
        meta = data.get("meta") or {}
        if not isinstance(meta, dict):
            raise InputError(f"{origin}: 'meta' must be an object")
        facts.meta = dict(meta)
        raw = data.get("facts")
        if not isinstance(raw, dict):
            raise InputError(f"{origin}: 'facts' must be an object")
        for name, entry in raw.items():
            if not isinstance(entry, dict):
                raise InputError(f"{origin}: fact {name!r} must be an object")
            src = entry.get("source", "")
            if not isinstance(src, str):
                raise InputError(f"{origin}: fact {name!r}: 'source' must be a string")
            if "unknown" in entry:
                facts.set(name, Unknown(str(entry["unknown"]), src), src)
            elif "value" in entry:
                problem = validate(name, entry["value"])
                if problem:
                    raise InputError(f"{origin}: fact {problem} (not a snapshot msdoctor wrote, or edited by hand)")
                facts.set(name, entry["value"], src)
            else:
                raise InputError(f"{origin}: fact {name!r} has neither 'value' nor 'unknown'")
        return facts

    @classmethod
    def load(cls, path: str | Path, expect: Sequence[str] = ()) -> Facts:
        """Read a snapshot. ``expect``: the fact prefixes the caller's rules read (e.g. ``("profile",)``);
        a snapshot holding none of them (another command's) is an input error, not "no findings"."""
        from msdoctor.safeio import read_input

        p = Path(path)
        raw = read_input(p, "facts snapshot")  # a FIFO, device, directory or link loop: InputError
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:  # also integers beyond 64 bits and nesting past 1024
            raise InputError(f"{p}: not valid JSON ({exc})") from None
        facts = cls.from_json(data, str(p))
        if expect and not any(name.split(".", 1)[0] in expect for name in facts):
            wanted = ", ".join(f"{e}.*" for e in expect)
            raise InputError(f"{p}: no {wanted} facts in this snapshot (written by another command's --dump-facts?)")
        return facts
