"""What one run of msdoctor computes from its own rules, kept for the next run (a JSON file per kind).

Every run used to parse ~1500 rule files' TOML and every signature's regex for its literal anchors: about half of
the CPU of one `msdoctor logs` on a short paste. Both are pure functions of text — a rule file's bytes, a
pattern — so a file of ``{key: value}`` under the user's cache folder serves them to the next run:

* the folder is ``rules/`` of msdoctor's cache folder (:func:`cache_root`: ``$MSDOCTOR_CACHE``, else
  ``$XDG_CACHE_HOME/msdoctor``, else ``~/.cache/msdoctor``; the trainer keeps its MindRecord data there too);
  ``MSDOCTOR_NO_CACHE=1`` turns it off;
* the file's name holds a ``version`` of what computed it (the Python version for TOML, a digest of the module
  for anchors), so a changed computation reads a fresh file, never a stale one;
* a file that cannot be read or written (a read-only home, a container, a corrupt file, a race with another
  run) is ignored: the run computes as without a cache. Writes go to a temporary file renamed in place.

Only JSON is read: a cache file is data, never code.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 1


def cache_root() -> Path:
    """msdoctor's cache folder: ``$MSDOCTOR_CACHE``, else ``$XDG_CACHE_HOME/msdoctor``, else ``~/.cache/msdoctor``."""
    base = os.environ.get("MSDOCTOR_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "msdoctor" if xdg else Path.home() / ".cache" / "msdoctor"


def cache_dir() -> Path | None:
    """Where the rule caches live, or None when ``MSDOCTOR_NO_CACHE`` is set or there is no home to put them in (a
    container's user without ``HOME`` or a passwd entry: ``~`` stays unexpanded, and a relative folder would land in
    the working directory)."""
    if os.environ.get("MSDOCTOR_NO_CACHE"):
        return None
    root = cache_root()
    return root / "rules" if root.is_absolute() else None


class JsonCache:
    """``{key: value}`` of one kind; :meth:`save` writes back the keys this run used, when one was new."""

    def __init__(self, kind: str, version: str) -> None:
        folder = cache_dir()
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in f"{kind}-{version}")
        self.path = folder / f"{safe}.json" if folder is not None else None
        self._old: dict[str, Any] = {}
        self._used: dict[str, Any] = {}
        self._new = False
        if self.path is None:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("items"), dict):
            self._old = data["items"]

    def get(self, key: str) -> Any:
        value = self._old.get(key)
        if value is not None:
            self._used[key] = value
        return value

    def put(self, key: str, value: Any) -> None:
        self._used[key] = value
        self._new = True

    def save(self) -> None:
        """Write the file back if this run computed a new value; never raises.

        A run that used at least half the file's keys (the whole catalogue) drops the keys it did not use once they
        are a third of the file (rules edited since); a run over a few rules (a test's catalogue, one signature set
        of a selection) adds its keys to the file's.
        """
        if self.path is None or not self._new:
            return
        merged = {**self._old, **self._used}
        full_run = len(self._used) * 2 >= len(self._old)
        items = self._used if full_run and len(merged) * 2 > len(self._used) * 3 else merged
        try:
            text = json.dumps({"format": FORMAT, "items": items}, ensure_ascii=False, separators=(",", ":"))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, TypeError, ValueError):
            return
        self._new = False
