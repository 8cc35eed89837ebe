"""Multiple-choice questions as data: the lessons' mastery quizzes and the drills' questions.

Choices are shown in an order fixed by a string seed, so the right answer is not always in the
same position and every run shows the same order. The widget that displays a quiz lives in
``course_utils.course.quiz``.
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
    """A lesson's mastery quiz; choices are shown in a fixed shuffled order."""

    def __init__(self, lesson: str, questions: Sequence[Question]):
        if not questions:
            raise ValueError(f"quiz {lesson} has no questions")
        self.lesson = lesson
        self.questions = tuple(q.shuffled(f"{lesson}.{i}") for i, q in enumerate(questions))

    def grade(self, picks: Sequence[int | None]) -> float:
        """Score choice indexes (None = unanswered), record it, and return the fraction right."""
        if len(picks) != len(self.questions):
            raise ValueError(f"quiz {self.lesson} has {len(self.questions)} questions, "
                             f"got {len(picks)} answers")
        right = sum(p == q.answer for p, q in zip(picks, self.questions, strict=True))
        score = right / len(self.questions)
        progress.record_quiz(self.lesson, score)
        return score

    def feedback(self, picks: Sequence[int | None]) -> list[str]:
        """Per question: your answer, the correct one (when yours was not), and why, labelled so a
        wrong answer never reads as if the correct statement were wrong."""
        lines = []
        for i, (pick, q) in enumerate(zip(picks, self.questions, strict=True), 1):
            yours = "(no answer)" if pick is None else plain(q.choices[pick])
            if pick == q.answer:
                lines.append(f"✔ Q{i}  your answer: {yours}\n     why: {plain(q.why)}")
            else:
                lines.append(f"✘ Q{i}  your answer: {yours}\n     correct: "
                             f"{plain(q.choices[q.answer])}\n     why: {plain(q.why)}")
        return lines

    def summary(self) -> str:
        """One line naming the quiz, for a text-only display."""
        return (f"Quiz {self.lesson}: {len(self.questions)} questions; {progress.PASS_MARK:.0%} "
                "completes the lesson. Run this cell in JupyterLab to answer them.")
