"""The EMB-S reference-corpus ladder: fixed queries, a memory bank that grows around them.

Documents are the datasets' paragraphs (HotpotQA and MuSiQue for multi-source queries,
SQuAD for single-source ones), then Loong reports and papers, cut into sections of about
``SECTION_TOKENS`` tokens at sentence ends, as global distractors.
Rungs, by cl100k tokens, each built with a fixed seed:

* ``64K-isolated``: one bank per domain (dataset) holding its queries' gold documents,
  their hard negatives and other paragraphs of the same domain;
* ``256K-mixed`` and ``512K-shared``: all domains in one bank;
* ``1M`` … ``20M`` (and whatever the corpus allows): global distractors injected.

Hard negatives: for each query, the 5 most similar non-gold paragraphs of its domain by the
dense encoder. They are *pinned*: put in the first rung and, because every later rung is a
superset of the one before, kept in all of them (the paper leaves this open). Queries whose
gold documents are not all in the bank are never asked.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from longscan.answering.tokens import count_tokens
from longscan.bank import MemoryBank, search
from longscan.bank.ingest import ingest
from longscan.bank.search import DEPTH, FirstStage
from longscan.bench.builders import multihop_questions, squad_articles
from longscan.bench.datasets import data_path
from longscan.documents import Document
from longscan.evaluation.measures import Measure, document_scores
from longscan.parallel import bounded_map, ray_session, workers
from longscan.progress import track
from longscan.readers.files import read_file

MEASURES = tuple(Measure.parse(m) for m in ("docSR@1", "docSR@10", "docR@1", "docFR@1", "docFR@10"))
DEFAULT_RUNGS = (64_000, 256_000, 512_000, 1_000_000, 5_000_000, 10_000_000, 20_000_000)
HARD_NEGATIVES = 5
SECTION_TOKENS = 2_000
SYSTEMS = ("bm25", "dense", "hybrid", "two-stage")


@dataclass(frozen=True)
class LadderQuery:
    id: str
    query: str
    gold: tuple[str, ...]  # bank keys
    domain: str


@dataclass
class LadderCorpus:
    """Queries, their domain paragraphs (key → text), and the global distractor files."""

    queries: list[LadderQuery]
    paragraphs: dict[str, dict[str, str]]  # domain → key → text
    distractors: list[Path] = field(default_factory=list)


def _key(domain: str, title: str, text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{domain}:{title}:{digest}"


def load_corpus(
    data_dir: str | None = None,
    per_domain: int = 40,
    seed: int = 0,
) -> LadderCorpus:
    """Up to ``per_domain`` queries from each dataset's dev data, with fixed-seed sampling."""
    rng = random.Random(seed)
    queries: list[LadderQuery] = []
    paragraphs: dict[str, dict[str, str]] = {}
    for domain in ("hotpotqa", "musique"):
        pool = paragraphs.setdefault(domain, {})
        questions = list(multihop_questions(domain, "dev", data_dir=data_dir))  # type: ignore[arg-type]
        for question in questions:
            for paragraph in question.paragraphs:
                pool[_key(domain, paragraph.title, paragraph.text)] = paragraph.text
        for question in rng.sample(questions, min(per_domain, len(questions))):
            gold = tuple(
                dict.fromkeys(
                    _key(domain, p.title, p.text) for p in question.paragraphs if p.supporting
                )
            )
            if len(gold) >= 2:
                queries.append(
                    LadderQuery(f"{domain}/{question.id}", question.question, gold, domain)
                )
    squad = paragraphs.setdefault("squad", {})
    candidates = []
    for article in squad_articles("dev", data_dir=data_dir):
        for paragraph in article.paragraphs:
            key = _key("squad", article.heading, paragraph.context)
            squad[key] = f"{article.heading}\n{paragraph.context}"
            candidates.extend((q, key) for q in paragraph.questions)
    for question, key in rng.sample(candidates, min(per_domain, len(candidates))):
        queries.append(LadderQuery(f"squad/{question.id}", question.question, (key,), "squad"))
    root = data_path("corpus/loong-docs", data_dir)
    distractors = sorted(root.glob("*/*.txt")) + sorted(root.glob("*/*.md"))
    random.Random(seed + 1).shuffle(distractors)
    return LadderCorpus(queries, paragraphs, distractors)


def hard_negatives(corpus: LadderCorpus, k: int = HARD_NEGATIVES) -> dict[str, list[str]]:
    """Per query: the ``k`` non-gold paragraphs of its domain most similar to the question."""
    from longscan.encoders import get_encoder

    encoder = get_encoder()
    mined: dict[str, list[str]] = {}
    for domain, pool in corpus.paragraphs.items():
        keys = list(pool)
        vectors = np.asarray(encoder.encode([pool[k][:2000] for k in keys]), dtype=np.float32)
        asked = [q for q in corpus.queries if q.domain == domain]
        if not asked:
            continue
        questions = np.asarray(encoder.encode([q.query for q in asked]), dtype=np.float32)
        for query, similarity in zip(asked, questions @ vectors.T, strict=True):
            ranked = [keys[i] for i in np.argsort(-similarity) if keys[i] not in query.gold]
            mined[query.id] = ranked[:k]
    return mined


@dataclass
class RungPlan:
    name: str
    tokens: int
    domains: tuple[str, ...]  # the domains whose queries this bank answers
    keys: list[str]  # dataset paragraphs, in insertion order
    distractors: list[Path]


def plan_rungs(
    corpus: LadderCorpus,
    negatives: dict[str, list[str]],
    budgets: Sequence[int] = DEFAULT_RUNGS,
    seed: int = 0,
) -> list[RungPlan]:
    """Isolated per-domain banks at the first budget, then one growing bank."""
    rng = random.Random(seed)
    lengths = {
        key: count_tokens(text) for pool in corpus.paragraphs.values() for key, text in pool.items()
    }
    pinned: dict[str, list[str]] = {}
    for query in corpus.queries:
        pinned.setdefault(query.domain, []).extend([*query.gold, *negatives.get(query.id, [])])
    plans: list[RungPlan] = []
    isolated_keys: list[str] = []
    first = budgets[0]
    for domain, pool in corpus.paragraphs.items():
        keys = list(dict.fromkeys(k for k in pinned.get(domain, []) if k in pool))
        chosen = set(keys)
        rest = [k for k in pool if k not in chosen]
        rng.shuffle(rest)
        keys = _fill(keys, rest, lengths, first)
        plans.append(RungPlan(f"{_label(first)}-isolated-{domain}", first, (domain,), keys, []))
        isolated_keys.extend(keys)
    everything = [k for pool in corpus.paragraphs.values() for k in pool]
    isolated = set(isolated_keys)
    remaining = [k for k in everything if k not in isolated]
    rng.shuffle(remaining)
    keys = list(isolated_keys)
    domains = tuple(corpus.paragraphs)
    sizes: list[int] = []  # token counts of the distractor files, counted as they are needed
    used_distractors = 0
    for budget in budgets[1:]:
        keys = _fill(keys, remaining, lengths, budget)
        used = sum(lengths[k] for k in keys) + sum(sizes)
        files: list[Path] = []
        while used < budget and used_distractors < len(corpus.distractors):
            path = corpus.distractors[used_distractors]
            sizes.append(count_tokens(read_file(path).text))
            files.append(path)
            used += sizes[-1]
            used_distractors += 1
        label = "mixed" if budget == budgets[1] else "shared" if budget == budgets[2] else "global"
        plans.append(RungPlan(f"{_label(budget)}-{label}", budget, domains, list(keys), files))
        if used < budget:  # the corpus is exhausted: this is the largest rung
            plans[-1].name = f"{_label(used)}-global (all)"
            break
    return plans


def _fill(keys: list[str], pool: list[str], lengths: dict[str, int], budget: int) -> list[str]:
    """``keys`` plus paragraphs taken from the front of ``pool`` until ``budget`` tokens."""
    chosen, used = list(keys), sum(lengths[k] for k in keys)
    taken = set(chosen)
    while pool and used < budget:
        key = pool.pop(0)
        if key not in taken:
            chosen.append(key)
            taken.add(key)
            used += lengths[key]
    return chosen


def _label(tokens: int) -> str:
    return f"{tokens / 1e6:g}M" if tokens >= 1_000_000 else f"{tokens // 1000}K"


@dataclass(frozen=True)
class Answer:
    """One system's ranking for one query, and how long the search took."""

    query_id: str
    system: str
    keys: list[str]
    seconds: float


def answer_queries(
    bank_path: str, queries: Sequence[LadderQuery], systems: Sequence[str], depth: int
) -> list[Answer]:
    """Run every system on ``queries`` (a Ray task: it opens the bank read-only itself)."""
    bank = MemoryBank(Path(bank_path))
    scanner = _bank_scanner(bank_path) if "two-stage" in systems else None
    answers = []
    for system in systems:
        for query in queries:
            started = time.perf_counter()
            if system == "two-stage":
                hits = search(
                    bank, query.query, 10, "hybrid", depth, scanner, max_tokens_per_document=1_000
                )
            else:
                hits = search(bank, query.query, 10, system)  # type: ignore[arg-type]
            seconds = time.perf_counter() - started
            answers.append(Answer(query.id, system, [h.key for h in hits], seconds))
    return answers


@lru_cache(maxsize=4)
def _bank_scanner(bank_path: str) -> Any:
    """One scanner per worker and bank, reading the bank's sentence-vector cache."""
    from longscan.scanning.scanner import Scanner

    return Scanner.from_pretrained(cache=MemoryBank(Path(bank_path)).sentence_cache())


def evaluate_rung(
    bank: MemoryBank,
    queries: Sequence[LadderQuery],
    systems: Sequence[str] = SYSTEMS,
    depth: int = DEPTH,
    queries_per_task: int = 8,
    answer: Callable[..., list[Answer]] = answer_queries,
) -> dict[str, Any]:
    """Per system: mean document-level measures and query latency percentiles.

    Queries run as Ray tasks of ``queries_per_task`` queries (retried if a worker dies);
    latency is each search's own time inside its worker, with the workers busy in parallel.
    ``answer`` is the task (tests wrap it to kill a worker).
    """
    parts = [queries[i : i + queries_per_task] for i in range(0, len(queries), queries_per_task)]
    calls = ((None, (str(bank.path), part, tuple(systems), depth)) for part in parts)
    answers: dict[tuple[str, str], Answer] = {}
    finished = bounded_map(answer, calls, 2 * workers())
    for _, results in track(finished, "queries", total=len(parts)):
        for item in results:
            if (item.query_id, item.system) in answers:
                raise RuntimeError(f"{item.query_id} was answered twice by {item.system}")
            answers[(item.query_id, item.system)] = item
    results: dict[str, Any] = {}
    for system in systems:
        mine = [answers[(query.id, system)] for query in queries]  # a lost query is a KeyError
        scores: dict[str, list[float]] = {m.name: [] for m in MEASURES}
        for query, item in zip(queries, mine, strict=True):
            for name, value in document_scores(item.keys, query.gold, MEASURES).items():
                scores[name].append(value)
        latencies = [item.seconds for item in mine]
        results[system] = {
            **{name: (float(np.mean(v)) if v else None) for name, v in scores.items()},
            "queries": len(mine),
            "p50_ms": float(np.percentile(latencies, 50) * 1000) if latencies else None,
            "p99_ms": float(np.percentile(latencies, 99) * 1000) if latencies else None,
        }
    return results


def candidate_ceiling(
    bank: MemoryBank,
    queries: Sequence[LadderQuery],
    depths: Sequence[int] = (10, 20, 50, 100, 200),
    method: FirstStage = "hybrid",
) -> dict[int, dict[str, float]]:
    """Per candidate depth K: the first stage's docSR@K and docFR@K (multi-source queries),
    searched at depth K as two-stage search asks for them.

    A second stage only reorders the first stage's K candidates, so even a perfect one
    reaches at most these values at SR@10 and FR@10 (for queries with ≤ 10 gold documents):
    the ceiling of a two-stage pipeline reading K candidates.
    """
    scores: dict[int, dict[str, list[float]]] = {depth: {"SR": [], "FR": []} for depth in depths}
    for query in queries:
        for depth in depths:  # fused lists depend on their depth: ask for each, as a search does
            keys = [hit.key for hit in search(bank, query.query, depth, method)]
            measures = {name: Measure.parse(f"doc{name}@{depth}") for name in ("SR", "FR")}
            found = document_scores(keys, query.gold, list(measures.values()))
            for name, measure in measures.items():
                if measure.name in found:  # FR applies to multi-source queries only
                    scores[depth][name].append(found[measure.name])
    return {
        depth: {name: float(np.mean(values)) for name, values in per_name.items() if values}
        for depth, per_name in scores.items()
    }


def answerable(bank: MemoryBank, queries: Sequence[LadderQuery]) -> list[LadderQuery]:
    """The queries whose gold documents are all in ``bank``: the only ones a rung asks."""
    present = bank.known([key for query in queries for key in query.gold])
    return [query for query in queries if all(key in present for key in query.gold)]


def run_ladder(
    out_dir: Path,
    budgets: Sequence[int] = DEFAULT_RUNGS,
    per_domain: int = 40,
    systems: Sequence[str] = SYSTEMS,
    seed: int = 0,
    data_dir: str | None = None,
    ray_address: str | None = None,
    depth: int = DEPTH,
) -> list[dict[str, Any]]:
    """Build every rung, evaluate every system on it (two-stage reading ``depth``
    candidates), write ``ladder.json`` as it goes.

    Ingestion and the queries run on Ray: embedded here, or on the cluster at
    ``ray_address``.
    """
    corpus = load_corpus(data_dir, per_domain, seed)
    negatives = hard_negatives(corpus)
    plans = plan_rungs(corpus, negatives, budgets, seed)
    texts = {key: text for pool in corpus.paragraphs.values() for key, text in pool.items()}
    rows: list[dict[str, Any]] = []
    growing: MemoryBank | None = None
    with ray_session(ray_address):
        for plan in plans:
            isolated = plan.name.count("-isolated-") == 1
            bank = MemoryBank(out_dir / "banks" / plan.name) if isolated else growing
            if bank is None:
                bank = growing = MemoryBank(out_dir / "banks" / "shared")
            reports = [
                ingest(bank, (Document(k, texts[k]) for k in plan.keys)),
                ingest(bank, _distractor_documents(plan.distractors), domain="distractor"),
            ]
            asked = answerable(bank, [q for q in corpus.queries if q.domain in plan.domains])
            stats = bank.stats()
            row = {
                "rung": plan.name,
                "documents": stats["documents"],
                "tokens": stats["tokens"],
                "queries": len(asked),
                "ingest_seconds": round(sum(r.wall_seconds for r in reports), 1),
                "added": {
                    name: sum(getattr(r, name) for r in reports)
                    for name in ("added", "updated", "unchanged")
                },
                "systems": evaluate_rung(bank, asked, systems, depth),
            }
            rows.append(row)
            (out_dir / "ladder.json").write_text(json.dumps(rows, indent=2))
    return rows


def _distractor_documents(paths: Sequence[Path]) -> Iterator[Document]:
    for path in paths:
        yield from sections(f"loong:{path.parent.name}/{path.name}", read_file(path).text)


def sections(key: str, text: str, tokens: int = SECTION_TOKENS) -> Iterator[Document]:
    """``text`` as consecutive documents of about ``tokens`` tokens (4 characters each), each
    cut at the first sentence end past its size; keys ``key#0``, ``key#1``, ...

    EMB-S's bank averages 2,000 tokens a document (326M tokens in 160,280 documents); whole
    reports of 50k+ tokens would make a 20M-token rung a few hundred documents, far fewer
    competitors per query than the paper's banks of the same size.
    """
    ends = Document(key, text).sentences[:, 1]
    start, index = 0, 0
    while start < len(text):
        after = int(np.searchsorted(ends, start + tokens * 4))
        stop = int(ends[after]) if after < len(ends) else len(text)
        if text[start:stop].strip():
            yield Document(f"{key}#{index}", text[start:stop])
            index += 1
        start = stop
