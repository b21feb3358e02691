"""The memory bank and the one scanner behind the service, driven from one worker thread.

Scanning is CPU-bound and torch already spreads one scan over every core, so running two
scans at once would only make both slower; the SQLite connection of the bank, moreover,
belongs to the thread that opened it. One worker thread therefore owns both, and requests
wait in a bounded queue: a full queue answers 503 at once, a request that waited and ran
longer than its timeout answers 504, and none hangs.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from longscan.bank.store import DocumentInfo
from longscan.documents import Document, Evidence, read_file
from longscan.service.settings import ServiceSettings

if TYPE_CHECKING:
    from longscan.bank import MemoryBank
    from longscan.encoders.contextual import Progress
    from longscan.retrievers.scanner import ScannerRetriever

T = TypeVar("T")
DOCUMENTS_KEPT = 16  # segmented documents kept in memory: re-segmenting 1M characters is slow


class Busy(RuntimeError):
    """The queue of questions is full; the client should retry later (503)."""


class TimedOut(RuntimeError):
    """A request waited and ran longer than the service allows (504)."""


class UnknownDocument(LookupError):
    """No document with that id in the bank (404)."""


class Engine:
    """Runs bank and scanner work one job at a time on its own thread.

    Args:
        settings: Where the bank and vectors live, the queue bound and the timeout.
    """

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="longscan-engine")
        self._documents: OrderedDict[int, Document] = OrderedDict()
        self._bank: MemoryBank | None = None
        self._retriever: ScannerRetriever | None = None
        self.pending = 0  # jobs submitted and not yet answered
        self.document_count = 0

    # ------------------------------------------------------------------ the job queue

    async def call(self, job: Callable[..., T], *args: Any) -> T:
        """Run ``job(*args)`` on the worker thread, within the queue bound and timeout.

        Raises:
            Busy: ``max_queued`` jobs are already waiting.
            TimedOut: the job did not finish within ``scan_timeout_s`` (a job whose time ran
                out while it waited is skipped, so an overloaded queue drains).
        """
        if self.pending >= self.settings.max_queued:
            raise Busy(f"{self.pending} requests are waiting; retry in a moment")
        deadline = time.monotonic() + self.settings.scan_timeout_s

        def run() -> T:
            if time.monotonic() > deadline:
                raise TimedOut("the request waited too long in the queue")
            return job(*args)

        self.pending += 1
        future = asyncio.get_running_loop().run_in_executor(self._executor, run)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.settings.scan_timeout_s)
        except TimeoutError:
            raise TimedOut(
                f"no answer within {self.settings.scan_timeout_s:g} s; the server is busy"
            ) from None
        finally:
            self.pending -= 1

    async def start(self) -> None:
        """Open the bank and load the scanner (seconds), before the first request.

        Starting again is a no-op: the worker thread lives as long as the process, since
        the bank's SQLite connection belongs to it (test clients start an app many times).
        """
        if self._retriever is None:
            await self.call(self._load)

    # -------------------------------------------------- jobs (run on the worker thread)

    def _load(self) -> None:
        from longscan.bank import MemoryBank
        from longscan.encoders.cache import EmbeddingCache
        from longscan.retrievers.scanner import ScannerRetriever
        from longscan.scanning.scanner import Scanner

        self._bank = MemoryBank(self.settings.data_dir / "bank")
        cache = EmbeddingCache(self.settings.data_dir / "vectors")
        self._retriever = ScannerRetriever(Scanner.from_pretrained(cache=cache))
        self.document_count = len(self._bank)

    @property
    def bank(self) -> MemoryBank:
        if self._bank is None:
            raise RuntimeError("the engine has not started")
        return self._bank

    def add_file(self, path: Path, key: str) -> tuple[DocumentInfo, str, int]:
        """Read a stored upload with the package's text rules and put it in the bank.

        Returns:
            The document's info, what happened (added, updated or unchanged) and how many
            byte runs were not UTF-8 (replaced by U+FFFD).
        """
        document = read_file(path, doc_id=key, max_bytes=self.settings.max_upload_bytes)
        counts = self.bank.add([document], source="upload")
        self.bank.sync(progress=False)
        doc_id = self.bank.id_of(key)
        if doc_id is None:
            raise RuntimeError(f"{key!r} was added but is not in the bank")
        self._documents.pop(doc_id, None)  # an update keeps its id: drop the stale text
        self.document_count = len(self.bank)
        status = next(name for name, count in counts.items() if count)
        return self.info(doc_id), status, int(document.metadata["decoding_errors"])

    def catalog(self) -> list[DocumentInfo]:
        """Every document of the bank, oldest first, without its text."""
        return self.bank.catalog()

    def info(self, doc_id: int) -> DocumentInfo:
        found = self.bank.catalog([doc_id])
        if not found:
            raise UnknownDocument(f"no document with id {doc_id} in the bank")
        return found[0]

    def document(self, doc_id: int) -> Document:
        """The bank's document (id as text, as evidence names it), segmented once."""
        if doc_id in self._documents:
            self._documents.move_to_end(doc_id)
            return self._documents[doc_id]
        found = self.bank.get([doc_id])
        if not found:
            raise UnknownDocument(f"no document with id {doc_id} in the bank")
        document = found[0].as_document()
        self._documents[doc_id] = document
        while len(self._documents) > DOCUMENTS_KEPT:
            self._documents.popitem(last=False)
        return document

    def ask(
        self,
        question: str,
        doc_ids: Sequence[int],
        top_k: int,
        on_progress: Progress | None = None,
    ) -> tuple[list[Evidence], list[Document]]:
        """The top sentences for ``question`` over the documents, read in the order given;
        a document read for the first time is encoded first, reporting its progress."""
        if self._retriever is None:
            raise RuntimeError("the engine has not started")
        documents = [self.document(doc_id) for doc_id in doc_ids]
        for document in documents:
            self._retriever.scanner.sentence_vectors(document, on_progress=on_progress)
        return self._retriever.retrieve(question, documents, top_k=top_k), documents
