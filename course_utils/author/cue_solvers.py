"""Surface solvers: test-taking strategies that read no code and understand nothing.

A multiple-choice question measures understanding only if none of these beats chance by much. Each
solver looks at the words of a question (``core.questions.Question``) and picks a choice: the
longest, the shortest, the one sharing most words with the stem or with the code in it, the odd one
out, a fixed position, the one without absolute words, and so on. ``table`` scores every solver on
a set of questions; the course's test holds each within ``MARGIN`` of chance over all quizzes and
below the pass mark on every quiz form. ``python -m course_utils.author.cue_solvers`` prints the
table for the lessons' mastery quizzes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from course_utils.core.questions import Question

MARGIN = 0.10  # a solver may differ from chance by at most this much over all quizzes

_WORD = re.compile(r"[a-z0-9_.]+")
_CODE = re.compile(r"`([^`]+)`|([A-Za-z_][\w.]*\([^)]*\)|[A-Za-z_]\w*\.[\w.]+|\w+_\w+)")
_STOP = frozenset("a an the of to in on is it its and or for by with as at be this that are was "
                  "what which why how when does do you your from not no".split())
ABSOLUTE = frozenset("always never only all every none nothing exactly must cannot guaranteed "
                     "impossible forever any".split())
HEDGED = frozenset("usually often may might can could some most likely about roughly probably "
                   "mostly typically sometimes unless depends".split())


def words(text: str) -> set[str]:
    """Lower-case content words of a text (stop words dropped, code identifiers kept whole)."""
    return {w.strip(".") for w in _WORD.findall(text.lower())} - _STOP - {""}


def code_tokens(text: str) -> set[str]:
    """The code-looking pieces of a text: `spans`, calls, dotted names, snake_case names."""
    found = set()
    for span, other in _CODE.findall(text):
        found |= words(span or other)
    return found


def _overlap(reference: set[str]) -> Callable[[str], float]:
    return lambda choice: len(words(choice) & reference) / (1 + len(words(choice)))


def _similarity(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def _mean_similarity(q: Question) -> list[float]:
    n = len(q.choices)
    return [sum(_similarity(c, o) for j, o in enumerate(q.choices) if j != i) / (n - 1)
            for i, c in enumerate(q.choices)]


def _count(vocabulary: frozenset[str]) -> Callable[[str], int]:
    return lambda choice: len(words(choice) & vocabulary)


def _digits(choice: str) -> float:
    return sum(ch.isdigit() for ch in choice) / max(len(choice), 1)


def _number(choice: str) -> float | None:
    match = re.search(r"-?\d[\d,]*\.?\d*", choice)
    return float(match.group().replace(",", "")) if match else None


def _middle_number(q: Question) -> list[float]:
    """Of numeric choices, prefer the second smallest (test-takers' 'not the extreme' rule); no
    preference where a choice holds no number."""
    values = [_number(c) for c in q.choices]
    if any(v is None for v in values):
        return [0.0] * len(values)
    second = sorted(values)[1]
    return [float(v == second) for v in values]


def _by(score: Callable[[str], float]) -> Callable[[Question], list[float]]:
    return lambda q: [score(c) for c in q.choices]


def _least(score: Callable[[str], float]) -> Callable[[Question], list[float]]:
    return lambda q: [-score(c) for c in q.choices]


def _position(i: int) -> Callable[[Question], list[float]]:
    return lambda q: [float(j == min(i, len(q.choices) - 1)) for j in range(len(q.choices))]


# Each solver scores the choices; it picks the highest, and a tie is a blind guess among the tied.
SOLVERS: dict[str, Callable[[Question], list[float]]] = {
    "longest": _by(len),
    "shortest": _least(len),
    "most words": _by(lambda c: len(c.split())),
    "stem overlap": lambda q: _by(_overlap(words(q.prompt)))(q),
    "least stem overlap": lambda q: _least(_overlap(words(q.prompt)))(q),
    "code overlap": lambda q: _by(_overlap(code_tokens(q.prompt)))(q),
    "odd one out": lambda q: [-s for s in _mean_similarity(q)],
    "most typical": _mean_similarity,
    "no absolute words": _least(_count(ABSOLUTE)),
    "absolute words": _by(_count(ABSOLUTE)),
    "hedged words": _by(_count(HEDGED)),
    "most digits": _by(_digits),
    "most code": _by(lambda c: c.count("`") + len(code_tokens(c))),
    "explains (colon/semicolon)": _by(lambda c: c.count(":") + c.count(";") + c.count(",")),
    "middle number": _middle_number,
    **{f"position {i + 1}": _position(i) for i in range(4)},
}


def expected_right(scores: Sequence[float], answer: int) -> float:
    """A solver's expected score on one question: 1/k when the answer is among the k choices tied
    for the top score, else 0 (a tie is broken by a blind guess, never by position)."""
    top = max(scores)
    tied = [i for i, v in enumerate(scores) if abs(v - top) < 1e-9]
    return 1 / len(tied) if answer in tied else 0.0


def chance(questions: Sequence[Question]) -> float:
    """The expected score of a blind guess."""
    return sum(1 / len(q.choices) for q in questions) / len(questions)


def accuracy(solver: Callable[[Question], list[float]], questions: Sequence[Question]) -> float:
    """The fraction of questions a solver is expected to get right."""
    return sum(expected_right(solver(q), q.answer) for q in questions) / len(questions)


def table(sets: dict[str, Sequence[Question]]) -> dict[str, dict[str, float]]:
    """Every solver's accuracy on every named set of questions, and over all of them ("all")."""
    every = [q for qs in sets.values() for q in qs]
    return {name: {**{key: accuracy(solver, qs) for key, qs in sets.items()},
                   "all": accuracy(solver, every)} for name, solver in SOLVERS.items()}


def quiz_sets() -> dict[str, tuple[Question, ...]]:
    """Each form of each lesson's mastery quiz, keyed "02/B" (lesson, form)."""
    from course_utils import bank

    return {f"{q.lesson}/{chr(65 + f)}": form for q in bank.quizzes() for f, form in enumerate(q.forms)}


def render(scores: dict[str, dict[str, float]], base: float) -> str:
    """The table as text, one row per solver, percentages; chance on the first line."""
    columns = list(next(iter(scores.values())))
    lines = [f"chance {base:.0%}", f"{'solver':<28}" + "".join(f"{c:>6}" for c in columns)]
    for name, row in scores.items():
        lines.append(f"{name:<28}" + "".join(f"{row[c]:>6.0%}" for c in columns))
    return "\n".join(lines)


if __name__ == "__main__":
    sets = quiz_sets()
    print(render(table(sets), chance([q for qs in sets.values() for q in qs])))
