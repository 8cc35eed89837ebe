"""Do ``check()`` and ``course grade`` give every exercise the same verdict on the same answer?

``check()`` calls the answer in the learner's own kernel; ``course grade`` calls it in the
submission's process (``runner.call_all``) and judges what comes back over the wire
(``judging.verdict``). Both sides run here on every exercise's cases, for answers that differ
from the reference only in what the trip could lose: the type of the value they return (numpy
scalars and arrays, a namedtuple, a list subclass) and what they leave behind (changed inputs, a
model switched to eval mode, gradients left off).
"""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest
import torch
from torch import nn

from course_utils.core.exercise import run
from course_utils.core.judgement import first_failure
from course_utils.grader import judging, runner
from course_utils.grader.sandbox import RunStatus
from course_utils.learner.lessons import LESSONS

CASES = 4  # per exercise: the first (the author's fixed ones); enough to see a property judged
Pair = collections.namedtuple("Pair", "first second")


class Items(list):
    """A list subclass an answer might build."""


def exercises() -> list:
    return [ex for lesson in LESSONS for ex in judging.lesson_exercises(lesson.number)
            if not ex.in_process_only]


@pytest.fixture(scope="module")
def prepared() -> dict[str, judging.Prepared]:
    """Every exercise batch grading takes, with its cases and the reference's outcomes (no
    self-test: both sides judge the same cases here)."""
    found = {}
    for ex in exercises():
        cases = ex.cases(3)[:CASES]
        found[ex.id] = judging.Prepared(ex, cases, [run(ex.reference, c) for c in cases])
    return found


def by_check(prep: judging.Prepared, answer) -> bool:
    """``check()``'s verdict: the answer called here, judged with its inputs as it left them."""
    return first_failure(prep.exercise, prep.cases, prep.expected,
                         (run(answer, c) for c in prep.cases)) is None


def by_grade(prep: judging.Prepared, answer) -> bool:
    """``course grade``'s verdict: the runner's record, through JSON, judged by the grader."""
    record = runner.call_all(answer, [(c.args, c.kwargs) for c in prep.cases], 120.0)
    record = json.loads(json.dumps(record))
    return judging.verdict(prep, record, RunStatus(returncode=0), 120.0).status == "pass"


def as_numpy(value):
    """The value as numpy would hand it over: numpy scalars for numbers, arrays for tensors."""
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value) if abs(value) < 2**63 else value
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, torch.Tensor) and value.device.type == "cpu" and not value.requires_grad:
        return value.numpy()
    if isinstance(value, tuple):
        return tuple(as_numpy(v) for v in value)
    if isinstance(value, list):
        return [as_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    return value


def narrow(value):
    """Smaller numpy types: np.int32, np.float32, np.uint8 where the value fits."""
    if type(value) is int and 0 <= value < 256:
        return np.uint8(value)
    if type(value) is int and abs(value) < 2**31:
        return np.int32(value)
    if type(value) is float:
        return np.float32(value)
    return value


def subclassed(value):
    """A namedtuple for a pair, a list subclass for a list."""
    if type(value) is tuple and len(value) == 2:
        return Pair(*value)
    if type(value) is list:
        return Items(value)
    return value


def returning(convert):
    def make(reference):
        def answer(*args, **kwargs):
            return convert(reference(*args, **kwargs))
        return answer
    return make


def _first(args, kind):
    return next((a for a in args if isinstance(a, kind)), None)


def changing_inputs(reference):
    def answer(*args, **kwargs):
        out = reference(*args, **kwargs)
        tensor = _first(args, torch.Tensor)
        module = _first(args, nn.Module)
        with torch.no_grad():
            if tensor is not None and tensor.numel() and tensor.device.type != "meta":
                tensor.view(-1)[0] += 1
            elif module is not None:
                params = [p for p in module.parameters() if p.numel() and p.device.type != "meta"]
                if params:
                    params[0].view(-1)[0] += 1
        return out
    return answer


def switching_mode(reference):
    def answer(*args, **kwargs):
        out = reference(*args, **kwargs)
        for module in (a for a in args if isinstance(a, nn.Module)):
            module.train(not module.training)
        return out
    return answer


def leaving_grad_off(reference):
    def answer(*args, **kwargs):
        out = reference(*args, **kwargs)
        torch.set_grad_enabled(False)
        return out
    return answer


ANSWERS = {"numpy values": returning(as_numpy), "narrow numpy values": returning(narrow),
           "namedtuple and list subclass": returning(subclassed), "changes its inputs": changing_inputs,
           "switches the model's mode": switching_mode, "leaves gradients off": leaving_grad_off}


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_do_check_and_course_grade_agree_on_every_exercise(prepared, kind):
    disagree = {}
    for ex_id, prep in prepared.items():
        answer = ANSWERS[kind](prep.exercise.reference)
        in_kernel, in_batch = by_check(prep, answer), by_grade(prep, answer)
        torch.set_grad_enabled(True)
        if in_kernel != in_batch:
            disagree[ex_id] = {"check": in_kernel, "grade": in_batch}
    assert disagree == {}


def test_does_the_agreement_test_see_the_properties_it_compares(prepared):
    """The hostile answers are caught somewhere, so the agreement above is not agreement on pass."""
    prep = prepared["01.same_device"]
    assert not by_check(prep, changing_inputs(prep.exercise.reference))
    assert not by_check(prep, switching_mode(prep.exercise.reference))
    batch_bytes = prepared["01.batch_bytes"]
    assert by_check(batch_bytes, returning(as_numpy)(batch_bytes.exercise.reference))
