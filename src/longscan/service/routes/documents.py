"""``/api/documents``: upload or paste a document into the bank, list them, read one.

Uploads are read on threads beside the one worker that answers questions (a slow file delays
other uploads, never a question), and a reply says what was stored: an upload is either in
the bank and reported, or refused and not stored, a 504 included.
"""

from __future__ import annotations

import codecs
import secrets
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, File, HTTPException, UploadFile
from fastapi import Path as PathParameter

from longscan.documents import DocumentError
from longscan.service.engine import Busy, Engine, TimedOut
from longscan.service.limits import UnsafeName, upload_path
from longscan.service.routes import GUARDED, EngineOf
from longscan.service.schemas import (
    SQLITE_MAX_INTEGER,
    DocumentOut,
    DocumentText,
    PasteIn,
    UploadOut,
)

UPLOADS = "uploads"  # the folder of ``data_dir`` that holds the uploaded files
UPLOAD_CHUNK_BYTES = 1 << 20
router = APIRouter(prefix="/api/documents", tags=["documents"], dependencies=GUARDED)


def not_stored(engine: Engine, name: str) -> HTTPException:
    return HTTPException(
        504,
        f"{name!r} was not stored: reading and storing it took over "
        f"{engine.settings.scan_timeout_s:g} s (a large file, or a busy server); upload it "
        "again",
    )


async def store(engine: Engine, name: str, chunks: AsyncIterator[bytes]) -> UploadOut:
    """Write an upload beside its checked name, read it on a reading thread, then have
    the worker put it in the bank and in place (``Engine.add_document``): uploads under
    one name are stored one at a time, and a refused one leaves the stored file as it
    was.

    The reply says what was stored. An upload not stored in time is refused with 504
    and is not stored later either: a read that outlives its deadline is thrown away,
    and the worker stores nothing for a caller that gave up. Once the worker begins to
    change the bank the reply waits for it, past the timeout if need be, and reports it.
    """
    try:
        path = upload_path(engine.settings.data_dir / UPLOADS, name)
    except UnsafeName as error:
        raise HTTPException(400, str(error)) from None
    # the suffix stays last: it says how the file is read (text, PDF, HTML, DOCX)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part{path.suffix}")
    deadline = engine.deadline()
    try:
        with partial.open("wb") as handle:
            async for chunk in chunks:
                handle.write(chunk)
        document = await engine.read(partial, name, deadline)
    except BaseException as error:  # a full disk, a client gone, no document, too slow
        partial.unlink(missing_ok=True)
        if isinstance(error, DocumentError):
            raise HTTPException(400, str(error).replace(str(partial), name)) from None
        if isinstance(error, TimedOut):
            raise not_stored(engine, name) from None
        raise
    try:  # from here the worker removes the partial file, whatever becomes of the job
        info, status, decoding_errors = await engine.call(
            engine.add_document,
            document,
            partial,
            path,
            deadline=deadline,
            on_skip=partial.unlink,
        )
    except Busy:  # refused before the worker got it
        partial.unlink(missing_ok=True)
        raise
    except TimedOut:
        raise not_stored(engine, name) from None
    return UploadOut(**asdict(info), status=status, decoding_errors=decoding_errors)  # type: ignore[arg-type]


@router.post("")
async def upload(engine: EngineOf, file: Annotated[UploadFile, File()]) -> UploadOut:
    """Upload a text file into the bank; its file name is its key."""

    async def chunks() -> AsyncIterator[bytes]:
        while chunk := await file.read(UPLOAD_CHUNK_BYTES):
            yield chunk

    return await store(engine, file.filename or "", chunks())


@router.post("/text")
async def paste(engine: EngineOf, document: PasteIn) -> UploadOut:
    """Store pasted text as a file called ``name`` and add it to the bank."""

    async def chunks() -> AsyncIterator[bytes]:
        # The stored file is read back as any upload is, and a reader takes a leading
        # U+FEFF for a byte-order mark; the mark written first is the one it removes, so
        # the pasted text, a U+FEFF of its own included, is kept whole.
        yield codecs.BOM_UTF8 + document.text.encode("utf-8")  # no lone surrogates

    return await store(engine, document.name, chunks())


@router.get("")
async def list_documents(engine: EngineOf) -> list[DocumentOut]:
    return [DocumentOut(**asdict(info)) for info in await engine.call(engine.catalog)]


@router.get("/{doc_id}")
async def get_document(
    engine: EngineOf,
    doc_id: Annotated[int, PathParameter(ge=1, le=SQLITE_MAX_INTEGER)],
) -> DocumentText:
    """The document's full text: the offsets of evidence point into it."""

    def read() -> DocumentText:
        info = engine.info(doc_id)
        return DocumentText(**asdict(info), text=engine.document(doc_id).text)

    return await engine.call(read)
