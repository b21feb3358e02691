"""Text out of PDF, HTML, DOCX and Markdown files, with the page and headings of every part.

A reader returns the text that longscan reads (every offset indexes it exactly) and its
``Place``s: where each page starts, and the heading path each part sits under, so evidence
can be cited as "p. 47" or "Item 7 › Liquidity". Extraction is cached by the file's content
hash, so a second question about the same 2,000-page filing does not extract it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

from longscan.documents import Document, places_from_json, places_to_json
from longscan.readers.extracted import Extracted

logger = logging.getLogger(__name__)

CACHE_FORMAT = 2  # bump when a reader's output changes, so older extractions are not reused


def _pdf(path: Path) -> Extracted:
    from longscan.readers.pdf import read_pdf

    return read_pdf(path)


def _html(path: Path) -> Extracted:
    from longscan.readers.html import read_html

    return read_html(path)


def _docx(path: Path) -> Extracted:
    from longscan.readers.docx import read_docx

    return read_docx(path)


# The library whose version changes a format's output, and the reader.
READERS: dict[str, tuple[str, Callable[[Path], Extracted]]] = {
    ".pdf": ("pypdfium2", _pdf),
    ".html": ("selectolax", _html),
    ".htm": ("selectolax", _html),
    ".xhtml": ("selectolax", _html),
    ".docx": ("python-docx", _docx),
}


def read_document(path: Path, doc_id: str, cache_dir: Path | None = None) -> Document:
    """The document extracted from ``path`` (a suffix in ``READERS``), read from the cache
    when the same bytes were extracted before.

    Raises:
        DocumentError: a file the reader cannot open, or one without any text (such as a
            scanned PDF without a text layer).
    """
    from longscan.files import default_cache_dir, file_sha256

    library, reader = READERS[path.suffix.lower()]
    digest = file_sha256(path)
    key = f"{digest}-{library}{version(library)}-v{CACHE_FORMAT}"
    cached = (cache_dir or default_cache_dir()) / "extracted" / key
    extracted = _load(cached)
    if extracted is None:
        extracted = reader(path)
        _store(cached, extracted)
    metadata = {"path": str(path), "format": path.suffix.lower().lstrip("."), **extracted.facts}
    return Document(doc_id, extracted.text, metadata=metadata, places=extracted.places)


def _load(stem: Path) -> Extracted | None:
    """A cached extraction (``<stem>.txt`` and the ``<stem>.json`` that vouches for it), or
    None when there is none or it does not read back whole."""
    try:
        raw = json.loads(stem.with_name(stem.name + ".json").read_text(encoding="utf-8"))
        text = stem.with_name(stem.name + ".txt").read_text(encoding="utf-8")
        if hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != raw["sha256"]:
            raise ValueError("the text does not match its hash")
        return Extracted(text, places_from_json(raw["places"]), dict(raw["facts"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        logger.warning("%s: unreadable cached extraction, extracting again (%s)", stem, error)
        return None


def _store(stem: Path, extracted: Extracted) -> None:
    """Write the text as UTF-8 (one copy in memory at most, not a JSON string of it), then
    the record that vouches for it: a reader never takes half a file."""
    from longscan.files import staging_path

    encoded = extracted.text.encode("utf-8", "surrogatepass")
    record = {
        "sha256": hashlib.sha256(encoded).hexdigest(),
        "places": places_to_json(extracted.places),
        "facts": extracted.facts,
    }
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        for suffix, data in ((".txt", encoded), (".json", json.dumps(record).encode())):
            partial = staging_path(stem.with_name(stem.name + suffix))
            partial.write_bytes(data)
            partial.replace(stem.with_name(stem.name + suffix))
    except OSError as error:  # a read-only cache costs speed, not the answer
        logger.warning("%s: cannot cache the extraction (%s)", stem, error)


__all__ = ["READERS", "Extracted", "read_document"]
