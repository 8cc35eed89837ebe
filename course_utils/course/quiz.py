"""Mastery quizzes: a few multiple-choice questions at the end of each lesson.

``quiz("01")`` shows the lesson's quiz as a widget; Submit scores it, explains each answer and
records the score in progress. 75% or more marks the lesson complete. ``Quiz.grade`` is the same
scoring without a widget (tests and scripts).
"""

from __future__ import annotations

from course_utils.core import progress
from course_utils.core.questions import Question, Quiz, as_html, plain

__all__ = ["Question", "Quiz", "QuizView", "quiz"]


class QuizView:
    """A quiz as a notebook shows it: ipywidgets where they render, its summary elsewhere."""

    def __init__(self, quiz: Quiz):
        self.quiz = quiz

    def __getattr__(self, name: str):
        return getattr(self.quiz, name)

    def widget(self):
        """The quiz as ipywidgets: one radio group per question, Submit, and a feedback area."""
        import ipywidgets as w

        quiz = self.quiz
        groups = [w.RadioButtons(options=[plain(c) for c in q.choices], value=None,
                                 layout={"width": "auto"}) for q in quiz.questions]
        submit, out = w.Button(description="Submit", button_style="primary"), w.Output()

        def on_submit(_):
            picks = [None if g.index is None else g.index for g in groups]
            score = quiz.grade(picks)
            verdict = ("  lesson complete" if score >= progress.PASS_MARK
                       else "  (75% completes the lesson)")
            out.outputs = ()
            out.append_stdout("\n".join([f"Score: {score:.0%}{verdict}", *quiz.feedback(picks)])
                              + "\n")

        submit.on_click(on_submit)
        rows = []
        for i, (q, g) in enumerate(zip(quiz.questions, groups, strict=True), 1):
            rows += [w.HTML(f"<b>Q{i}.</b> {as_html(q.prompt)}"), g]
        return w.VBox([*rows, submit, out])

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.course.widgets import bundle

        return bundle(self.widget(), self.quiz.summary(), **kwargs)


def quiz(lesson: str) -> QuizView:
    """The mastery quiz of a lesson ("01"); display it as a cell's last expression."""
    from course_utils import bank

    return QuizView(bank.quiz(lesson))
