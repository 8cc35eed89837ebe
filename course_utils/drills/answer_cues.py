"""Solvers that read no code and understand nothing: the test-taking cues a drill must not reward.

Each solver looks only at the surface of a multiple-choice question (the stem, the choices, the
code's words) and scores every choice; it picks the highest score, a tie split evenly between the
tied choices. ``solver_scores(items)`` runs the whole battery over ``(question, code)`` pairs and
returns each solver's expected hit rate next to chance. A question set measures understanding
only when every solver stays near chance (tests/test_drill_cues.py holds the drill forms to
within 10 points of it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from course_utils.core.questions import Question

Solver = Callable[[Question, str], Sequence[float]]

_WORD = re.compile(r"[a-z_][a-z0-9_]*|\d+(?:\.\d+)?")
STOP = frozenset("a an and are as at be by for from in is it its of on or so that the this to with "
                 "was were what which why when does do not no s".split())
ABSOLUTE = frozenset("always never only all every none must cannot any whole".split())
HEDGED = frozenset("may might can could some often usually most likely sometimes".split())
NEGATIVE = frozenset("nothing not no none never".split())


def words(text: str) -> set[str]:
    """The content words of ``text`` (lower case, identifiers and numbers kept, stop words out)."""
    return set(_WORD.findall(text.lower())) - STOP


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _similarity(q: Question) -> list[float]:
    sets = [words(c) for c in q.choices]
    return [sum(_jaccard(s, t) for j, t in enumerate(sets) if j != i) for i, s in enumerate(sets)]


def _count(vocabulary: frozenset[str]) -> Callable[[str], int]:
    return lambda text: sum(w in vocabulary for w in re.findall(r"[a-z]+", text.lower()))


def _per_choice(f: Callable[[str], float]) -> Solver:
    return lambda q, code: [f(c) for c in q.choices]


_absolute, _hedged, _negative = _count(ABSOLUTE), _count(HEDGED), _count(NEGATIVE)

SOLVERS: dict[str, Solver] = {
    "longest": _per_choice(len),
    "shortest": _per_choice(lambda c: -len(c)),
    "most words": _per_choice(lambda c: len(c.split())),
    "most shared with stem": lambda q, code: [len(words(c) & words(q.prompt)) for c in q.choices],
    "least shared with stem": lambda q, code: [-len(words(c) & words(q.prompt)) for c in q.choices],
    "most shared with code": lambda q, code: [len(words(c) & words(code)) for c in q.choices],
    "least shared with code": lambda q, code: [-len(words(c) & words(code)) for c in q.choices],
    "odd one out": lambda q, code: [-s for s in _similarity(q)],
    "most typical": lambda q, code: _similarity(q),
    "no absolute words": _per_choice(lambda c: -_absolute(c)),
    "hedged words": _per_choice(_hedged),
    "not 'nothing'/'not'": _per_choice(lambda c: -_negative(c)),
    "most digits and code marks": _per_choice(lambda c: sum(ch.isdigit() or ch in "`()_.=" for ch in c)),
    "fewest digits and code marks": _per_choice(
        lambda c: -sum(ch.isdigit() or ch in "`()_.=" for ch in c)),
    "most punctuation": _per_choice(lambda c: sum(ch in ",;:" for ch in c)),
}


def _position(p: int) -> Solver:
    return lambda q, code: [float(i == p) for i in range(len(q.choices))]


SOLVERS.update({f"position {p + 1}": _position(p) for p in range(4)})


def credit(scores: Sequence[float], answer: int) -> float:
    """The expected hit of picking the top score, a tie split evenly: 1/k when the answer is one
    of k tied best choices, else 0."""
    best = max(scores)
    tied = [i for i, s in enumerate(scores) if s == best]
    return 1 / len(tied) if answer in tied else 0.0


def solver_scores(items: Iterable[tuple[Question, str]]) -> dict[str, tuple[float, float]]:
    """{solver: (hit rate, chance)} over ``(question, code)`` pairs (code may be '')."""
    items = list(items)
    if not items:
        raise ValueError("no questions to score")
    chance = sum(1 / len(q.choices) for q, _ in items) / len(items)
    return {name: (sum(credit(solve(q, code), q.answer) for q, code in items) / len(items), chance)
            for name, solve in SOLVERS.items()}


def table(scores: dict[str, tuple[float, float]]) -> str:
    """The battery's result as text: one solver a line, its hit rate against chance."""
    return "\n".join(f"{name:<30}{hit:6.1%}  (chance {chance:.1%})" for name, (hit, chance) in scores.items())
