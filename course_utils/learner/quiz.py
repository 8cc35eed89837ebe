"""Mastery quizzes: a few multiple-choice questions at the end of each lesson.

``quiz("01")`` shows the lesson's quiz as a widget; Submit scores it, explains each answer and
records the score in progress. 75% or more on a first attempt marks the lesson complete: the
feedback shows the answers, so a retry ("Another form") serves each question in another form, and a
form answered before is practice that does not count. ``Quiz.grade`` is the same
scoring without a widget (tests and scripts).
"""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz, as_html, plain

__all__ = ["Question", "Quiz", "QuizView", "quiz"]


class QuizView:
    """A quiz as a notebook shows it: ipywidgets where they render, its summary elsewhere."""

    def __init__(self, quiz: Quiz):
        self.quiz = quiz

    def __getattr__(self, name: str):
        return getattr(self.quiz, name)

    def widget(self):
        """The quiz as ipywidgets: one radio group per question, Submit, a feedback area, and (after
        a submit) a button that serves the next form of every question."""
        import ipywidgets as w

        quiz, state = self.quiz, {}
        submit, out = w.Button(description="Submit", button_style="primary"), w.Output()
        retry = w.Button(description="Another form", layout={"display": "none"})
        box = w.VBox()

        def serve(form: int) -> None:
            state["form"] = form
            state["groups"] = [w.RadioButtons(options=[plain(c) for c in q.choices], value=None,
                                              layout={"width": "auto"}) for q in quiz.form(form)]
            rows = []
            for i, (q, g) in enumerate(zip(quiz.form(form), state["groups"], strict=True), 1):
                rows += [w.HTML(f"<b>Q{i}.</b> {as_html(q.prompt)}"), g]
            submit.disabled, retry.layout.display = False, "none"
            out.outputs = ()
            box.children = [*rows, submit, out, retry]

        def on_submit(_):
            picks = [g.index for g in state["groups"]]
            score = quiz.grade(picks, form=state["form"])
            lines = [f"Score: {score:.0%}{quiz.verdict(score)}",
                     *quiz.feedback(picks, form=state["form"])]
            submit.disabled, retry.layout.display = True, None
            out.outputs = ()
            out.append_stdout("\n".join(lines) + "\n")

        submit.on_click(on_submit)
        retry.on_click(lambda _: serve(quiz.next_form()))
        serve(quiz.next_form())
        return box

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.learner.widgets import bundle

        return bundle(self.widget(), self.quiz.summary(), **kwargs)


def quiz(lesson: str) -> QuizView:
    """The mastery quiz of a lesson ("01"); display it as a cell's last expression."""
    from course_utils import bank

    return QuizView(bank.quiz(lesson))
