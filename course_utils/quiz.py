"""Mastery quizzes: a few multiple-choice questions at the end of each lesson.

``quiz("01")`` shows the lesson's quiz as a widget; Submit scores it, explains each answer and
records the score in progress. 75% or more marks the lesson complete. ``Quiz.grade`` is the same
scoring without a widget (tests and scripts).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from course_utils import progress


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


def _shuffled(question: Question, seed: str) -> Question:
    """The same question with its choices in a fixed pseudo-random order (the key is never a
    position a learner can learn); the seed is a string, so the order is the same in every run."""
    order = list(range(len(question.choices)))
    random.Random(seed).shuffle(order)
    return Question(question.prompt, tuple(question.choices[i] for i in order),
                    order.index(question.answer), question.why)


class Quiz:
    """A lesson's mastery quiz; choices are shown in a fixed shuffled order."""

    def __init__(self, lesson: str, questions: Sequence[Question]):
        if not questions:
            raise ValueError(f"quiz {lesson} has no questions")
        self.lesson = lesson
        self.questions = tuple(_shuffled(q, f"{lesson}.{i}") for i, q in enumerate(questions))

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
        """One line per question: right or wrong, and the explanation."""
        lines = []
        for i, (pick, q) in enumerate(zip(picks, self.questions, strict=True), 1):
            mark = "✔" if pick == q.answer else "✘"
            lines.append(f"{mark} Q{i}: {q.choices[q.answer]} — {q.why}")
        return lines

    def summary(self) -> str:
        return (f"Quiz {self.lesson}: {len(self.questions)} questions. Pick an answer for each, "
                f"then press Submit ({progress.PASS_MARK:.0%} completes the lesson).")

    def widget(self):
        """The quiz as ipywidgets: one radio group per question, Submit, and a feedback area."""
        import ipywidgets as w

        groups = [w.RadioButtons(options=list(q.choices), value=None, layout={"width": "auto"})
                  for q in self.questions]
        submit, out = w.Button(description="Submit", button_style="primary"), w.Output()

        def on_submit(_):
            picks = [None if g.index is None else g.index for g in groups]
            score = self.grade(picks)
            verdict = ("  lesson complete" if score >= progress.PASS_MARK
                       else "  (75% completes the lesson)")
            out.outputs = ()
            out.append_stdout("\n".join([f"Score: {score:.0%}{verdict}", *self.feedback(picks)])
                              + "\n")

        submit.on_click(on_submit)
        rows = []
        for i, (q, g) in enumerate(zip(self.questions, groups, strict=True), 1):
            rows += [w.HTML(f"<b>Q{i}.</b> {q.prompt}"), g]
        return w.VBox([*rows, submit, out])

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.widgets import bundle

        return bundle(self.widget(), self.summary(), **kwargs)


def quiz(lesson: str) -> Quiz:
    """The mastery quiz of a lesson ("01"); display it as a cell's last expression."""
    from course_utils import bank

    return bank.quiz(lesson)
