"""In-context retrieval on a local causal LM, four measurements:

* ``formats``: evidence access (word-budgeted hit/SR/FR, docSR/docFR, sentence nDCG@10) of the
  ``[DOC i]`` formats, attention ranking and CFIC beside the scanner and the baselines, and
  SubEM of the answers the same model gives: in its own format's reply, over the whole
  context (AO), and over each retriever's first 300 words of evidence (AO);
* ``kv``: KV-cache compression: the answer over the whole context (AO, question-aware: the
  question is read with the passages, so SnapKV's window holds it) against each press at
  three ratios, with SubEM and the gold answer's mean log-probability per token. One prefill
  per item serves every press (``compression.compress``, equal to pressing during it);
* ``rag``: the paper's RAG baseline, 2048-token chunks ranked through the retrievers and
  filled up to token budgets, answered by the same model, against the whole context;
* ``cfic-speed``: CFIC's constrained and skip decoding against free generation of the same
  evidence by the same model from the same cache, and the cost of a second question;
* ``cfic-sft``: the paper's fine-tuning, tried: LoRA over the model's attention layers on
  (text, question, evidence sentence) triples of the training split at short contexts, then
  CFIC's evidence access on the same development items before and after;
* ``random-lm``: a randomly initialised model of a larger shape, for timing on a machine
  that no larger model's weights can reach (``benchmarks/incontext_gpu.sh``).

python benchmarks/incontext.py formats --out runs/incontext
python benchmarks/incontext.py kv --out runs/incontext
python benchmarks/incontext.py rag --out runs/incontext
python benchmarks/incontext.py cfic-speed --out runs/incontext
python benchmarks/incontext.py cfic-sft --out runs/incontext
python benchmarks/incontext.py random-lm MODEL_FOLDER /tmp/random-7b
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from longscan.bench.catalogue import build_benchmark
from longscan.documents import Evidence
from longscan.evaluation.answers import sub_em
from longscan.evaluation.budgets import budget_evidence
from longscan.evaluation.evaluator import evaluate
from longscan.incontext.decoding import Reading, continuation_logprob, greedy, read
from longscan.incontext.docids import CUES, Format, Passage, build_prompt, parse_answer
from longscan.incontext.reader import finished
from longscan.items import QAItem
from longscan.progress import track
from longscan.retrievers import get_retriever
from longscan.retrievers.docids import chunk_passages

app = typer.Typer(add_completion=False, help=__doc__)

Out = Annotated[Path, typer.Option(help="where the JSON results go")]
Items = Annotated[int, typer.Option(help="questions per benchmark")]
Words = Annotated[int, typer.Option(help="words per built document")]
Model = Annotated[str, typer.Option(help="the causal LM (incontext.lm names; default: packaged)")]
ANSWER_TOKENS = 24


def _items(name: str, words: int, count: int) -> list[QAItem]:
    return build_benchmark(name, "dev", words, max_items=count, seed=0)


def _answer_after(lm, reading: Reading, prompt: Sequence[int]) -> str:
    """The model's answer line after ``prompt``, which ends with the AO cue (read after
    ``reading``, which it extends)."""
    cue = CUES[Format.AO]
    return parse_answer(cue + greedy(lm, reading, prompt, ANSWER_TOKENS,
                                     lambda text: finished(cue + text)))  # fmt: skip


def _answer(lm, prompt_text: str) -> str:
    """The model's answer (AO) to a prompt that ends with the AO cue."""
    ids = lm.tokenizer.encode(prompt_text)
    return _answer_after(lm, read(lm, ids[:-1]), ids[-1:])


def _evidence_prompt(item: QAItem, evidence: Sequence[Evidence], budget: int) -> str:
    """An AO prompt over the first ``budget`` words of evidence, each piece a ``[DOC i]``."""
    ids = {d.id: i for i, d in enumerate(item.documents)}
    chosen = budget_evidence(evidence, budget)
    passages = [Passage(ids[e.doc_id], e.start, e.end) for e in chosen]
    return build_prompt(item.query, item.documents, passages, Format.AO).text


@app.command()
def formats(
    out: Out = Path("runs/incontext"),
    benchmarks: str = "squad-long,hotpotqa-collection,musique-collection",
    items: Items = 10,
    words: Words = 800,
    rag_words: Annotated[
        int, typer.Option(help="AO over each retriever's first words; 0: none")
    ] = 300,
    model: Model = "",
    file_name: str = "formats.json",
) -> None:
    """Evidence access and SubEM of the in-context systems beside the scanner."""
    from longscan.retrievers.registry import in_context_reader

    reader = in_context_reader(model or None)
    lm = reader.lm
    own_answer = ("icr-id", "icr-id-c", "icr-id-q", "icr-attention")
    names = [f"{name}:{model}" if model else name for name in (*own_answer, "cfic")]
    names += ["scanner", "bm25-sentence", "bm25-chunk", "hybrid-sentence"]
    results: dict = {}
    for benchmark in benchmarks.split(","):
        chosen = _items(benchmark, words, items)
        answers: dict[str, list[float]] = {}
        replies: dict[str, list[str]] = {}
        seconds: dict[str, float] = {}
        for item in track(chosen, f"{benchmark}: [DOC i] replies"):
            passages = chunk_passages(item.documents)
            for fmt in Format:
                started = time.perf_counter()
                reply = reader.reply(item.query, item.documents, passages, fmt)
                seconds[fmt] = seconds.get(fmt, 0.0) + time.perf_counter() - started
                answers.setdefault(f"{fmt} (own reply)", []).append(
                    sub_em(reply.answer, item.answers)
                )
                replies.setdefault(fmt, []).append(reply.text)
        access = {}
        for name in names:
            result = evaluate(get_retriever(name), chosen, budgets=(100, 300, 1000))
            access[name] = {
                "summary": result.overall,
                "seconds_per_item": float(np.mean([r.seconds for r in result.records])),
            }
            if not rag_words or name.split(":")[0] in own_answer:
                continue  # answered in their own reply, or (attention) ranking only
            for item in track(chosen, f"{benchmark}: AO over {name}'s {rag_words} words"):
                evidence = get_retriever(name).retrieve(item.query, item.documents)
                answer = _answer(lm, _evidence_prompt(item, evidence, rag_words))
                answers.setdefault(f"AO over {name}@{rag_words}", []).append(
                    sub_em(answer, item.answers)
                )
        results[benchmark] = {
            "items": len(chosen),
            "words": words,
            "access": access,
            "subem": {k: float(np.mean(v)) for k, v in answers.items()},
            "format_seconds_per_item": {str(k): v / len(chosen) for k, v in seconds.items()},
            "replies": {str(k): v for k, v in replies.items()},
        }
        _write(out / file_name, results)
        typer.echo(json.dumps(results[benchmark]["subem"], indent=1))


def _scanner_priorities(lm, item: QAItem, prompt, offsets: np.ndarray) -> np.ndarray:
    """Token priorities for scanner-guided eviction: each sentence's scanner score, the text
    outside the passages always kept."""
    from longscan.incontext.compression import token_priorities

    evidence = get_retriever("scanner").retrieve(item.query, item.documents, top_k=None)
    ids = {d.id: i for i, d in enumerate(item.documents)}
    spans = []
    for e in evidence:
        number = ids[e.doc_id]  # one passage per document, shown in order
        block_start = prompt.blocks[number][0] - prompt.passages[number].start
        spans.append((block_start + e.start, block_start + e.end, e.score))
    inside = np.zeros(len(offsets), dtype=bool)
    for start, end in prompt.blocks:
        inside |= (offsets[:, 0] >= start) & (offsets[:, 1] <= end) & (offsets[:, 1] > start)
    return token_priorities(offsets, spans, ~inside)


@app.command()
def kv(
    out: Out = Path("runs/incontext"),
    benchmark: str = "hotpotqa-collection",
    items: Items = 20,
    words: Words = 1000,
    ratios: str = "0.25,0.5,0.75",
) -> None:
    """The answer over the whole context against each press at each ratio."""
    from longscan.incontext.compression import PRESS_NAMES, compress, make_press
    from longscan.incontext.hooks import cached_positions
    from longscan.incontext.lm import load_causal_lm

    lm = load_causal_lm()
    cue = lm.encode(CUES[Format.AO])
    rows: dict[str, dict[str, list[float]]] = {}
    for item in track(_items(benchmark, words, items), f"{benchmark}: presses"):
        passages = [Passage(i, 0, len(d.text)) for i, d in enumerate(item.documents)]
        prompt = build_prompt(item.query, item.documents, passages, Format.AO)
        context = prompt.text[: -len(CUES[Format.AO])]
        encoding = lm.tokenizer(context, return_offsets_mapping=True)
        ids, offsets = encoding["input_ids"], np.asarray(encoding["offset_mapping"])
        full = read(lm, ids, keep_prefill_inputs=True)
        conditions = {"full context": full}
        for name in PRESS_NAMES:
            for ratio in (float(r) for r in ratios.split(",")):
                press = make_press(name, ratio)
                if name == "scanner":
                    press.prioritise(_scanner_priorities(lm, item, prompt, offsets))
                conditions[f"{name}@{ratio}"] = compress(full, press, lm.model)
        for label, reading in conditions.items():
            kept = cached_positions(reading.cache, lm.model)[0] / len(ids)
            answer = _answer_after(lm, reading.fork(), cue)
            logprob = continuation_logprob(lm, reading, cue, " " + item.answers[0])
            row = rows.setdefault(label, {"subem": [], "logprob": [], "kept": []})
            row["subem"].append(sub_em(answer, item.answers))
            row["logprob"].append(logprob)
            row["kept"].append(kept)
    summary = {label: {k: float(np.mean(v)) for k, v in row.items()} for label, row in rows.items()}
    _write(out / "kv.json", {"benchmark": benchmark, "items": items, "words": words,
                             "summary": summary, "rows": rows})  # fmt: skip
    typer.echo(json.dumps(summary, indent=1))


def _token_chunks(lm, item: QAItem, chunk_tokens: int) -> list[Passage]:
    """Each document cut at sentence ends into pieces of at most ``chunk_tokens`` tokens (a
    longer sentence is a piece of its own)."""
    chunks = []
    for index, document in enumerate(item.documents):
        encoding = lm.tokenizer(document.text, add_special_tokens=False,
                                return_offsets_mapping=True)  # fmt: skip
        starts = np.asarray([a for a, _ in encoding["offset_mapping"]])
        ends = np.searchsorted(starts, document.sentences[:, 1], side="left")
        first, begin = 0, 0
        for last in range(len(ends)):
            if last > first and ends[last] - begin > chunk_tokens:
                chunks.append(Passage(index, int(document.sentences[first, 0]),
                                      int(document.sentences[last - 1, 1])))  # fmt: skip
                first, begin = last, int(ends[last - 1])
        chunks.append(Passage(index, int(document.sentences[first, 0]),
                              int(document.sentences[-1, 1])))  # fmt: skip
    return chunks


@app.command()
def rag(
    out: Out = Path("runs/incontext"),
    benchmark: str = "hotpotqa-long",
    items: Items = 8,
    words: Words = 4000,
    chunk_tokens: int = 2048,
    budgets: str = "2048,4096",
    retrievers: str = "scanner,bm25-sentence",
) -> None:
    """The paper's RAG baseline: 2048-token chunks ranked by a retriever (a chunk scores its
    best unit), the best filling a token budget in reading order, answered (AO) by the same
    model; against the whole context."""
    from longscan.incontext.lm import load_causal_lm

    lm = load_causal_lm()
    rows: dict[str, dict[str, list[float]]] = {}

    def score(label: str, item: QAItem, passages: list[Passage]) -> None:
        prompt = build_prompt(item.query, item.documents, passages, Format.AO).text
        ids = lm.tokenizer.encode(prompt)
        reading = read(lm, ids[:-1])  # once, for the answer and the gold answer's score
        answer = _answer_after(lm, reading.fork(), ids[-1:])
        logprob = continuation_logprob(lm, reading, ids[-1:], " " + item.answers[0])
        row = rows.setdefault(label, {"subem": [], "logprob": [], "tokens": []})
        row["subem"].append(sub_em(answer, item.answers))
        row["logprob"].append(logprob)
        row["tokens"].append(len(ids))

    for item in track(_items(benchmark, words, items), f"{benchmark}: chunked RAG"):
        chunks = _token_chunks(lm, item, chunk_tokens)
        score("full context", item, [Passage(i, 0, len(d.text)) for i, d in
                                     enumerate(item.documents)])  # fmt: skip
        sizes = [len(lm.encode(item.documents[c.doc_index].text[c.start : c.end]))
                 for c in chunks]  # fmt: skip
        for name in retrievers.split(","):
            evidence = get_retriever(name).retrieve(item.query, item.documents, top_k=None)
            best = np.full(len(chunks), -np.inf)
            ids = {d.id: i for i, d in enumerate(item.documents)}
            for e in evidence:
                for k, c in enumerate(chunks):
                    if c.doc_index == ids[e.doc_id] and c.start <= e.start < c.end:
                        best[k] = max(best[k], e.score)
            for budget in (int(b) for b in budgets.split(",")):
                chosen, used = [], 0
                for k in np.argsort(-best, kind="stable"):
                    if used + sizes[k] <= budget:
                        chosen.append(int(k))
                        used += sizes[k]
                score(f"{name} chunks @{budget} tokens", item, [chunks[k] for k in sorted(chosen)])
    summary = {label: {k: float(np.mean(v)) for k, v in row.items()} for label, row in rows.items()}
    _write(out / "rag.json", {"benchmark": benchmark, "items": items, "words": words,
                              "summary": summary, "rows": rows})  # fmt: skip
    typer.echo(json.dumps(summary, indent=1))


@app.command("cfic-speed")
def cfic_speed(
    out: Out = Path("runs/incontext"),
    items: Items = 8,
    words: Words = 800,
    model: Model = "",
    window_tokens: Annotated[int, typer.Option(help="CFIC's window; 0: its default")] = 0,
    file_name: str = "cfic-speed.json",
) -> None:
    """CFIC's decoding against free generation of the same evidence from the same cache."""
    from longscan.devices import clock
    from longscan.incontext.cfic import CFIC, tail_ids
    from longscan.incontext.decoding import Reading, greedy
    from longscan.incontext.lm import DEFAULT_MODEL, load_causal_lm

    lm = load_causal_lm(model or DEFAULT_MODEL)
    cfic = CFIC(lm, window_tokens=window_tokens or None)
    rows = []
    chosen = _items("squad-long", words, items * 8)
    one_per_text = {  # one pair per text, so every read is a cold one
        a.documents[0].text: (a, b)
        for a, b in zip(chosen[::2], chosen[1::2], strict=False)
        if a.documents[0].text == b.documents[0].text
    }
    pairs = list(one_per_text.values())
    if len(pairs) > items:  # a warm-up on a document that is not timed
        cfic.spans(pairs[items][0].query, list(pairs[items][0].documents))
    for first, second in track(pairs[:items], "cfic against free generation"):
        (document,) = first.documents
        started = clock(lm.device)
        (window,) = cfic.windows(document)
        prefill = clock(lm.device) - started
        started = clock(lm.device)
        spans = cfic.spans(first.query, [document])
        constrained = clock(lm.device) - started
        started = clock(lm.device)
        cfic.spans(second.query, [document])
        again = clock(lm.device) - started
        sizes = [len(lm.encode(document.text[s.start : s.end])) for s in spans]
        tail = tail_ids(lm, first.query)
        started = clock(lm.device)
        for size in sizes:  # the same evidence, one token at a time
            reading = Reading(window.cache, int(window.cache.get_seq_length())).fork()
            greedy(lm, reading, tail, size, stop_at_eos=False)
        free = clock(lm.device) - started
        rows.append({"prefill_s": prefill, "cfic_s": constrained, "second_question_s": again,
                     "free_s": free, "evidence_tokens": sum(sizes),
                     "spans": len(spans)})  # fmt: skip
    summary = {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}
    summary["speed-up"] = float(np.sum([r["free_s"] for r in rows]) /
                                np.sum([r["cfic_s"] for r in rows]))  # fmt: skip
    summary["device"] = lm.device
    _write(out / file_name, {"summary": summary, "rows": rows})
    typer.echo(json.dumps(summary, indent=1))


def _sft_sequences(lm, items: Sequence[QAItem], per_item: int) -> list[tuple[list[int], int]]:
    """CFIC's own prompt over each training text followed by a gold sentence and the quote's
    end (a newline), as ``(token ids, target length)``: the loss reads the last tokens only.
    Up to ``per_item`` gold sentences per question each make a sequence."""
    from longscan.evaluation.gold import gold_unit_labels
    from longscan.incontext.cfic import head_ids, tail_ids

    sequences = []
    for item in items:
        (document,) = item.documents
        labels = gold_unit_labels(item)[document.id]
        prompt = head_ids(lm) + lm.encode(document.text) + tail_ids(lm, item.query)
        for start, end in document.sentences[np.flatnonzero(labels)[:per_item]].tolist():
            target = lm.encode(" " + document.text[start:end] + "\n")
            sequences.append((prompt + target, len(target)))
    return sequences


def _sft_loss(lm, ids: list[int], target: int):
    """Mean cross-entropy of the last ``target`` tokens (logits only where they are read)."""
    import torch

    tokens = torch.tensor([ids], device=lm.device)
    logits = lm.model(input_ids=tokens, logits_to_keep=target + 1).logits[0, :-1].float()
    return torch.nn.functional.cross_entropy(logits, tokens[0, -target:])


@app.command("cfic-sft")
def cfic_sft(
    out: Out = Path("runs/incontext"),
    train_items: int = 300,
    train_words: int = 400,
    items: Items = 30,
    words: Words = 800,
    benchmarks: str = "squad-long,hotpotqa-long,musique-long",
    rank: int = 8,
    learning_rate: float = 2e-4,
    seed: int = 0,
    save: Annotated[
        Path | None, typer.Option(help="write the LoRA adapter here (longscan's format)")
    ] = None,
    before: Annotated[bool, typer.Option(help="measure the plain model first")] = True,
) -> None:
    """CFIC before and after LoRA fine-tuning on the training split's triples."""
    import torch
    from peft import LoraConfig, get_peft_model

    from longscan import __version__
    from longscan.encoders.adapter import AdapterConfig, adapter_tensors, save_adapter
    from longscan.incontext.cfic import CFIC
    from longscan.incontext.lm import load_causal_lm
    from longscan.retrievers.cfic import CFICRetriever

    torch.manual_seed(seed)
    lm = load_causal_lm()
    dev = {name: _items(name, words, items) for name in benchmarks.split(",")}

    def access() -> dict:
        retriever = CFICRetriever(CFIC(lm))
        return {name: evaluate(retriever, chosen, budgets=(100, 300, 1000)).overall
                for name, chosen in dev.items()}  # fmt: skip

    results: dict = {"before": access()} if before else {}
    _write(out / "cfic-sft.json", results)
    train = [item for name in benchmarks.split(",")
             for item in build_benchmark(name, "train", train_words, max_items=train_items,
                                         seed=seed)]  # fmt: skip
    sequences = _sft_sequences(lm, train, per_item=2)
    order = np.random.default_rng(seed).permutation(len(sequences))
    adapter = AdapterConfig(rank=rank, alpha=2 * rank, headings=False,
                            target_modules=("q_proj", "k_proj", "v_proj", "o_proj"),
                            max_length=max(len(ids) for ids, _ in sequences))  # fmt: skip
    config = LoraConfig(r=rank, lora_alpha=adapter.alpha, lora_dropout=0.05,
                        target_modules=list(adapter.target_modules))  # fmt: skip
    model = get_peft_model(lm.model, config)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=learning_rate)  # fmt: skip
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * (1 - step / len(order))
    )
    losses = []
    started = time.perf_counter()
    for index in track(order.tolist(), "CFIC fine-tuning"):
        loss = _sft_loss(lm, *sequences[index])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    results["training"] = {
        "sequences": len(sequences), "seconds": time.perf_counter() - started,
        "loss_first_50": float(np.mean(losses[:50])), "loss_last_50": float(np.mean(losses[-50:])),
        "rank": rank, "learning_rate": learning_rate, "train_words": train_words,
        "train_items": train_items, "benchmarks": benchmarks, "seed": seed,
    }  # fmt: skip
    if save is not None:  # what load_causal_lm(adapter=save) merges: no peft at run time
        tensors = adapter_tensors(model.base_model.model)
        save_adapter(save, tensors, adapter, results["training"], __version__, base_model=lm.name)
    lm.model = model.merge_and_unload().eval()
    results["after"] = access()
    _write(out / "cfic-sft.json", results)
    typer.echo(json.dumps({k: results[k] for k in ("training",)}, indent=1))


def _write(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, default=str))


@app.command("random-lm")
def random_lm(
    like: Annotated[Path, typer.Argument(help="a model folder: its config and tokenizer")],
    out: Annotated[Path, typer.Argument(help="where the random model is written")],
    hidden_size: int = 3584,
    intermediate_size: int = 18944,
    layers: int = 28,
    heads: int = 28,
    kv_heads: int = 4,
) -> None:
    """``like``'s architecture and tokenizer at another size (default: Qwen2.5-7B's shape),
    randomly initialised, for timing on a machine no larger model's weights can reach: its
    outputs mean nothing, its speed is that of the real model."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from longscan.devices import torch_device

    config = AutoConfig.from_pretrained(like, local_files_only=True)
    config.update({"hidden_size": hidden_size, "intermediate_size": intermediate_size,
                   "num_hidden_layers": layers, "num_attention_heads": heads,
                   "num_key_value_heads": kv_heads, "tie_word_embeddings": False})  # fmt: skip
    if getattr(config, "layer_types", None):  # a per-layer list follows the new depth
        config.layer_types = (config.layer_types * layers)[:layers]
    device = torch_device()
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(
            config, dtype=torch.bfloat16 if device.startswith("cuda") else torch.float32
        )
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(like, local_files_only=True).save_pretrained(out)
    typer.echo(f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters in {out}")


if __name__ == "__main__":
    app()
