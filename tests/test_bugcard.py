"""Does the spot-the-bug card ask for a hypothesis first, grade and record the answer, reveal the
fix, and read well as plain text where widgets do not render?"""

import pytest

from course_utils import drills
from course_utils.core import progress
from course_utils.drills.hypothesis_gate import hypothesis_problem
from course_utils.learner import bugcard
from course_utils.learner.bugcard import LETTERS, BugCard, card

DRILL = drills.get("losses.double_softmax")


def right_letter(drill=DRILL) -> str:
    return LETTERS[drill.question.answer]


def wrong_index(drill=DRILL) -> int:
    return (drill.question.answer + 1) % len(drill.question.choices)


def test_the_text_shows_the_code_question_and_lettered_choices_but_not_the_fix():
    text = card(DRILL.id).text()
    assert DRILL.buggy_code.splitlines()[-1].strip() in text
    assert DRILL.question.prompt in text
    for i, choice in enumerate(DRILL.question.choices):
        assert f"{LETTERS[i]}) {choice}" in text
    assert "The fix:" not in text and DRILL.explanation not in text
    assert "The fix:" in card(DRILL.id).text(reveal=True)


def test_repr_is_the_plain_text_card():
    assert repr(card(DRILL.id)) == card(DRILL.id).text()


@pytest.mark.parametrize("junk", ["   ", "x", "the bug", "asdf asdf asdf", "I think it is wrong",
                                  "\n\t \n", "lorem ipsum dolor sit amet " * 40, "line 999 is wrong here"])
def test_an_answer_without_a_real_hypothesis_is_refused_and_not_recorded(junk):
    with pytest.raises(ValueError, match="hypothesis first|name what you suspect"):
        card(DRILL.id).answer(right_letter(), junk)
    assert drills.answers() == {}


@pytest.mark.parametrize("hypothesis", ["line 11 feeds probabilities to the loss",
                                        "cross_entropy gets softmax output", "the loss plateaus early"])
def test_a_hypothesis_naming_a_line_a_name_in_the_code_or_a_symptom_opens_the_choices(hypothesis):
    assert hypothesis_problem(DRILL.buggy_code, hypothesis) is None


def test_the_title_and_id_appear_only_after_the_answer():
    c = card(DRILL.id)
    assert DRILL.title not in c.text() and DRILL.id not in c.text()
    c.answer(right_letter(), "softmax is applied before the loss")
    assert DRILL.title in c.text() and DRILL.id in c.text()


def test_a_card_by_number_does_not_name_the_bug_in_the_cell():
    assert card(1).drill == drills.all_drills()[0]
    with pytest.raises(ValueError, match="card number"):
        card(len(drills.all_drills()) + 1)


def test_a_right_answer_by_letter_is_graded_and_recorded_under_the_drills_key():
    progress.record_quiz("01", 1.0)
    feedback = card(DRILL.id).answer(right_letter().lower(), "softmax is applied twice")
    assert feedback.startswith("✔ Right")
    entry = progress.load()["drills"][DRILL.id]
    assert entry["right"] == 1 and entry["hypothesis"] == "softmax is applied twice"
    assert progress.load()["quizzes"]["01"]["best"] == 1.0


def test_a_wrong_answer_by_index_names_the_right_choice():
    feedback = card(DRILL.id).answer(wrong_index(), "the learning rate is too high for this loss")
    assert feedback.startswith("✘ Not quite") and f"the answer is {right_letter()})" in feedback
    assert drills.answers()[DRILL.id]["last"] == "wrong"


@pytest.mark.parametrize("choice", ["Z", 7, -1, True, "AB"])
def test_a_choice_that_is_not_on_the_card_is_an_error(choice):
    with pytest.raises(ValueError, match="choice must be"):
        card(DRILL.id).answer(choice, "the loss plateaus above zero")


def test_reveal_shows_the_fixed_code_the_explanation_its_source_and_the_exercise():
    text = card(DRILL.id).reveal()
    assert "F.cross_entropy(model(x), y)" in text
    assert DRILL.explanation in text and DRILL.source in text and "07.logits_loss" in text


def test_a_card_accepts_a_drill_object_and_an_unknown_id_is_an_error():
    assert BugCard(DRILL).drill is DRILL
    with pytest.raises(KeyError):
        card("no.such_drill")


def test_the_widget_enables_choices_only_after_a_hypothesis_and_submit_only_after_a_choice():
    c = card(DRILL.id)
    c.widget()
    ui = c.controls
    assert ui.choices.disabled and ui.submit.disabled and ui.reveal.disabled
    ui.choices.index = 0
    assert ui.submit.disabled
    ui.hypothesis.value = "the loss is fed probabilities"
    assert not ui.choices.disabled and not ui.submit.disabled
    ui.hypothesis.value = "  "
    assert ui.choices.disabled and ui.submit.disabled


def test_the_widget_submits_records_then_reveals_the_fix():
    c = card(DRILL.id)
    c.widget()
    ui = c.controls
    ui.hypothesis.value = "softmax applied twice"
    ui.choices.index = DRILL.question.answer
    ui.submit.click()
    assert "Right" in ui.feedback.value and not ui.reveal.disabled
    assert drills.answers()[DRILL.id]["right"] == 1
    assert ui.fix.value == ""
    ui.reveal.click()
    assert "The fix:" in ui.fix.value and "cross_entropy(model(x), y)" in ui.fix.value
    assert "<code>course start 07</code>" in ui.fix.value  # code as code, never a raw backtick


def test_card_text_has_no_raw_backticks():
    c = card(DRILL.id)
    assert "`" not in c.text() and "`" not in c.reveal() and "course start 07" in c.reveal()


def test_the_run_button_shows_the_measured_symptom():
    c = card("losses.softmax_wrong_dim")
    c.widget()
    c.controls.run.click()
    assert "symptom: sums over the vocabulary" in c.controls.symptom.outputs[0]["text"]


def test_the_buttons_have_stable_descriptions_for_browser_tests():
    c = card(DRILL.id)
    c.widget()
    ui = c.controls
    assert (ui.submit.description, ui.reveal.description, ui.run.description) == (
        bugcard.SUBMIT, bugcard.REVEAL, bugcard.RUN) == ("Submit", "Reveal", "Run the buggy code")
    assert ui.hypothesis.description == "Hypothesis"


def test_the_display_bundle_is_a_widget_with_the_card_text_as_text_plain():
    bundle = card(DRILL.id)._repr_mimebundle_()
    assert bundle["text/plain"] == card(DRILL.id).text()
    assert "application/vnd.jupyter.widget-view+json" in bundle
