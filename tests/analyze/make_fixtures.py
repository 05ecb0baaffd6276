"""Regenerate the fire/silent facts fixtures of the profile rules from generated trees.

    .venv/bin/python tests/analyze/make_fixtures.py

Each fixture is the real ``Facts.dumps()`` of ``msdoctor.facts.profile.collect`` over a tree made
by samples/profiles/gen_profile.py with one known problem injected (or none, for *silent*).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "samples" / "profiles"))

import gen_profile as gp  # noqa: E402

from msdoctor.facts import profile as prof  # noqa: E402

FIXTURES = ROOT / "tests" / "rules" / "fixtures"
SMALL = {"kernels": 8, "steps": 4}
SCENARIOS = {
    "silent": gp.Config(ranks=4, pp=2, overlap=0.9, **SMALL),
    "problems": gp.Config(ranks=8, pp=2, slow_rank=2, slow_link=(4, 5), stage_imbalance=(1, 1.4), spike_steps=[3], **SMALL),
    "host": gp.Config(ranks=4, overlap=0.9, free_ms=40.0, data_ms=30.0, hot_op=("MatMul", 0.7), **SMALL),
    "truncated": gp.Config(ranks=4, overlap=0.9, truncate_rank=1, kernels=64, steps=4),
    "regressed": gp.Config(ranks=4, pp=2, overlap=0.5, allreduce_ms=80.0, **SMALL),
}
FIRE = {
    "PERF301": "problems", "PERF302": "problems", "COMM301": "problems", "COMM302": "problems", "PAR301": "problems",
    "PERF303": "host", "PERF304": "host", "DATA301": "host", "PERF306": "truncated", "PERF305": "regressed",
}  # fmt: skip


def collect(cfg: gp.Config, base: gp.Config | None = None) -> bytes:
    with tempfile.TemporaryDirectory() as td:
        tree = Path(td) / "prof"
        gp.generate(tree, cfg)
        data = prof.collect(tree, tmpdir=Path(td))
        if base is not None:
            btree = Path(td) / "base"
            gp.generate(btree, base)
            prof.add_baseline(data.facts, prof.collect(btree, tmpdir=Path(td)).facts)
        data.facts.set("profile.root", f"<generated:{cfg.ranks} ranks>", "profile")
        files = data.facts["profile.files"]
        skipped = files["skipped"] + files["recovered"] + files["read"] + files["ignored"]
        for s in skipped:  # temp paths → stable names
            s["path"] = s["path"].replace(str(tree), "<tree>")
        return data.facts.dumps()


def main() -> int:
    silent = collect(SCENARIOS["silent"], base=SCENARIOS["silent"])
    for rid, name in FIRE.items():
        base = SCENARIOS["silent"] if name == "regressed" else SCENARIOS[name]
        (FIXTURES / f"{rid}.fire.json").write_bytes(collect(SCENARIOS[name], base=base))
        (FIXTURES / f"{rid}.silent.json").write_bytes(silent)
        print(f"{rid}: fire={name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
