"""One service (one scanner load) shared by the service tests: a loopback app with an API
key, a small body limit, and a client that sends the key to the address the app is bound to
(the app refuses any other ``Host``, as it would a DNS-rebinding page)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from longscan.service import ServiceSettings, create_app

API_KEY = "test-key"
MAX_UPLOAD_BYTES = 64 * 1024
CACHE_BYTES = 256 * 1024
BASE_URL = "http://127.0.0.1:8000"  # what a browser sends to a service bound to 127.0.0.1
STORY = (
    "Mara kept the spare key under the blue flowerpot by the back door. "
    "Her brother Tom never found it.\n\n"
    "In June the family drove to Lisbon for the wedding of a cousin. "
    "The ferry across the river was late.\n\n"
    "The old clock in the hall stopped at noon, and nobody wound it again."
)


@pytest.fixture(scope="session")
def api_key() -> str:
    return API_KEY


@pytest.fixture(scope="session")
def max_upload_bytes() -> int:
    return MAX_UPLOAD_BYTES


@pytest.fixture(scope="session")
def base_url() -> str:
    return BASE_URL


@pytest.fixture(scope="session")
def story() -> str:
    return STORY


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service")


@pytest.fixture(scope="session")
def service(data_dir: Path) -> Iterator[tuple[FastAPI, TestClient]]:
    settings = ServiceSettings(
        data_dir,
        api_key=API_KEY,
        max_upload_bytes=MAX_UPLOAD_BYTES,
        cache_bytes=CACHE_BYTES,
        answerer="none",  # evidence only: the answerers have tests of their own
    )
    app = create_app(settings)
    headers = {"X-API-Key": API_KEY}
    with TestClient(app, base_url=BASE_URL, headers=headers) as client:  # runs the startup
        yield app, client


@pytest.fixture
def client(service: tuple[FastAPI, TestClient]) -> TestClient:
    return service[1]


@pytest.fixture
def story_id(client: TestClient) -> int:
    response = client.post("/api/documents/text", json={"name": "story.txt", "text": STORY})
    assert response.status_code == 200, response.text
    return response.json()["id"]
