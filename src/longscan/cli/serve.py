"""The serving commands: ``serve`` the web page and HTTP API, ``llm-serve`` a local model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from longscan.cli.common import (
    AnswererName,
    LLMConfigFile,
    LLMModel,
    LLMUrl,
    Verbose,
    answerer_name,
    console,
    fail,
    llm_settings,
    setup_logging,
)


def llm_serve(
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8080,
    context_tokens: Annotated[int, typer.Option(min=512, help="The model's window.")] = 8192,
    threads: Annotated[int, typer.Option(min=1)] = 2,
    writer: Annotated[
        bool,
        typer.Option(
            "--writer",
            help="Serve the question writer (Qwen2.5-Coder 1.5B, extra \\[question-writer]) "
            "instead of the answerer.",
        ),
    ] = False,
) -> None:
    """Serve a local model on 127.0.0.1 with llama.cpp's OpenAI-compatible server until
    Ctrl-C or SIGTERM, which stop the server too: the answerer, Gemma 3 270M (needs the
    \\[local-llm] extra), or with --writer the question writer (needs \\[question-writer])."""
    import time

    from longscan.answering.local import ANSWERER, QUESTION_WRITER, LocalServer

    model = QUESTION_WRITER if writer else ANSWERER
    try:
        with LocalServer(context_tokens, threads, port, model=model) as url:
            console.print(f"serving {model.name} at {url} (Ctrl-C stops)", highlight=False)
            console.print(f"longscan ask FILE -q QUESTION --llm {url}", highlight=False)
            while True:
                time.sleep(3600)
    except RuntimeError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        pass


def serve(
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs an API key.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8000,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            show_default=False,
            help="Folder for uploads, the memory bank and sentence vectors "
            "(default: service/ in longscan's data folder, LONGSCAN_DATA_DIR).",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Key every /api call must send as X-API-Key (default: LONGSCAN_API_KEY).",
        ),
    ] = None,
    max_upload_mb: Annotated[float, typer.Option(min=0.001, help="Largest request body.")] = 32.0,
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds a question may wait and run before 504.")
    ] = 300.0,
    max_queued: Annotated[
        int, typer.Option(min=1, help="Questions waiting for the scanner before 503.")
    ] = 256,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Another name clients reach the service by (repeatable; '*' any). The "
            "bound host, and loopback names on loopback, are always accepted."
        ),
    ] = None,
    llm: LLMUrl = None,
    llm_model: LLMModel = None,
    llm_config: LLMConfigFile = None,
    answerer: AnswererName = None,
    verbose: Verbose = False,
) -> None:
    """Serve the web page and the HTTP API (OpenAPI schema at /openapi.json) until Ctrl-C:
    upload documents, ask, see the evidence highlighted in the text."""
    setup_logging(verbose)
    import dataclasses

    from longscan.service.settings import MIB, ServiceSettings
    from longscan.settings import CommandDefaults, Folders

    try:  # refuse an unsafe bind before loading anything
        settings = ServiceSettings(
            data_dir or Folders().data_dir / "service",
            host,
            api_key or CommandDefaults().api_key,
            int(max_upload_mb * MIB),
            timeout,
            max_queued,
            allowed_hosts=tuple(allowed_host or ()),
        )
    except ValueError as error:
        raise fail(str(error)) from None
    from longscan.service.app import create_app
    from longscan.service.server import make_server

    try:  # an unreadable LLM config, an answerer that is not installed
        settings = dataclasses.replace(
            settings,
            llm=llm_settings(llm, llm_model, llm_config),
            answerer=answerer_name(answerer),
        )
        service = create_app(settings)
    except (RuntimeError, ValueError) as error:
        raise fail(str(error)) from None
    console.print(f"longscan at http://{host}:{port}/ (Ctrl-C stops)", highlight=False)
    # timeouts for slow heads and bodies, and a connection bound that never refuses health
    make_server(service, settings, port, "info" if verbose else "warning").run()
