"""The page in real headless Chromium: upload the bundled novel, ask, see the evidence
highlighted, step through the hits, and save a screenshot; hits out of document order, hits
after characters outside the BMP, U+2028 in a question, the Ask button during an upload.

Chromium puts a socket in ``$TMPDIR`` and aborts when its path is over 107 bytes ("Socket
path too long"), so under a long ``TMPDIR`` the browser gets a short one of its own.

The screenshot goes to the test's temporary folder, or to ``LONGSCAN_SCREENSHOT`` when set:
``LONGSCAN_SCREENSHOT=docs/screenshot.png bash scripts/test.sh tests/integration`` renews the
README's picture without every test run rewriting a tracked file."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longscan.service import ServiceSettings, create_app

QUESTION = "What were the gardeners painting?"
EVIDENCE = "there were three gardeners at it, busily painting them red"  # chapter VIII
LONG_COPIES = 7  # the novel seven times: over a million characters
BLUE_KEY = (  # three paragraphs whose hits the scanner ranks out of document order
    "Mara keeps a small blue key on a red string in the kitchen drawers. She never lends it."
    "\n\nThe garden shed is locked with the blue key every night, and the old dog sleeps by it."
    "\n\nWhere is the blue key now? It hangs on a nail behind the front door of the old farmhouse."
)
ASTRAL = (  # emoji, a mathematical letter and CJK extension B: two UTF-16 units each
    "🙂🙂 Notes 𠀀𠀁 from the trip. The 🐙 octopus lived in a tank by the door.\n\n"
    "𝒜 second note: the red 🔑 key opens the 𠀂 shed behind the barn.\n\n"
    "The 🎉 party was loud. Everyone left at midnight 𠀃."
)
# An upload is encoded into the bank before the page shows it: on a cold, loaded CI machine
# the novel took longer than Playwright's default 5 s.
UPLOAD_TIMEOUT_MS = 300_000
ANSWER_TIMEOUT_MS = 180_000
SOCKET_PATH_ROOM = 60  # Chromium adds ~40 bytes to TMPDIR for a socket path of at most 107
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None and os.environ.get("LONGSCAN_REQUIRE_BROWSER") == "1":
    raise RuntimeError("LONGSCAN_REQUIRE_BROWSER=1 but Debian's chromium is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/test.sh installs it)"
)


def browser_tmpdir() -> str | None:
    """A short temporary folder for Chromium when ``TMPDIR`` is too long for its sockets."""
    if len(os.fsencode(tempfile.gettempdir())) <= SOCKET_PATH_ROOM:
        return None
    return tempfile.mkdtemp(prefix="lsb-", dir="/tmp")


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless, with a temporary folder its sockets fit in."""
    env = dict(os.environ)
    short = browser_tmpdir()
    if short is not None:
        env["TMPDIR"] = short  # Chromium's own; removed at exit, with what it left there
        import atexit

        atexit.register(shutil.rmtree, short, ignore_errors=True)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], env=env)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app under uvicorn on a free loopback port, in a thread."""
    import uvicorn

    app = create_app(
        ServiceSettings(tmp_path_factory.mktemp("browser-service"), answerer="extractive")
    )
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
    server_url: str, novel_path: Path, tmp_path: Path, browser: Any
) -> None:
    from playwright.sync_api import expect

    with browser.new_page(viewport={"width": 1400, "height": 900}) as page:
        page.goto(server_url)
        page.set_input_files("#upload-file", str(novel_path))
        page.click("#upload-button")
        expect(page.locator("#doc-view")).to_have_attribute(
            "data-rendered", "true", timeout=UPLOAD_TIMEOUT_MS
        )
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("body[data-state=answered]", timeout=ANSWER_TIMEOUT_MS)

        # the extracted answer is shown, and marked where it stands inside its hit
        expect(page.locator("#answer-box")).to_be_visible()
        marked = page.locator("mark.hit.answer")
        assert marked.count() >= 1
        span = words(" ".join(marked.all_inner_texts()))
        assert span and span in words(page.locator("#answer").inner_text())

        active = page.locator("mark.hit.active")
        assert EVIDENCE in words("".join(active.all_text_contents()))  # the answer cuts it
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
        assert EVIDENCE in words("".join(active.all_text_contents()))  # the answer cuts it
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


def test_a_million_characters_render_without_freezing_the_page(
    server_url: str, novel_path: Path, browser: Any
) -> None:
    from playwright.sync_api import expect

    text = novel_path.read_text(encoding="utf-8") * LONG_COPIES
    request = urllib.request.Request(
        f"{server_url}/api/documents/text",
        data=json.dumps({"name": "long.txt", "text": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        doc_id = json.load(response)["id"]
    with browser.new_page() as page:
        page.goto(server_url)
        page.wait_for_selector(f'#doc-select option[value="{doc_id}"]', state="attached")
        page.evaluate(  # record the longest gap between animation frames while it renders
            """() => { window.longestFrame = 0; let last = performance.now();
                const tick = (now) => { window.longestFrame = Math.max(window.longestFrame,
                now - last); last = now; if (!window.stopFrames) requestAnimationFrame(tick); };
                requestAnimationFrame(tick); }"""
        )
        page.select_option("#doc-select", str(doc_id))
        expect(page.locator("#doc-view")).to_have_attribute(
            "data-rendered", "true", timeout=UPLOAD_TIMEOUT_MS
        )
        page.evaluate("() => { window.stopFrames = true; }")
        shown = page.evaluate("() => document.getElementById('doc-view').textContent.length")
        longest = page.evaluate("() => window.longestFrame")
    assert len(text) >= 1_000_000 and shown == len(text)
    assert longest < 1000, f"the page froze for {longest:.0f} ms while rendering"


def paste_and_ask(page: Any, server_url: str, name: str, text: str, question: str) -> None:
    """Paste ``text`` on the page, ask ``question`` and wait for the answer."""
    from playwright.sync_api import expect

    page.goto(server_url)
    page.click("details summary")
    page.fill("#paste-name", name)
    page.fill("#paste-text", text)
    page.click("#paste-button")
    expect(page.locator("#doc-view")).to_have_attribute(
        "data-rendered", "true", timeout=UPLOAD_TIMEOUT_MS
    )
    page.fill("#question", question)
    page.click("#ask-button")
    page.wait_for_selector(
        "body[data-state=answered], body[data-state=failed]", timeout=ANSWER_TIMEOUT_MS
    )
    status = page.text_content("#status")
    assert page.locator("body").get_attribute("data-state") == "answered", status


def shown_hits(page: Any) -> dict[int, str]:
    """The highlighted text of each hit (rank: its marks' text, in document order)."""
    marks = page.eval_on_selector_all(
        "#doc-view mark.hit",
        "marks => marks.map(m => [m.dataset.hits || m.dataset.hit, m.textContent])",
    )
    shown: dict[int, str] = {}
    for ranks, text in marks:
        for rank in map(int, ranks.split()):
            shown[rank] = shown.get(rank, "") + text
    return shown


def test_hits_out_of_document_order_show_the_text_once(server_url: str, browser: Any) -> None:
    """Hits in one block, best first, are not in document order: the view must still be
    the document, once (it grew to 517 of 266 characters)."""
    assert len(BLUE_KEY) == 266
    with browser.new_page() as page:
        paste_and_ask(page, server_url, "blue-key.txt", BLUE_KEY, "Where is the blue key?")
        starts = page.evaluate("() => state.hits.map(hit => hit.start)")
        assert len(starts) > 1 and starts != sorted(starts)  # the case that broke
        assert page.locator("#doc-view").text_content() == BLUE_KEY
        evidence = page.evaluate("() => state.hits.map(hit => hit.text)")
        assert shown_hits(page) == dict(enumerate(evidence))


def test_the_sentences_found_are_marked_apart_in_their_paragraph(
    server_url: str, browser: Any
) -> None:
    """Each hit is read in its paragraph; inside it the sentences the retriever found are
    marked ``found`` and the rest of the paragraph ``around`` (lighter): the text marked
    found is exactly the evidence's found spans (the text has no astral characters, so
    UTF-16 units are characters)."""
    with browser.new_page() as page:
        paste_and_ask(page, server_url, "blue-key.txt", BLUE_KEY, "Where is the blue key?")
        spans = page.evaluate("() => state.hits.flatMap(hit => hit.found.map(f => [f.from, f.to]))")
        assert spans and page.locator("#doc-view mark.hit.around").count() > 0
        marked = page.eval_on_selector_all(
            "#doc-view mark.hit.found", "marks => marks.map(m => m.textContent).join('')"
        )
        assert marked == "".join(
            BLUE_KEY[start:end] for start, end in sorted(set(map(tuple, spans)))
        )


def test_a_table_row_is_listed_with_what_its_figures_are(
    server_url: str, browser: Any, statement_excerpt: str
) -> None:
    """A row's title, column header and group (the API's ``context``) are shown under it in
    the list, and marked in the document while the row is the active hit; the hits'
    highlights stay the evidence itself and the text is shown once."""
    question = "What was the cost of sales for services?"
    with browser.new_page() as page:
        paste_and_ask(page, server_url, "q3.txt", statement_excerpt, question)
        hits = page.evaluate("() => state.hits.map(hit => [hit.text, hit.context])")
        listed = page.locator("#evidence-list li").evaluate_all(
            "items => items.map(li => li.querySelector('.context')?.textContent ?? null)"
        )
        assert shown_hits(page) == {rank: text for rank, (text, _) in enumerate(hits)}
        for rank, (_, context) in reversed(list(enumerate(hits))):  # each hit made active
            page.locator(f'#evidence-list li[data-hit="{rank}"]').click()
            marked = page.eval_on_selector_all(
                "#doc-view mark.context", "marks => marks.map(m => m.textContent).join('')"
            )
            spans = sorted(context or [], key=lambda span: span["start"])
            assert marked == "".join(span["text"] for span in spans)
            assert page.locator("#doc-view").text_content() == statement_excerpt
            assert shown_hits(page) == {rank: text for rank, (text, _) in enumerate(hits)}
    assert any(context for _, context in hits)
    for (_, context), shown in zip(hits, listed, strict=True):
        for span in context:
            assert statement_excerpt[span["start"] : span["end"]] == span["text"]
        expected = " | ".join(" ".join(span["text"].split()) for span in context)
        assert shown == (expected or None)


def test_highlights_after_astral_characters_are_the_evidence(server_url: str, browser: Any) -> None:
    """The API's offsets count code points; the page slices UTF-16 units: every emoji
    before a hit shifted its mark by one unit, sometimes into half a surrogate pair."""
    with browser.new_page() as page:
        paste_and_ask(page, server_url, "astral.txt", ASTRAL, "Which key opens the shed?")
        hits = page.evaluate("() => state.hits.map(hit => [hit.start, hit.end, hit.text])")
        assert hits and any(ASTRAL[:start] != ASTRAL[:start].encode() for start, _, _ in hits)
        for start, end, text in hits:  # the API: code points, as Python slices
            assert ASTRAL[start:end] == text
        assert shown_hits(page) == {rank: text for rank, (_, _, text) in enumerate(hits)}
        assert page.locator("#doc-view").text_content() == ASTRAL
        active = "".join(page.locator("mark.hit.active").all_text_contents())
        assert "🔑 key opens the 𠀂 shed" in active


def test_a_question_with_a_line_separator_is_answered(server_url: str, browser: Any) -> None:
    """U+2028 ends a line for a regular expression's ``.`` and ``$`` but not in the event
    stream: the page's parser cut the event's data there and failed."""
    with browser.new_page() as page:
        question = "Where is\u2028the blue key?\u2029"
        paste_and_ask(page, server_url, "blue-key.txt", BLUE_KEY, question)
        assert page.locator("mark.hit").count() > 0
        frame = 'event: result\ndata: {"question": "a\u2028b\u2029c", "n": 1}'
        parsed = page.evaluate("frame => parseEvent(frame)", frame)
        assert parsed == {"name": "result", "data": {"question": "a\u2028b\u2029c", "n": 1}}


def test_the_ask_button_waits_for_an_upload(server_url: str, browser: Any, tmp_path: Path) -> None:
    """A question asked while a document uploads would go to the document shown before."""
    from playwright.sync_api import expect

    upload = tmp_path / "slow.txt"
    upload.write_text("A document that takes its time to arrive. It has two sentences.")
    with browser.new_page() as page:
        paste_and_ask(page, server_url, "blue-key.txt", BLUE_KEY, "Where is the blue key?")
        held: list[Any] = []
        page.route(  # the upload waits until released
            "**/api/documents",
            lambda route: (
                held.append(route) if route.request.method == "POST" else route.continue_()
            ),
        )
        page.set_input_files("#upload-file", str(upload))
        page.click("#upload-button")
        page.wait_for_timeout(100)
        while not held:
            page.wait_for_timeout(50)
        expect(page.locator("#ask-button")).to_be_disabled()
        page.locator("#ask-form").evaluate("form => form.requestSubmit()")  # Enter, say
        expect(page.locator("#status")).to_contain_text("wait for the document")
        held[0].continue_()
        expect(page.locator("#status")).to_contain_text("slow.txt")
        expect(page.locator("#ask-button")).to_be_enabled()
        assert "takes its time" in page.locator("#doc-view").text_content()


def test_the_browser_starts_under_a_long_tmpdir(
    server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a 100-character TMPDIR Chromium aborted with "Socket path too long"."""
    from playwright.sync_api import sync_playwright

    long = tmp_path / ("t" * max(1, 100 - len(str(tmp_path)) - 1))
    long.mkdir()
    monkeypatch.setenv("TMPDIR", str(long))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert len(tempfile.gettempdir()) >= 100
    titles: list[str] = []

    def visit() -> None:  # a thread of its own: the module's browser holds this one's loop
        with sync_playwright() as playwright:
            chromium = launch(playwright)
            page = chromium.new_page()
            page.goto(server_url)
            titles.append(page.title())
            chromium.close()

    thread = threading.Thread(target=visit)
    thread.start()
    thread.join(120)
    assert titles == ["longscan"]
