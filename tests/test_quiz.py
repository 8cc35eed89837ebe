"""Do quizzes score, explain, record progress, and work from the widget?"""

import pytest

from course_utils.bank import quizzes as bank_quizzes
from course_utils.core import progress
from course_utils.learner.quiz import Question, Quiz, QuizView, quiz


def test_grading_records_the_score_and_75_percent_completes():
    q = quiz("01")
    right = [question.answer for question in q.questions]
    assert q.grade(right) == 1.0
    wrong_two = [None, None] + right[2:]
    assert q.grade(wrong_two) == pytest.approx(0.6)
    entry = progress.load()["quizzes"]["01"]
    assert entry["best"] == 1.0 and entry["complete"] is True and entry["attempts"] == 2


def test_feedback_marks_each_question_and_explains():
    q = quiz("00")
    first = q.questions[0]
    wrong = (first.answer + 1) % len(first.choices)
    lines = q.feedback([first.answer, None, None, None])
    assert lines[0].startswith("✔ Q1  your answer: ") and "correct:" not in lines[0]
    assert lines[1].startswith("✘ Q2  your answer: (no answer)") and "correct: " in lines[1]
    wrong_line = q.feedback([wrong, None, None, None])[0]
    assert f"your answer: {first.choices[wrong]}".replace("`", "") in wrong_line
    assert f"correct: {first.choices[first.answer]}".replace("`", "") in wrong_line
    assert "why: " in wrong_line and "`" not in "".join(lines)


def test_a_wrong_number_of_answers_is_an_error():
    with pytest.raises(ValueError, match="has 5 questions, got 1"):
        quiz("01").grade([0])


def test_an_answer_key_outside_the_choices_is_rejected_when_declared():
    with pytest.raises(ValueError, match="not a choice"):
        Question("?", ("a", "b"), 2, "why")


def test_the_widget_submit_button_scores_and_records():
    q = Quiz("99", [Question("2+2?", ("3", "4"), 1, "arithmetic")])
    box = QuizView(q).widget()
    radio, submit, out = box.children[1], box.children[2], box.children[3]
    radio.index = q.questions[0].answer
    submit.click()
    assert progress.load()["quizzes"]["99"]["best"] == 1.0
    assert "Score: 100%" in out.outputs[0]["text"]


def test_the_display_has_a_short_text_stand_in_for_nbval():
    bundle = quiz("01")._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Quiz 01: 5 questions")
    assert "Submit" not in bundle["text/plain"]  # the text stands in where there is no button
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_the_widget_shows_code_as_code_and_no_raw_backticks():
    q = Quiz("99", [Question("Where does `x.cpu()` <wait>?", ("in `a`", "b"), 0, "`why`")])
    box = QuizView(q).widget()
    prompt, radio = box.children[0], box.children[1]
    assert prompt.value == "<b>Q1.</b> Where does <code>x.cpu()</code> &lt;wait&gt;?"
    assert sorted(radio.options) == ["b", "in a"]


def test_an_unknown_lesson_has_no_quiz():
    with pytest.raises(KeyError, match="no quiz for lesson '42'"):
        quiz("42")


def test_answer_positions_vary_and_are_stable_between_runs():
    for q in bank_quizzes():
        assert len({question.answer for question in q.questions}) > 1, q.lesson
    again = Quiz("01", [Question("p", ("a", "b", "c", "d"), 2, "w")])
    assert again.questions[0].choices[again.questions[0].answer] == "c"
    assert again.questions == Quiz("01", [Question("p", ("a", "b", "c", "d"), 2, "w")]).questions


def test_only_a_first_attempt_on_a_form_counts_and_a_retry_serves_another_form():
    q = quiz("02")
    assert q.next_form() == 0
    first = q.form(0)
    assert q.grade([None] * len(first), form=0) == 0.0
    assert q.next_form() == 1  # the feedback showed form A's answers: a retry gets form B
    assert q.grade([x.answer for x in first], form=0) == 1.0  # A again, answers known: practice
    entry = progress.load()["quizzes"]["02"]
    assert entry["complete"] is False and entry["practice_best"] == 1.0 and "counted" not in entry
    assert [x.prompt for x in q.form(1)] != [x.prompt for x in first]
    assert q.grade([x.answer for x in q.form(1)], form=1) == 1.0
    entry = progress.load()["quizzes"]["02"]
    assert entry["complete"] is True and entry["counted"]["attempt"] == 3
    assert entry["counted"]["form"] == 1
    row = next(r for r in progress.rows() if r[0] == "quiz 02")
    assert row[1] == "complete (attempt 3, form 2)" and "not counted" in row[3]


def test_when_every_form_was_seen_further_attempts_are_practice():
    q = quiz("03")
    for form in range(len(q.forms)):
        q.grade([None] * len(q.form(form)), form=form)
    q.grade([x.answer for x in q.form(0)], form=0)
    assert progress.load()["quizzes"]["03"]["complete"] is False
    assert "every form has been seen" in q.verdict(1.0)


def test_the_widget_serves_another_form_after_a_submit():
    q = Quiz("98", [(Question("2+2?", ("3", "4"), 1, "sum"), Question("3+3?", ("6", "5"), 0, "sum"))])
    box = QuizView(q).widget()
    box.children[1].index = None
    box.children[2].click()  # submitted blank: 0%, and form A's answers are shown
    out, retry = box.children[3], box.children[4]
    assert "another form is ready" in out.outputs[0]["text"]
    retry.click()
    prompt, radio = box.children[0], box.children[1]
    assert prompt.value == "<b>Q1.</b> 3+3?"
    radio.index = q.form(1)[0].answer
    box.children[2].click()
    assert "lesson complete" in box.children[3].outputs[0]["text"]
    assert progress.load()["quizzes"]["98"]["counted"]["form"] == 1
