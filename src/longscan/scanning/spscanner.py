"""The paper's token-level scanner on our documents: checkpoints, tokens, windows.

A checkpoint folder (written once by :func:`convert_checkpoint` from a published
``pytorch_model.bin`` or ``mamba_ssm`` safetensors) holds ``model.safetensors``,
``config.json`` and the checkpoint's own ``tokenizer.json``. The config records the SHA-256 of
the weights, of the tokenizer and of the file converted; loading checks the first two and
reads weights only from safetensors.

Scoring (the paper's ``evaluate.py``): the question's tokens, then the document's; a
sentence's logit is read at its last token. Sentences are our segmenter's, mapped to token
indices through the tokenizer's character offsets, so evidence keeps exact offsets into the
text. Two ways through a long text:

- ``stream`` (ours): one causal pass over everything, carrying the SSM state from block to
  block in constant memory; every sentence is read after the question and all text before it.
- ``sliding`` (the paper's): windows of ``window_tokens`` document tokens, cut at sentence
  boundaries, each read after the question from a fresh state, advancing by ``stride_tokens``
  (half a window); a sentence read in several windows gets the mean of its logits.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from longscan.documents import Document
from longscan.files import file_sha256
from longscan.progress import track
from longscan.scanning.checkpoint import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    checked_file,
)

if TYPE_CHECKING:
    import torch
    from tokenizers import Tokenizer

    from longscan.models.spscanner import SPScannerConfig, SPScannerModel

FORMAT = "longscan-spscanner"
FORMAT_VERSION = 1
TOKENIZER_FILE = "tokenizer.json"
SOURCE_FILES = ("pytorch_model.bin", "model.safetensors")
"""What :func:`convert_checkpoint` looks for in a published checkpoint folder, in order."""

DEFAULT_WINDOW_TOKENS = 256_000
"""The paper's evaluation window (``evaluate.py``: 256k tokens, stride half a window)."""

CPU_CHUNK_SIZE = 64
"""SSD chunk on a CPU: 1.2x faster than the published 256 for the 130m layout here
(docs/experiments.md), the same scores up to float rounding."""

Mode = Literal["stream", "sliding"]


def torch_device_type(device: str) -> str:
    """``cuda`` for ``cuda:1``, and so on."""
    return device.split(":", 1)[0]


# ----------------------------------------------------------------------------- conversion


def read_source_weights(path: Path) -> dict[str, torch.Tensor]:
    """Tensors of a published weights file: safetensors, or a PyTorch pickle read with
    ``torch.load(weights_only=True)``, which refuses any object other than tensors and plain
    containers (so a pickle carrying code is never run).

    Raises:
        CheckpointError: unreadable, refused, or not a flat name -> tensor mapping.
    """
    import torch

    if path.suffix == ".safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except (SafetensorError, OSError) as error:
            raise CheckpointError(f"{path}: unreadable safetensors ({error})") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise CheckpointError(
            f"{path}: refused: not a plain state dict of tensors (torch.load with "
            f"weights_only=True: {first_line})"
        ) from None
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise CheckpointError(f"{path}: not a flat mapping of parameter names to tensors")
    return dict(state)


def convert_checkpoint(
    source: Path,
    out: Path,
    expect_sha256: str | None = None,
    tokenizer: Path | None = None,
) -> Path:
    """Convert a published SPScanner (or any ``mamba_ssm`` Mamba-2 + ``binary_head``) folder
    into a longscan checkpoint, once; later loads read only safetensors.

    Args:
        source: folder with ``config.json`` (``mamba_ssm``'s ``MambaConfig``), the weights
            (``pytorch_model.bin`` or ``model.safetensors``) and ``tokenizer.json``.
        out: folder to write.
        expect_sha256: the weights file's published SHA-256; a different file is refused.
        tokenizer: a ``tokenizer.json`` to use instead of the one in ``source``.

    Raises:
        CheckpointError: a missing file, a hash mismatch, a refused pickle, or weights that
            do not fit the config (every missing, unexpected and misshapen name listed).
    """
    from longscan.models.spscanner import SPScannerConfig, SPScannerModel

    source = Path(source)
    weights = next((source / n for n in SOURCE_FILES if (source / n).is_file()), None)
    if weights is None:
        raise CheckpointError(f"{source}: no {' or '.join(SOURCE_FILES)} to convert")
    tokenizer = Path(tokenizer) if tokenizer is not None else source / TOKENIZER_FILE
    if not tokenizer.is_file():
        raise CheckpointError(
            f"{tokenizer}: missing; the checkpoint's own tokenizer is needed (give --tokenizer)"
        )
    digest = file_sha256(weights)
    if expect_sha256 is not None and digest != expect_sha256.strip().lower():
        raise CheckpointError(
            f"{weights}: SHA-256 {digest} is not the expected {expect_sha256.strip()}"
        )
    try:
        raw = json.loads((source / CONFIG_FILE).read_text(encoding="utf-8"))
        config = SPScannerConfig.from_mamba_ssm(raw)
    except FileNotFoundError:
        raise CheckpointError(f"{source}: no {CONFIG_FILE} (mamba_ssm's MambaConfig)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, AttributeError) as error:
        raise CheckpointError(f"{source / CONFIG_FILE}: {error}") from None
    load_tokenizer(tokenizer)  # refuse an unreadable tokenizer before writing anything
    model = SPScannerModel(config)
    try:
        model.load_mamba_ssm_state_dict(read_source_weights(weights))
    except ValueError as error:
        raise CheckpointError(f"{weights}: {error}") from None
    return save_spscanner(model, out, tokenizer, {"file": weights.name, "sha256": digest})


def save_spscanner(
    model: SPScannerModel, out: Path, tokenizer: Path, source: dict[str, Any]
) -> Path:
    """Write weights and tokenizer, then the config that vouches for both (their hashes)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {name: t.detach().contiguous().cpu() for name, t in model.state_dict().items()}
    save_file(state, str(out / WEIGHTS_FILE), metadata={"format": FORMAT})
    if tokenizer.resolve() != (out / TOKENIZER_FILE).resolve():
        shutil.copyfile(tokenizer, out / TOKENIZER_FILE)
    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": model.config.to_dict(),
        "weights_sha256": file_sha256(out / WEIGHTS_FILE),
        "tokenizer_sha256": file_sha256(out / TOKENIZER_FILE),
        "source": source,
    }
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    return out


# ----------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class SPScannerInfo:
    """What a converted checkpoint says about itself."""

    config: SPScannerConfig
    weights_sha256: str
    source: dict[str, Any]


def load_tokenizer(path: Path) -> Tokenizer:
    """A checkpoint's ``tokenizer.json``, without truncation or padding."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:  # tokenizers raises a bare Exception on any parse error
        raise CheckpointError(f"{path}: not a tokenizers tokenizer.json ({error})") from None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def read_spscanner_info(directory: Path) -> SPScannerInfo:
    """The config of a converted checkpoint, after checking both hashes (no torch needed).

    Raises:
        CheckpointError: not such a checkpoint, a corrupt config, or a file that does not
            match its recorded hash.
    """
    from longscan.models.spscanner import SPScannerConfig

    path = directory / CONFIG_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(
            f"{directory}: not a token-level scanner checkpoint (no {CONFIG_FILE}; convert "
            "a published one with `longscan spscanner-convert`)"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: corrupt config ({error})") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: not a {FORMAT} config (convert a published checkpoint with "
            "`longscan spscanner-convert`)"
        )
    if raw.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: format version {raw.get('format_version')} unsupported")
    try:
        config = SPScannerConfig.from_dict(raw["model"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: invalid model config ({error})") from None
    for name, key in ((WEIGHTS_FILE, "weights_sha256"), (TOKENIZER_FILE, "tokenizer_sha256")):
        checked_file(directory, name, raw.get(key))
    return SPScannerInfo(config, raw["weights_sha256"], dict(raw.get("source") or {}))


def load_spscanner(directory: Path) -> tuple[SPScannerModel, Tokenizer, SPScannerInfo]:
    """Model (eval mode, on the CPU), tokenizer and info of a converted checkpoint.

    Raises:
        CheckpointError: see :func:`read_spscanner_info`, or unreadable weights.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from longscan.models.spscanner import SPScannerModel

    directory = Path(directory)
    info = read_spscanner_info(directory)
    try:
        state = load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{directory / WEIGHTS_FILE}: unreadable ({error})") from None
    model = SPScannerModel(info.config)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise CheckpointError(f"{directory / WEIGHTS_FILE}: does not fit ({error})") from None
    return model.eval(), load_tokenizer(directory / TOKENIZER_FILE), info


# ----------------------------------------------------------------------------- positions


def sentence_end_tokens(token_starts: np.ndarray, sentence_ends: np.ndarray) -> np.ndarray:
    """The index of each sentence's last token: the last token starting before its end.

    ``token_starts`` ``(t,)`` ascending character offsets, ``sentence_ends`` ``(s,)``. A
    token that runs over a sentence end (a merge across it) belongs to the sentence it starts
    in, as the paper's own alignment does; a sentence inside one token shares that token's
    logit with the sentence before it.
    """
    ends = np.searchsorted(token_starts, sentence_ends, side="left") - 1
    return np.maximum(ends, 0)


def first_tokens(ends: np.ndarray) -> np.ndarray:
    """Each sentence's first token: the one after the previous sentence's last (or its own
    last, where two sentences share a token)."""
    previous = np.concatenate([[-1], ends[:-1]]).astype(np.int64)
    return np.minimum(previous + 1, ends)


def sliding_windows(ends: np.ndarray, window: int, stride: int) -> list[tuple[int, int]]:
    """Sentence-aligned windows ``(first, last)`` (inclusive sentence indices).

    Sentence ``i`` covers tokens ``first_tokens(ends)[i] .. ends[i]``. A window holds as
    many whole sentences as fit in ``window`` tokens (at least one); the next starts at the
    first sentence ``stride`` tokens on, never skipping one; the last window reaches the end.
    """
    if window < 1 or stride < 1:
        raise ValueError(f"window and stride must be positive; got {window}, {stride}")
    n = len(ends)
    firsts = first_tokens(ends)
    windows, i = [], 0
    while i < n:
        j = max(i, int(np.searchsorted(ends, firsts[i] + window - 1, side="right")) - 1)
        windows.append((i, j))
        if j == n - 1:
            break
        step = int(np.searchsorted(firsts, firsts[i] + stride, side="left"))
        i = min(max(step, i + 1), j + 1)
    return windows


def question_tokens(tokenizer: Tokenizer, question: str) -> np.ndarray:
    """The question's token ids, which come first in every reading (training too).

    Raises:
        ValueError: the tokenizer gives the question no token.
    """
    ids = tokenizer.encode(question, add_special_tokens=False).ids
    if not ids:
        raise ValueError("the question has no tokens for this checkpoint's tokenizer")
    return np.asarray(ids, dtype=np.int64)


@dataclass(frozen=True)
class TokenizedCollection:
    """The documents as one token stream (a separator between documents), with the stream
    index of every sentence's last token, in the order of ``Units.of(documents, "sentence")``."""

    ids: np.ndarray
    ends: np.ndarray


def tokenize_collection(tokenizer: Tokenizer, documents: Sequence[Document]) -> TokenizedCollection:
    separator = tokenizer.encode("\n\n", add_special_tokens=False).ids
    ids: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    length = 0
    for index, document in enumerate(documents):
        if index:
            ids.append(np.asarray(separator, dtype=np.int64))
            length += len(separator)
        encoding = tokenizer.encode(document.text, add_special_tokens=False)
        starts = np.asarray([start for start, _ in encoding.offsets], dtype=np.int64)
        ends.append(length + sentence_end_tokens(starts, document.sentences[:, 1]))
        ids.append(np.asarray(encoding.ids, dtype=np.int64))
        length += len(encoding.ids)
    return TokenizedCollection(np.concatenate(ids), np.concatenate(ends))


# ----------------------------------------------------------------------------- scanning


class SPScanner:
    """Scores every sentence of a collection with a token-level scanner.

    Args:
        model: the network (moved to ``device``).
        tokenizer: the checkpoint's tokenizer.
        mode: ``stream`` or ``sliding`` (see the module docstring).
        window_tokens: document tokens per sliding window.
        stride_tokens: tokens between sliding windows' starts (default: half a window).
        block_tokens: tokens per block of a pass (memory and speed, not results); default
            4,096 on a CPU, 65,536 on a GPU (fewer, larger kernels).
        device: torch device; default ``devices.torch_device()``.
        bfloat16: read under bfloat16 autocast; default ``devices.spscanner_bfloat16``.
        chunk_size: SSD chunk length; default :data:`CPU_CHUNK_SIZE` on a CPU, else the
            checkpoint's (speed only: results agree up to float rounding).
    """

    def __init__(
        self,
        model: SPScannerModel,
        tokenizer: Tokenizer,
        mode: Mode = "stream",
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        stride_tokens: int | None = None,
        block_tokens: int | None = None,
        device: str | None = None,
        bfloat16: bool | None = None,
        chunk_size: int | None = None,
    ) -> None:
        from longscan.devices import spscanner_bfloat16, torch_device

        if mode not in ("stream", "sliding"):
            raise ValueError(f"mode must be 'stream' or 'sliding'; got {mode!r}")
        self.device = device or torch_device()
        self.bfloat16 = spscanner_bfloat16(self.device) if bfloat16 is None else bfloat16
        self.model = model.to(self.device).eval()
        on_cpu = torch_device_type(self.device) == "cpu"
        self.model.use_chunk_size(
            chunk_size or (CPU_CHUNK_SIZE if on_cpu else model.config.chunk_size)
        )
        self.tokenizer = tokenizer
        self.mode = mode
        self.window_tokens = window_tokens
        self.stride_tokens = stride_tokens or max(window_tokens // 2, 1)
        self.block_tokens = block_tokens or (4096 if on_cpu else 65_536)

    @classmethod
    def from_pretrained(cls, directory: Path, mode: Mode = "stream", **options: Any) -> SPScanner:
        model, tokenizer, _ = load_spscanner(directory)
        return cls(model, tokenizer, mode=mode, **options)

    def _read(self, ids: np.ndarray, progress: bool) -> np.ndarray:
        """Logits ``(l,)`` of one causal pass from a fresh state, block by block."""
        import torch

        tokens = torch.from_numpy(ids)[None].to(self.device)
        blocks = range(0, len(ids), self.block_tokens)
        logits, state = [], None
        with (
            torch.inference_mode(),
            torch.autocast(
                torch_device_type(self.device), dtype=torch.bfloat16, enabled=self.bfloat16
            ),
        ):
            for start in track(blocks, "scanning tokens", enabled=progress):
                block = tokens[:, start : start + self.block_tokens]
                out, state = self.model(block, state=state, block_tokens=self.block_tokens)
                logits.append(out[0].float().cpu())
        return torch.cat(logits).numpy().astype(np.float64)

    def score(
        self, query: str, documents: Sequence[Document], progress: bool = False
    ) -> np.ndarray:
        """One logit per sentence of ``documents`` (in ``Units.of`` order)."""
        question = question_tokens(self.tokenizer, query)
        collection = tokenize_collection(self.tokenizer, documents)
        if self.mode == "stream":
            logits = self._read(np.concatenate([question, collection.ids]), progress)
            return logits[len(question) + collection.ends]
        total = np.zeros(len(collection.ends))
        counts = np.zeros(len(collection.ends))
        firsts = first_tokens(collection.ends)
        windows = sliding_windows(collection.ends, self.window_tokens, self.stride_tokens)
        for first, last in track(windows, "scanning windows", enabled=progress):
            start, stop = int(firsts[first]), int(collection.ends[last]) + 1
            logits = self._read(np.concatenate([question, collection.ids[start:stop]]), False)
            ends = len(question) + collection.ends[first : last + 1] - start
            total[first : last + 1] += logits[ends]
            counts[first : last + 1] += 1
        return total / counts
