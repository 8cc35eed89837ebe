"""The exercise bank: every exercise of the course, declared once, keyed by id ("01.batch_bytes").

Layout: one package per lesson (``lesson01/``), one module per exercise named after the part of
its id after the dot (``lesson01/batch_bytes.py`` declares ``EXERCISE = Exercise(id="01.batch_bytes",
...)`` beside its reference, cases, judge, hints and mutants), and the lesson's mastery quiz in
``lessonNN/mastery_quiz.py`` as ``QUIZ``. Modules are discovered by name: an exercise registers itself by
existing. The lesson's ``__init__.py`` may list its exercise modules in ``ORDER``, the order the
lesson teaches them; the others follow in name order. (A plain ``lessonNN.py`` module exporting
``EXERCISES`` is read too.)

Nothing outside the course machinery and the grader imports this package: a submission being
graded may not, and everything a case may hold lives in ``course_utils.labs.case_inputs``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from course_utils.core.exercise import Exercise
from course_utils.core.questions import Quiz
from course_utils.core.registry import Registry

LESSONS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("lesson")))


def _modules(lesson_package: str) -> Iterator[ModuleType]:
    """The lesson's own module, then each module inside it: first those its ``ORDER`` names (the
    order the lesson teaches them, which is also the gradebook's and ``course check``'s), then the
    rest in name order."""
    package = importlib.import_module(f"{__name__}.{lesson_package}")
    yield package
    order = list(getattr(package, "ORDER", ()))
    names = sorted(info.name for info in pkgutil.iter_modules(getattr(package, "__path__", [])))
    for name in sorted(names, key=lambda n: order.index(n) if n in order else len(order)):
        yield importlib.import_module(f"{package.__name__}.{name}")


def _declared(module: ModuleType) -> list[Exercise]:
    found = list(getattr(module, "EXERCISES", ()))
    single = getattr(module, "EXERCISE", None)
    if single is not None:
        expected = f"{module.__name__.rsplit('.', 2)[-2].removeprefix('lesson')}." \
                   f"{module.__name__.rsplit('.', 1)[-1]}"
        if single.id != expected:
            raise ValueError(f"{module.__name__} declares {single.id}; its file says {expected}")
        found.append(single)
    return found


def _load() -> Iterator[tuple[str, Exercise]]:
    for lesson in LESSONS:
        for module in _modules(lesson):
            for ex in _declared(module):
                yield ex.id, ex


REGISTRY: Registry[Exercise] = Registry("exercise", _load)


def get(exercise_id: str) -> Exercise:
    """The exercise with this id (``UnknownId``, a KeyError naming close ids, when there is none)."""
    return REGISTRY.get(exercise_id)


def ids() -> list[str]:
    """Every exercise id, sorted."""
    return sorted(REGISTRY.ids())


def for_lesson(lesson: str) -> list[Exercise]:
    """The exercises of one lesson ("01"), in declaration order, importing only that lesson."""
    name = f"lesson{str(lesson).zfill(2)}"
    if name not in LESSONS:
        return []
    return [ex for module in _modules(name) for ex in _declared(module)]


def _quizzes() -> dict[str, Quiz]:
    found = {}
    for lesson in LESSONS:
        for module in _modules(lesson):
            quiz = getattr(module, "QUIZ", None)
            if quiz is not None:
                found[quiz.lesson] = quiz
    return found


def quiz(lesson: str) -> Quiz:
    """The mastery quiz of a lesson ("01")."""
    lesson = str(lesson).zfill(2)
    try:
        return _quizzes()[lesson]
    except KeyError:
        raise KeyError(f"no quiz for lesson '{lesson}'") from None


def quizzes() -> list[Quiz]:
    """Every lesson's quiz, in lesson order."""
    return list(_quizzes().values())
