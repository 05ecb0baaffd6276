"""What a run computes from its rules is kept for the next run (msdoctor/cache.py): a second run parses no rule's TOML
and no pattern for its anchors, a changed rule is read again, and a cache that cannot be read or written changes
nothing but the time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from msdoctor import cache
from msdoctor.engine import catalogue as cat
from msdoctor.engine import evaluate

RULES = Path(cat.rules_root())


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MSDOCTOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MSDOCTOR_NO_CACHE", raising=False)
    return tmp_path / "cache" / "rules"


def _small_root(tmp_path: Path) -> Path:
    root = tmp_path / "rules"
    for rid in ("MEM001", "ENV120", "COMM001"):
        src = next(RULES.glob(f"*/{rid}.toml"))
        (root / src.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / src.parent.name / src.name)
    return root


def _no_toml(*_a: object, **_k: object) -> None:
    raise AssertionError("a rule file was parsed again")


def test_a_second_load_parses_no_toml(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _small_root(tmp_path)
    first = cat.load_from(root)
    assert list(cache_dir.glob("rule-toml-*.json"))
    monkeypatch.setattr(cat.tomllib, "loads", _no_toml)
    second = cat.load_from(root)
    assert [(r.id, r.title, r.signatures) for r in first] == [(r.id, r.title, r.signatures) for r in second]


def test_a_changed_rule_is_read_again(cache_dir: Path, tmp_path: Path) -> None:
    root = _small_root(tmp_path)
    cat.load_from(root)
    f = next(root.glob("*/MEM001.toml"))
    text = f.read_text(encoding="utf-8")
    old = cat.parse_document(text, str(f)).title
    assert old in text
    f.write_text(text.replace(old, "A title changed since the last run", 1), encoding="utf-8")
    got = cat.load_from(root).get("MEM001")
    assert got is not None and got.title == "A title changed since the last run"


def test_a_second_signature_set_parses_no_pattern(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = list(cat.load_from(_small_root(tmp_path)))
    first = evaluate.SignatureSet(rules)
    assert list(cache_dir.glob("anchors-*.json"))
    monkeypatch.setattr(evaluate, "literal_anchors", _no_toml)
    second = evaluate.SignatureSet(rules)
    assert [a for _r, _s, a in first.entries] == [a for _r, _s, a in second.entries]
    assert second.match("RuntimeError: No XPU devices are available")


@pytest.mark.parametrize("damage", ["garbage", "wrong shape", "folder is a file"])
def test_a_cache_that_cannot_be_used_changes_nothing(damage: str, cache_dir: Path, tmp_path: Path) -> None:
    root = _small_root(tmp_path)
    want = [(r.id, r.title) for r in cat.load_from(root)]
    files = list(cache_dir.glob("*.json"))
    if damage == "folder is a file":
        shutil.rmtree(cache_dir)
        cache_dir.write_text("not a folder", encoding="utf-8")
    for f in files if damage != "folder is a file" else []:
        f.write_bytes(b"\x00\xff{" if damage == "garbage" else json.dumps({"format": 1, "items": [1, 2]}).encode())
    assert [(r.id, r.title) for r in cat.load_from(root)] == want
    sigs = evaluate.SignatureSet(list(cat.load_from(root)))
    assert sigs.match("RuntimeError: No XPU devices are available")


def test_no_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSDOCTOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MSDOCTOR_NO_CACHE", "1")
    cat.load_from(_small_root(tmp_path))
    assert not (tmp_path / "cache").exists()


def test_a_small_run_adds_to_the_file_and_a_whole_run_drops_what_it_left(cache_dir: Path) -> None:
    whole = cache.JsonCache("t", "1")
    for i in range(10):
        whole.put(str(i), i)
    whole.save()
    small = cache.JsonCache("t", "1")  # a test's catalogue: two keys, one new
    assert small.get("1") == 1
    small.put("new", 11)
    small.save()
    items = json.loads(next(cache_dir.glob("t-1.json")).read_text())["items"]
    assert set(items) == {*map(str, range(10)), "new"}
    again = cache.JsonCache("t", "1")  # the whole catalogue after half its rules changed: the stale half goes
    for i in range(5):
        assert again.get(str(i)) == i
    for i in range(5):
        again.put(f"changed{i}", i)
    again.save()
    items = json.loads(next(cache_dir.glob("t-1.json")).read_text())["items"]
    assert set(items) == {*map(str, range(5)), *(f"changed{i}" for i in range(5))}


def test_no_home_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's user without HOME or a passwd entry: `~` is not expanded, and no folder is made in the cwd."""
    for var in ("MSDOCTOR_CACHE", "XDG_CACHE_HOME", "MSDOCTOR_NO_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cache.Path, "home", classmethod(lambda cls: cls("~")))
    assert cache.cache_dir() is None and cache.JsonCache("t", "1").path is None
