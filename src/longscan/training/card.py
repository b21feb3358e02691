"""The model card written beside every trained checkpoint."""

from __future__ import annotations

from typing import Any

from longscan.models.config import ScannerConfig
from longscan.scanning.features import feature_names


def model_card(report: dict[str, Any], command: str) -> str:
    """Markdown: what the weights are, the data, the command, seed, time and dev metrics."""
    args = report["args"]
    model = args["model"]
    train = report["train_manifest"]
    dev = report["dev_manifest"]
    direction = "bidirectional" if model["bidirectional"] else "causal"
    if model["read_twice"]:  # the config refuses it with bidirectional
        direction = "causal, read twice"
    features = ", ".join(feature_names(ScannerConfig.from_dict(model)))
    musique = (
        "MuSiQue sentence answering each hop"
        if args.get("sentence_labels")
        else "MuSiQue supporting paragraph"
    )
    objective = "Weighted BCE (pos_weight = #neg/#pos per batch)"
    if args.get("listwise"):
        objective += f" + {args['listwise']} × listwise softmax over each document's sentences"
    datasets, synthetic = (
        (None, train) if train["split"] == "synthetic" else (train, train.get("synthetic"))
    )
    parts = [part for part in (datasets, synthetic) if part]
    synthetic_text = _synthetic_text(synthetic, args.get("row_context_negative", False))
    sources = "\n".join(
        f"| {name} | {counts['kept']} | {counts['dropped']} |"
        for part in parts
        for name, counts in part["sources"].items()
    )
    sentences = sum(part["sentences"] for part in parts)
    positive_rate = sum(part["positive_rate"] * part["sentences"] for part in parts) / sentences
    dev_rows = "\n".join(
        f"| {row['epoch']} | {row['dev_loss']:.4f} | {row['dev_top10_hit']:.3f} |"
        for row in report["dev_metrics"]
    )
    tables = (
        "; a table row alone on its line is read after its title, column header and row group"
        if args.get("table_context")
        else ""
    )
    tuned = (
        f" The encoder carries the fine-tuned bi-encoder adapter {args['encoder_adapter']}"
        " (`longscan train-encoder`), copied into `encoder-adapter/`; its vectors are named"
        f" `{report['train_manifest']['encoder']}`."
        if args.get("encoder_adapter")
        else ""
    )
    return f"""# longscan scanner ({direction}, MiniLM sentence vectors)

A sentence-level Mamba-2 scanner: {model["n_layers"]} layers per direction, d_model
{model["d_model"]}, d_state {model["d_state"]}, {model["n_features"]} per-sentence features
per step ({features}), over contextual {args.get("encoder", "all-MiniLM-L6-v2")} sentence
vectors (paragraph-aligned {args.get("context_tokens", 256)}-token windows{tables}).{tuned}
Trained from scratch on CPU by longscan
{report["longscan_version"]}.

## Command and seed

```
{command}
```

Seed {args["seed"]}; builder seeds {args["seeds"]}; {report["machine"]}.

## Data

{_datasets_text(args, musique) if datasets else ""}{synthetic_text}
Decontamination: a document sharing more than
{args["decontamination_threshold"]:.0%} of its sentences with any development or benchmark
document (SQuAD/HotpotQA/MuSiQue dev, L-Eval, Loong) is dropped.

| source | examples kept | dropped |
|---|---:|---:|
{sources}

{_drops_text(datasets, synthetic)}
Training: {sum(part["examples"] for part in parts)} examples over
{sum(part["documents"] for part in parts)} documents
({sentences:,} sentences, {positive_rate:.2%} positive).{_instructions_text(args, parts)}
Development: {dev["examples"]} examples from the dev splits.

## Optimisation

{objective}; AdamW betas {args["betas"]}, weight decay
{args["weight_decay"]}, peak lr {args["lr"]}, cosine schedule with {args["warmup_ratio"]:.0%}
warm-up, gradient clipping {args["max_grad_norm"]}, batch {args["batch_size"]} ×
accumulation {args["accumulation"]}, {args["epochs"]} epochs = {report["optimizer_steps"]}
optimizer steps. Final training loss {report["final_train_loss"]:.4f}.

Time: data and encoding {report["seconds_data"]:.0f} s, training
{report["seconds_training"]:.0f} s, total {report["seconds_total"]:.0f} s.

## Development metrics

| epoch | dev loss | dev: a gold sentence in the top 10 |
|---:|---:|---:|
{dev_rows}

Benchmark results against every baseline (development split) are in the repository's
BENCHMARKS.md.
"""


def _instructions_text(args: dict[str, Any], parts: list[dict[str, Any]]) -> str:
    copies = sum(part.get("instruction_copies", 0) for part in parts)
    if not copies:
        return ""
    return (
        f" Of them, {copies} are copies (`--instruction-copies {args['instruction_copies']}`)"
        " whose question follows a generic instruction composed by"
        " `longscan.training.instructions`, as a prompt sends it, two in three of them naming"
        " a topic from the example's units that are not evidence; the dev examples have none."
    )


def _datasets_text(args: dict[str, Any], musique: str) -> str:
    return f"""Long documents of {", ".join(str(w) for w in args["lengths_words"])} words \
(≈2k/5k/10k tokens) built from the *train* splits of {", ".join(args["datasets"])} in
`../shared/data` (SQuAD split by article, HotpotQA by file, MuSiQue by question id), each
question's own paragraphs mixed with distractor paragraphs of other train questions (rows
dataset/words/seed below). Sentence labels: the sentence overlaps a gold span (SQuAD answer,
HotpotQA supporting sentence, {musique}).
"""


def _synthetic_text(synthetic: dict[str, Any] | None, row_context_negative: bool) -> str:
    if not synthetic:
        return ""
    context = (
        " A labelled title, column header or group line of a labelled table row is a negative"
        " (`--row-context-negative`): evidence carries it with the row."
        if row_context_negative
        else ""
    )
    return f"""Synthetic examples (`longscan synth` files, each as often as it was named; rows
synthetic/strategy below): {synthetic["examples"]} LLM-written questions over
{synthetic["documents"]} distinct spans, labelled with the sentences the question was written
from; {synthetic.get("starting_at_evidence", 0)} of them cut to begin at their first labelled
sentence (`--evidence-first`).{context}{_named_text(synthetic)}
"""


def _drops_text(datasets: dict[str, Any] | None, synthetic: dict[str, Any] | None) -> str:
    """A dataset's document is dropped only as contaminated; a synthetic example also when no
    labelled line of it says something."""
    said = ["A dataset's dropped documents shared evaluation text."] if datasets else []
    if synthetic:
        said.append(
            f"Of the synthetic examples, {synthetic['dropped_contaminated']} shared it and"
            f" {synthetic['dropped_without_content']} labelled no line that says something."
        )
    return " ".join(said) + "\n"


def _named_text(synthetic: dict[str, Any]) -> str:
    if "named" not in synthetic:
        return ""
    among = ""
    if "read_beside_others" in synthetic:
        among = f""" {synthetic["read_beside_others"]} copies are read among other filers'
spans whose questions share their words (`--named-among`), all their lines negatives."""
    return f""" Of them, {synthetic["named"]} are copies whose question names the filer
(`--named-synthetic`; {synthetic["named_without_filer"]} examples had no filer to name).{among}"""


def ensemble_card(reports: list[dict[str, Any]], first_card: str, command: str) -> str:
    """Markdown for an ensemble: its members' seeds and metrics, then the first member's card
    (the others differ only in those rows)."""
    rows = "\n".join(
        f"| {i} | {r['args']['seed']} | {r['seconds_training']:.0f} | "
        f"{r['final_train_loss']:.4f} | {r['dev_metrics'][-1]['dev_top10_hit']:.3f} |"
        for i, r in enumerate(reports)
    )
    member = first_card.replace("\n#", "\n##").removeprefix("# ")
    return f"""# longscan scanner ensemble ({len(reports)} members)

A sentence's logit is the mean of the logits of {len(reports)} scanners trained by one recipe
with other seeds. They read the same sentence vectors and features, so the ensemble costs
one more scan per member, never another encoding.

## Command

```
{command}
```

| member | seed | training (s) | final training loss | dev: a gold sentence in the top 10 |
|---:|---:|---:|---:|---:|
{rows}

## Member 0: {member}"""
