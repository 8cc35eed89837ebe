"""Checkpoint 1: the held-out loss goes down on the affected Mac."""

from course_utils.bank.lesson08._shared import (
    ALTERNATIVES,
    CLONE_TIE,
    COMMON,
    EQUIVALENT,
    HAUNTED,
    broken,
    judge_with,
)
from course_utils.core.exercise import Exercise
from course_utils.labs.capstone import LOSS_LIMIT, check_loss

EXERCISE = Exercise(
    id="08.capstone_loss",
    title="Checkpoint 1: the held-out loss goes down on the affected Mac",
    judge=judge_with(check_loss),
    hints=(
        "Plot report['logged'] and report['grad_norms'] against the step: a gradient norm that "
        "climbs to many times its first value and never comes back (lesson 08 measures over ten "
        "times within 16 steps) means each step adds its gradient to the old ones instead of "
        "replacing them.",
        "Look at the tags of the first batches: lab.dataset() returns the rows grouped by tag. "
        "Shuffle the row indices every epoch and index the ids AND the tags with the same indices.",
        f"Three bugs keep the held-out loss above {LOSS_LIMIT}: no optimizer.zero_grad() (the "
        "gradients add up), no shuffle, and up.weight frozen on the affected Mac (checkpoint 2).",
    ),
    mutants={
        **HAUNTED,
        "forgets optimizer.zero_grad()": broken(("optimizer.zero_grad()", "pass")),
        "batches the tag-sorted rows in order":
            broken(("pick = perm[start:start + lab.batch]", "pick = torch.arange(start, start + lab.batch)")),
        "shuffles the ids but not the tags": broken(("labels[pick]", "labels[start:start + lab.batch]")),
        **CLONE_TIE,
    },
    equivalent=EQUIVALENT,
    alternatives=ALTERNATIVES,
    **COMMON,
)
