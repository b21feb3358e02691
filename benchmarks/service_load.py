"""Load test of `longscan serve` on loopback: many clients asking about a cached document.

Starts the server (or uses --url), uploads a document and asks once so its sentence
vectors are cached, then runs --clients concurrent clients for --seconds, each asking one
question after another. Every request must succeed: the server queues questions for its
one scanner rather than refusing them. Prints requests, errors, latency percentiles and
throughput as JSON.

    python benchmarks/service_load.py --clients 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
NOVEL = REPO / "src" / "longscan" / "data" / "sample_novel.txt"
QUESTIONS = (
    "Why was Alice tired of sitting by her sister?",
    "What did the White Rabbit take out of its waistcoat-pocket?",
    "What was in the jar Alice took from the shelf?",
    "How far did Alice think she had fallen?",
    "What was the name of Alice's cat?",
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="A running service (default: start one on loopback).")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--document", type=Path, default=NOVEL, help="Text file to ask about.")
    parser.add_argument(
        "--chars", type=int, default=30_000, help="Characters of it to upload (0: all)."
    )
    parser.add_argument("--api-key", default=None, help="X-API-Key for a --url that needs one.")
    return parser.parse_args()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "longscan.cli", "serve", "--port", str(port)]
    command += ["--data-dir", str(data_dir), "--timeout", "900", "--max-queued", "512"]
    server = subprocess.Popen(command)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("the server did not start within 180 s")


async def client_loop(
    client: httpx.AsyncClient, doc_id: int, stop_at: float, index: int, results: list
) -> None:
    """Ask questions back to back until ``stop_at``; the one in flight then finishes."""
    turn = index
    while time.monotonic() < stop_at:
        body = {"question": QUESTIONS[turn % len(QUESTIONS)], "doc_ids": [doc_id]}
        turn += 1
        started = time.perf_counter()
        try:
            response = await client.post("/api/ask", json=body)
            ok = response.status_code == 200 and bool(response.json()["evidence"])
            outcome = "ok" if ok else f"status {response.status_code}"
        except httpx.HTTPError as error:
            outcome = type(error).__name__
        results.append((time.perf_counter() - started, outcome))


async def run_load(url: str, headers: dict[str, str], doc_id: int, args: argparse.Namespace):
    results: list[tuple[float, str]] = []
    limits = httpx.Limits(max_connections=args.clients)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=900, limits=limits
    ) as client:
        started = time.monotonic()
        stop_at = started + args.seconds
        await asyncio.gather(
            *(client_loop(client, doc_id, stop_at, i, results) for i in range(args.clients))
        )
        elapsed = time.monotonic() - started
    return results, elapsed


def main() -> None:
    args = parse_args()
    text = args.document.read_text(encoding="utf-8")
    text = text[: args.chars] if args.chars else text
    headers = {"X-API-Key": args.api_key} if args.api_key else {}
    with tempfile.TemporaryDirectory() as data_dir:
        server = None
        url = args.url
        if url is None:
            server, url = start_server(Path(data_dir))
        try:
            upload = httpx.post(
                f"{url}/api/documents/text",
                json={"name": "load-test.txt", "text": text},
                headers=headers,
                timeout=300,
            )
            upload.raise_for_status()
            doc_id = upload.json()["id"]
            warm = time.perf_counter()
            body = {"question": QUESTIONS[0], "doc_ids": [doc_id]}
            httpx.post(f"{url}/api/ask", json=body, headers=headers, timeout=900)
            print(
                f"cached the document's vectors in {time.perf_counter() - warm:.1f} s",
                file=sys.stderr,
            )
            print(f"{args.clients} clients for {args.seconds:g} s…", file=sys.stderr)
            results, elapsed = asyncio.run(run_load(url, headers, doc_id, args))
        finally:
            if server is not None:
                server.terminate()
                server.wait(30)
    latencies = np.array([seconds for seconds, _ in results])
    errors = [outcome for _, outcome in results if outcome != "ok"]
    report = {
        "clients": args.clients,
        "seconds": round(elapsed, 1),
        "document_chars": len(text),
        "requests": len(results),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "p50_s": round(float(np.percentile(latencies, 50)), 3) if len(latencies) else None,
        "p99_s": round(float(np.percentile(latencies, 99)), 3) if len(latencies) else None,
        "throughput_per_s": round(len(results) / elapsed, 2),
    }
    print(json.dumps(report, indent=2))
    if errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
