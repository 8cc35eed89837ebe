"""Lessons 00-04: judges trust what the case's harness recorded, never what the answer says.

Two kinds of wrong answer live here rather than among an exercise's hand mutants (which must also
be rejected after ``course grade``'s trip, where only the value travels):

- answers that return the right value but change their inputs or leave state behind, which only
  ``check()``'s own process can see;
- forged claims: for every exercise that judges a run (the timing and sync exercises of lesson 03
  and 04.prefix_sum), an answer that reports the right figure without doing what it claims, or
  slips out of the harness's record. The harness (``labs.case_inputs``: the fake device's events,
  the training run's reads, the watched tensor's ops) is the evidence; each forgery is refused.
"""

from __future__ import annotations

import copy

import pytest
import torch

from course_utils import bank
from course_utils.bank.lesson00.count_params import counts_in_eval_mode, freezes_as_it_counts
from course_utils.bank.lesson02.retry_halving import twice_per_size
from course_utils.bank.lesson02.saved_bytes import _default_hooks_registered, leaves_hooks_on
from course_utils.bank.lesson02.state_bytes import steps_the_optimizer
from course_utils.bank.lesson03.honest_timer import honest_time
from course_utils.bank.lesson03.sync_lines import SYNCING
from course_utils.bank.lesson04.prefix_sum import in_place, via_numpy
from course_utils.labs.case_inputs import FakeDevice, TrainingRun
from course_utils.learner.checking import find_failure

IN_PROCESS_WRONG = [
    ("00.count_params", "freezes the parameters it has counted", freezes_as_it_counts, "requires_grad"),
    ("00.count_params", "calls model.eval() first", counts_in_eval_mode, "eval mode"),
    ("02.retry_halving", "tries every size twice before halving", twice_per_size, "called step with sizes"),
    ("02.saved_bytes", "leaves its saved-tensor hooks registered", leaves_hooks_on, "left registered"),
    ("02.state_bytes", "steps the optimizer it was given", steps_the_optimizer, "stepped the optimizer"),
    ("04.prefix_sum", "writes the sums into x", in_place, "changed its input `x`"),
    ("04.prefix_sum", "NumPy's cumsum on the host", via_numpy, "read x to the host"),
    ("04.find_fallbacks", "pops the events it reads", lambda events: _popping(events), "changed its input"),
]


def _popping(events):
    found = []
    while events:
        e = events.pop(0)
        if "mps" in (e["inputs"] or e["outputs"]) and not e["mps_kernel"] and e["op"] not in found:
            found.append(e["op"])
    return found


@pytest.mark.parametrize("exercise_id, name, answer, words", IN_PROCESS_WRONG,
                         ids=[f"{w[0]}: {w[1]}" for w in IN_PROCESS_WRONG])
def test_wrong_answers_only_the_checking_process_sees_are_rejected(exercise_id, name, answer, words):
    failure = find_failure(bank.get(exercise_id), answer, 0)
    assert failure is not None and words in failure.problem, failure and failure.problem
    assert torch.is_grad_enabled()
    assert not _default_hooks_registered()


# --- forged claims, one set per judged run ---------------------------------------------------------


def _made_up_time(fn, sync, clock, warmup, repeats):
    """Reads the device's settings and reports what an honest timer would measure; times nothing."""
    device = fn.__self__
    return device.launch + device.work + device.sync_cost


def _timed_on_a_copy(fn, sync, clock, warmup, repeats):
    """Makes the calls unsynchronized on the real device, then reports an honest figure measured on
    a copy of it (the device it was given never saw a synchronized call)."""
    twin = copy.deepcopy(fn.__self__)
    for _ in range(warmup + repeats):
        fn()
    return honest_time(twin.run, twin.sync, twin.clock, warmup, repeats)


def _median_of_nothing_measured(fn, sync, clock, warmup, repeats):
    """Runs the protocol but reports a different statistic dressed as the median."""
    honest = honest_time(fn, sync, clock, warmup, repeats)
    return honest * (1 + 1e-4)


def _claims_from_the_statement_list(loop, model, batches):
    """Never runs the loop: claims a sync per step for every statement it knows to sync."""
    return {13 + i: len(batches) for i, s in enumerate(loop.statements) if s in SYNCING}


class _AgreeableDict(dict):
    """A claim that says it equals whatever it is compared with."""

    def __eq__(self, other):
        return True

    __hash__ = dict.__hash__


def _agreeable_claim(loop, *args):
    return _AgreeableDict()


def _reads_out_of_the_record(step, n_steps, n):
    """Reads every step, through a plain tensor that is not the tracked loss."""
    return [step().as_subclass(torch.Tensor).item() for _ in range(n_steps)]


def _reads_a_trained_copy(step, n_steps, n):
    """Trains a copy of the run (whose reads are the copy's) and never touches the run given."""
    twin = copy.deepcopy(step)
    return [twin().item() for _ in range(n_steps)]


def _pickles_the_losses(step, n_steps, n):
    """Reads each loss by pickling it: a host copy all the same."""
    import pickle

    return [float(pickle.loads(pickle.dumps(step()))) for _ in range(n_steps)]


def _cumsum_out_of_the_record(x):
    return torch.cumsum(x.as_subclass(torch.Tensor), dim=-1)


def _cumsum_of_a_list(x):
    return torch.tensor(x.tolist(), dtype=x.dtype).cumsum(-1)


FORGED = [
    ("03.honest_timer", "a made-up time from the device's settings", _made_up_time,
     "ran fn 0 times"),
    ("03.honest_timer", "an honest figure measured on a copy of the device", _timed_on_a_copy,
     "was not measured between two clock reads"),
    ("03.honest_timer", "a statistic that is not the median of what was measured",
     _median_of_nothing_measured, "!= expected"),
    ("03.sync_lines", "claims from the loop's statement list, never run", _claims_from_the_statement_list,
     "key"),
    ("03.sync_lines", "a dict that says it equals anything", _agreeable_claim, "keys differ"),
    ("03.log_every_n", "reads every step through a plain tensor", _reads_out_of_the_record,
     "read the device"),
    ("03.log_every_n", "trains and reads a copy of the run", _reads_a_trained_copy,
     "ran 0 of its"),
    ("03.log_every_n", "reads each loss through pickle", _pickles_the_losses, "read the device"),
    ("04.prefix_sum", "cumsum on a plain tensor out of the record", _cumsum_out_of_the_record,
     "still runs aten::cumsum"),
    ("04.prefix_sum", "cumsum of a Python list of x", _cumsum_of_a_list, "read x to the host"),
]


@pytest.mark.parametrize("exercise_id, name, answer, words", FORGED, ids=[f"{w[0]}: {w[1]}" for w in FORGED])
def test_a_forged_claim_about_a_judged_run_is_refused(exercise_id, name, answer, words):
    failure = find_failure(bank.get(exercise_id), answer, 0)
    assert failure is not None and words in failure.problem, failure and failure.problem


def test_every_judged_run_of_lessons_03_and_04_has_a_forgery_and_is_graded_only_in_process():
    judged = {"03.honest_timer", "03.sync_lines", "03.log_every_n", "04.prefix_sum"}
    assert {f[0] for f in FORGED} == judged
    for exercise_id in judged - {"03.sync_lines"}:  # sync_lines compares with the checker's own run
        assert bank.get(exercise_id).in_process_only


def test_the_fake_device_records_what_a_timer_really_measured():
    dev = FakeDevice(launch=0.001, work=0.01, sync_cost=0.0, jitter=(0.0, 0.002))
    dev.run()  # warm-up
    dev.sync()
    start = dev.clock()
    dev.run()
    dev.sync()
    end = dev.clock()
    dev.run()  # timed without a sync after it
    dev.clock()
    assert dev.timed(1) == [end - start, None]
    assert end - start == pytest.approx(0.001 + 0.01 + 0.002)


def test_a_training_run_records_reads_per_step_where_the_answer_cannot_reach():
    run = TrainingRun(3, seed=0)
    first = run()
    assert not hasattr(first, "_reads") and not hasattr(first, "reads")
    first.detach().cpu().tolist()  # one read: .cpu() of a cpu stand-in is not counted twice
    run()
    assert run.reads == ["to host"] and run.reads_before_step == [0, 1] and run.steps_done == 2
    buffer = torch.zeros(1)
    buffer[0] = run()  # written into a host tensor: a read
    assert run.reads == ["to host", "to host"]
    assert pickle_round_trip(run).steps_done == 0  # a pickled run is a fresh one


def pickle_round_trip(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))
