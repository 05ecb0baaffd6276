"""The built wheel works on its own: rules are packaged, the trainer imports, nothing comes from the source tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msdoctor.engine.catalogue import load_from

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import msdoctor, msdoctor_rules, msdoctor_trainer
from msdoctor.engine.catalogue import load_catalogue, rules_root
cat = load_catalogue()
print(json.dumps({"msdoctor": msdoctor.__file__, "rules_root": str(rules_root()),
                  "trainer": msdoctor_trainer.__file__, "rules": sorted(r.id for r in cat)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    wheel_dir, target, src = tmp / "dist", tmp / "site", tmp / "src"
    # Build from a copy: an in-tree build leaves build/lib behind, whose stale files would be packaged
    # (and six engineers build in the same checkout).
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    for name in ("msdoctor", "rules", "trainer"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    # --no-build-isolation: setuptools/wheel are in the venv and the build must not need the network.
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", str(src), "-w", str(wheel_dir)],
        capture_output=True, text=True, timeout=120, cwd=tmp,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    wheels = list(wheel_dir.glob("msdoctor-*.whl"))
    assert len(wheels) == 1, wheels
    inst = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheels[0])],
        capture_output=True, text=True, timeout=120, cwd=tmp,
    )  # fmt: skip
    assert inst.returncode == 0, inst.stderr[-2000:]
    return target


def test_wheel_imports_from_its_install_and_ships_every_rule(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # cwd outside the repository so neither '' on sys.path nor the editable install can win.
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(installed)], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("msdoctor", "rules_root", "trainer"):
        assert Path(info[key]).resolve().is_relative_to(installed.resolve()), f"{key} came from {info[key]}"
    source_ids = sorted(r.id for r in load_from(ROOT / "rules"))
    assert info["rules"] == source_ids, "the wheel does not ship the same rules as rules/"


def test_source_tree_uses_its_own_rules_whatever_msdoctor_rules_resolves_to(tmp_path: Path) -> None:
    # A msdoctor_rules package earlier on the path (as the venv's editable install of another checkout is, for a
    # git worktree run with PYTHONPATH) must not give this tree's engine another tree's rules.
    decoy = tmp_path / "msdoctor_rules"
    (decoy / "env").mkdir(parents=True)
    (decoy / "__init__.py").write_text("", encoding="utf-8")
    probe = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import msdoctor_rules; "
             "from msdoctor.engine.catalogue import rules_root; print(msdoctor_rules.__file__); print(rules_root())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", probe, str(ROOT), str(tmp_path)], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    imported, root = out.stdout.strip().splitlines()[-2:]
    assert Path(imported).resolve().is_relative_to(tmp_path.resolve()), "the decoy package was not the one imported"
    assert Path(root).resolve() == (ROOT / "rules").resolve()
