"""Learner progress: one small JSON file in a per-user folder, always written atomically.

Lesson 00 introduces it. The folder is ``$MPS_DETECTIVE_HOME`` when set (tests and workshops use
that), otherwise the platform's user data folder. A progress file that cannot be read is never
overwritten: it is kept beside the new one as ``progress.json.corrupt-<time>``.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from course_utils.core.files import write_atomically

ENV_HOME = "MPS_DETECTIVE_HOME"
FILE_NAME = "progress.json"
PASS_MARK = 0.75  # a quiz score at or above this marks its lesson complete


def home() -> Path:
    """The per-user folder holding progress and learner workspaces' metadata."""
    explicit = os.environ.get(ENV_HOME)
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("mps-detective", appauthor=False))


def path() -> Path:
    """Where the progress file lives."""
    return home() / FILE_NAME


def _empty() -> dict:
    return {"version": 1, "exercises": {}, "quizzes": {}, "hints": {}}


def load() -> dict:
    """Read the progress file; an absent file is empty progress, a broken one is set aside."""
    p = path()
    if not p.exists():
        return _empty()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != 1:
            raise ValueError("not a version-1 progress file")
    except (ValueError, OSError) as err:
        backup = p.with_name(f"{FILE_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(p, backup)
        warnings.warn(f"progress file unreadable ({err}); kept it as {backup.name}", stacklevel=2)
        return _empty()
    for key, value in _empty().items():
        data.setdefault(key, value)
    return data


def save(data: dict) -> None:
    """Write progress atomically: a temporary file in the same folder, then one rename."""
    write_atomically(path(), json.dumps(data, indent=2, sort_keys=True))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def record_attempt(exercise_id: str, passed: bool) -> None:
    """Count one ``check()`` of an exercise; the first pass is kept with its time."""
    data = load()
    entry = data["exercises"].setdefault(exercise_id, {"attempts": 0, "passed": False})
    entry["attempts"] += 1
    entry["last"] = "pass" if passed else "fail"
    if passed and not entry["passed"]:
        entry["passed"] = True
        entry["first_passed"] = _now()
    save(data)


def record_hint(exercise_id: str, level: int) -> None:
    """Remember how far up the hint ladder a learner has climbed."""
    data = load()
    data["hints"][exercise_id] = max(level, data["hints"].get(exercise_id, 0))
    save(data)


def hint_level(exercise_id: str) -> int:
    """How many hints of an exercise were shown so far."""
    return load()["hints"].get(exercise_id, 0)


def record_quiz(lesson: str, score: float) -> None:
    """Store a mastery-quiz score (0..1); the best one decides whether the lesson is complete."""
    data = load()
    entry = data["quizzes"].setdefault(lesson, {"best": 0.0, "attempts": 0})
    entry["attempts"] += 1
    entry["last"] = round(score, 4)
    entry["best"] = round(max(entry["best"], score), 4)
    entry["complete"] = entry["best"] >= PASS_MARK
    save(data)


def rows() -> list[tuple[str, str, str, str]]:
    """Progress as (item, status, attempts, detail) rows for ``course progress``."""
    data = load()
    out = []
    for ex_id, e in sorted(data["exercises"].items()):
        status = "passed" if e["passed"] else "not yet"
        out.append((ex_id, status, str(e["attempts"]), e.get("first_passed", "")))
    for lesson, q in sorted(data["quizzes"].items()):
        status = "complete" if q.get("complete") else "quiz below 75%"
        out.append((f"quiz {lesson}", status, str(q["attempts"]), f"best {q['best']:.0%}"))
    return out


def status(exercise_id: str) -> str:
    """One line on an exercise: passed or not, and how many checks it took."""
    entry = load()["exercises"].get(exercise_id)
    if entry is None:
        return f"{exercise_id}: not attempted"
    state = "passed" if entry["passed"] else "not passed yet"
    return f"{exercise_id}: {state} after {entry['attempts']} check(s)"
