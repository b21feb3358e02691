"""``create_app``: the HTTP API and the web page over a memory bank and the scanner.

Documents are uploaded (or pasted) into the bank under ``data_dir``; a question is asked of
one or more of them and answered with evidence sentences (document id, character offsets,
score), plus an LLM's cited answer when one is configured. ``/api/ask/stream`` sends the
same result as server-sent events, preceded by the encoding progress of a new document.

Offsets (``start``, ``end``) count Unicode code points, as Python's ``str`` does: a character
outside the Basic Multilingual Plane (an emoji, CJK extension B) is one position. JavaScript
strings count UTF-16 code units, where such a character is two; the page converts.

Requests pass, outermost first: the ``Host`` check (only the names the service is bound
to, against DNS rebinding), the same-origin check on writes, the key check, the body limit,
then the routes; each refusal is made before the body is read.

The routes live in ``service.routes`` (documents, questions, operations), the bodies in
``service.schemas``, the metrics in ``service.metrics``; this module puts them together.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from longscan import __version__
from longscan.service.engine import Engine
from longscan.service.limits import BodyLimit, KeyCheck, SameOriginWrites
from longscan.service.metrics import CountRequests, Metrics
from longscan.service.routes import ERROR_STATUS, documents, operations, questions
from longscan.service.routes.documents import UPLOADS
from longscan.service.settings import ServiceSettings

STATIC = resources.files("longscan.service") / "static"
# Swagger UI and ReDoc as files of a package (fastapi-offline), served by the app: FastAPI's
# own pages load them from a CDN, blank offline and third-party script beside the API
DOCS_STATIC = resources.files("fastapi_offline") / "static"
OPEN_PATHS = frozenset({"/", "/api/health"})  # the page, its files and health need no key


def needs_key(path: str) -> bool:
    """Whether a request for ``path`` must carry the key (when the service has one): the
    API, the schema and the metrics do; the page, its static files and health do not."""
    return path not in OPEN_PATHS and not path.startswith("/static/")


def create_app(settings: ServiceSettings) -> FastAPI:
    """The service over ``settings.data_dir``; the scanner loads when the app starts.

    The interactive docs (``/docs``, ``/redoc``) load Swagger UI and ReDoc from files this
    app serves (``/docs-static``), never from a CDN, so they work offline. They, their files
    and the schema (``/openapi.json``) are behind the key, if the service has one.
    """
    from longscan.answering.answerers import get_answerer

    engine = Engine(settings, get_answerer(settings.answerer, settings.llm))
    metrics = Metrics(engine)
    (settings.data_dir / UPLOADS).mkdir(parents=True, exist_ok=True)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        yield

    app = FastAPI(
        title="longscan",
        version=__version__,
        description=(
            "Question answering over very long documents, with evidence by offsets. "
            "Offsets count Unicode code points (Python's str), not UTF-16 code units."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.engine = engine
    app.state.metrics = metrics
    # add_middleware wraps what was added before: the last one added sees a request first
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes)
    app.add_middleware(KeyCheck, api_key=settings.api_key, guarded=needs_key)
    app.add_middleware(SameOriginWrites)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.trusted_hosts())
    app.add_middleware(CountRequests, metrics=metrics)

    for error, status in ERROR_STATUS.items():

        def handler(_: Request, exc: Exception, status: int = status) -> JSONResponse:
            headers = {"Retry-After": "5"} if status == 503 else None
            return JSONResponse({"detail": str(exc)}, status, headers=headers)

        app.add_exception_handler(error, handler)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> Response:
        """422 with where and why, without echoing the input: it may be megabytes of text,
        or hold a lone surrogate (``"\\ud800"`` is valid JSON, but no text: the parser
        refuses it) that no UTF-8 response can carry."""
        errors = [
            {"loc": item.get("loc"), "msg": item.get("msg"), "type": item.get("type")}
            for item in error.errors()
        ]
        body = json.dumps({"detail": jsonable_encoder(errors)})  # ASCII: \u escapes
        return Response(body, 422, media_type="application/json")

    for router in (documents.router, questions.router, operations.router):
        app.include_router(router)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(Path(str(STATIC / "index.html")))

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="longscan API",
            swagger_js_url="/docs-static/swagger-ui-bundle.js",
            swagger_css_url="/docs-static/swagger-ui.css",
            swagger_favicon_url="/docs-static/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},  # no call to an online validator
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title="longscan API",
            redoc_js_url="/docs-static/redoc.standalone.js",
            redoc_favicon_url="/docs-static/favicon.png",
            with_google_fonts=False,
        )

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    app.mount("/docs-static", StaticFiles(directory=str(DOCS_STATIC)), name="docs-static")
    return app
