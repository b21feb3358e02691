"""Files on disk, below every layer that caches or writes: content hashes, the cache
folder, and staging names that make a write whole or absent."""

from __future__ import annotations

import hashlib
import os
import uuid
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


def staging_path(path: Path) -> Path:
    """A hidden name beside ``path`` that no other writer, process or thread, uses: write
    there, then replace ``path`` with it, so a reader never sees half a file and two
    writers of the same file never move each other's."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.partial")
