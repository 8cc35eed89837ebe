"""Is every exercise well declared: references pass, mutants fail with a useful message?"""

import re

import pytest

from course_utils import bank
from course_utils.course.checking import CheckFailed, check, find_failure

EXERCISES = [bank.get(i) for i in bank.ids()]
MUTANTS = [(ex, name, fn) for ex in EXERCISES for name, fn in ex.mutants.items()]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_every_reference_passes_its_own_cases(ex, seed):
    assert find_failure(ex, ex.reference, seed) is None


@pytest.mark.parametrize("ex, name, mutant", MUTANTS, ids=lambda v: v if isinstance(v, str) else "")
def test_every_mutant_is_rejected_naming_case_expected_and_got(ex, name, mutant):
    with pytest.raises(CheckFailed) as info:
        check(ex.id, mutant, seed=0)
    text = str(info.value)
    assert f"failed on case '{info.value.case_label}'" in text
    assert "expected: " in text and "got: " in text and info.value.problem


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
def test_every_exercise_has_hints_mutants_and_a_well_formed_id(ex):
    assert re.fullmatch(r"\d\d\.[a-z0-9_]+", ex.id)
    assert len(ex.hints) >= 2 and len(ex.mutants) >= 2
    assert ex.fixed(), "at least one fixed case"


def test_random_cases_depend_on_the_seed():
    ex = bank.get("01.batch_bytes")
    assert [c.label for c in ex.cases(1)] != [c.label for c in ex.cases(2)]
    assert [c.label for c in ex.cases(1)] == [c.label for c in ex.cases(1)]


def test_every_lesson_with_exercises_has_a_quiz_of_valid_questions():
    lessons = {ex.lesson for ex in EXERCISES}
    quizzes = {q.lesson: q for q in bank.quizzes()}
    assert lessons <= set(quizzes)
    for q in quizzes.values():
        assert len(q.questions) >= 4
