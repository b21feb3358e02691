"""Sequence operators in plain PyTorch, each fast path beside a ``*_ref`` oracle."""

from __future__ import annotations

from longscan.ops.ssd import segsum, ssd_chunked, ssd_ref, ssd_step

__all__ = ["segsum", "ssd_chunked", "ssd_ref", "ssd_step"]
