"""Signs the course prints, each with a text fallback for fonts that lack the glyph.

The timer sign before a measured time (⏱, U+23F1) is an emoji that many default monospace fonts do
not have (a box or a blank shows instead); the check marks ✔ and ✘ are in most fonts but not all.
``glyph(name)`` gives the sign, or its text form when the environment variable
``MPS_DETECTIVE_TEXT_GLYPHS`` is set to 1 (``course doctor`` and docs/learners.md say when to).
"""

from __future__ import annotations

import os

ENV = "MPS_DETECTIVE_TEXT_GLYPHS"
GLYPHS = {
    "timer": ("⏱", "time"),
    "right": ("✔", "[right]"),
    "wrong": ("✘", "[wrong]"),
}


def text_only() -> bool:
    """Whether the learner asked for text instead of glyphs."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes")


def glyph(name: str) -> str:
    """The sign called ``name`` ("timer", "right", "wrong"), or its text form (see ``ENV``)."""
    sign, text = GLYPHS[name]
    return text if text_only() else sign
