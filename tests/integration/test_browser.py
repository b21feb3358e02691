"""The page in real headless Chromium: upload the bundled novel, ask, see the evidence
highlighted, step through the hits, and save a screenshot.

The screenshot goes to the test's temporary folder, or to ``LONGSCAN_SCREENSHOT`` when set:
``LONGSCAN_SCREENSHOT=docs/screenshot.png bash scripts/test.sh tests/integration`` renews the
README's picture without every test run rewriting a tracked file."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscan.service import ServiceSettings, create_app

QUESTION = "What were the gardeners painting?"
EVIDENCE = "there were three gardeners at it, busily painting them red"  # chapter VIII
LONG_COPIES = 7  # the novel seven times: over a million characters
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None and os.environ.get("LONGSCAN_REQUIRE_BROWSER") == "1":
    raise RuntimeError("LONGSCAN_REQUIRE_BROWSER=1 but Debian's chromium is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/test.sh installs it)"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app under uvicorn on a free loopback port, in a thread."""
    import uvicorn

    app = create_app(ServiceSettings(tmp_path_factory.mktemp("browser-service")))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the service did not start")
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def words(text: str) -> str:
    return " ".join(text.split())


def test_upload_ask_highlight_and_step_through_hits(
    server_url: str, novel_path: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server_url)
        page.set_input_files("#upload-file", str(novel_path))
        page.click("#upload-button")
        expect(page.locator("#doc-view")).to_have_attribute("data-rendered", "true")
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("body[data-state=answered]", timeout=180_000)

        active = page.locator("mark.hit.active")
        assert EVIDENCE in words(active.first.inner_text())
        expect(active.first).to_be_in_viewport()
        hits = page.locator("#evidence-list li").count()
        expect(page.locator("#hit-counter")).to_have_text(f"hit 1 of {hits}")
        assert hits > 1
        for rank in range(1, hits):  # every hit is highlighted and reached in turn
            page.click("#next-hit")
            expect(page.locator("#hit-counter")).to_have_text(f"hit {rank + 1} of {hits}")
            expect(active.first).to_have_attribute("data-hit", str(rank))
            expect(active.first).to_be_in_viewport()
        expect(page.locator("#next-hit")).to_be_disabled()
        for _ in range(hits - 1):
            page.click("#prev-hit")
        expect(page.locator("#hit-counter")).to_have_text(f"hit 1 of {hits}")
        assert EVIDENCE in words(active.first.inner_text())
        strengths = [
            float(page.locator(f'mark.hit[data-hit="{rank}"]').first.evaluate(
                "m => getComputedStyle(m).getPropertyValue('--strength')"
            ))
            for rank in range(hits)
        ]  # fmt: skip
        assert strengths == sorted(strengths, reverse=True) and strengths[0] > strengths[-1]
        screenshot = Path(os.environ.get("LONGSCAN_SCREENSHOT", tmp_path / "screenshot.png"))
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot))
        assert screenshot.stat().st_size > 10_000
        browser.close()


def test_a_million_characters_render_without_freezing_the_page(
    server_url: str, novel_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    text = novel_path.read_text(encoding="utf-8") * LONG_COPIES
    request = urllib.request.Request(
        f"{server_url}/api/documents/text",
        data=json.dumps({"name": "long.txt", "text": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        doc_id = json.load(response)["id"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(server_url)
        page.wait_for_selector(f'#doc-select option[value="{doc_id}"]', state="attached")
        page.evaluate(  # record the longest gap between animation frames while it renders
            """() => { window.longestFrame = 0; let last = performance.now();
                const tick = (now) => { window.longestFrame = Math.max(window.longestFrame,
                now - last); last = now; if (!window.stopFrames) requestAnimationFrame(tick); };
                requestAnimationFrame(tick); }"""
        )
        page.select_option("#doc-select", str(doc_id))
        expect(page.locator("#doc-view")).to_have_attribute("data-rendered", "true")
        page.evaluate("() => { window.stopFrames = true; }")
        shown = page.evaluate("() => document.getElementById('doc-view').textContent.length")
        longest = page.evaluate("() => window.longestFrame")
        browser.close()
    assert len(text) >= 1_000_000 and shown == len(text)
    assert longest < 1000, f"the page froze for {longest:.0f} ms while rendering"
