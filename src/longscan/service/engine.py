"""The memory bank and the one scanner behind the service, driven from one worker thread;
uploads are read on threads of their own.

Scanning is CPU-bound and torch already spreads one scan over every core, so running two
scans at once would only make both slower; the SQLite connection of the bank, moreover,
belongs to the thread that opened it. One worker thread therefore owns both, and requests
wait in a bounded queue: a full queue answers 503 at once, a request that waited and ran
longer than its timeout answers 504, and none hangs.

Reading an upload (extracting a PDF, an HTML page or a Word file) needs neither the bank nor
the scanner, and one hostile file can take long to parse, so it runs on a small pool of
reading threads with a bound and a queue of its own: a slow upload can delay other uploads,
never a question.

A job whose caller gave up (504, or a closed connection) is *abandoned*: it is skipped if it
has not started, and a running one stops at its next checkpoint. Two kinds of work are kept
instead of thrown away. Encoding a document's sentences goes on after a 504 and stops only
when its caller left: the vectors are cached, so the next question about the document finds
them, where stopping would leave a document too long to encode within the timeout never
answerable. And a job past its commit point (an upload entering the bank) is waited for
whatever the timeout, so a reply never says "timed out" about what was stored. Until an
abandoned job stops it still holds its thread, and ``counts`` says so.
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

from longscan.bank.records import DocumentInfo
from longscan.documents import Document
from longscan.readers.files import read_file
from longscan.service.settings import ServiceSettings

if TYPE_CHECKING:
    from longscan.answering.answerers import Answerer
    from longscan.bank import MemoryBank
    from longscan.bank.search import BankHit, FirstStage
    from longscan.encoders.contextual import Progress
    from longscan.pipeline import Found, Pipeline
    from longscan.scanning.scanner import Scanner

T = TypeVar("T")


BANK_LOCK_WAIT_S = 5.0  # how long an upload waits for another process writing the bank
READING_THREADS = 2  # one slow upload leaves a thread for the others; parsing holds the GIL


class Busy(RuntimeError):
    """The queue is full; the client should retry later (503)."""


class TimedOut(RuntimeError):
    """A request waited and ran longer than the service allows (504)."""


class Abandoned(TimedOut):
    """Raised on a job's thread at a checkpoint of a job whose caller gave up: nobody waits
    for it any more (or its caller is about to get ``TimedOut`` too)."""


class UnknownDocument(LookupError):
    """No document with that id in the bank (404)."""


@dataclass(frozen=True)
class JobCounts:
    """What a queue holds: ``queued`` jobs not started, ``running`` ones, and of those,
    ``abandoned`` ones whose caller already gave up (504 or a closed connection)."""

    queued: int
    running: int
    abandoned: int


class _Ticket:
    """One submitted job's deadline and fate, shared by the caller and the job's thread."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.abandoned = False  # the caller gave up: timed out or left
        self.left = False  # the caller left (a closed connection), nobody will ask again
        self.committed = False  # past the point where the caller must hear the outcome
        self.finished = False

    def expired(self) -> bool:
        return self.abandoned or time.monotonic() > self.deadline


class JobQueue:
    """Jobs run on ``threads`` threads of their own, at most ``max_pending`` of them waiting
    or running; each caller waits until its deadline, then gives the job up.

    Args:
        threads: How many jobs run at once.
        max_pending: Jobs waiting or running beyond which ``call`` raises ``Busy``.
        name: Names the threads.
        what: What the jobs are, in ``Busy``'s message ("requests", "uploads").
    """

    def __init__(self, threads: int, max_pending: int, name: str, what: str) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix=f"longscan-{name}")
        self.max_pending = max_pending
        self.what = what
        self._lock = threading.Lock()
        self._queued = 0
        self._running = 0
        self._abandoned = 0
        self._local = threading.local()  # the ticket of the job each thread runs

    @property
    def pending(self) -> int:
        """Jobs submitted and not finished, abandoned ones included: the queue bound."""
        with self._lock:
            return self._queued + self._running

    def counts(self) -> JobCounts:
        with self._lock:
            return JobCounts(self._queued, self._running, self._abandoned)

    async def call(
        self,
        job: Callable[..., T],
        *args: Any,
        deadline: float | None,
        on_skip: Callable[[], None] | None = None,
    ) -> T:
        """Run ``job(*args)`` on the queue's threads, within the bound, by ``deadline``
        (``time.monotonic``; ``None``: no deadline).

        Args:
            on_skip: Called on the job's thread instead of ``job`` when the job is skipped
                because its caller gave up before it started (to remove what the job would
                consume).

        Raises:
            Busy: ``max_pending`` jobs are already waiting or running.
            TimedOut: the job did not finish by ``deadline``, nor pass its ``commit``. The
                job is then abandoned: skipped if it has not started, stopped at its next
                ``checkpoint`` if it has.
        """
        submitted = time.monotonic()
        ticket = _Ticket(float("inf") if deadline is None else deadline)
        with self._lock:
            if self._queued + self._running >= self.max_pending:
                waiting = self._queued + self._running
                raise Busy(f"{waiting} {self.what} are waiting; retry in a moment")
            self._queued += 1

        def run() -> T:
            with self._lock:
                self._queued -= 1
                self._running += 1
            self._local.ticket = ticket
            try:
                if ticket.expired():
                    if on_skip is not None:
                        on_skip()
                    raise TimedOut("the request waited too long in the queue")
                return job(*args)
            finally:
                self._local.ticket = None
                with self._lock:
                    self._running -= 1
                    ticket.finished = True
                    if ticket.abandoned:
                        self._abandoned -= 1

        future = asyncio.get_running_loop().run_in_executor(self._executor, run)
        future.add_done_callback(_consume)
        try:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            if self._give_up(ticket, left=False):
                limit = ticket.deadline - submitted
                raise TimedOut(f"no answer within {limit:.3g} s; the server is busy") from None
            return await asyncio.shield(future)  # committed or done: its outcome stands
        except asyncio.CancelledError:  # the client went away
            self._give_up(ticket, left=True)
            raise

    def _give_up(self, ticket: _Ticket, left: bool) -> bool:
        """Abandon the job unless it finished or passed its commit point (then False)."""
        with self._lock:
            if ticket.finished or ticket.committed:
                return False
            ticket.left = ticket.left or left
            if not ticket.abandoned:
                ticket.abandoned = True
                self._abandoned += 1
            return True

    def checkpoint(self, keeps: bool = False) -> None:
        """Stop the running job if nobody waits for it (on the job's thread only).

        Args:
            keeps: What the job has done so far is kept for later requests (a document's
                vectors are cached): it goes on after a timeout, and stops only when its
                caller left.

        Raises:
            Abandoned: the job should stop; nobody will read what it returns.
        """
        ticket: _Ticket | None = getattr(self._local, "ticket", None)
        if ticket is not None and (ticket.left or (not keeps and ticket.expired())):
            raise Abandoned("the request was abandoned")

    def commit(self) -> None:
        """Pass the running job's point of no return (on the job's thread only): from here
        its caller waits for its outcome, whatever the deadline.

        Raises:
            Abandoned: the caller gave up already (or its deadline passed); the job must
                change nothing.
        """
        ticket: _Ticket | None = getattr(self._local, "ticket", None)
        if ticket is None:
            return
        with self._lock:
            if ticket.expired():
                raise Abandoned("the request was abandoned before its outcome was stored")
            ticket.committed = True


def document_bytes(document: Document) -> int:
    """About how much memory a segmented document holds: its text, plus its sentence and
    paragraph spans (two int64 per span; a sentence every few dozen characters at most)."""
    return sys.getsizeof(document.text) + len(document.text) // 2


class Engine:
    """Runs bank and scanner work one job at a time on its own thread, and reads uploads on
    threads beside it.

    Args:
        settings: Where the bank and vectors live, the queue bounds, the timeout and the
            memory the caches may hold.
    """

    def __init__(self, settings: ServiceSettings, answerer: Answerer | None = None) -> None:
        self.settings = settings
        self.answerer = answerer
        self._worker = JobQueue(1, settings.max_queued, "engine", "requests")
        self._readers = JobQueue(READING_THREADS, settings.max_reading, "read", "uploads")
        self._documents: OrderedDict[int, tuple[Document, int]] = OrderedDict()
        self.documents_bytes = 0  # what the segmented documents kept in memory hold
        self._bank: MemoryBank | None = None
        self._pipeline: Pipeline | None = None
        self._scanner: Scanner | None = None
        self.document_count = 0

    # ------------------------------------------------------------------ the job queues

    @property
    def pending(self) -> int:
        """The worker's jobs submitted and not finished, abandoned ones included."""
        return self._worker.pending

    @property
    def reading(self) -> int:
        """Uploads being read or waiting for a reading thread, abandoned ones included."""
        return self._readers.pending

    def counts(self) -> JobCounts:
        """What the worker holds (the reading threads aside)."""
        return self._worker.counts()

    def deadline(self) -> float:
        """When a request made now must be answered (``time.monotonic``)."""
        return time.monotonic() + self.settings.scan_timeout_s

    async def call(
        self,
        job: Callable[..., T],
        *args: Any,
        deadline: float | None = None,
        on_skip: Callable[[], None] | None = None,
    ) -> T:
        """Run ``job(*args)`` on the worker thread, within the queue bound, by ``deadline``
        (by default ``scan_timeout_s`` from now); see ``JobQueue.call``."""
        deadline = self.deadline() if deadline is None else deadline
        return await self._worker.call(job, *args, deadline=deadline, on_skip=on_skip)

    async def read(self, partial: Path, key: str, deadline: float) -> Document:
        """The upload written to ``partial``, read with the package's text rules on a
        reading thread, by ``deadline``; see ``JobQueue.call``.

        Raises:
            DocumentError: the file cannot be read as a document.
        """
        limit = self.settings.max_upload_bytes
        return await self._readers.call(read_file, partial, key, limit, deadline=deadline)

    def checkpoint(self, keeps: bool = False) -> None:
        """``JobQueue.checkpoint`` of the worker's job (on the worker only)."""
        self._worker.checkpoint(keeps)

    def commit(self) -> None:
        """``JobQueue.commit`` of the worker's job (on the worker only)."""
        self._worker.commit()

    async def start(self) -> None:
        """Open the bank and load the scanner (seconds), before the first request.

        Loading is not a request: no request timeout applies to it, so a short
        ``scan_timeout_s`` cannot stop the service from starting. Starting again is a
        no-op: the worker thread lives as long as the process, since the bank's SQLite
        connection belongs to it (test clients start an app many times).
        """
        if self._pipeline is None:
            await self._worker.call(self._load, deadline=None)

    # -------------------------------------------------- jobs (run on the worker thread)

    def _load(self) -> None:
        from longscan.bank import MemoryBank
        from longscan.encoders.cache import EmbeddingCache
        from longscan.pipeline import Pipeline
        from longscan.retrievers.scanner import ScannerRetriever
        from longscan.scanning.scanner import Scanner

        # a CLI writer holding the bank answers 503 after a while, not a worker stuck behind it
        self._bank = MemoryBank(self.settings.data_dir / "bank", lock_timeout=BANK_LOCK_WAIT_S)
        cache = EmbeddingCache(
            self.settings.data_dir / "vectors", max_bytes=self.settings.cache_bytes
        )
        self._scanner = Scanner.from_pretrained(cache=cache)
        retriever = ScannerRetriever(self._scanner)
        self._pipeline = Pipeline(retriever, self.answerer, top_k=self.settings.top_k)
        self.document_count = len(self._bank)

    @property
    def bank(self) -> MemoryBank:
        if self._bank is None:
            raise RuntimeError("the engine has not started")
        return self._bank

    def add_document(
        self, document: Document, partial: Path, path: Path
    ) -> tuple[DocumentInfo, str, int]:
        """Put an upload's ``document`` (read from ``partial``) in the bank and only then
        store the file as ``path``; ``partial`` is gone afterwards.

        Jobs run one at a time, so two uploads under one name cannot store each other's
        file, and the stored file is always the text the bank holds: a refused upload
        leaves the one before it in place. The bank is changed only past ``commit``: an
        upload whose caller gave up before is not stored, one past it is reported.

        Returns:
            The document's info, what happened (added, updated or unchanged) and how many
            byte runs were not UTF-8 (replaced by U+FFFD).
        """
        try:
            self.commit()
            counts = self.bank.add([document], source="upload")
            self.bank.sync(progress=False)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        doc_id = self.bank.id_of(document.id)
        if doc_id is None:
            raise RuntimeError(f"{document.id!r} was added but is not in the bank")
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

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            raise RuntimeError("the engine has not started")
        return self._pipeline

    def ask(
        self,
        question: str,
        doc_ids: Sequence[int],
        top_k: int | None,
        on_progress: Progress | None = None,
    ) -> Found:
        """The pipeline's evidence for ``question`` over the documents, read in the order
        given, and its abstention judgement; a document read for the first time is encoded
        first, reporting its progress. The answerer runs apart (``Pipeline.respond``).

        An encoding goes on after the caller's timeout (the vectors are cached for the
        next question) and stops only when the caller left; the scan itself is for this
        caller alone.

        Raises:
            Abandoned: the caller left while a new document was being encoded, or gave up
                before the scan.
        """

        def progress(done: int, total: int) -> None:
            self.checkpoint(keeps=True)  # a long encoding stops here once its caller left
            if on_progress is not None:
                on_progress(done, total)

        documents = [self.document(doc_id) for doc_id in doc_ids]
        self.checkpoint(keeps=True)
        self.pipeline.prepare(documents, progress)
        self.checkpoint()
        return self.pipeline.find(question, documents, top_k=top_k)

    def search(
        self, question: str, k: int, method: FirstStage, depth: int, two_stage: bool
    ) -> list[BankHit]:
        """The bank's best ``k`` documents for ``question`` over the whole bank: the first
        stage, then (``two_stage``) the scanner over its best ``depth`` (``bank.search``).

        Raises:
            ValueError: an empty or oversized question.
            DenseIndexError: dense search over an index that needs repair.
        """
        from longscan.bank.search import search
        from longscan.retrievers.base import validate_query

        validate_query(question)
        self.checkpoint()
        return search(self.bank, question, k, method, depth, self._scanner if two_stage else None)


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned job's outcome, so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
