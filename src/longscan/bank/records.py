"""A bank's documents as callers see them, and what says whether a stored one changed: its
content's digest and the file it was read from."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from longscan.documents import Document, Place, places_to_json
from longscan.readers.files import STDIN

# ``Document.metadata[ORIGIN]``: the file a document was read from (``bank add`` sets it). A
# document of a stored key from another file replaces the stored one: that is said first.
ORIGIN = "origin"


@dataclass(frozen=True)
class BankDocument:
    id: int
    key: str
    source: str
    domain: str
    tokens: int
    text: str
    places: tuple[Place, ...] = ()

    def as_document(self) -> Document:
        metadata = {"key": self.key, "domain": self.domain}
        return Document(str(self.id), self.text, metadata=metadata, places=self.places)


@dataclass(frozen=True)
class DocumentInfo:
    """What a catalog lists of a bank document: everything but its text."""

    id: int
    key: str
    chars: int
    tokens: int


@dataclass(frozen=True)
class Change:
    """A document to write: new, or an update of the stored one with the same key;
    ``replaces`` names the other file that one was read from, if it was."""

    document: Document
    digest: str
    update: bool
    replaces: str = ""

    @property
    def origin(self) -> str:
        return origin_of(self.document)

    @property
    def outcome(self) -> str:
        """``added``, ``updated`` (the same file, or one not known) or ``replaced``."""
        return "replaced" if self.replaces else "updated" if self.update else "added"


def groups(
    items: Iterable[Document], size: int, chars: float = float("inf")
) -> Iterator[list[Document]]:
    """Consecutive documents, at most ``size`` of them or about ``chars`` characters."""
    group: list[Document] = []
    total = 0
    for item in items:
        group.append(item)
        total += len(item.text)
        if len(group) >= size or total >= chars:
            yield group
            group, total = [], 0
    if group:
        yield group


def origin_of(document: Document) -> str:
    """The file ``document`` was read from, as recorded in the bank ("" when not known)."""
    return str(document.metadata.get(ORIGIN, ""))


def from_files(documents: Iterable[Document], prefix: str = "") -> Iterator[Document]:
    """Documents read from files (``iter_paths``) as the bank keeps them: each key after
    ``prefix``, each with the file it was read from (``ORIGIN``), so that a document of a
    stored key from another file is known to replace the stored one."""
    for document in documents:
        path = str(document.metadata.get("path", ""))
        origin = str(Path(path).resolve()) if path not in ("", STDIN) else ""
        metadata = {**document.metadata, ORIGIN: origin}
        yield replace(document, id=prefix + document.id, metadata=metadata)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_digest(document: Document) -> str:
    """What says a stored document changed: its text's hash, with its places when it has
    any (the same text re-extracted with other page breaks must replace the old pages)."""
    if not document.places:
        return content_hash(document.text)
    return content_hash(document.text + "\x00" + places_to_json(document.places))
