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


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_each(texts: Sequence[str]) -> list[int]:
    encoding = _encoding()
    return [len(encoding.encode(text, disallowed_special=())) for text in texts]
