"""Per-document embedding cache: content hash → safetensors file on disk.

A document is encoded once; every later query over it (in this process or the next) reads
the vectors back. The key covers everything the vectors depend on (encoder, unit kind,
segmentation, the spans themselves), and each file's metadata repeats the key, so a stale or
foreign file is never used. The metadata also records a digest of the array's bytes, and an
array read back must match it and hold finite numbers only: a flipped byte on disk would
otherwise move every score silently (or turn one into NaN), so such a file is encoded again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from longscan import __version__
from longscan.extras import install_hint
from longscan.files import file_sha256, prebuilt_export, staging_path

logger = logging.getLogger(__name__)


class ExportUnavailable(RuntimeError):
    """A graph that is neither cached nor packaged, on an install that cannot export it."""


def built_once(path: Path, build: Callable[[Path], None], what: str) -> Path:
    """``path``, a file derived from shipped weights (an ONNX export), built by ``build`` on
    first use and read from the cache afterwards.

    Its SHA-256 is recorded beside it (``.json``) once it is complete, and checked on every
    use: a truncated or altered file is built again, never run. ``build`` writes where it
    is told; the result is moved into place whole, so a reader never sees half a file. A
    graph the package carries prebuilt (``files.prebuilt_export``, hash-checked) is copied
    in instead of built: the query path then needs no torch.

    Raises:
        ExportUnavailable: building it needs a library this install lacks (torch).
    """
    record = path.with_suffix(".json")
    if path.exists() and record.exists():
        try:
            expected = json.loads(record.read_text())["sha256"]
        except (ValueError, KeyError, TypeError):
            expected = None
        if expected == file_sha256(path):
            return path
        logger.warning("the cached %s %s is damaged; building it again", what, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_path(path)
    packaged = prebuilt_export(path.name)
    try:
        if packaged is not None:
            shutil.copyfile(packaged, staging)
        else:
            build(staging)
        digest = file_sha256(staging)
        staging.replace(path)
    except ModuleNotFoundError as error:
        hint = install_hint(error)
        if hint is None:
            raise
        raise ExportUnavailable(
            f"the {what} is not packaged with this install, and exporting it from the "
            f"weights: {hint} (or install a longscan wheel built with its graphs, "
            "scripts/build_exports.py)"
        ) from None
    finally:
        staging.unlink(missing_ok=True)
    noted = staging_path(record)
    noted.write_text(json.dumps({"sha256": digest}))
    noted.replace(record)
    return path


def recorded_sha256(path: Path) -> str:
    """The SHA-256 that ``built_once`` recorded for ``path`` (checked when it returned the
    path), or, for a file it did not build, the file's own."""
    try:
        return str(json.loads(path.with_suffix(".json").read_text())["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return file_sha256(path)


def array_digest(array: np.ndarray) -> str:
    """A digest of an array's dtype, shape and bytes: what a cached file must reproduce."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(np.ascontiguousarray(array).data)
    return digest.hexdigest()


def spans_digest(spans: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(spans, dtype=np.int64).tobytes()).hexdigest()[:16]


class EmbeddingCache:
    """Two-level cache (in-memory LRU, then safetensors files) of per-document arrays.

    Args:
        directory: Where files go; ``None`` keeps the cache in memory only.
        max_items: In-memory entries kept (least recently used are dropped).
        max_bytes: In-memory array bytes kept, when set (least recently used are dropped;
            an array larger than this is only on disk).
    """

    def __init__(
        self, directory: Path | None = None, max_items: int = 256, max_bytes: int | None = None
    ) -> None:
        self.directory = directory
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.memory_bytes = 0
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.safetensors"

    def get(self, key: str) -> np.ndarray | None:
        if key in self._memory:
            self._memory.move_to_end(key)
            self.hits += 1
            return self._memory[key]
        path = self._path(key)
        if path is not None and path.exists():
            array = self._load(path, key)
            if array is not None:
                self.hits += 1
                self._remember(key, array)
                return array
        self.misses += 1
        return None

    def put(self, key: str, array: np.ndarray) -> None:
        self._remember(key, array)
        path = self._path(key)
        if path is None:
            return
        from safetensors.numpy import save_file

        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = staging_path(path)
        save_file(
            {"array": np.ascontiguousarray(array)},
            str(temporary),
            metadata={"key": key, "longscan": __version__, "digest": array_digest(array)},
        )
        temporary.replace(path)  # atomic: readers never see half a file

    def _remember(self, key: str, array: np.ndarray) -> None:
        if key in self._memory:
            self.memory_bytes -= self._memory.pop(key).nbytes
        if self.max_bytes is not None and array.nbytes > self.max_bytes:
            return
        self._memory[key] = array
        self.memory_bytes += array.nbytes
        while len(self._memory) > self.max_items or (
            self.max_bytes is not None and self.memory_bytes > self.max_bytes
        ):
            self.memory_bytes -= self._memory.popitem(last=False)[1].nbytes

    @staticmethod
    def _load(path: Path, key: str) -> np.ndarray | None:
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="numpy") as handle:
                metadata = handle.metadata() or {}
                if metadata.get("key") != key:
                    logger.warning("%s: cache key mismatch; ignoring the file", path)
                    return None
                array = handle.get_tensor("array")
        except Exception as error:  # a corrupt cache file is a miss, never a crash
            logger.warning("%s: unreadable cache file (%s); re-encoding", path, error)
            return None
        if metadata.get("digest") != array_digest(array):
            # files written before digests were recorded are encoded again too
            logger.warning("%s: cached array does not match its digest; re-encoding", path)
            return None
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            logger.warning("%s: cached array holds non-finite values; re-encoding", path)
            return None
        return array
