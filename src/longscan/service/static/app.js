"use strict";
// The longscan page: upload or choose a document, ask, and see the evidence in the text.
// A document is cut into blocks appended a few per frame (and laid out by the browser only
// near the viewport: `content-visibility: auto`), so a text of millions of characters
// never blocks the page.
//
// The API counts offsets in Unicode code points (as Python does); a JavaScript string counts
// UTF-16 code units, two for every character outside the Basic Multilingual Plane (emoji,
// CJK extension B). Hits are converted once (`toUnits`) and the page slices in units.

const BLOCK_CHARS = 16384;
const BLOCKS_PER_FRAME = 8;
const CITATION = /\[(\d+(?:\s*[,;]\s*\d+)*)\]/g;
const ASTRAL = /[\ud800-\udbff][\udc00-\udfff]/g;
const state = {
  docId: null, text: "", astral: [], blocks: [], appended: 0, hits: [], active: -1, answer: null,
  busy: 0, asking: false,
};
const $ = (id) => document.getElementById(id);

function setStatus(message, isError = false) {
  $("status").textContent = message;
  $("status").classList.toggle("error", isError);
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  const key = $("api-key").value;
  if (key) headers["X-API-Key"] = key;
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401) $("key-box").hidden = false;
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (_) { /* not JSON: keep the status line */ }
    throw new Error(detail);
  }
  return response;
}

// ------------------------------------------------------------------------- documents

async function loadCatalog(selected) {
  const documents = await (await api("/api/documents")).json();
  const select = $("doc-select");
  select.replaceChildren(new Option(documents.length ? "(choose)" : "(no documents yet)", ""));
  for (const doc of documents) {
    select.add(new Option(`${doc.key} (${doc.chars.toLocaleString()} chars)`, doc.id));
  }
  if (selected !== undefined) select.value = String(selected);
}

async function showDocument(docId) {
  setStatus("loading the document…");
  const doc = await (await api(`/api/documents/${docId}`)).json();
  state.docId = String(doc.id);
  state.text = doc.text;
  state.astral = astralPoints(doc.text);
  setHits([]);
  renderDocument();
  setStatus(`${doc.key}: ${doc.chars.toLocaleString()} characters`);
}

function astralPoints(text) {
  // The code-point index of every character outside the BMP, ascending: the k-th such
  // character at UTF-16 index u is at code point u - k.
  return Array.from(text.matchAll(ASTRAL), (match, k) => match.index - k);
}

function toUnits(point) {
  // A code-point offset as a UTF-16 index: one more unit per astral character before it.
  let low = 0, high = state.astral.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (state.astral[middle] < point) low = middle + 1; else high = middle;
  }
  return point + low;
}

function blockBounds(text) {
  // Blocks end at a line break where one is near, so a cut rarely splits a line, and
  // never between the two halves of a surrogate pair.
  const bounds = [];
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + BLOCK_CHARS, text.length);
    if (end < text.length) {
      const lineEnd = text.lastIndexOf("\n", end);
      if (lineEnd > start + BLOCK_CHARS / 2) end = lineEnd + 1;
      else if (/[\ud800-\udbff]/.test(text[end - 1])) end -= 1;
    }
    bounds.push([start, end]);
    start = end;
  }
  return bounds;
}

function renderDocument() {
  const view = $("doc-view");
  view.replaceChildren();
  view.dataset.docId = state.docId;
  view.dataset.rendered = "false";
  state.blocks = blockBounds(state.text).map(([start, end]) => ({ start, end, el: null }));
  state.appended = 0;
  const docId = state.docId;
  const step = () => {
    if (docId !== state.docId) return; // another document replaced this one
    appendBlocks(state.appended + BLOCKS_PER_FRAME - 1);
    if (state.appended < state.blocks.length) requestAnimationFrame(step);
    else view.dataset.rendered = "true";
  };
  step();
}

function appendBlocks(last) {
  const view = $("doc-view");
  for (; state.appended <= Math.min(last, state.blocks.length - 1); state.appended++) {
    const block = state.blocks[state.appended];
    block.el = document.createElement("div");
    block.el.className = "block";
    fillBlock(block);
    view.append(block.el);
  }
}

function fillBlock(block) {
  // The block's text once, in document order, whatever the order and overlap of its hits
  // (they come best first): it is cut at every hit's edge, and each piece covered by hits
  // is one mark, drawn as the best of them and listing them all in `data-hits`. The active
  // hit's context (a table row's title, column header and group) is marked `context`, and
  // an extractive answer's span inside its hit `answer`. In a hit widened to its paragraph,
  // the sentences the retriever found are marked `found` and the rest `around`.
  const overlaps = (range) => range.to > block.start && range.from < block.end;
  const inside = state.hits.filter(overlaps).sort((a, b) => a.from - b.from || a.rank - b.rank);
  const found = inside.flatMap((hit) => hit.found).filter(overlaps);
  const context = activeContext().filter(overlaps);
  const answer = answerSpan().filter(overlaps);
  const cuts = new Set([block.start, block.end]);
  for (const range of [...inside, ...found, ...context, ...answer]) {
    cuts.add(Math.max(range.from, block.start));
    cuts.add(Math.min(range.to, block.end));
  }
  const edges = [...cuts].sort((a, b) => a - b);
  const parts = [];
  for (let i = 0; i + 1 < edges.length; i++) {
    const [start, end] = [edges[i], edges[i + 1]];
    const text = state.text.slice(start, end);
    const covers = (range) => range.from <= start && range.to >= end;
    const covering = inside.filter(covers);
    const inContext = context.some(covers);
    if (!covering.length && !inContext) {
      parts.push(text);
      continue;
    }
    if (!covering.length) {
      const mark = document.createElement("mark");
      mark.className = "context";
      mark.textContent = text;
      parts.push(mark);
      continue;
    }
    const best = covering.reduce((a, b) => (b.rank < a.rank ? b : a));
    const ranks = covering.map((hit) => hit.rank);
    const mark = document.createElement("mark");
    mark.className = ranks.includes(state.active) ? "hit active" : "hit";
    if (inContext) mark.classList.add("context");
    if (answer.some(covers)) mark.classList.add("answer");
    if (found.some(covers)) mark.classList.add("found");
    else if (covering.some((hit) => hit.found.length)) mark.classList.add("around");
    mark.dataset.hit = best.rank;
    mark.dataset.hits = ranks.join(" ");
    mark.dataset.start = best.start;
    mark.dataset.end = best.end;
    mark.style.setProperty("--strength", best.strength.toFixed(2));
    mark.title = covering.map((hit) => `hit ${hit.rank + 1}, score ${hit.score.toFixed(3)}`)
      .join("; ");
    mark.textContent = text;
    parts.push(mark);
  }
  block.el.replaceChildren(...parts);
}

// ------------------------------------------------------------------------------ hits

function setHits(evidence) {
  const mine = evidence.filter((item) => item.doc_id === state.docId);
  const scores = mine.map((item) => item.score);
  const low = Math.min(...scores);
  const span = Math.max(...scores) - low || 1;
  const touched = new Set([...state.hits, ...activeContext()].map(blockOf));
  state.hits = mine.map((item, rank) => ({
    ...item, rank, from: toUnits(item.start), to: toUnits(item.end),
    found: (item.found || []).map((span) => ({ from: toUnits(span.start), to: toUnits(span.end) })),
    strength: 0.25 + 0.65 * (item.score - low) / span,
  }));
  state.active = -1;
  for (const hit of state.hits) touched.add(blockOf(hit));
  for (const index of touched) if (index < state.appended) fillBlock(state.blocks[index]);
  const list = $("evidence-list");
  list.replaceChildren(...state.hits.map((hit) => {
    const item = document.createElement("li");
    item.dataset.hit = hit.rank;
    item.textContent = hit.text.replace(/\s+/g, " ").trim().slice(0, 200) + " ";
    if (hit.context && hit.context.length) {
      // a table row: the title, column header and group that say what its figures are
      const context = document.createElement("span");
      context.className = "context";
      context.textContent = hit.context.map((line) => line.text.replace(/\s+/g, " ").trim())
        .join(" | ");
      item.append(context, " ");
    }
    const score = document.createElement("span");
    score.className = "score";
    // where the unit is printed: "p. 47 · Item 7 › Liquidity" (as Evidence.where says)
    const where = [hit.page == null ? "" : `p. ${hit.page}`, (hit.section || []).join(" › ")]
      .filter(Boolean).join(" · ");
    score.textContent = `${where ? where + ", " : ""}chars ${hit.start}–${hit.end}, `
      + `score ${hit.score.toFixed(3)}`;
    item.append(score);
    return item;
  }));
  updateNavigation();
}

function blockOf(hit) {
  // The block holding the hit's first character (blocks are sorted and contiguous).
  let low = 0, high = state.blocks.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (state.blocks[middle].start <= hit.from) low = middle; else high = middle - 1;
  }
  return low;
}

function answerSpan() {
  // The extractive answer's span in this document, in units (none for a generated answer).
  const span = state.answer && state.answer.span;
  return span && span.doc_id === state.docId
    ? [{ from: toUnits(span.start), to: toUnits(span.end) }]
    : [];
}

function activeContext() {
  // The spans the active hit was read with (a table row's title, header and group), in units.
  const hit = state.hits[state.active];
  return hit && hit.context
    ? hit.context.map((line) => ({ from: toUnits(line.start), to: toUnits(line.end) }))
    : [];
}

function goTo(rank, flash = false) {
  if (rank < 0 || rank >= state.hits.length) return;
  const touched = new Set(activeContext().map(blockOf)); // the last hit's context, unmarked
  state.active = rank;
  appendBlocks(blockOf(state.hits[rank])); // a hit far down may not be appended yet
  for (const range of activeContext()) touched.add(blockOf(range));
  for (const index of touched) if (index < state.appended) fillBlock(state.blocks[index]);
  for (const mark of document.querySelectorAll("mark.hit")) {
    const isActive = mark.dataset.hits.split(" ").map(Number).includes(rank);
    mark.classList.toggle("active", isActive);
    if (isActive && flash) {
      mark.classList.remove("flash");
      void mark.offsetWidth; // restart the animation
      mark.classList.add("flash");
    }
  }
  for (const item of $("evidence-list").children) {
    item.classList.toggle("active", Number(item.dataset.hit) === rank);
  }
  document.querySelector(`mark.hit[data-hits~="${rank}"]`).scrollIntoView({ block: "center" });
  updateNavigation();
}

function updateNavigation() {
  const count = state.hits.length;
  $("hit-counter").textContent = count ? `hit ${state.active + 1} of ${count}` : "no hits";
  $("prev-hit").disabled = state.active <= 0;
  $("next-hit").disabled = state.active >= count - 1;
}

// --------------------------------------------------------------------------- answers

function showAnswer(answer) {
  state.answer = answer;
  $("answer-box").hidden = !answer;
  const box = $("answer");
  box.replaceChildren();
  if (!answer) return;
  let position = 0;
  for (const match of answer.text.matchAll(CITATION)) {
    box.append(answer.text.slice(position, match.index), "[");
    match[1].split(/\s*[,;]\s*/).forEach((number, i) => {
      if (i) box.append(", ");
      const link = document.createElement("a");
      link.href = "#";
      link.className = "citation";
      link.dataset.cite = number;
      link.textContent = number;
      box.append(link);
    });
    box.append("]");
    position = match.index + match[0].length;
  }
  box.append(answer.text.slice(position), ` (${answer.model})`);
  for (const warning of answer.warnings || []) {  // what the evidence given does not back
    const flag = document.createElement("span");
    flag.className = "unbacked";
    flag.textContent = `unbacked: ${warning}`;
    box.append(document.createElement("br"), flag);
  }
}

function followCitation(number) {
  const cited = state.answer && state.answer.evidence[number - 1];
  if (!cited) return;
  const hit = state.hits.find((h) => h.doc_id === cited.doc_id && h.start === cited.start);
  if (hit) goTo(hit.rank, true);
}

function updateButtons() {
  // While a document is uploaded or loaded, a question would go to the one shown before.
  $("ask-button").disabled = state.busy > 0 || state.asking;
  $("upload-button").disabled = state.busy > 0;
  $("paste-button").disabled = state.busy > 0;
}

async function whileBusy(action) {
  state.busy++;
  updateButtons();
  try {
    return await action();
  } finally {
    state.busy--;
    updateButtons();
  }
}

async function ask(question) {
  document.body.dataset.state = "asking";
  state.asking = true;
  updateButtons();
  const progress = $("progress");
  progress.hidden = false;
  progress.removeAttribute("value");
  setStatus("waiting for the scanner…");
  try {
    const response = await api("/api/ask/stream", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question, doc_ids: [Number(state.docId)] }),
    });
    const result = await readEvents(response, (done, total) => {
      progress.max = total;
      progress.value = done;
      setStatus(`reading the document: ${done.toLocaleString()} of ${total.toLocaleString()} sentences`);
    });
    showAnswer(result.answer);  // first: the hits are drawn with the answer's span marked
    setHits(result.evidence);
    if (state.hits.length) goTo(0);
    if (result.abstained) {  // the re-scorer judged no evidence an answer: say so first
      setStatus(`No evidence found; the ${state.hits.length} closest sentences are shown `
        + `(${result.seconds.toFixed(1)} s)`, true);
    } else {
      const note = result.llm_error ? `; no answer: ${result.llm_error}` : "";
      setStatus(`${state.hits.length} hits in ${result.seconds.toFixed(1)} s${note}`,
        !!result.llm_error);
    }
    document.body.dataset.state = "answered";
  } catch (error) {
    setStatus(error.message, true);
    document.body.dataset.state = "failed";
  } finally {
    progress.hidden = true;
    state.asking = false;
    updateButtons();
  }
}

async function readEvents(response, onProgress) {
  // Server-sent events over a POST (EventSource can only GET): split on blank lines.
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the server closed the stream without a result");
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const { name, data } = parseEvent(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (name === "progress") onProgress(data.done, data.total);
      else if (name === "result") return data;
      else if (name === "error") throw new Error(`${data.status}: ${data.detail}`);
    }
  }
}

function parseEvent(frame) {
  // One event's fields. Lines end only at CR or LF, as the SSE format says: U+2028 and
  // U+2029 end lines for a regular expression's `.` and `$`, and may be in the data.
  let name = "message";
  const data = [];
  for (const line of frame.split(/\r\n|\r|\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const field = line.slice(0, colon);
    const value = line.slice(colon + (line[colon + 1] === " " ? 2 : 1));
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  return { name, data: JSON.parse(data.join("\n")) };
}

// ---------------------------------------------------------------------------- wiring

function guarded(action) {
  return async (event) => {
    event.preventDefault();
    try {
      await action(event);
    } catch (error) {
      setStatus(error.message, true);
    }
  };
}

async function added(response) {
  const doc = await response.json();
  await loadCatalog(doc.id);
  await showDocument(doc.id);
  const warning = doc.decoding_errors ? `; ${doc.decoding_errors} non-UTF-8 byte run(s) replaced` : "";
  setStatus(`${doc.status} ${doc.key}: ${doc.chars.toLocaleString()} characters${warning}`);
}

$("upload-form").addEventListener("submit", guarded(() => whileBusy(async () => {
  const file = $("upload-file").files[0];
  if (!file) throw new Error("choose a file first");
  const form = new FormData();
  form.append("file", file);
  setStatus(`uploading ${file.name}…`);
  await added(await api("/api/documents", { method: "POST", body: form }));
})));

$("paste-form").addEventListener("submit", guarded(() => whileBusy(async () => {
  const body = JSON.stringify({ name: $("paste-name").value, text: $("paste-text").value });
  const headers = { "Content-Type": "application/json" };
  await added(await api("/api/documents/text", { method: "POST", headers, body }));
})));

$("doc-select").addEventListener("change", guarded(async (event) => {
  if (event.target.value) await whileBusy(() => showDocument(event.target.value));
}));

$("ask-form").addEventListener("submit", guarded(async () => {
  if (state.busy || state.asking) throw new Error("wait for the document to arrive");
  if (!state.docId) throw new Error("upload or choose a document first");
  await ask($("question").value);
}));

$("prev-hit").addEventListener("click", () => goTo(state.active - 1));
$("next-hit").addEventListener("click", () => goTo(state.active + 1));
$("evidence-list").addEventListener("click", (event) => {
  const item = event.target.closest("li");
  if (item) goTo(Number(item.dataset.hit), true);
});
$("doc-view").addEventListener("click", (event) => {
  const mark = event.target.closest("mark.hit");
  if (mark) goTo(Number(mark.dataset.hit));  // the best hit covering what was clicked
});
$("answer").addEventListener("click", (event) => {
  const link = event.target.closest("a.citation");
  if (!link) return;
  event.preventDefault();
  followCitation(Number(link.dataset.cite));
});
$("api-key").addEventListener("change", guarded(() => loadCatalog()));

loadCatalog().catch((error) => setStatus(error.message, true));
