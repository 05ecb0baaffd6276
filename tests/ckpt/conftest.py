"""Real MindSpore checkpoints for the `msdoctor ckpt` tests (tiny Dense + LayerNorm nets, CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest


def build_checkpoints(root: Path) -> dict[str, Path]:
    """Writes replicas, a drifted replica, an HF-named copy, a wider model, a NaN copy and a truncated file."""
    import mindspore as ms
    from mindspore import nn

    ms.set_device("CPU")
    ms.set_seed(1)
    net = nn.SequentialCell([nn.Dense(4, 3), nn.LayerNorm((3,))])
    paths = {name: root / rel for name, rel in {
        "rank0": "rank_0/net.ckpt", "rank1": "rank_1/net.ckpt", "drift": "rank_2/net.ckpt",
        "hf": "hf/net.ckpt", "wide": "wide/net.ckpt", "nan": "rank_4/net.ckpt", "trunc": "rank_3/net.ckpt",
        "safetensors": "rank_5/net.safetensors",
    }.items()}  # fmt: skip
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    ms.save_checkpoint(net, str(paths["rank0"]))
    ms.save_checkpoint(net, str(paths["rank1"]))
    ms.save_checkpoint(net, str(paths["safetensors"]), format="safetensors")
    params = {p.name: p.asnumpy() for p in net.get_parameters()}

    def save(values: dict, path: Path) -> None:
        ms.save_checkpoint([{"name": n, "data": ms.Tensor(v)} for n, v in values.items()], str(path))

    drift = dict(params)
    drift["1.gamma"] = params["1.gamma"] + 1e-3  # one replica's LayerNorm gamma moved
    save(drift, paths["drift"])
    hf = {n.replace("1.gamma", "1.weight").replace("1.beta", "1.bias"): v for n, v in params.items()}
    save(hf, paths["hf"])
    wide = nn.SequentialCell([nn.Dense(4, 6), nn.LayerNorm((6,))])
    ms.save_checkpoint(wide, str(paths["wide"]))
    nan = dict(params)
    nan["0.weight"] = params["0.weight"].copy()
    nan["0.weight"][0, 0] = float("nan")
    save(nan, paths["nan"])
    data = paths["rank0"].read_bytes()
    paths["trunc"].write_bytes(data[: len(data) // 2])
    return paths


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_checkpoints(tmp_path_factory.mktemp("ckpt"))


def build_replicas(root: Path) -> dict[str, Path]:
    """A 16-tensor net (4 Dense + 4 LayerNorm) saved as two identical replicas, one whose LayerNorm
    gamma drifted, the first half of a replica (MindSpore 2.10 loads 8 of its 16 tensors silently) and
    its first 60 % (cut inside a tensor)."""
    import mindspore as ms
    from mindspore import nn

    ms.set_device("CPU")
    ms.set_seed(2)
    cells: list[nn.Cell] = []
    for _ in range(4):
        cells += [nn.Dense(8, 8), nn.LayerNorm((8,))]
    net = nn.SequentialCell(cells)
    root.mkdir(parents=True, exist_ok=True)
    full = root / "full.ckpt"
    ms.save_checkpoint(net, str(full))
    params = {p.name: p.asnumpy() for p in net.get_parameters()}
    drift = dict(params)
    drift["3.gamma"] = params["3.gamma"] + 1e-3
    drifted = root / "drift.ckpt"
    ms.save_checkpoint([{"name": n, "data": ms.Tensor(v)} for n, v in drift.items()], str(drifted))
    half = root / "half.ckpt"
    data = full.read_bytes()
    half.write_bytes(data[: len(data) // 2])  # equal-sized halves: the cut falls between two tensors
    cut = root / "cut.ckpt"
    cut.write_bytes(data[: len(data) * 3 // 5])  # inside a tensor record
    safet = root / "full.safetensors"
    ms.save_checkpoint(net, str(safet), format="safetensors")
    return {"full": full, "drift": drifted, "half": half, "cut": cut, "safetensors": safet}


@pytest.fixture(scope="session")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_replicas(tmp_path_factory.mktemp("replicas"))
