"""A byte-level tokenizer: every UTF-8 byte is one token (vocabulary 256, nothing to train or ship)."""

from __future__ import annotations

VOCAB_SIZE = 256


class ByteTokenizer:
    vocab_size = VOCAB_SIZE

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        # errors="replace": a window cut in the middle of a multi-byte character still decodes
        return bytes(int(i) & 0xFF for i in ids).decode("utf-8", errors="replace")
