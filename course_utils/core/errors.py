"""The course's one error type for a learner's or instructor's mistaken request, and where the
course lives on disk."""

from __future__ import annotations

import os
from pathlib import Path


class CourseError(Exception):
    """A problem with the learner's request, explained in one message (no traceback)."""


def course_root() -> Path:
    """The course folder: $MPS_DETECTIVE_ROOT, the checkout this package lives in, or the cwd."""
    explicit = os.environ.get("MPS_DETECTIVE_ROOT")
    if explicit:
        return Path(explicit)
    here = Path(__file__).resolve().parents[2]
    return here if (here / "notebooks").is_dir() else Path.cwd()
