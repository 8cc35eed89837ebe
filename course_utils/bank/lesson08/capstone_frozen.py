"""Checkpoint 2: no parameter stays frozen on the affected Mac (emulated)."""

from course_utils.bank.lesson08._shared import (
    ALTERNATIVES,
    CLONE_TIE,
    COMMON,
    EQUIVALENT,
    HAUNTED,
    broken,
    judge_with,
    loss_only,
)
from course_utils.core.exercise import Exercise
from course_utils.labs.capstone import check_frozen

_ADAM = "optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)"

EXERCISE = Exercise(
    id="08.capstone_frozen",
    title="Checkpoint 2: no parameter stays frozen on the affected Mac (emulated)",
    judge=judge_with(check_frozen),
    hints=(
        "Run with Lab(sentinel=True), or audit(model) before training: which parameter is not "
        "contiguous, and which line made it so?",
        "w.T.clone() keeps the transposed layout (clone preserves the format), so Adam's in-place "
        "addcmul_/addcdiv_ into it are lost on an affected Mac. Use .T.contiguous().",
        "Fix the layout before building the optimizer, in place (p.data = ...): a new "
        "nn.Parameter made afterwards is not the one the optimizer updates.",
    ),
    mutants={
        **HAUNTED,
        **CLONE_TIE,
        # the optimizer still holds (and updates) the old Parameter
        "a new nn.Parameter after the optimizer was built": broken((_ADAM, (
            f"{_ADAM}\n"
            "    model.up.weight = torch.nn.Parameter(model.down.weight.detach().T.contiguous())"))),
    },
    equivalent={**EQUIVALENT, **loss_only("no frozen parameter and no lost write")},
    alternatives=ALTERNATIVES,
    **COMMON,
)
