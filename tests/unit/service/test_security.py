"""Who may call, what may be uploaded, and where it may land."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_scope import loopback_post
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import Message
from typer.testing import CliRunner

from longscan.cli import app as cli
from longscan.service.limits import UnsafeName, upload_path
from longscan.service.settings import ServiceSettings, is_loopback

ESCAPES = ["../evil.txt", "..", "a/b.txt", "/etc/passwd", "..\\evil.txt", "C:evil.txt", "x\x00.txt"]


BOUNDARY = "longscan-test-boundary"


def multipart(name: str, content: bytes) -> bytes:
    """A one-file multipart body whose file name is sent exactly as given."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n'
    )
    return head.encode() + content + f"\r\n--{BOUNDARY}--\r\n".encode()


@pytest.mark.parametrize("name", ESCAPES)
def test_an_upload_name_that_could_escape_is_rejected(
    client: TestClient, data_dir: Path, name: str
) -> None:
    before = sorted(p for p in data_dir.parent.rglob("*") if p.is_file())
    response = client.post(  # built by hand: a client library would escape the name
        "/api/documents",
        content=multipart(name, b"Some text."),
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    pasted = client.post("/api/documents/text", json={"name": name, "text": "Some text."})
    assert (response.status_code, pasted.status_code) == (400, 400), response.text
    after = sorted(p for p in data_dir.parent.rglob("*") if p.is_file())
    assert [p for p in after if p not in before and "uploads" in p.parts] == []
    assert not (data_dir.parent / "evil.txt").exists()


def test_upload_path_stays_a_direct_child(tmp_path: Path) -> None:
    assert upload_path(tmp_path, "report 2024..final.txt") == tmp_path / "report 2024..final.txt"
    (tmp_path / "planted").symlink_to(tmp_path.parent / "outside.txt")
    with pytest.raises(UnsafeName, match="outside"):
        upload_path(tmp_path, "planted")  # a link left in the folder is not followed out
    for name in [*ESCAPES, "é" * 101, "\ud800.txt", ""]:  # also too long, not Unicode, none
        with pytest.raises(UnsafeName):
            upload_path(tmp_path, name)


def test_an_oversized_body_gets_413(client: TestClient, max_upload_bytes: int) -> None:
    big = b"word " * (max_upload_bytes // 5 + 100)
    declared = client.post("/api/documents", files={"file": ("big.txt", big)})
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    streamed = client.post(
        "/api/documents/text", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert "limit" in streamed.json()["detail"]


def test_the_api_needs_the_key_but_health_does_not(client: TestClient, api_key: str) -> None:
    assert client.get("/api/documents", headers={"X-API-Key": ""}).status_code == 401
    assert client.get("/api/documents", headers={"X-API-Key": "wrong"}).status_code == 401
    assert client.get("/api/documents", headers={"X-API-Key": api_key}).status_code == 200
    assert client.get("/api/health", headers={"X-API-Key": ""}).status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_a_public_bind_without_a_key_refuses_to_start(
    host: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LONGSCAN_API_KEY", raising=False)
    result = CliRunner().invoke(cli, ["serve", "--host", host, "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "API key" in result.output
    assert not (tmp_path / "uploads").exists()  # refused before the app was built
    with pytest.raises(ValueError, match="API key"):
        ServiceSettings(tmp_path, host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_key(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # a sandboxed frame or a file:// page
        {"Origin": "http://127.0.0.1:3000"},  # another service on this machine: same site
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8000"},
    ],
)
def test_a_write_from_another_sites_page_is_refused_and_changes_nothing(
    client: TestClient, data_dir: Path, headers: dict[str, str]
) -> None:
    original = client.post("/api/documents/text", json={"name": "csrf.txt", "text": "Mine."})
    doc_id = original.json()["id"]
    forged = client.post(  # what a form on evil.example submits: no CORS needed
        "/api/documents",
        content=multipart("csrf.txt", b"Replaced by another site."),
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", **headers},
    )
    pasted = client.post(
        "/api/documents/text", json={"name": "csrf.txt", "text": "Replaced."}, headers=headers
    )
    assert (forged.status_code, pasted.status_code) == (403, 403), forged.text
    assert "another site" in forged.json()["detail"]
    assert client.get(f"/api/documents/{doc_id}").json()["text"] == "Mine."
    assert (data_dir / "uploads" / "csrf.txt").read_text(encoding="utf-8-sig") == "Mine."


def test_a_write_from_the_services_own_page_passes(client: TestClient, base_url: str) -> None:
    own = {"Origin": base_url, "Sec-Fetch-Site": "same-origin"}
    response = client.post(
        "/api/documents/text", json={"name": "own.txt", "text": "Ok."}, headers=own
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io:8000"])
def test_a_foreign_host_is_refused_against_dns_rebinding(
    client: TestClient, story_id: int, story: str, host: str
) -> None:
    response = client.get(f"/api/documents/{story_id}", headers={"Host": host})
    assert response.status_code == 400
    assert story[:20] not in response.text
    assert client.get("/", headers={"Host": host}).status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000"])
def test_every_loopback_name_reaches_a_loopback_service(client: TestClient, host: str) -> None:
    assert client.get("/api/documents", headers={"Host": host}).status_code == 200


def test_the_accepted_host_names_follow_the_bind_and_the_setting(tmp_path: Path) -> None:
    loopback = ServiceSettings(tmp_path).trusted_hosts()
    assert {"127.0.0.1", "localhost", "[::1]"} <= set(loopback)
    public = ServiceSettings(tmp_path, host="192.168.1.20", api_key="k").trusted_hosts()
    assert public == ["192.168.1.20"]
    everywhere = ServiceSettings(
        tmp_path, host="0.0.0.0", api_key="k", allowed_hosts=("Scan.Example.org", "::1")
    ).trusted_hosts()
    assert {"localhost", "scan.example.org", "[::1]"} <= set(everywhere)
    assert "0.0.0.0" not in everywhere and "evil.example" not in everywhere
    anything = ServiceSettings(tmp_path, host="0.0.0.0", api_key="k", allowed_hosts=("*",))
    assert anything.trusted_hosts() == ["*"]
    with pytest.raises(ValueError, match="allowed host"):
        ServiceSettings(tmp_path, allowed_hosts=("*.example.org/x",))


def test_the_key_is_checked_before_the_body_is_read(
    service: tuple[FastAPI, TestClient], max_upload_bytes: int
) -> None:
    """A client without the key cannot make the server hold a body: it is refused at once."""
    app, _ = service
    reads = 0
    sent: list[Message] = []

    async def receive() -> Message:  # a body that keeps coming, under the upload limit
        nonlocal reads
        reads += 1
        await asyncio.sleep(0)
        return {"type": "http.request", "body": b"x" * 1024, "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = loopback_post(
        "/api/documents/text",
        [
            (b"content-type", b"application/json"),
            (b"content-length", str(max_upload_bytes - 1).encode()),
        ],
    )
    asyncio.run(asyncio.wait_for(app(scope, receive, send), 10))
    assert sent[0]["status"] == 401
    assert reads == 0


def test_unknown_methods_share_one_metrics_series(client: TestClient) -> None:
    for number in range(20):
        client.request(f"BREW{number}", "/api/health")
    metrics = client.get("/metrics").text
    assert "BREW" not in metrics
    assert 'method="other"' in metrics
    methods = set(re.findall(r'longscan_requests_total\{method="([^"]*)"', metrics))
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}


def test_metrics_the_schema_and_the_docs_need_the_key_and_nothing_loads_from_a_cdn(
    client: TestClient,
) -> None:
    for path in ("/metrics", "/openapi.json", "/docs", "/redoc"):
        assert client.get(path, headers={"X-API-Key": ""}).status_code == 401, path
    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics").headers["content-type"].startswith("text/plain")
    assert client.get("/openapi.json").status_code == 200
    for path in ("/docs", "/redoc"):  # the UI's files come from the app, never a CDN
        docs = client.get(path)
        assert docs.status_code == 200 and "://" not in docs.text, path
        scripts = re.findall(r'src="([^"]+)"', docs.text)
        assert scripts and all(s.startswith("/docs-static/") for s in scripts), scripts
        assert all(client.get(s).status_code == 200 for s in scripts)
        assert client.get(scripts[0], headers={"X-API-Key": ""}).status_code == 401
    page = client.get("/", headers={"X-API-Key": ""})
    assert page.status_code == 200 and "://" not in page.text.replace("http://www.w3", "")


def upload_and_paste(client: TestClient, name: str) -> tuple[Any, Any]:
    """The same name sent both ways a document arrives: a file upload and pasted text."""
    uploaded = client.post(
        "/api/documents",
        content=multipart(name, b"Some text."),
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    pasted = client.post("/api/documents/text", json={"name": name, "text": "Some text."})
    return uploaded, pasted


@pytest.mark.parametrize("name", ["evil\u202etxt.exe", "\u2066report\u2069.txt", "a\u200fb.txt"])
def test_a_bidi_control_in_a_name_is_refused_like_a_dotdot_name(
    client: TestClient, data_dir: Path, name: str
) -> None:
    details = {}
    for refused in (name, "..txt"):
        uploaded, pasted = upload_and_paste(client, refused)
        assert (uploaded.status_code, pasted.status_code) == (400, 400), uploaded.text
        details[refused] = pasted.json()["detail"]
    assert "bidirectional" in details[name] and "'..'" in details["..txt"]
    assert not (data_dir / "uploads" / name).exists()
    with pytest.raises(UnsafeName, match="bidirectional"):
        upload_path(data_dir / "uploads", name)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("report\u200b.txt", "invisible"),  # zero-width space
        ("notes\u2060.txt", "invisible"),  # word joiner
        ("\ufeffnotes.txt", "invisible"),  # zero-width no-break space
        ("\u3164.txt", "invisible"),  # Hangul filler: a letter that shows as nothing
        ("notes.txt ", "white space"),
        (" notes.txt", "white space"),
        ("notes.txt\u00a0", "white space"),
        (".", "the upload folder itself"),
    ],
)
def test_an_invisible_character_or_white_space_at_an_end_is_refused_clearly(
    client: TestClient, data_dir: Path, name: str, says: str
) -> None:
    """Such a name shows as another (``report.txt``, ``notes.txt``), so it is refused with
    what is wrong with it; ``.`` is not told about ``..``."""
    uploaded, pasted = upload_and_paste(client, name)
    assert (uploaded.status_code, pasted.status_code) == (400, 400), uploaded.text
    for response in (uploaded, pasted):
        assert says in response.json()["detail"] and "'..'" not in response.json()["detail"]
    assert name not in {path.name for path in (data_dir / "uploads").iterdir()}
    with pytest.raises(UnsafeName, match=says):
        upload_path(data_dir / "uploads", name)
