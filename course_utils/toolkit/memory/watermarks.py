"""The MPS allocator's two watermark variables, their defaults and meaning.

Lesson 02; PyTorch's 'MPS Environment Variables' page, R32 in references.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Watermark:
    """An MPS allocator variable, its default and meaning (R32 in references.md)."""

    name: str
    default: str
    meaning: str

    @property
    def now(self) -> str | None:
        return os.environ.get(self.name)


WATERMARKS = (
    Watermark("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "1.7",
              "hard cap = ratio x recommended_max_memory(); 0.0 removes the cap (risks a system OOM)"),
    Watermark("PYTORCH_MPS_LOW_WATERMARK_RATIO", "1.4 (unified) / 1.0 (discrete)",
              "soft target: above it the allocator collects garbage and commits adaptively"),
)
