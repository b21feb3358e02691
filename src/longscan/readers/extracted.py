"""What a reader returns, and the builder every reader assembles it with."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from longscan.documents import Place

# C0 controls other than tab and newline, DEL, and the BOM/non-characters some PDFs hold:
# nothing a reader can cite or a tokenizer should see.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\ufeff\ufffe\uffff]")


@dataclass(frozen=True)
class Extracted:
    """A file's text, the places in it, and facts about the file (page count, title)."""

    text: str
    places: tuple[Place, ...]
    facts: dict[str, Any] = field(default_factory=dict)


def clean(text: str) -> str:
    """Line ends as ``\\n``; control characters removed (a form feed becomes a new line)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    return _CONTROL.sub("", text)


class TextBuilder:
    """Joins blocks (a page, a paragraph, a table) into one text, a blank line between two,
    and records a ``Place`` wherever the page or the heading path changes."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.places: list[Place] = []

    def add(self, block: str, page: int | None = None, section: tuple[str, ...] = ()) -> None:
        """Append ``block`` (cleaned, trimmed); blocks holding only white space are left out."""
        block = clean(block).strip()
        if not block:
            return
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        last = self.places[-1] if self.places else None
        if last is None or (last.page, last.section) != (page, section):
            self.places.append(Place(self._length, page, section))
        self._parts.append(block)
        self._length += len(block)

    def __len__(self) -> int:
        """The length of the text so far."""
        return self._length

    def build(self, **facts: Any) -> Extracted:
        return Extracted("".join(self._parts), tuple(self.places), facts)
