"""Documents from files, folders and standard input: decoded text (a byte-order mark or
UTF-8, undecodable bytes counted), extracted formats through ``READERS``, and clear errors
for what cannot become a Document."""

from __future__ import annotations

import codecs
import errno
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from longscan.documents import Document, DocumentError
from longscan.readers import read_document
from longscan.readers.markdown import markdown_places

logger = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text", ".rst")
# Extracted by the readers of ``READERS`` (listed here so listing a folder imports none).
EXTRACTED_SUFFIXES = (".pdf", ".html", ".htm", ".xhtml", ".docx")
DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: larger inputs belong in a memory bank, not one Document
# Byte-order marks, longest first (UTF-32-LE's starts with UTF-16-LE's), and their codecs;
# each codec removes its own mark while decoding.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _check_exists(path: Path) -> os.stat_result:
    """``path``'s status (links followed), or a DocumentError that names the real cause."""
    try:
        return path.stat()
    except OSError as error:
        if error.errno == errno.ELOOP:
            cause = "a symbolic link loop (too many levels of symbolic links)"
        elif error.errno == errno.ENOENT and path.is_symlink():
            cause = f"a broken symbolic link (to {os.readlink(path)}, which does not exist)"
        elif error.errno in (errno.ENOENT, errno.ENOTDIR):
            cause = "no such file or directory"
        else:
            cause = f"cannot read ({error.strerror or error})"
        raise DocumentError(f"{path}: {cause}") from None


def _decode(raw: bytes, path: Path) -> tuple[str, str, int]:
    """``(text, codec, errors)``: UTF-8, or UTF-16/UTF-32 when a byte-order mark says so.

    The mark is removed by its codec. Byte runs that do not decode become U+FFFD and are
    counted. NUL anywhere (not just near the start) means binary; a UTF-16 or UTF-32 file
    without a byte-order mark looks the same and is refused with a message that says so.
    """
    codec = next((name for bom, name in _BOMS if raw.startswith(bom)), "utf-8")
    nul = raw.find(b"\x00") if codec == "utf-8" else -1  # memchr over the whole content
    if nul >= 0:
        raise DocumentError(
            f"{path}: looks like a binary file (a NUL byte at byte {nul:,}), "
            "not text; UTF-16 or UTF-32 text is read only with a byte-order mark "
            "(or save it as UTF-8)"
        )
    try:
        text, errors = raw.decode(codec), 0
    except UnicodeDecodeError:
        text = raw.decode(codec, errors="replace")
        errors = text.count("\ufffd") - raw.decode(codec, "ignore").count("\ufffd")
        logger.warning("%s: not valid %s; %d byte run(s) replaced by U+FFFD", path, codec, errors)
    nul = text.find("\x00") if codec != "utf-8" else -1
    if nul >= 0:
        raise DocumentError(f"{path}: holds a NUL character (at character {nul:,}), not text")
    return text, codec, errors


def read_file(
    path: str | Path, doc_id: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> Document:
    """Read one file: PDF, HTML or DOCX through ``longscan.readers`` (with the page or
    heading path of every part), else text: UTF-8, or UTF-16/UTF-32 with a byte-order mark.

    A text file's text is its decoded characters; a byte-order mark is not part of it (see
    ``Document.text``), so offset 0 is the first character after the mark, and
    ``metadata["encoding"]`` names the codec (``utf-8-sig`` when a UTF-8 mark was removed).
    Bytes that do not decode become U+FFFD, never dropped silently: the count is kept in
    ``metadata["decoding_errors"]`` and a warning names the file. Markdown headings become
    the text's places.

    Raises:
        DocumentError: missing (or a broken or looping symbolic link), unreadable, binary
            (a NUL byte anywhere), empty or over ``max_bytes``.
    """
    path = Path(path)
    status = _check_exists(path)
    if not path.is_file():
        raise DocumentError(f"{path}: not a regular file")
    if status.st_size > max_bytes:
        raise DocumentError(
            f"{path}: {status.st_size:,} bytes is over the {max_bytes:,}-byte limit for one "
            "document; split it or add it to a memory bank"
        )
    suffix = path.suffix.lower()
    try:
        if suffix in EXTRACTED_SUFFIXES:
            return read_document(path, doc_id or path.name)
        raw = path.read_bytes()
    except OSError as error:
        raise DocumentError(f"{path}: cannot read ({error.strerror})") from error
    text, codec, errors = _decode(raw, path)
    if not text.strip():
        raise DocumentError(f"{path}: the file holds no text")
    metadata = {"path": str(path), "encoding": codec, "decoding_errors": errors}
    places = ()
    if suffix in (".md", ".markdown"):
        places = markdown_places(text)
    return Document(id=doc_id or path.name, text=text, metadata=metadata, places=places)


STDIN = "-"  # a path that names standard input
STDIN_ID = "<stdin>"


def read_stdin(max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Standard input as one text document (id ``<stdin>``), read with ``read_file``'s rules.

    Raises:
        DocumentError: binary, empty or over ``max_bytes``.
    """
    raw = sys.stdin.buffer.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise DocumentError(f"standard input: over the {max_bytes:,}-byte limit for one document")
    text, codec, errors = _decode(raw, Path(STDIN_ID))
    if not text.strip():
        raise DocumentError("standard input holds no text")
    metadata = {"path": STDIN, "encoding": codec, "decoding_errors": errors}
    return Document(id=STDIN_ID, text=text, metadata=metadata)


def read_paths(
    paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES, hidden: bool = False
) -> list[Document]:
    """Read files and directories (recursively, readable suffixes only) into a collection;
    ``-`` reads standard input.

    Ids are paths relative to the directory given, so they stay stable across machines.
    Inside a directory, hidden files and folders (``.git`` among them) are skipped unless
    ``hidden``, as ripgrep does, and binary or empty files are skipped with a warning; given
    by name, a file is always read and a bad one is an error.

    Raises:
        DocumentError: a missing path, a duplicate id, or no readable text at all.
    """
    return list(iter_paths(paths, max_bytes, hidden))


def iter_paths(
    paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES, hidden: bool = False
) -> PathDocuments:
    """``read_paths`` one document at a time, so a corpus larger than memory can stream.

    Every given path is checked, and every file listed, before the first document is read:
    ``len`` of the result is the number of files to read (a progress total).
    """
    return PathDocuments(paths, max_bytes, hidden)


class PathDocuments:
    """The documents of ``read_paths``, listed when made and read as they are iterated."""

    def __init__(
        self, paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES, hidden: bool = False
    ) -> None:
        self.given = list(paths)
        if sum(str(name) == STDIN for name in self.given) > 1:
            raise DocumentError("standard input (-) can be read only once")
        for root in map(Path, self.given):
            if str(root) != STDIN:
                _check_exists(root)
        self.max_bytes = max_bytes
        self.files = [file for name in self.given for file in _files_under(name, hidden)]

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self) -> Iterator[Document]:
        seen: set[str] = set()
        for file in self.files:
            document = self._read(*file)
            if document is None:
                continue
            if document.id in seen:
                raise DocumentError(f"duplicate document id {document.id!r} in the collection")
            seen.add(document.id)
            yield document
        if not seen:
            raise DocumentError("no readable text documents in " + ", ".join(map(str, self.given)))

    def _read(self, path: Path | None, doc_id: str, listed: bool) -> Document | None:
        """The document, or None for a file found in a folder that cannot be read (a
        warning says why); a file given by name raises instead."""
        if path is None:
            return read_stdin(self.max_bytes)
        try:
            return read_file(path, doc_id=doc_id, max_bytes=self.max_bytes)
        except DocumentError as error:
            if not listed:
                raise
            logger.warning("skipped: %s", error)
            return None


def _files_under(given: str | Path, hidden: bool) -> Iterator[tuple[Path | None, str, bool]]:
    """``(path, id, listed)`` of each file to read for ``given``: standard input (no path),
    a file given by name, or the readable files of a folder (``listed``)."""
    if str(given) == STDIN:
        yield None, STDIN_ID, False
        return
    root = Path(given)
    if root.is_file():
        yield root, str(given), False
        return
    for path in sorted(p for p in root.rglob("*") if not p.is_dir()):
        if not hidden and any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.suffix.lower() not in TEXT_SUFFIXES + EXTRACTED_SUFFIXES:
            logger.warning(
                "%s: skipped (not a %s file)", path, "/".join(TEXT_SUFFIXES + EXTRACTED_SUFFIXES)
            )
            continue
        yield path, str(path.relative_to(root)), True
