"""Where the encoders and the scanner run: a GPU when one is present, else the CPU.

``LONGSCAN_DEVICE`` overrides the choice (``cpu``, ``cuda``, ``cuda:1``, ``mps``, ...).
Inputs and outputs stay NumPy on the CPU either way, so callers never see the device.
``LONGSCAN_PRECISION`` (``float32`` or ``bfloat16``) overrides whether the cross-encoder
reads in bfloat16 on the CPU, and the token-level scanner's precision (by default bfloat16 on
a GPU, float32 on the CPU).
"""

from __future__ import annotations

import time
from functools import cache

from longscan.settings import runtime

DEVICE_VARIABLE = "LONGSCAN_DEVICE"
PRECISION_VARIABLE = "LONGSCAN_PRECISION"


@cache
def torch_device() -> str:
    """The device name: ``$LONGSCAN_DEVICE``, else ``cuda`` if torch sees a GPU, else ``cpu``.

    Raises:
        ValueError: ``LONGSCAN_DEVICE`` names a device torch does not know or cannot use.
    """
    import torch

    chosen = (runtime().device or "").strip()
    if not chosen:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(chosen)
    except RuntimeError as error:
        raise ValueError(f"{DEVICE_VARIABLE}={chosen!r} is not a torch device ({error})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{DEVICE_VARIABLE}={chosen!r}, but torch sees no CUDA GPU (torch "
            f"{torch.__version__}; the CPU build has none: see LONGSCAN_TORCH in the README)"
        )
    return chosen


def device_name(device: str) -> str:
    """How a model card names ``device``: the GPU's own name, else ``CPU``."""
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(torch.device(device))} (float32)"
    return device.upper()


def cpu_bfloat16() -> bool:
    """Whether the cross-encoder reads under bfloat16 autocast on the CPU:
    ``$LONGSCAN_PRECISION`` if set, else exactly where the CPU multiplies bfloat16 in hardware
    (AVX512-BF16 or AMX).

    There it reads about 1.9x faster at a drift of a few hundredths of a logit
    (docs/experiments.md); where bfloat16 is emulated it is slower than float32.

    Raises:
        ValueError: ``LONGSCAN_PRECISION`` is neither ``float32`` nor ``bfloat16``.
    """
    import torch

    chosen = _chosen_precision()
    if chosen:
        return chosen == "bfloat16"
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, check, lambda: False)() for check in checks)


def _chosen_precision() -> str:
    chosen = (runtime().precision or "").strip().lower()
    if chosen and chosen not in ("float32", "bfloat16"):
        raise ValueError(f"{PRECISION_VARIABLE}={chosen!r}: use float32 or bfloat16")
    return chosen


def spscanner_bfloat16(device: str) -> bool:
    """Whether the token-level scanner reads under bfloat16 autocast on ``device``:
    ``$LONGSCAN_PRECISION`` if set, else on a GPU only (the paper's setting there; float32
    on the CPU, where bfloat16 is mostly emulated).

    Raises:
        ValueError: ``LONGSCAN_PRECISION`` is neither ``float32`` nor ``bfloat16``.
    """
    chosen = _chosen_precision()
    return chosen == "bfloat16" if chosen else device.startswith("cuda")


def clock(device: str) -> float:
    """``time.perf_counter()`` once ``device`` has finished its queued work: CUDA runs ahead
    of the host, so a clock read without waiting would time only the kernels' launch."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)
    return time.perf_counter()


def peak_rss_bytes(pid: int | None = None) -> int:
    """The peak resident memory of this process, or of the live process ``pid`` (0 once it
    is gone). On Linux it is ``VmHWM`` of /proc/<pid>/status: ``getrusage``'s ``ru_maxrss``
    survives ``execve``, so a child started by a large parent would report the parent's
    size as its own peak."""
    try:
        with open(f"/proc/{pid or 'self'}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if pid is not None:
        return 0
    import resource  # elsewhere: the best the platform gives (kilobytes on Linux and BSD)

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


MMAP_THRESHOLD_BYTES = 128 * 1024


def bound_allocator() -> bool:
    """Serve large allocations with mmap, so freed activations go back to the OS.

    glibc's default keeps freed transformer activations of varying shapes in its heap, and
    peak memory then grows with the document (measured here: 1.50× at 1M tokens vs 100k);
    a fixed mmap threshold keeps it flat. Returns whether the setting was applied (glibc only).

    It is a process-wide choice, so applications make it, not the library: the command line
    does for the commands that stream (questions, evaluation, benchmarks, the bank, the
    service), and a Python program that scans long documents may call it once at start.
    Training does not: every large allocation then costs an mmap and fresh page faults,
    which made training 2-3× slower (half the CPU time in the kernel) when the training
    process had loaded the encoder.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(-3, MMAP_THRESHOLD_BYTES))  # -3 is M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        return False
