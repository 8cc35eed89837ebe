"""The exercise bank: every exercise of the course, declared once, keyed by id ("01.batch_bytes").

Each lesson module ``lessonNN.py`` in this package exports ``EXERCISES`` (and usually ``QUIZ``);
modules are discovered by name, so a new lesson registers itself by existing.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from course_utils.exercise import Exercise

LESSON_MODULES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                              if m.name.startswith("lesson")))


@cache
def _all() -> dict[str, Exercise]:
    found: dict[str, Exercise] = {}
    for name in LESSON_MODULES:
        module = importlib.import_module(f"course_utils.bank.{name}")
        for ex in module.EXERCISES:
            if ex.id in found:
                raise ValueError(f"exercise id {ex.id} declared twice")
            found[ex.id] = ex
    return found


def get(exercise_id: str) -> Exercise:
    """The exercise with this id (KeyError when there is none)."""
    return _all()[exercise_id]


def ids() -> list[str]:
    """Every exercise id, sorted."""
    return sorted(_all())


def for_lesson(lesson: str) -> list[Exercise]:
    """The exercises of one lesson ("01")."""
    return [ex for ex in _all().values() if ex.lesson == lesson]


def quiz(lesson: str):
    """The mastery quiz of a lesson; each lesson module exports one as ``QUIZ``."""
    lesson = lesson.zfill(2)
    for name in LESSON_MODULES:
        module = importlib.import_module(f"course_utils.bank.{name}")
        if getattr(module, "QUIZ", None) is not None and module.QUIZ.lesson == lesson:
            return module.QUIZ
    raise KeyError(f"no quiz for lesson '{lesson}'")


def quizzes() -> list:
    """Every lesson's quiz."""
    found = [importlib.import_module(f"course_utils.bank.{n}") for n in LESSON_MODULES]
    return [m.QUIZ for m in found if getattr(m, "QUIZ", None) is not None]
