"""The re-scorer and the extractive reader in smaller graphs, against float32 ones.

    python benchmarks/stored_weights.py [--form shipped|int8] [--squad 100] [--hotpotqa 100]
        [--save NAME]

``shipped``: the graphs as the package carries them, their weights stored in fewer bits and
expanded to float32 when a session starts (``encoders.storage``: the re-scorer in ``w16``,
the reader in ``w8``). ``int8``: each float32 graph quantised the way the scanner's encoder
ships (``encoders.bert._quantize``: int8 weights and activations, 7 bits). Both run row by
row (for int8, one scale per tensor would make a row's result depend on its batch mates).
The reference is the float32 export of the same weights. On the development questions with
their gold evidence:

- the re-scorer scores each question against its gold sentences and 12 sentences of other
  questions: mean and 99th-percentile logit change, how often the top passage changes, and
  how often the abstention judgement (the best logit against the shipped threshold) flips;
- the reader reads each question's gold evidence: EM and F1 of both graphs.

Prints sizes, the measures and seconds; ``--save`` writes them to
``benchmarks/results/NAME.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import result_files

from longscan.answering.extractive import ExtractiveReader, onnx_reader
from longscan.encoders.bert import _quantize, onnx_session
from longscan.rerankers.abstention import abstain_below
from longscan.rerankers.onnx import OnnxCrossEncoder, onnx_cross_encoder
from longscan.training.reader import DevQuestion, development_questions, score_reader

OTHERS = 12  # sentences of other questions scored beside each question's gold ones


def quantised(graph: Path, folder: Path) -> Path:
    target = folder / f"{graph.stem}-int8.onnx"
    _quantize(graph, target)
    return target


def row_by_row(graph: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """A function running ``graph`` on each row of a padded batch alone, without its
    padding; outputs at padded positions are -1e4 (never a best span or score)."""
    session = onnx_session(graph, 1)

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        rows = []
        for row in range(len(feeds["input_ids"])):
            length = int(feeds["attention_mask"][row].sum())
            alone = {name: value[row : row + 1, :length] for name, value in feeds.items()}
            output = session.run(None, alone)[0]
            if output.ndim == 1:  # one logit per row
                rows.append(output)
                continue
            padded = np.full((1, feeds["input_ids"].shape[1], *output.shape[2:]), -1e4)
            padded[:, :length] = output
            rows.append(padded.astype(np.float32))
        return np.concatenate(rows)

    return run


def rescorer_rows(
    questions: dict[str, list[DevQuestion]], graph: Path
) -> tuple[list[list[object]], float, float]:
    """Per set: pairs, mean and p99 logit change, top-1 changes, abstention flips of
    ``graph`` against the float32 re-scorer, both run row by row."""
    model = OnnxCrossEncoder()
    runs = [row_by_row(onnx_cross_encoder(storage=None)), row_by_row(graph)]

    def scorer(run: Callable[[dict[str, np.ndarray]], np.ndarray]) -> Callable[..., np.ndarray]:
        return lambda query, passages: run(model.feeds(query, passages)).reshape(-1)

    threshold = abstain_below()
    assert threshold is not None, "the shipped re-scorer records its threshold"
    rng = np.random.default_rng(0)
    rows, seconds = [], [0.0, 0.0]
    for name, items in questions.items():
        pool = [evidence.text for item in items for evidence in item.evidence]
        changes, top_changed, flips = [], 0, 0
        for item in items:
            picked = rng.choice(len(pool), min(OTHERS, len(pool)), replace=False)
            others = [pool[i] for i in picked]
            passages = [evidence.text for evidence in item.evidence] + others
            query = model.fit_query(item.question)
            scores = []
            for slot, score in enumerate(map(scorer, runs)):
                started = time.perf_counter()
                scores.append(score(query, passages))
                seconds[slot] += time.perf_counter() - started
            full, small = scores
            changes.append(np.abs(full - small))
            top_changed += int(np.argmax(full) != np.argmax(small))
            flips += int((full.max() >= threshold) != (small.max() >= threshold))
        change = np.concatenate(changes)
        rows.append(
            [name, len(items), len(change), round(float(change.mean()), 3)]
            + [round(float(np.quantile(change, 0.99)), 3), top_changed, flips]
        )
    return rows, seconds[0], seconds[1]


def reader_rows(
    questions: dict[str, list[DevQuestion]], graph: Path
) -> tuple[list[list[object]], float, float]:
    """Per set: EM and F1 of the float32 reader and ``graph`` on the gold evidence, both
    run row by row."""
    reader = ExtractiveReader()
    scored, seconds = [], []
    for run in (row_by_row(onnx_reader(storage=None)), row_by_row(graph)):
        reader.logits = lambda windows, run=run: run(windows.feeds())  # type: ignore[method-assign]
        started = time.perf_counter()
        scored.append({name: score_reader(reader.read, items) for name, items in questions.items()})
        seconds.append(time.perf_counter() - started)
    rows = [
        [name, len(items)]
        + [round(scored[graph][name][measure], 3) for graph in (0, 1) for measure in ("em", "f1")]
        for name, items in questions.items()
    ]
    return rows, seconds[0], seconds[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--form",
        choices=("shipped", "int8"),
        default="shipped",
        help="The smaller graphs: as shipped (weights in fewer bits), or int8 throughout.",
    )
    parser.add_argument("--squad", type=int, default=100, help="SQuAD questions")
    parser.add_argument("--hotpotqa", type=int, default=100, help="HotpotQA questions")
    parser.add_argument("--save", default=None, help="Write benchmarks/results/NAME.json.")
    args = parser.parse_args()
    questions = development_questions({"squad": args.squad, "hotpotqa": args.hotpotqa})
    questions.pop("squad-no-answer", None)
    with tempfile.TemporaryDirectory() as folder:
        graphs = {
            "re-scorer": onnx_cross_encoder(storage=None),
            "reader": onnx_reader(storage=None),
        }
        if args.form == "shipped":
            small = {"re-scorer": onnx_cross_encoder(), "reader": onnx_reader()}
        else:
            small = {name: quantised(graph, Path(folder)) for name, graph in graphs.items()}
        sizes = [
            [name, *(round(path.stat().st_size / 1e6, 1) for path in (graphs[name], small[name]))]
            for name in graphs
        ]
        rescored, rescorer_fp32_s, rescorer_small_s = rescorer_rows(questions, small["re-scorer"])
        read, reader_fp32_s, reader_small_s = reader_rows(questions, small["reader"])
    sizes[0] += [round(rescorer_fp32_s, 1), round(rescorer_small_s, 1)]
    sizes[1] += [round(reader_fp32_s, 1), round(reader_small_s, 1)]
    tables = [
        result_files.table(
            "Graphs",
            ["graph", "float32 MB", f"{args.form} MB", "float32 s", f"{args.form} s"],
            sizes,
        ),
        result_files.table(
            f"The re-scorer, {args.form} against float32",
            [
                "set",
                "questions",
                "pairs",
                "mean logit change",
                "p99 logit change",
                "top passage changed",
            ]
            + ["abstention flipped"],
            rescored,
        ),
        result_files.table(
            "The reader on gold evidence",
            ["set", "questions", "float32 EM", "float32 F1"]
            + [f"{args.form} EM", f"{args.form} F1"],
            read,
        ),
    ]
    for found in tables:
        print(result_files.markdown(found), end="\n\n")
    if args.save:
        print(f"saved {result_files.save(args.save, vars(args), tables)}")


if __name__ == "__main__":
    main()
