"""``/api/ask`` (and its stream) over documents the caller names, and ``/api/search`` over
the whole bank.

A question whose client closes the connection is abandoned; one that times out keeps the
encoding of its documents, so asking again goes on from there.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse

from longscan.service.engine import Engine
from longscan.service.metrics import Metrics
from longscan.service.routes import ERROR_STATUS, GUARDED, ClientGone, EngineOf, MetricsOf
from longscan.service.schemas import AskIn, AskOut, SearchHitOut, SearchIn, SearchOut

logger = logging.getLogger(__name__)
T = TypeVar("T")
RUNNING: set[asyncio.Task[None]] = set()  # streamed questions in flight
router = APIRouter(tags=["questions"], dependencies=GUARDED)


async def until_client_leaves(request: Request) -> None:
    """Return once the client has closed the connection (its body has been read: what
    comes next is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, unless the client closes the connection first: then ``work`` is
    cancelled (its queued job skipped, a running one stopped at its next checkpoint, and
    counted as abandoned until then) and ``ClientGone`` is raised."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(until_client_leaves(request))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        left = not task.done()
        watcher.cancel()
        task.cancel()
    if left:
        await asyncio.wait((task,))  # the job hears it is abandoned before the reply
        raise ClientGone("the client closed the connection")
    return task.result()


async def answer(
    engine: Engine,
    metrics: Metrics,
    request: AskIn,
    on_progress: Callable[[int, int], None] | None,
) -> AskOut:
    started = time.perf_counter()
    try:
        found = await engine.call(
            engine.ask,
            request.question,
            request.doc_ids,
            request.top_k or engine.settings.top_k,
            on_progress,
        )
    except ValueError as error:  # an empty question, a duplicate id
        raise HTTPException(400, str(error)) from None
    # beside the worker: the scans of other questions go on while a model answers
    result = await asyncio.to_thread(engine.pipeline.respond, found)
    seconds = time.perf_counter() - started
    metrics.ask_seconds.observe(seconds)
    return AskOut(**{**result.to_json(), "seconds": seconds}, question=request.question)


@router.post("/api/ask")
async def ask(engine: EngineOf, metrics: MetricsOf, request: AskIn, connection: Request) -> AskOut:
    """Evidence sentences for the question (and a cited answer when an LLM is set)."""
    return await unless_client_leaves(connection, answer(engine, metrics, request, None))


@router.post(
    "/api/ask/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def ask_stream(engine: EngineOf, metrics: MetricsOf, request: AskIn) -> StreamingResponse:
    """The same as ``/api/ask`` as server-sent events: ``queued``, then ``progress``
    (``{"done", "total"}`` sentences encoded) while a new document is read, then one
    ``result`` (an ``/api/ask`` body) or ``error`` (``{"status", "detail"}``)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def on_progress(done: int, total: int) -> None:  # called on the engine's thread
        event = ("progress", {"done": done, "total": total})
        loop.call_soon_threadsafe(events.put_nowait, event)

    async def work() -> None:
        try:
            result = await answer(engine, metrics, request, on_progress)
            await events.put(("result", result.model_dump()))
        except HTTPException as error:
            await events.put(("error", {"status": error.status_code, "detail": error.detail}))
        except Exception as error:  # the stream must end with an event, whatever failed
            status = ERROR_STATUS.get(type(error), 500)
            if status == 500:
                logger.exception("a streamed question failed")
            await events.put(("error", {"status": status, "detail": str(error)}))

    async def stream() -> AsyncIterator[str]:
        yield _event("queued", {"ahead": engine.pending})
        task = asyncio.create_task(work())
        RUNNING.add(task)  # the loop keeps only weak references to tasks
        task.add_done_callback(RUNNING.discard)
        try:
            while True:
                name, data = await events.get()
                yield _event(name, data)
                if name in ("result", "error"):
                    return
        finally:  # the client left: its question is abandoned, not run for nobody
            task.cancel()

    return StreamingResponse(stream(), media_type="text/event-stream")


@router.post("/api/search")
async def search(engine: EngineOf, request: SearchIn, connection: Request) -> SearchOut:
    """The bank's best documents for the question, over the whole bank: a first stage
    (BM25, dense or both fused), then, two-stage, the scanner reads the best ``depth``,
    ranks them again and cites each one's best sentences by offsets."""
    started = time.perf_counter()
    try:
        hits = await unless_client_leaves(
            connection,
            engine.call(
                engine.search,
                request.question,
                request.k,
                request.method,
                request.depth,
                request.two_stage,
            ),
        )
    except ValueError as error:  # an empty question, a dense index that needs repair
        raise HTTPException(400, str(error)) from None
    return SearchOut(
        question=request.question,
        hits=[SearchHitOut(**hit.to_json()) for hit in hits],
        seconds=time.perf_counter() - started,
    )


def _event(name: str, data: Any) -> str:
    """One server-sent event; JSON never holds a raw newline, so one data line suffices.

    U+2028 and U+2029 are escaped too: they are no line ends in SSE, but many line
    splitters (JavaScript's ``.`` and ``$``, Python's ``splitlines``) take them for one.
    """
    data_line = json.dumps(data, ensure_ascii=False)
    data_line = data_line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"event: {name}\ndata: {data_line}\n\n"
