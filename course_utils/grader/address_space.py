"""Room in ``course grade``'s address-space limit for the GPU libraries a CUDA torch maps at import.

The per-submission limit (``--memory``, RLIMIT_AS) is sized for torch's CPU build, whose import maps
about 0.6 GB. A CUDA build also maps its GPU libraries at import (torch 2.14.1+cu130: 2.4 GB more,
measured on Linux): files mapped into the address space, not memory the submission uses. Without
room for them ``import torch`` fails in every graded process ("failed to map segment from shared
object"). The submission runs this Python and this torch, so the grader adds what its own process
has mapped of those libraries (Linux ``/proc/self/maps``; elsewhere nothing is added).
"""

from __future__ import annotations

import re
from functools import cache

GPU_LIBRARIES = re.compile(r"/nvidia/|/torch/lib/lib\w*(?:cuda|hip|nccl|cudnn|xpu)\w*\.so")


def mapped_bytes(maps_text: str, pattern: re.Pattern = GPU_LIBRARIES) -> int:
    """Bytes of the mappings (lines of a ``/proc/PID/maps``) whose file matches ``pattern``."""
    total = 0
    for line in maps_text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and pattern.search(fields[5]):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            total += end - start
    return total


@cache
def gpu_library_bytes() -> int:
    """What this process, torch imported, has mapped of GPU libraries (0 for a CPU build)."""
    import torch  # noqa: F401 - the import is what maps them

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            return mapped_bytes(fh.read())
    except OSError:
        return 0
