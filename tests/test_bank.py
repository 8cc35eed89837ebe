"""Is every exercise well declared: references pass, mutants fail with a useful message?"""

import re

import pytest
import torch
from torch import nn

from course_utils import bank
from course_utils.learner.checking import CheckFailed, check, find_failure

EXERCISES = [bank.get(i) for i in bank.ids()]
MUTANTS = [(ex, name, fn) for ex in EXERCISES for name, fn in ex.mutants.items()]
ALTERNATIVES = [(ex, name, fn) for ex in EXERCISES for name, fn in ex.alternatives.items()]
# Lessons whose every exercise must have two alternative answers or more (widen as lessons catch up).
LESSONS_WITH_ALTERNATIVES = ["00", "01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.id)
@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_every_reference_passes_its_own_cases(ex, seed):
    assert find_failure(ex, ex.reference, seed) is None


@pytest.mark.parametrize("ex, name, mutant", MUTANTS, ids=lambda v: v if isinstance(v, str) else
                         getattr(v, "id", ""))
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


@pytest.mark.parametrize("ex, name, answer", ALTERNATIVES, ids=lambda v: v if isinstance(v, str) else
                         getattr(v, "id", ""))
def test_every_alternative_right_answer_passes(ex, name, answer):
    seeds = (0,) if ex.lesson == "08" else (0, 1, 2024)  # a capstone case trains a model: one seed
    for seed in seeds:
        failure = find_failure(ex, answer, seed)
        assert failure is None, f"seed {seed}, case '{failure.case.label}': {failure.problem}"


@pytest.mark.parametrize("ex", [ex for ex in EXERCISES if ex.lesson in LESSONS_WITH_ALTERNATIVES],
                         ids=lambda ex: ex.id)
def test_every_exercise_has_two_alternative_answers(ex):
    assert len(ex.alternatives) >= 2


# Wrong answers only check()'s own process can see (they return the right value, but change their
# inputs, leave state behind, or replace a Parameter object): not hand mutants, which must also be
# rejected after `course grade`'s trip from a submission, where only the value travels.


def _new_parameters(model):
    for name, p in list(model.named_parameters()):
        if not p.is_contiguous():
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner), attr,
                    nn.Parameter(p.detach().contiguous(), requires_grad=p.requires_grad))
    return model


def _grad_left_off(model):
    torch.set_grad_enabled(False)
    for p in model.parameters():
        p.data = p.data.contiguous()
    return model


def _frozen_prediction(model, x):
    model.eval()
    model.requires_grad_(False)  # no graph, but the model is left frozen
    return model(x)


def _grad_mode_prediction(model, x):
    model.eval()
    torch.set_grad_enabled(False)
    return model(x)


def _frozen_before_training(model, optimizer, batches):
    import torch.nn.functional as F

    for x, y in batches:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model.eval()


def _machine_left_on(machine, op="addcmul_"):
    from course_utils.bank.lesson06.minimal_repro import shows_bug

    answer = shows_bug(machine, op)
    machine.__enter__()  # never exited
    return answer


IN_PROCESS_WRONG = [
    ("05.fix_layout", "new nn.Parameter objects (requires_grad kept)", _new_parameters, "new nn.Parameter"),
    ("05.fix_layout", "leaves gradients switched off", _grad_left_off, "switched off"),
    ("07.predict", "freezes the model instead of no_grad", _frozen_prediction, "requires_grad"),
    ("07.predict", "set_grad_enabled(False), never undone", _grad_mode_prediction, "switched off"),
    ("07.unit_rows", "divides x in place", lambda x: x.div_(x.norm(dim=-1, keepdim=True).clamp_min(1e-12)),
     "changed its input `x`"),
    ("07.masked_attention", "transposes k in place", lambda q, k, v, m: bank.get("07.masked_attention")
     .reference(q, k.transpose_(-2, -1).transpose(-2, -1), v, m), "changed its input `k`"),
    ("07.split_normalise", "normalises train in place", lambda train, test: (
        (lambda mean, std: (train.sub_(mean).div_(std), (test - mean) / std))(train.mean(0), train.std(0))),
     "changed its input `train`"),
    ("07.zero_grad_loop", "returns the model in eval mode", _frozen_before_training, "eval mode"),
    ("06.minimal_repro", "leaves the machine switched on", _machine_left_on, "left switched on"),
]


@pytest.mark.parametrize("exercise_id, name, answer, words", IN_PROCESS_WRONG,
                         ids=[f"{w[0]}: {w[1]}" for w in IN_PROCESS_WRONG])
def test_wrong_answers_only_the_checking_process_sees_are_rejected(exercise_id, name, answer, words):
    try:
        failure = find_failure(bank.get(exercise_id), answer, 0)
    finally:
        torch.set_grad_enabled(True)
    assert failure is not None and words in failure.problem, failure and failure.problem
    assert torch.is_grad_enabled()
    from course_utils.toolkit.emulate import inplace

    assert inplace.active() is None

