"""Fix-it mode on the training-loop drills: does each job check refuse the dodge it was written
for, and does the judge compare a computation's results, not a loop's temporaries?"""

from __future__ import annotations

import pytest

from course_utils import drills
from course_utils.drills import fix_mutants
from course_utils.drills.fixit import assigned_names, judge_edit

# A dodge each job check was written for, and what its rejection must say: the job check (not some
# other failure of the edit) is what refuses it; without the check the symptom alone would pass it.
JOB_CATCHES = (
    ("gradients.weight_decay_on_norms", "no weight decay on any tensor", "weight matrices' decay"),
    ("gradients.accumulation_mean_per_micro_batch", "micro-batches of one length", "micro_batches is not"),
    ("losses.padding_in_lm_loss", "sequences without padding", "tokens is not"),
    ("losses.padding_in_lm_loss", "ignore_index with a rate too small to train", "the final loss"),
    ("data.worker_rng_copies", "load in the main process", "workers"),
    ("data.validation_in_train_mode", "dropout off, BatchNorm frozen by momentum 0", "first holds other"),
    ("numerics.exploding_gradients", "a learning rate too small to move", "learning rate"),
    ("numerics.exploding_gradients", "the loss scaled down", "gradient norm before clipping"),
    ("numerics.anomaly_detection", "anomaly mode off, the NaN gradient zeroed afterwards",
     "anomaly detection on everywhere"),
    ("numerics.clip_before_unscale", "no clipping", "losses is not"),
    ("numerics.clip_before_unscale", "the scaler switched off", "GradScaler is switched off"),
    ("numerics.scheduler_stepped_per_batch", "no scheduler steps", "start of each epoch"),
    ("numerics.scheduler_stepped_per_batch", "a floor under the learning rate", "start of each epoch"),
    ("numerics.scheduler_before_optimizer", "no scheduler steps", "used is not"),
    ("numerics.scheduler_before_optimizer", "the LR read before the step, the warning silenced",
     "trained weights are not"),
)


@pytest.mark.parametrize("drill_id,label,reason", JOB_CATCHES, ids=lambda v: v[:40])
def test_a_dodge_that_silences_the_symptom_is_refused_by_the_drills_job_check(drill_id, label, reason):
    drill = drills.get(drill_id)
    code = dict(fix_mutants.dodges(drill))[label]
    verdict = judge_edit(drill, code)
    assert not verdict.passed and any(reason in p for p in verdict.problems), verdict.problems
    assert not drill.measure(drill.runner(code, "dodge")).buggy  # the symptom alone would pass it


def test_results_are_the_names_bound_outside_loops_and_a_float_total_equals_a_tensor_total():
    source = ("total = 0\nfor loss in losses:\n    step = loss * 2\n    total += step\n"
              "if True:\n    mean = total / 3\ndef f(a):\n    b = a\n")
    assert assigned_names(source) == {"total", "mean"}
    drill = drills.get("numerics.bf16_running_total")
    as_floats = drill.buggy_code.replace("total = torch.zeros((), dtype=torch.bfloat16)", "total = 0.0")
    verdict = judge_edit(drill, as_floats.replace("total += loss", "total += loss.item()").replace(
        "total.item()", "total"))
    assert verdict.passed, verdict.problems
    assert not judge_edit(drill, as_floats).passed  # 0.0 + a bfloat16 tensor is a bfloat16 total


def test_an_edit_that_drops_the_codes_seed_is_refused_whatever_ran_before():
    """Every run starts from one random state: the state a previous run left cannot make an
    unseeded edit draw the fixed code's numbers."""
    import torch

    from course_utils.drills.fixit import reference

    drill = drills.get("data.validation_in_train_mode")
    reference(drill)  # the fixed code's run, kept: the edit runs next
    unseeded = drill.fixed_code.replace("torch.manual_seed(0)\n", "")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the state the dropped seed would have made
        verdict = judge_edit(drill, unseeded)
    assert not verdict.passed and "other values" in verdict.problems[0], verdict.problems
