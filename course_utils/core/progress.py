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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
    msvcrt = None
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

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
    """Write progress atomically: a temporary file in the same folder, then one rename.

    Writers should use ``update()``, which also holds the lock; ``save`` alone is for a caller
    that already holds it."""
    write_atomically(path(), json.dumps(data, indent=2, sort_keys=True))


@contextmanager
def _locked():
    """An exclusive lock beside the progress file (kernels, widgets and the CLI may write at once)."""
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(FILE_NAME + ".lock"), "a+b") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        elif msvcrt is not None:  # pragma: no cover - Windows
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)
        yield  # the lock goes with the file handle


@contextmanager
def update() -> Iterator[dict]:
    """The one way to change progress: load, let the caller change the dict, save, all under the
    lock, so two writers never lose each other's changes."""
    with _locked():
        data = load()
        yield data
        save(data)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


MAX_REMEMBERED_ANSWERS = 100


def _book(data: dict, demo: bool) -> dict:
    """Where an exercise's checks and hints are kept: the learner's own book (the file's top
    level), or, for a lesson's worked demo (lesson 00: the course wrote both answers), the
    "demos" book, which ``course progress`` does not count as the learner's work."""
    book = data.setdefault("demos", {}) if demo else data
    for key in ("exercises", "hints", "hint_sites"):
        book.setdefault(key, {})
    return book


def record_attempt(exercise_id: str, passed: bool, answer_key: str | None = None, *,
                   demo: bool = False) -> None:
    """Count one ``check()`` of a new answer; the first pass is kept with its time.

    ``answer_key`` fingerprints the answer's code: checking the same code again (Run All, a
    re-run cell) updates the last result but is not a new attempt. ``demo``: a lesson's worked
    demo, kept apart from the learner's attempts.
    """
    with update() as data:
        book = _book(data, demo)
        entry = book["exercises"].setdefault(exercise_id, {"attempts": 0, "passed": False})
        seen = entry.setdefault("answers", [])
        if answer_key is None or answer_key not in seen:
            entry["attempts"] += 1
            if answer_key is not None:
                seen.append(answer_key)
                del seen[:-MAX_REMEMBERED_ANSWERS]
        entry["last"] = "pass" if passed else "fail"
        if passed and not entry["passed"]:
            entry["passed"] = True
            entry["first_passed"] = _now()


def next_hint(exercise_id: str, site: str | None, available: int, floor: int = 0, *,
              demo: bool = False) -> int:
    """The hint level to show, climbing one rung per new place that asks (``site``: the calling
    cell and line). The same cell asking again (Run All) sees the level it saw before."""
    with update() as data:
        book = _book(data, demo)
        hints, sites = book["hints"], book["hint_sites"].setdefault(exercise_id, {})
        if site is not None and site in sites:
            return min(sites[site], available)
        level = min(max(hints.get(exercise_id, 0), floor) + 1, available)
        hints[exercise_id] = max(level, hints.get(exercise_id, 0))
        if site is not None:
            sites[site] = level
        return level


def record_hint(exercise_id: str, level: int, *, demo: bool = False) -> None:
    """Remember that hints up to ``level`` were shown (a failed check shows the first)."""
    with update() as data:
        hints = _book(data, demo)["hints"]
        hints[exercise_id] = max(level, hints.get(exercise_id, 0))


def hint_level(exercise_id: str, *, demo: bool = False) -> int:
    """How many hints of an exercise were shown so far."""
    return _book(load(), demo)["hints"].get(exercise_id, 0)


def record_quiz(lesson: str, score: float, form: int = 0) -> dict:
    """Store a mastery-quiz score (0..1) for the form (``form``) of the quiz that was answered.

    An attempt counts only when its form's answers were never shown before (a first attempt on
    that form): the feedback of an attempt shows every answer, so a resubmission of the same form
    is practice. The first counted attempt at or above ``PASS_MARK`` completes the lesson and is
    kept as ``counted`` (attempt number, form, score, time). Returns the quiz's entry."""
    with update() as data:
        entry = data["quizzes"].setdefault(lesson, {"best": 0.0, "attempts": 0})
        legacy = "seen_forms" not in entry and entry.get("complete", False)  # an older file's verdict
        seen = entry.setdefault("seen_forms", [])
        entry["attempts"] += 1
        counts = form not in seen
        entry["last"] = round(score, 4)
        entry["last_counted"] = counts
        if counts:
            seen.append(form)
            entry["best"] = round(max(entry["best"], score), 4)
            if score >= PASS_MARK and not entry.get("counted"):
                entry["counted"] = {"attempt": entry["attempts"], "form": form,
                                    "score": round(score, 4), "time": _now()}
        else:
            entry["practice_best"] = round(max(entry.get("practice_best", 0.0), score), 4)
        entry["complete"] = bool(entry.get("counted") or legacy)
        return dict(entry)


def quiz_forms_seen(lesson: str) -> list[int]:
    """The forms of a lesson's quiz whose answers the learner has seen (each was answered once)."""
    return list(load()["quizzes"].get(lesson, {}).get("seen_forms", []))


def _quiz_row(lesson: str, q: dict) -> tuple[str, str, str, str]:
    """One ``course progress`` row for a quiz: which attempt counted, or why none did yet."""
    counted = q.get("counted")
    if counted:
        status = f"complete (attempt {counted['attempt']}, form {counted['form'] + 1})"
        detail = f"counted {counted['score']:.0%}"
    else:
        status = "quiz below 75%"
        detail = f"best first try {q['best']:.0%}"
    if "practice_best" in q:
        detail += f"; practice (answers seen) best {q['practice_best']:.0%}, not counted"
    return (f"quiz {lesson}", status, str(q["attempts"]), detail)


def rows() -> list[tuple[str, str, str, str]]:
    """Progress as (item, status, attempts, detail) rows for ``course progress``."""
    data = load()
    out = []
    for ex_id, e in sorted(data["exercises"].items()):
        status = "passed" if e["passed"] else "not yet"
        out.append((ex_id, status, str(e["attempts"]), e.get("first_passed", "")))
    out += [_quiz_row(lesson, q) for lesson, q in sorted(data["quizzes"].items())]
    return out + _prediction_rows(data) + _drill_rows(data)


def _prediction_rows(data: dict) -> list[tuple[str, str, str, str]]:
    """Predict-then-run prompts locked in (lessons' key predictions), right on the last lock-in."""
    locked = [e for e in data.get("predictions", {}).values() if isinstance(e, dict)]
    if not locked:
        return []
    right = sum(1 for e in locked if e.get("right"))
    return [("predictions", f"{right}/{len(locked)} right", str(sum(e.get("attempts", 0) for e in locked)),
             "predict, then run")]


def _drill_rows(data: dict) -> list[tuple[str, str, str, str]]:
    """Spot-the-bug cards answered (lesson 07) and timed drill rounds (lesson 08, ``course drill``),
    accuracy per category over all rounds."""
    out = []
    cards = data.get("drills")
    if isinstance(cards, dict) and cards:
        right = sum(1 for e in cards.values() if isinstance(e, dict) and e.get("right"))
        out.append(("drill cards", f"{right}/{len(cards)} right", str(sum(
            e.get("attempts", 0) for e in cards.values() if isinstance(e, dict))), "lesson 07"))
    rounds = data.get("drill_sessions")
    if isinstance(rounds, dict) and rounds.get("sessions"):
        out.append(("drill rounds", f"best {rounds.get('best', 0):.0%}", str(len(rounds["sessions"])),
                    "timed (lesson 08 / course drill)"))
        for name, c in sorted(rounds.get("categories", {}).items()):
            if c.get("answered"):
                mean = f"{c['seconds'] / c['answered']:.0f} s per drill" if "seconds" in c else ""
                out.append((f"  drills: {name}", f"{c['right'] / c['answered']:.0%} right",
                            str(c["answered"]), mean))
    return out


DEMO_NOTE = " (a worked demo, kept apart from your exercises)"


def status(exercise_id: str) -> str:
    """One line on an exercise: passed or not, and how many checks it took (a lesson's worked
    demo says so: it is not counted as the learner's work)."""
    data = load()
    entry, note = data["exercises"].get(exercise_id), ""
    if entry is None:
        entry, note = _book(data, True)["exercises"].get(exercise_id), DEMO_NOTE
    if entry is None:
        return f"{exercise_id}: not attempted"
    state = "passed" if entry["passed"] else "not passed yet"
    return f"{exercise_id}: {state} after {entry['attempts']} check(s){note}"
