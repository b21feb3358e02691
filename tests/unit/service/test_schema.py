"""schemathesis against the OpenAPI schema: generated requests never get a server error."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from longscan.service import ServiceSettings, create_app

KEY = "schema-key"
DATA_DIR = Path(tempfile.mkdtemp(prefix="longscan-schema-"))
SETTINGS = ServiceSettings(
    DATA_DIR,
    api_key=KEY,
    max_upload_bytes=256 * 1024,
    allowed_hosts=("testserver",),
    answerer="none",
)  # schemathesis calls the app by the test client's name
APP = create_app(SETTINGS)
schema = schemathesis.openapi.from_asgi(  # parametrize needs it at import
    "/openapi.json", APP, headers={"X-API-Key": KEY}
)


@pytest.fixture(scope="module", autouse=True)
def started() -> Iterator[None]:
    """Run the app's startup (the scanner loads) and one question for every generated
    request: the first question exports the encoders to ONNX when no test has yet, which
    took longer than a generated request may wait (a read time-out, not a server error)."""
    with TestClient(APP, headers={"X-API-Key": KEY}) as client:
        added = client.post("/api/documents/text", json={"name": "a.txt", "text": "A short text."})
        question = {"question": "Which text is short?", "doc_ids": [added.json()["id"]]}
        assert client.post("/api/ask", json=question).status_code == 200
        yield
    shutil.rmtree(DATA_DIR, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples every run: a failure is reproducible
)
def test_no_generated_request_is_a_server_error(case: schemathesis.Case) -> None:
    case.call_and_validate(headers={"X-API-Key": KEY}, checks=[not_a_server_error])
