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

from course_utils.core import progress


def plain(text: str) -> str:
    """Markdown's code marks dropped, for text shown as plain output."""
    return text.replace("`", "")


_CODE_SPAN = re.compile(r"`([^`]+)`")


def as_html(text: str) -> str:
    """Text escaped for HTML, its `code` spans as <code> (no raw backticks on the learner's screen)."""
    return _CODE_SPAN.sub(r"<code>\1</code>", html.escape(text, quote=False)).replace("`", "")


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
