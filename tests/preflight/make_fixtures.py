"""Write the fire/silent fixtures of the preflight rules from the real collectors over the samples.

    .venv/bin/python -m tests.preflight.make_fixtures

Every fixture is ``Facts.dumps()`` of what the collectors return for a sample root / env file /
rank table, so fixtures stay real. Three facts that only the live host has and that this machine
cannot produce both ways (open-files limit above its hard limit of 20000; a checkpoint disk with
more than 50 GiB free is real here, less is /dev/shm) are set on top of a collected snapshot and
their ``source`` says so.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from msdoctor.engine.facts import Facts
from msdoctor.facts.preflight import Options, collect, flatten

REPO = Path(__file__).resolve().parents[2]
ROOTS = REPO / "samples" / "roots"
ENVS = ROOTS / "envs"
RT = REPO / "samples" / "ranktables"
OUT = REPO / "tests" / "rules" / "fixtures"


def snap(root: str = "good", env: str = "good", rank_table: str | None = None, **kw: Any) -> Facts:
    opts = Options(
        root=ROOTS / root if not root.startswith("/") else Path(root),
        env_file=str(ENVS / f"{env}.env"),
        rank_table=str(RT / rank_table) if rank_table else None,
        run_npu_smi=False,
        **kw,
    )
    facts, _ = collect(opts)
    # Paths relative to the repository so fixtures do not carry this checkout's location.
    rel = Facts({k: _rel(v) for k, v in facts.items()}, {k: _rel(facts.source(k)) for k in facts})
    rel.meta = {k: v for k, v in facts.meta.items() if k not in ("hostname", "collected_at")}
    rel.meta["root"] = _rel(rel.meta.get("root", ""))
    return rel


def _rel(v: Any) -> Any:
    if isinstance(v, str):
        return v.replace(str(REPO) + "/", "")
    if isinstance(v, list):
        return [_rel(x) for x in v]
    if isinstance(v, dict):
        return {k: _rel(x) for k, x in v.items()}
    return v


def compare(*snaps: tuple[str, Facts]) -> Facts:
    f = Facts()
    f.set("compare.nodes", {name: flatten(s) for name, s in snaps}, "fixture: two collected snapshots")
    return f


def busy_port() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, s.getsockname()[1]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cases() -> dict[str, tuple[Facts, Facts]]:
    good = snap()
    sock, port = busy_port()
    try:
        busy = snap(master_port=port)
    finally:
        sock.close()
    nofile_ok = snap()
    nofile_ok.set("host.nofile.soft", 1048576, "fixture: set (this machine's hard limit is 20000)")
    # The checkpoint disk is a live-host fact: /dev/shm here has ~23 GiB free (< 50 GiB), the
    # repository's disk ~77 GiB.
    disk = snap(root="/", ckpt_dir="/dev/shm/ckpt")
    disk_ok = snap(root="/", ckpt_dir=str(REPO))
    node_b = snap(root="cann-8.0rc2", env="seed")
    return {
        "ENV101": (snap(root="cann-8.0rc2"), good),
        "ENV102": (snap(env="no-setenv"), good),
        "ENV103": (snap(root="py39"), good),
        "ENV104": (snap(root="drift"), good),
        "ENV105": (snap(root="good"), snap(root="clean-9.1")),
        "ENV106": (snap(root="old-driver"), good),
        "ENV107": (snap(env="no-device-id"), good),
        "ENV108": (snap(env="msrun-bad"), snap(env="msrun-worker")),
        "ENV109": (compare(("node-a", good), ("node-b", node_b)), compare(("node-a", good), ("node-b", snap()))),
        "ENV110": (
            compare(("node-a", good), ("node-b", snap(env="no-setenv"))),
            compare(("node-a", snap(env="visible-4")), ("node-b", snap(env="visible-8"))),
        ),
        "MEM101": (snap(root="cramped"), good),
        "MEM102": (disk, disk_ok),
        "DATA101": (good, nofile_ok),
        "DATA102": (snap(root="cramped"), good),
        "RT101": (snap(rank_table="with_comments.json"), snap(rank_table="good_2x8.json")),
        "RT102": (snap(rank_table="seed_hccl.json"), snap(rank_table="good_2x8.json")),
        "RT103": (snap(rank_table="server_count_mismatch.json"), snap(rank_table="good_2x8.json")),
        "RT104": (snap(rank_table="duplicate_server_id.json"), snap(rank_table="good_2x8.json")),
        "RT105": (snap(rank_table="hostname_server_id.json"), snap(rank_table="good_2x8.json")),
        "RT106": (snap(rank_table="duplicate_device_id.json"), snap(rank_table="good_2x8.json")),
        "RT107": (snap(rank_table="rank_gap.json"), snap(rank_table="good_2x8.json")),
        "RT108": (snap(rank_table="mixed_ip_family.json"), snap(rank_table="good_2x8.json")),
        "RT109": (snap(rank_table="good_1x8.json"), snap(rank_table="good_2x8.json")),
        "RT111": (snap(env="visible-4"), snap(env="visible-8")),
        "RT110": (snap(rank_table="a3_v12_unknown_pod_server.json"), snap(rank_table="a3_v12_good.json")),
        "COMM101": (snap(env="bad-hccl"), good),
        "COMM102": (snap(env="bad-hccl"), good),
        "COMM103": (snap(env="bad-hccl"), snap(env="seed")),
        "COMM104": (snap(env="seed"), good),
        "COMM105": (busy, snap(master_port=free_port())),
        "COMM106": (snap(root="firewall"), good),
        "COMM107": (snap(root="nft-drop"), good),
        "COMM110": (snap(root="unreserved"), good),
        "COMM108": (
            compare(("node-a", snap(env="msrun-worker")), ("node-b", snap(env="msrun-worker-8119"))),
            compare(("node-a", snap(env="msrun-worker")), ("node-b", snap(root="clean-9.1", env="msrun-worker"))),
        ),
        "COMM109": (compare(("node-a", good), ("node-b", node_b)), compare(("node-a", good), ("node-b", snap()))),
    }


def main() -> None:
    for rid, (fire, silent) in cases().items():
        (OUT / f"{rid}.fire.json").write_bytes(fire.dumps() + b"\n")
        (OUT / f"{rid}.silent.json").write_bytes(silent.dumps() + b"\n")
        print(rid)


if __name__ == "__main__":
    main()
