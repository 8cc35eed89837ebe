"""Can a test-taker who reads no code pass a mastery quiz? Every surface solver (longest, shortest,
stem or code overlap, odd one out, positions, absolute or hedged words, digits, ...) is held near
chance over all quizzes and below the pass mark on every form of every lesson's quiz."""

import pytest

from course_utils import bank
from course_utils.author import cue_solvers
from course_utils.author.cue_solvers import MARGIN, SOLVERS, accuracy, chance, quiz_sets, table
from course_utils.core import progress
from course_utils.core.questions import Question

SETS = quiz_sets()
EVERY = [q for qs in SETS.values() for q in qs]


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_no_surface_solver_beats_chance_by_more_than_the_margin_over_all_quizzes(solver):
    score, base = accuracy(SOLVERS[solver], EVERY), chance(EVERY)
    assert abs(score - base) <= MARGIN, f"{solver}: {score:.0%} against chance {base:.0%}"


def test_no_surface_solver_reaches_the_pass_mark_on_any_form_of_any_quiz():
    scores = table(SETS)
    passing = [f"{solver} on {form}: {row[form]:.0%}" for solver, row in scores.items()
               for form in SETS if row[form] >= progress.PASS_MARK]
    assert passing == []


def test_every_question_has_two_forms_that_differ():
    for q in bank.quizzes():
        assert len(q.forms) >= 2, q.lesson
        for i, forms in enumerate(zip(*q.forms, strict=True)):
            first, second = forms[0], forms[1]
            assert (first.prompt, sorted(first.choices)) != (second.prompt, sorted(second.choices)), (
                f"quiz {q.lesson} Q{i + 1}: its second form repeats the first")


def _q(right: str, *wrong: str) -> Question:
    return Question("Which one?", (right, *wrong), 0, "because")


def test_the_solvers_find_the_cues_they_are_named_after():
    """The battery can fail: each solver scores 100% on questions built with its cue."""
    long_right = [_q("the right answer, explained at great length", "wrong", "no", "nope")] * 3
    assert accuracy(SOLVERS["longest"], long_right) == 1.0
    assert accuracy(SOLVERS["explains (colon/semicolon)"], long_right) == 1.0
    assert accuracy(SOLVERS["shortest"], [_q("a", "bbb", "cccc", "ddddd")]) == 1.0
    stem = [Question("Why does the optimizer skip frozen weights?", ("the optimizer skips frozen weights",
                     "a cat", "rain today", "blue sky"), 0, "")]
    assert accuracy(SOLVERS["stem overlap"], stem) == 1.0
    odd = [_q("quantum chromodynamics", "the loss is wrong", "the loss is odd", "the loss is off")]
    assert accuracy(SOLVERS["odd one out"], odd) == 1.0
    hedged = [_q("it usually may help", "it always works", "it never works", "it only works")]
    assert accuracy(SOLVERS["hedged words"], hedged) == 1.0
    assert accuracy(SOLVERS["no absolute words"], hedged) == 1.0
    assert accuracy(SOLVERS["position 1"], long_right) == 1.0


def test_a_tie_is_a_blind_guess_not_a_position():
    same = [_q("aaaa", "bbbb", "cccc", "dddd")]
    assert accuracy(SOLVERS["longest"], same) == pytest.approx(0.25)
    assert cue_solvers.expected_right([1.0, 1.0, 0.0, 0.0], 1) == 0.5
    assert cue_solvers.expected_right([1.0, 1.0, 0.0, 0.0], 2) == 0.0


def test_the_table_prints_every_solver_and_every_form():
    text = cue_solvers.render(table(SETS), chance(EVERY))
    assert text.splitlines()[0] == "chance 25%"
    assert all(name in text for name in SOLVERS) and "08/B" in text
