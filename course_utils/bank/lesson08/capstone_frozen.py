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
_STEP = "optimizer.step()"
_OTHERS = '[p for n, p in model.named_parameters() if n != "up.weight"]'
_CLONE = ("weight.T.contiguous()", "weight.T.clone()")

# "Fixes" that dodge the lost writes by not training the affected weight: each must fail.
UNTRAINED = {
    "keeps .T.clone() and freezes up.weight with requires_grad_(False)": broken(
        _CLONE, (_ADAM, f"model.up.weight.requires_grad_(False)\n    {_ADAM}")),
    "fixes the layout but freezes up.weight": broken(
        (_ADAM, f"model.up.weight.requires_grad_(False)\n    {_ADAM}")),
    "leaves up.weight out of the optimizer": broken(
        _CLONE, (_ADAM, f"optimizer = torch.optim.Adam({_OTHERS}, lr=lab.lr)")),
    "steps up.weight in a group of lr 0": broken(_CLONE, (_ADAM, (
        f"optimizer = torch.optim.Adam([{{'params': {_OTHERS}}}, "
        "{'params': [model.up.weight], 'lr': 0.0}], lr=lab.lr)"))),
    "clears up.weight's gradient before each step": broken(
        _CLONE, (_STEP, f"model.up.weight.grad = None\n            {_STEP}")),
    "zeroes up.weight's gradient with a hook": broken(
        _CLONE, (_ADAM, f"{_ADAM}\n    model.up.weight.register_hook(torch.zeros_like)")),
    "puts up.weight back after every step": broken(
        (_ADAM, f"{_ADAM}\n    kept = model.up.weight.detach().clone()"),
        (_STEP, f"{_STEP}\n            model.up.weight.data.copy_(kept)")),
    "freezes up.weight and nudges it by hand so that it changes": broken(
        _CLONE, (_ADAM, f"model.up.weight.requires_grad_(False)\n    {_ADAM}"),
        (_STEP, f"{_STEP}\n            model.up.weight.data.mul_(0.999)")),
}

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
        **UNTRAINED,
    },
    equivalent={**EQUIVALENT, **loss_only("no frozen parameter and no lost write")},
    alternatives=ALTERNATIVES,
    **COMMON,
)
