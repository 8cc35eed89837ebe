"""Multiple-choice questions as data: the lessons' mastery quizzes and the drills' questions.

Choices are shown in an order fixed by a string seed, so the right answer is not always in the
same position and every run shows the same order. A quiz holds two forms or more of each question,
so a retry after the feedback (which shows the answers) asks the same ideas afresh. The widget
that displays a quiz lives in ``course_utils.learner.quiz``.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

from course_utils.core import progress

# Inline markdown as the course's texts use it: `code`, *emphasis*, **strong** and backslash
# escapes. An asterisk inside a word or before a space (B*S, *args, 2 * 3) is a plain asterisk.
_INLINE = re.compile(r"`([^`]+)`"                      # 1: a code span
                     r"|\\([\\`*_])"                    # 2: an escaped character
                     r"|(?<![\w*\\])(\*\*|\*)(?=[^\s*])"  # 3: an opening * or **
                     r"(.+?)(?<=[^\s*\\])\3(?![\w*])")    # 4: the emphasised text, then the close


def _render(text: str, marks) -> str:
    """``text`` with each inline mark replaced by ``marks.code(text)``, ``marks.literal(char)``
    or ``marks.emphasis(mark, inner)``, and the text between by ``marks.text(part)``."""
    def one(match: re.Match) -> str:
        if match.group(1) is not None:
            return marks.code(match.group(1))
        if match.group(2) is not None:
            return marks.literal(match.group(2))
        return marks.emphasis(match.group(3), _render(match.group(4), marks))

    out, last = [], 0
    for match in _INLINE.finditer(text):
        out += [marks.text(text[last:match.start()]), one(match)]
        last = match.end()
    return "".join([*out, marks.text(text[last:])])


_PLAIN = SimpleNamespace(code=str, literal=str, emphasis=lambda mark, inner: inner,
                         text=lambda part: part.replace("`", ""))
_HTML = SimpleNamespace(
    code=lambda part: f"<code>{html.escape(part, quote=False)}</code>",
    literal=lambda char: html.escape(char, quote=False),
    emphasis=lambda mark, inner: f"<strong>{inner}</strong>" if mark == "**" else f"<em>{inner}</em>",
    text=lambda part: html.escape(part, quote=False).replace("`", ""))


def plain(text: str) -> str:
    """Inline markdown (code marks, *emphasis*, **strong**, backslash escapes) dropped, for text
    shown as plain output: the words stay, the marks go."""
    return _render(text, _PLAIN)


def as_html(text: str) -> str:
    """Text escaped for HTML with its inline markdown rendered: `code` as <code>, *emphasis* as
    <em>, **strong** as <strong>, escapes as the character (no raw marks on the learner's screen)."""
    return _render(text, _HTML)


@dataclass(frozen=True)
class Question:
    """One question: the prompt, its choices, the index of the right one, and why (with source)."""

    prompt: str
    choices: tuple[str, ...]
    answer: int
    why: str

    def __post_init__(self):
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not a choice of: {self.prompt}")

    def shuffled(self, seed: str) -> Question:
        """The same question with its choices in the order ``seed`` fixes."""
        order = list(range(len(self.choices)))
        random.Random(seed).shuffle(order)
        return Question(self.prompt, tuple(self.choices[i] for i in order),
                        order.index(self.answer), self.why)


class Quiz:
    """A lesson's mastery quiz, in two forms or more; choices are shown in a fixed shuffled order.

    Each item is a ``Question`` or a sequence of its forms (the same idea asked with other numbers
    or other code). Form ``f`` of the quiz serves form ``f`` of every item (an item with fewer forms
    repeats its own). Feedback shows every answer, so only the first attempt on a form counts
    (``progress.record_quiz``); a retry is served the next form whose answers were not shown."""

    def __init__(self, lesson: str, items: Sequence[Question | Sequence[Question]]):
        if not items:
            raise ValueError(f"quiz {lesson} has no questions")
        self.lesson = lesson
        per_item = [(item,) if isinstance(item, Question) else tuple(item) for item in items]
        n_forms = max(len(forms) for forms in per_item)
        self.forms = tuple(
            tuple(forms[f % len(forms)].shuffled(f"{lesson}.{i}" if f == 0 else f"{lesson}.{i}.{f}")
                  for i, forms in enumerate(per_item))
            for f in range(n_forms))

    @property
    def questions(self) -> tuple[Question, ...]:
        """The first form's questions (the one a learner meets first)."""
        return self.forms[0]

    def form(self, number: int) -> tuple[Question, ...]:
        """The questions of form ``number`` (0-based; numbers past the last form wrap round)."""
        return self.forms[number % len(self.forms)]

    def next_form(self) -> int:
        """The form to serve now: the first whose answers the learner has not seen, else (every
        form seen: practice, which no longer counts) the one after the last attempt's."""
        seen = progress.quiz_forms_seen(self.lesson)
        fresh = [f for f in range(len(self.forms)) if f not in seen]
        return fresh[0] if fresh else (seen[-1] + 1) % len(self.forms) if seen else 0

    def grade(self, picks: Sequence[int | None], form: int = 0) -> float:
        """Score choice indexes (None = unanswered) on form ``form``, record it, and return the
        fraction right."""
        questions = self.form(form)
        if len(picks) != len(questions):
            raise ValueError(f"quiz {self.lesson} has {len(questions)} questions, "
                             f"got {len(picks)} answers")
        right = sum(p == q.answer for p, q in zip(picks, questions, strict=True))
        score = right / len(questions)
        progress.record_quiz(self.lesson, score, form=form % len(self.forms))
        return score

    def feedback(self, picks: Sequence[int | None], form: int = 0) -> list[str]:
        """Per question: your answer, the correct one (when yours was not), and why, labelled so a
        wrong answer never reads as if the correct statement were wrong."""
        lines = []
        for i, (pick, q) in enumerate(zip(picks, self.form(form), strict=True), 1):
            yours = "(no answer)" if pick is None else plain(q.choices[pick])
            if pick == q.answer:
                lines.append(f"✔ Q{i}  your answer: {yours}\n     why: {plain(q.why)}")
            else:
                lines.append(f"✘ Q{i}  your answer: {yours}\n     correct: "
                             f"{plain(q.choices[q.answer])}\n     why: {plain(q.why)}")
        return lines

    def verdict(self, score: float) -> str:
        """What the attempt just recorded means: counted (a first attempt on its form) or practice."""
        entry = progress.load()["quizzes"].get(self.lesson, {})
        more = len(entry.get("seen_forms", [])) < len(self.forms)
        if not entry.get("last_counted", True):
            return ("  practice: this form's answers were shown before, so it does not count"
                    + ("" if more else " (every form has been seen)"))
        if score >= progress.PASS_MARK:
            return "  lesson complete (a first attempt on this form)"
        return ("  (75% on a first attempt completes the lesson; "
                + ("another form is ready)" if more else "every form has been seen)"))

    def summary(self) -> str:
        """One line naming the quiz, for a text-only display."""
        return (f"Quiz {self.lesson}: {len(self.questions)} questions; {progress.PASS_MARK:.0%} "
                "completes the lesson. Run this cell in JupyterLab to answer them.")
