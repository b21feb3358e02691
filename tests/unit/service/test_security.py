"""Who may call, what may be uploaded, and where it may land."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
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
