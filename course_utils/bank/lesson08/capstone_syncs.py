"""Checkpoint 4: at most SYNCS_PER_STEP host syncs per step."""

from course_utils.bank.lesson08._shared import (
    ALTERNATIVES,
    COMMON,
    EQUIVALENT,
    HAUNTED,
    broken,
    judge_with,
    loss_only,
)
from course_utils.core.exercise import Exercise
from course_utils.labs.capstone import SYNCS_PER_STEP, check_syncs

_LOG = "run.log(loss.detach())"

EXERCISE = Exercise(
    id="08.capstone_syncs",
    title=f"Checkpoint 4: at most {SYNCS_PER_STEP} host syncs per step",
    judge=judge_with(check_syncs),
    hints=(
        "find_sync_points(train, Lab(steps=8)) (lesson 03) lists every host read with its line.",
        "loss.item() waits for the device every step. run.log() also takes a tensor: it keeps "
        "it on the device and reads a whole group at once.",
        "Any test of a tensor's value in the loop (if not torch.isfinite(loss): ...) is a read "
        "too; leave such checks to a sentinel that looks every few steps.",
    ),
    mutants={
        **HAUNTED,
        "still logs loss.item() every step": broken((_LOG, "run.log(loss.item())")),
        "checks the loss for NaN every step": broken((_LOG, (
            "if not torch.isfinite(loss):\n"
            '                raise FloatingPointError(f"the loss is {loss} at step {step}")\n'
            f"            {_LOG}"))),
    },
    equivalent={**EQUIVALENT, **loss_only("no more syncs")},
    alternatives=ALTERNATIVES,
    **COMMON,
)
