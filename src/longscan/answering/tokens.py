"""Token counts in OpenAI's cl100k encoding, as Loong and SPScanner count prompt lengths.

``bpe-openai`` ships the cl100k table inside the package, so counting works offline (tiktoken
downloads its table on first use, which fails on an offline machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("cl100k_base")


PIECE_CHARS = 500_000  # bpe-openai refuses to encode a million characters or more at once


def count_tokens(text: str) -> int:
    """cl100k tokens of ``text``; a long text is counted in pieces cut before a space, where
    the encoding starts a new token anyway, so the count matches the whole text's."""
    encoding = _encoding()
    total, start = 0, 0
    while start < len(text):
        stop = min(start + PIECE_CHARS, len(text))
        if stop < len(text):
            space = text.rfind(" ", start + 1, stop)
            stop = space if space > 0 else stop
        total += len(encoding.encode(text[start:stop], disallowed_special=()))
        start = stop
    return total


def count_each(texts: Sequence[str]) -> list[int]:
    return [count_tokens(text) for text in texts]
