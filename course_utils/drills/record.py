"""Card answers in the learner's progress file, under the top-level key "drills" (lesson 07).

``course_utils.core.progress`` owns the file; this module changes only its own key, through
``progress.update()`` (locked load-change-save), so every other key is kept.
One entry per drill id::

    "drills": {"losses.double_softmax": {"attempts": 2, "right": 1, "last": "right",
                                         "first_right": "2026-05-01T10:00:00",
                                         "hypothesis": "softmax is applied twice"}}
"""

from __future__ import annotations

import time

from course_utils.core import progress

KEY = "drills"
MAX_HYPOTHESIS = 300  # characters kept of the last hypothesis


def record_answer(drill_id: str, correct: bool, hypothesis: str = "") -> dict:
    """Count one answer to a drill's question; return the drill's updated entry."""
    with progress.update() as data:
        entry = data.setdefault(KEY, {}).setdefault(drill_id, {"attempts": 0, "right": 0})
        entry["attempts"] += 1
        entry["last"] = "right" if correct else "wrong"
        if correct:
            entry["right"] += 1
            entry.setdefault("first_right", time.strftime("%Y-%m-%dT%H:%M:%S"))
        entry["hypothesis"] = hypothesis.strip()[:MAX_HYPOTHESIS]
    return dict(entry)


def answers() -> dict[str, dict]:
    """Every recorded drill answer, keyed by drill id (empty when none yet)."""
    return dict(progress.load().get(KEY, {}))
