"""Causal LMs in process, for in-context retrieval (logits, KV cache, attentions).

A model is named by:

- ``gemma-3-270m`` (the default): Gemma 3 270M, the GGUF of the ``[local-llm]`` extra;
- ``qwen2.5-coder-1.5b-instruct``: the question writer of the ``[question-writer]`` extra
  (about 6 GB once dequantised to float32; it read about 8 times slower than the default
  on this project's CPU: docs/experiments.md);
- a ``.gguf`` file (any architecture ``transformers`` reads from GGUF);
- a Hugging Face model folder or a name in the local cache (safetensors only, offline).

A GGUF is dequantised by ``transformers`` (through the ``gguf`` package) once, then saved as
safetensors in the cache under its SHA-256, so later loads take seconds, not minutes.

A LoRA adapter made for the model (``encoders.adapter``: hash-checked safetensors, its
config naming the base model) is merged into the weights at load, so a fine-tuned reader
costs what the plain one does; that model is a copy of its own, the plain one stays plain.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from longscan.encoders.adapter import merge_adapter, read_adapter
from longscan.files import default_cache_dir, file_sha256, staging_path

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gemma-3-270m"
QUESTION_WRITER_MODEL = "qwen2.5-coder-1.5b-instruct"
DEFAULT_WINDOW_TOKENS = 4096
"""Tokens of text per window on a CPU: a longer text is read in windows (a 270M model
prefills about this much in tens of seconds on 2 cores); ``window_tokens`` raises it."""


@dataclass
class CausalLM:
    """A loaded causal LM: its network (eval mode), fast tokenizer (character offsets), the
    name it was asked by, and the device it runs on."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerFast
    device: str

    @property
    def max_tokens(self) -> int:
        """The longest context the model was trained for."""
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    def window_tokens(self, requested: int | None, reserve: int) -> int:
        """Text tokens per window: ``requested`` (default :data:`DEFAULT_WINDOW_TOKENS`),
        leaving ``reserve`` tokens of the model's context for what follows the text."""
        return min(requested or DEFAULT_WINDOW_TOKENS, self.max_tokens - reserve)

    def encode(self, text: str) -> list[int]:
        """``text``'s token ids, with no special tokens (it continues a prompt)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def chat_frame(self) -> tuple[str, str]:
        """What a chat model's template puts before and after a user's message, up to the start
        of its reply; ``("", "")`` for a model without a template (a base model reads the
        prompt as it is)."""
        if not self.tokenizer.chat_template:
            return "", ""
        marker = "\x00message\x00"
        text = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": marker}], add_generation_prompt=True, tokenize=False
        )
        before, _, after = str(text).partition(marker)
        return before, after

    def eos_token_ids(self) -> set[int]:
        """The end-of-sequence token(s)."""
        eos = self.tokenizer.eos_token_id
        return set() if eos is None else set(eos if isinstance(eos, list) else [eos])

    def stop_token_ids(self) -> list[int]:
        """Tokens that end a quote: the end-of-sequence token(s) and a bare newline (a base
        model ends a quoted line with one)."""
        ids = self.eos_token_ids()
        newline = self.encode("\n")
        if len(newline) == 1:
            ids.add(newline[0])
        return sorted(ids)


def _packaged_gguf(name: str) -> Path:
    from longscan.answering.local import local_model_path, question_writer_path

    packaged = {DEFAULT_MODEL: local_model_path, QUESTION_WRITER_MODEL: question_writer_path}
    if name not in packaged:
        raise KeyError(name)
    return packaged[name]()


ADAPTER_REBUILD = "python benchmarks/incontext.py cfic-sft --save DIR"
"""How a causal LM's LoRA adapter is made (named when one cannot be read)."""
WEIGHTS = "model.safetensors"
RECORD = "longscan.json"
"""Beside the dequantised weights: their SHA-256, written once they are complete."""


def intact(folder: Path) -> bool:
    """Whether ``folder`` holds dequantised weights whose hash matches their record."""
    try:
        recorded = json.loads((folder / RECORD).read_text())["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return (folder / "config.json").is_file() and file_sha256(folder / WEIGHTS) == recorded


@contextmanager
def _one_gguf_reader() -> Iterator[None]:
    """``transformers`` opens a GGUF anew for its tokenizer, its config and its weights, and
    each ``GGUFReader`` parses every metadata field element by element (Gemma 3's 262k-token
    vocabulary took about 20 s each time). Within this block a file is parsed once and its
    reader shared: the same fields and tensors, 72 s down to 38 s for the default model."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def shared(path: str | Path, mode: str = "r") -> Any:  # noqa: ANN401 - gguf's own type
        key = (str(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _from_gguf(path: Path) -> Path:
    """A safetensors folder made from ``path`` once (keyed by its SHA-256); a damaged one is
    made again, never loaded."""
    folder = default_cache_dir() / "causal-lm" / file_sha256(path)[:24]
    if intact(folder):
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if folder.exists():
        logger.warning("the dequantised model %s is damaged; making it again", folder)
        shutil.rmtree(folder)
    logger.info("dequantising %s once into %s", path, folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_path(folder)
    with _one_gguf_reader():
        local = {"gguf_file": path.name, "local_files_only": True}
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **local)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), **local)
    tokenizer.save_pretrained(staging)
    # transformers will not save a model it loaded from GGUF: write the dequantised weights
    # and the config ourselves (save_model keeps tied weights once)
    from safetensors.torch import save_model

    model.config.quantization_config = None
    model.config.save_pretrained(staging)
    save_model(model, str(staging / WEIGHTS))
    (staging / RECORD).write_text(json.dumps({"sha256": file_sha256(staging / WEIGHTS)}))
    return move_into_place(staging, folder)


def move_into_place(staging: Path, folder: Path) -> Path:
    """``folder``, made by renaming the finished ``staging`` folder to it. A folder cannot
    replace another that holds files: when a second process made ``folder`` meanwhile and it
    is intact, that one is kept and ``staging`` removed; a damaged one is replaced."""
    try:
        staging.replace(folder)
    except OSError:
        if not intact(folder):
            shutil.rmtree(folder, ignore_errors=True)
            staging.replace(folder)
        else:
            shutil.rmtree(staging)
    return folder


def resolve(name: str) -> Path | str:
    """Where ``name``'s weights are read from: a safetensors folder, or a hub name in the
    local cache.

    Raises:
        FileNotFoundError: a ``.gguf`` path that does not exist.
        RuntimeError: the packaged model's extra is not installed.
    """
    try:
        return _from_gguf(_packaged_gguf(name))
    except KeyError:
        pass
    if name.endswith(".gguf"):
        path = Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"{name}: no such GGUF file")
        return _from_gguf(path)
    return Path(name) if Path(name).is_dir() else name


def load_causal_lm(
    name: str = DEFAULT_MODEL, device: str | None = None, adapter: str | None = None
) -> CausalLM:
    """The model called ``name`` (see the module docstring), once per process and device, with
    the LoRA adapter in the folder ``adapter`` merged into it when one is named.

    Raises:
        ValueError: a model that cannot be read offline from safetensors, or whose tokenizer
            gives no character offsets.
        AdapterError: (a ``ValueError``) the adapter is missing, corrupt, made for another
            model, or does not fit this one's layers.
    """
    from longscan.devices import torch_device

    # one key however it is called: ``load_causal_lm()`` is ``load_causal_lm(DEFAULT_MODEL)``
    return _load(name, device or torch_device(), adapter)


@cache
def _load(name: str, device: str, adapter: str | None) -> CausalLM:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # the adapter is checked before the model loads (a minute for a large one), not after
    tuned = None if adapter is None else read_adapter(adapter, ADAPTER_REBUILD, base_model=name)
    source = resolve(name)
    options: dict[str, Any] = {"local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source), **options)
        model = AutoModelForCausalLM.from_pretrained(
            str(source),
            use_safetensors=True,
            dtype=torch.bfloat16 if device.startswith("cuda") else torch.float32,
            attn_implementation="eager",  # attentions are read by the document ranking
            **options,
        )
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot load the causal LM {name!r} offline ({error})") from None
    if not tokenizer.is_fast:
        raise ValueError(f"{name!r}: its tokenizer gives no character offsets (not a fast one)")
    if tuned is not None:
        merge_adapter(model, tuned, Path(str(adapter)))
    return CausalLM(name, model.to(device).eval(), tokenizer, device)
