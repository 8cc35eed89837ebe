"""Multiple-choice questions as data: the lessons' mastery quizzes and the drills' questions.

Choices are shown in an order fixed by a string seed, so the right answer is not always in the
same position and every run shows the same order. A quiz holds two forms or more of each question,
so a retry after the feedback (which shows the answers) asks the same ideas afresh. The widget
that displays a quiz lives in ``course_utils.course.quiz``.
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
