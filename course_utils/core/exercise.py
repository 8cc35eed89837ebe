"""How an exercise is declared: once, with its reference, cases, hints and mutants.

Lesson 00 explains the format to learners; ``course_utils.bank`` holds the declarations.
A *case* is one call of the learner's function. Fixed cases cover the edges an author chose;
random cases are drawn from a seed at check time, so an answer cannot be tuned to a list.
"""

from __future__ import annotations

import copy
import inspect
import random
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    """One call: a label shown on failure, positional and keyword arguments."""

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def fresh_args(self) -> tuple[tuple, dict]:
        """Deep copies, so neither side sees the other's in-place changes (strides are kept)."""
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)


@dataclass(frozen=True)
class Outcome:
    """What one call did: returned ``value`` or raised ``error``. ``inputs`` are the ``(args,
    kwargs)`` the call was given, as it left them (a judge compares them with the case's to see
    whether the answer changed its inputs); None when the outcome came from another process
    (``course grade`` sends back only the value)."""

    value: Any = None
    error: BaseException | None = None
    inputs: tuple[tuple, dict] | None = field(default=None, repr=False, compare=False)


def run(fn: Callable, case: Case) -> Outcome:
    """Call ``fn`` on a fresh copy of the case's arguments and capture the result or error."""
    args, kwargs = case.fresh_args()
    try:
        return Outcome(value=fn(*args, **kwargs), inputs=(args, kwargs))
    except Exception as err:  # noqa: BLE001 - the error is the outcome being graded
        return Outcome(error=err, inputs=(args, kwargs))


DEMO_LESSON = "00"  # its exercise is the worked demo of check() and hint()

Judge = Callable[[Outcome, Outcome, Case], "str | None"]


@dataclass(frozen=True)
class Exercise:
    """An exercise's single declaration.

    ``fixed`` builds the author's cases; ``random`` builds one case from a ``random.Random``
    (seeded by the checker); ``judge`` replaces the default comparison when behaviour, not a
    value, is graded (e.g. "raises an error naming both devices"). ``mutants`` are wrong answers
    learners really write: the test suite proves each one is rejected. ``equivalent`` names the
    automatic mutants (``course_utils.author.mutation``) that compute the same as the reference on
    every valid input, key -> a one-line reason. ``in_process_only`` says
    why only ``check()`` in the learner's own kernel can grade it (a judge that watches what the
    answer does inside its process); ``course grade`` then lists it as left out, with that reason.
    """

    id: str
    title: str
    reference: Callable
    fixed: Callable[[], Sequence[Case]]
    random: Callable[[random.Random], Case] | None = None
    n_random: int = 20
    atol: float = 1e-6
    rtol: float = 1e-5
    hints: tuple[str, ...] = ()
    mutants: dict[str, Callable] = field(default_factory=dict)
    judge: Judge | None = None
    in_process_only: str = ""
    equivalent: dict[str, str] = field(default_factory=dict)
    mutation_target: Callable | None = None  # whose source automatic mutants change (default: reference)
    alternatives: dict[str, Callable] = field(default_factory=dict)  # other right answers: must pass

    @property
    def lesson(self) -> str:
        """The two-digit lesson number the id starts with ("01.batch_bytes" -> "01")."""
        return self.id.split(".", 1)[0]

    @property
    def demo(self) -> bool:
        """A worked demo, not an exercise for the learner: lesson 00 writes both answers itself
        (it has no exercise notebook), so its checks are kept apart from the learner's progress."""
        return self.lesson == DEMO_LESSON

    def cases(self, seed: int) -> list[Case]:
        """Fixed cases first, then ``n_random`` cases drawn from ``seed``."""
        out = list(self.fixed())
        if self.random is not None:
            rng = random.Random(seed)
            out += [self.random(rng) for _ in range(self.n_random)]
        return out


def patched(reference: Callable, *edits: tuple[str, str]) -> Callable:
    """A mutant written as a small diff of ``reference``: each ``(old, new)`` pair replaces text
    that occurs exactly once in the reference's source.

    ``patched(batch_bytes, ("* x.element_size()", ""))`` is the answer that forgets the element
    size. The mutant runs in the reference module's globals, so helpers it calls are the same.
    """
    source = textwrap.dedent(inspect.getsource(reference))
    for old, new in edits:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"mutant of {reference.__name__}: {old!r} occurs {count} times")
        source = source.replace(old, new)
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<mutant of {reference.__qualname__}>", "exec"),  # noqa: S102
         reference.__globals__, namespace)
    mutant = namespace[reference.__name__]
    mutant.__qualname__ = f"{reference.__qualname__}[mutant]"
    return mutant
