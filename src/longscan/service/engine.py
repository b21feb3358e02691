"""The memory bank and the one scanner behind the service, driven from one worker thread.

Scanning is CPU-bound and torch already spreads one scan over every core, so running two
scans at once would only make both slower; the SQLite connection of the bank, moreover,
belongs to the thread that opened it. One worker thread therefore owns both, and requests
wait in a bounded queue: a full queue answers 503 at once, a request that waited and ran
longer than its timeout answers 504, and none hangs.

A job whose caller gave up (504, or a closed connection) is *abandoned*: it is skipped if it
has not started, and a running one stops at its next checkpoint (every encoded batch of a
question's new document). Until it stops it still holds the worker, and ``counts`` says so.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from longscan.bank.store import DocumentInfo
from longscan.documents import Document, Evidence, read_file
from longscan.selection import cite_table_context
from longscan.service.settings import ServiceSettings

if TYPE_CHECKING:
    from longscan.bank import MemoryBank
    from longscan.encoders.contextual import Progress
    from longscan.retrievers.scanner import ScannerRetriever

T = TypeVar("T")


BANK_LOCK_WAIT_S = 5.0  # how long an upload waits for another process writing the bank


class Busy(RuntimeError):
    """The queue of questions is full; the client should retry later (503)."""


class TimedOut(RuntimeError):
    """A request waited and ran longer than the service allows (504)."""


class Abandoned(TimedOut):
    """Raised on the worker thread at a checkpoint of a job whose time ran out: nobody
    waits for it any more (or its caller is about to get ``TimedOut`` too)."""


class UnknownDocument(LookupError):
    """No document with that id in the bank (404)."""


@dataclass(frozen=True)
class JobCounts:
    """What the worker holds: ``queued`` jobs not started, ``running`` (0 or 1), and of
    those, ``abandoned`` ones whose caller already gave up (504 or a closed connection)."""

    queued: int
    running: int
    abandoned: int


class _Ticket:
    """One submitted job's deadline and fate, shared by the caller and the worker."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.abandoned = False
        self.finished = False

    def expired(self) -> bool:
        return self.abandoned or time.monotonic() > self.deadline


def document_bytes(document: Document) -> int:
    """About how much memory a segmented document holds: its text, plus its sentence and
    paragraph spans (two int64 per span; a sentence every few dozen characters at most)."""
    return sys.getsizeof(document.text) + len(document.text) // 2


class Engine:
    """Runs bank and scanner work one job at a time on its own thread.

    Args:
        settings: Where the bank and vectors live, the queue bound, the timeout and the
            memory the caches may hold.
    """

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="longscan-engine")
        self._documents: OrderedDict[int, tuple[Document, int]] = OrderedDict()
        self.documents_bytes = 0  # what the segmented documents kept in memory hold
        self._bank: MemoryBank | None = None
        self._retriever: ScannerRetriever | None = None
        self._lock = threading.Lock()
        self._queued = 0
        self._running = 0
        self._abandoned = 0
        self._current: _Ticket | None = None  # the worker's job (read on the worker only)
        self.document_count = 0

    # ------------------------------------------------------------------ the job queue

    @property
    def pending(self) -> int:
        """Jobs submitted and not finished, abandoned ones included: the queue bound."""
        with self._lock:
            return self._queued + self._running

    def counts(self) -> JobCounts:
        with self._lock:
            return JobCounts(self._queued, self._running, self._abandoned)

    async def call(
        self, job: Callable[..., T], *args: Any, on_skip: Callable[[], None] | None = None
    ) -> T:
        """Run ``job(*args)`` on the worker thread, within the queue bound and timeout.

        Args:
            on_skip: Called on the worker instead of ``job`` when the job is skipped because
                its caller gave up before it started (to remove what the job would consume).

        Raises:
            Busy: ``max_queued`` jobs are already waiting or running.
            TimedOut: the job did not finish within ``scan_timeout_s``. The job is then
                abandoned: skipped if it has not started, stopped at its next
                ``checkpoint`` if it has.
        """
        timeout = self.settings.scan_timeout_s
        ticket = _Ticket(time.monotonic() + timeout)
        with self._lock:
            if self._queued + self._running >= self.settings.max_queued:
                waiting = self._queued + self._running
                raise Busy(f"{waiting} requests are waiting; retry in a moment")
            self._queued += 1

        def run() -> T:
            with self._lock:
                self._queued -= 1
                self._running += 1
            self._current = ticket
            try:
                if ticket.expired():
                    if on_skip is not None:
                        on_skip()
                    raise TimedOut("the request waited too long in the queue")
                return job(*args)
            finally:
                self._current = None
                with self._lock:
                    self._running -= 1
                    ticket.finished = True
                    if ticket.abandoned:
                        self._abandoned -= 1

        future = asyncio.get_running_loop().run_in_executor(self._executor, run)
        future.add_done_callback(_consume)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self._abandon(ticket)
            raise TimedOut(f"no answer within {timeout:g} s; the server is busy") from None
        except asyncio.CancelledError:  # the client went away
            self._abandon(ticket)
            raise

    def _abandon(self, ticket: _Ticket) -> None:
        with self._lock:
            if not ticket.finished and not ticket.abandoned:
                ticket.abandoned = True
                self._abandoned += 1

    def checkpoint(self) -> None:
        """Stop the worker's job if its caller gave up or its time ran out (worker only).

        Raises:
            Abandoned: the job should stop; nobody will read what it returns.
        """
        ticket = self._current
        if ticket is not None and ticket.expired():
            raise Abandoned("the request was abandoned")

    async def start(self) -> None:
        """Open the bank and load the scanner (seconds), before the first request.

        Loading is not a request: no request timeout applies to it, so a short
        ``scan_timeout_s`` cannot stop the service from starting. Starting again is a
        no-op: the worker thread lives as long as the process, since the bank's SQLite
        connection belongs to it (test clients start an app many times).
        """
        if self._retriever is None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._load)

    # -------------------------------------------------- jobs (run on the worker thread)

    def _load(self) -> None:
        from longscan.bank import MemoryBank
        from longscan.encoders.cache import EmbeddingCache
        from longscan.retrievers.scanner import ScannerRetriever
        from longscan.scanning.scanner import Scanner

        # a CLI writer holding the bank answers 503 after a while, not a worker stuck behind it
        self._bank = MemoryBank(self.settings.data_dir / "bank", lock_timeout=BANK_LOCK_WAIT_S)
        cache = EmbeddingCache(
            self.settings.data_dir / "vectors", max_bytes=self.settings.cache_bytes
        )
        self._retriever = ScannerRetriever(Scanner.from_pretrained(cache=cache))
        self.document_count = len(self._bank)

    @property
    def bank(self) -> MemoryBank:
        if self._bank is None:
            raise RuntimeError("the engine has not started")
        return self._bank

    def add_file(self, partial: Path, path: Path, key: str) -> tuple[DocumentInfo, str, int]:
        """Read an upload written to ``partial`` with the package's text rules, put it in
        the bank and only then store it as ``path``; ``partial`` is gone afterwards.

        Jobs run one at a time, so two uploads under one name cannot read each other's
        file, and the stored file is always the text the bank holds: a refused upload
        leaves the one before it in place.

        Returns:
            The document's info, what happened (added, updated or unchanged) and how many
            byte runs were not UTF-8 (replaced by U+FFFD).
        """
        try:
            document = read_file(partial, doc_id=key, max_bytes=self.settings.max_upload_bytes)
            counts = self.bank.add([document], source="upload")
            self.bank.sync(progress=False)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        doc_id = self.bank.id_of(key)
        if doc_id is None:
            raise RuntimeError(f"{key!r} was added but is not in the bank")
        self._forget(doc_id)  # an update keeps its id: drop the stale text
        self.document_count = len(self.bank)
        status = next(name for name, count in counts.items() if count)
        return self.info(doc_id), status, int(document.metadata.get("decoding_errors", 0))

    def catalog(self) -> list[DocumentInfo]:
        """Every document of the bank, oldest first, without its text."""
        return self.bank.catalog()

    def info(self, doc_id: int) -> DocumentInfo:
        found = self.bank.catalog([doc_id])
        if not found:
            raise UnknownDocument(f"no document with id {doc_id} in the bank")
        return found[0]

    def document(self, doc_id: int) -> Document:
        """The bank's document (id as text, as evidence names it), segmented once.

        Recently used documents stay in memory up to ``settings.cache_bytes`` (least
        recently used dropped first; one larger than that is never kept).
        """
        if doc_id in self._documents:
            self._documents.move_to_end(doc_id)
            return self._documents[doc_id][0]
        found = self.bank.get([doc_id])
        if not found:
            raise UnknownDocument(f"no document with id {doc_id} in the bank")
        document = found[0].as_document()
        size = document_bytes(document)
        if size <= self.settings.cache_bytes:
            self._documents[doc_id] = (document, size)
            self.documents_bytes += size
            while self.documents_bytes > self.settings.cache_bytes:
                _, (_, dropped) = self._documents.popitem(last=False)
                self.documents_bytes -= dropped
        return document

    def _forget(self, doc_id: int) -> None:
        kept = self._documents.pop(doc_id, None)
        if kept is not None:
            self.documents_bytes -= kept[1]

    def ask(
        self,
        question: str,
        doc_ids: Sequence[int],
        top_k: int,
        on_progress: Progress | None = None,
    ) -> tuple[list[Evidence], list[Document]]:
        """The top sentences for ``question`` over the documents, read in the order given;
        a document read for the first time is encoded first, reporting its progress.

        Raises:
            Abandoned: the caller gave up while a new document was being encoded.
        """
        if self._retriever is None:
            raise RuntimeError("the engine has not started")

        def progress(done: int, total: int) -> None:
            self.checkpoint()  # a long encoding stops here once nobody waits for it
            if on_progress is not None:
                on_progress(done, total)

        documents = [self.document(doc_id) for doc_id in doc_ids]
        for document in documents:
            self.checkpoint()
            self._retriever.scanner.sentence_vectors(document, on_progress=progress)
        self.checkpoint()
        evidence = self._retriever.retrieve(question, documents, top_k=top_k)
        return cite_table_context(evidence, documents), documents


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned job's outcome, so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
