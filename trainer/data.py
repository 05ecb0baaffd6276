"""Corpus → MindRecord (once, before launch) → ``MindDataset`` sharded by rank.

``python -m msdoctor_trainer.data --corpus DIR --out FILE --seq-length T`` is run by
``msdoctor train`` before msrun so the ranks never race to write the same file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from msdoctor_trainer.tokenizer import ByteTokenizer

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "samples" / "corpus"


def corpus_files(corpus: str | Path) -> list[Path]:
    p = Path(corpus)
    if p.is_file():
        return [p]
    return sorted(p.glob("*.txt"))


def windows(tokens: list[int] | np.ndarray, seq_length: int) -> np.ndarray:
    """Non-overlapping windows of ``seq_length + 1`` tokens (inputs and shifted labels share one row)."""
    arr = np.asarray(tokens, dtype=np.int32)
    n = (len(arr) - 1) // seq_length
    if n <= 0:
        return np.zeros((0, seq_length + 1), dtype=np.int32)
    return np.stack([arr[i * seq_length : i * seq_length + seq_length + 1] for i in range(n)])


def write_mindrecord(corpus: str | Path, out_file: str | Path, seq_length: int) -> int:
    """Tokenise every ``*.txt`` of ``corpus`` and write one MindRecord row per window; returns the rows."""
    from mindspore.mindrecord import FileWriter

    files = corpus_files(corpus)
    if not files:
        raise FileNotFoundError(f"{corpus}: no *.txt corpus files")
    tok = ByteTokenizer()
    ids: list[int] = []
    for f in files:
        ids.extend(tok.encode(f.read_text(encoding="utf-8", errors="replace")))
    rows = windows(ids, seq_length)
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = FileWriter(file_name=str(out), shard_num=1, overwrite=True)
    writer.add_schema({"tokens": {"type": "int32", "shape": [-1]}}, "byte-level token windows")
    writer.write_raw_data([{"tokens": r} for r in rows])
    writer.commit()
    return int(len(rows))


class _Stall:
    """A per-sample delay in the input pipeline (the ``data-stall`` injection): a slow reader, for real."""

    def __init__(self, ms: int) -> None:
        self.s = ms / 1000.0

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        time.sleep(self.s)
        return tokens


def make_dataset(
    path: str | Path, rank: int, world: int, micro_batch: int, seed: int, stall_ms: int = 0
) -> Any:
    """This rank's shard, shuffled reproducibly, batched, repeated without end.

    ``num_parallel_workers`` stays within the CPU count (MindSpore refuses more: DATA-07).
    """
    import mindspore.dataset as ds

    ds.config.set_seed(seed)  # same shuffle on every rank and on resume
    workers = max(1, min(2, os.cpu_count() or 1))
    data = ds.MindDataset(
        str(path), columns_list=["tokens"], num_shards=world, shard_id=rank, shuffle=True,
        num_parallel_workers=workers,
    )
    if stall_ms > 0:
        data = data.map(operations=_Stall(stall_ms), input_columns=["tokens"], num_parallel_workers=1)
    return data.batch(micro_batch, drop_remainder=True).repeat()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m msdoctor_trainer.data", description=__doc__)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--out", required=True)
    p.add_argument("--seq-length", type=int, required=True)
    a = p.parse_args(argv)
    try:
        n = write_mindrecord(a.corpus, a.out, a.seq_length)
    except (OSError, ValueError) as exc:
        print(f"msdoctor_trainer.data: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {n} windows of {a.seq_length + 1} tokens to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
