"""Where the encoders and the scanner run: a GPU when one is present, else the CPU.

``LONGSCAN_DEVICE`` overrides the choice (``cpu``, ``cuda``, ``cuda:1``, ``mps``, ...).
Inputs and outputs stay NumPy on the CPU either way, so callers never see the device.
"""

from __future__ import annotations

import os
from functools import cache

DEVICE_VARIABLE = "LONGSCAN_DEVICE"


@cache
def torch_device() -> str:
    """The device name: ``$LONGSCAN_DEVICE``, else ``cuda`` if torch sees a GPU, else ``cpu``.

    Raises:
        ValueError: ``LONGSCAN_DEVICE`` names a device torch does not know or cannot use.
    """
    import torch

    chosen = os.environ.get(DEVICE_VARIABLE, "").strip()
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
