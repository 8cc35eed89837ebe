"""Repair the inherited run so Adam trains on an affected Mac."""

from __future__ import annotations

import random

import torch
from torch import nn  # noqa: F401 - the text of the "new nn.Parameter objects" mutant uses it

from course_utils.bank.lesson06._shared import emulation_left_on
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import grad_mode_left_off
from course_utils.labs.sae import continue_training, inherited_run
from course_utils.toolkit.layout import audit


def repaired_losses(seed: int) -> list[float]:
    """Reference: make every non-contiguous parameter contiguous in place (values kept) and restart
    Adam's state for exactly those parameters (their exp_avg_sq lost every update: it is corrupt,
    whatever its layout); then continue training on the affected Mac."""
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        if not p.is_contiguous():
            p.data = p.data.contiguous()
            optimizer.state.pop(p, None)  # Adam starts this parameter afresh, with contiguous state
    return continue_training(model, optimizer)


def _fixed() -> list[Case]:
    return [Case("the story's SAE after 5 steps with Adam (seed 0)", (0,)),
            Case("seed 1", (1,)), Case("seed 2", (2,))]


def _random(rng: random.Random) -> Case:
    seed = rng.randrange(3, 10_000)
    return Case(f"inherited run, seed {seed}", (seed,))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Lists of losses: same length, each within 1e-4 relative (NaN matches nothing)."""
    left = emulation_left_on() or grad_mode_left_off()
    if left:
        return left
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    want, have = expected.value, got.value
    if not isinstance(have, list | tuple) or len(have) != len(want):
        return f"return the list of {len(want)} losses continue_training() gives"
    for i, (a, b) in enumerate(zip(want, have, strict=True)):
        if not (abs(a - b) <= 1e-4 * max(abs(a), 1e-3)):
            return (f"loss {i + 1} is {b:.6g}, a properly repaired run gives {a:.6g}: "
                    + ("the run blows up" if not abs(b) < 1e3 else "a different run"))
    return None


def _with_audit(seed):
    """An alternative answer: audit(model) names what to fix; set_ keeps each Parameter."""
    model, optimizer = inherited_run(seed)
    for row in audit(model):
        if row.kind == "parameter":
            p = model.get_parameter(row.name)
            with torch.no_grad():
                p.set_(p.contiguous())
            if p in optimizer.state:
                del optimizer.state[p]
    return continue_training(model, optimizer)


def _decide_first(seed):
    """An alternative answer: decide which parameters to restart first, from the param groups."""
    model, optimizer = inherited_run(seed)
    bad = [p for group in optimizer.param_groups for p in group["params"] if not p.is_contiguous()]
    for p in bad:
        optimizer.state.pop(p, None)
        p.data = p.data.clone(memory_format=torch.contiguous_format)
    return continue_training(model, optimizer)


_FIX, _RESTART = "p.data = p.data.contiguous()", "optimizer.state.pop(p, None)"

EXERCISE = Exercise(
    id="06.repair",
    title="Repair the inherited run so Adam trains on an affected Mac",
    reference=repaired_losses,
    fixed=_fixed,
    random=_random,
    n_random=3,
    judge=_judge,
    hints=(
        "audit(optimizer) lists what is non-contiguous: the transposed weights AND their Adam "
        "state (exp_avg and exp_avg_sq were made by zeros_like, which keeps the layout).",
        "Make each non-contiguous parameter contiguous in place, p.data = p.data.contiguous(), so "
        "the optimizer keeps holding the same Parameter; clone() keeps the layout and fixes nothing.",
        "That parameter's Adam state is corrupt (exp_avg_sq lost every update): making it "
        "contiguous is not enough, restart it with optimizer.state.pop(p). Decide which parameters "
        "to restart BEFORE fixing them, and keep the healthy parameters' state.",
    ),
    mutants={
        ".clone() instead of .contiguous()": patched(repaired_losses, (_FIX, "p.data = p.data.clone()")),
        "fixes the parameters only": patched(repaired_losses, (_RESTART, "pass")),
        "makes the corrupt state contiguous": patched(repaired_losses, (_RESTART, (
            "optimizer.state[p].update({k: v.contiguous() for k, v in optimizer.state[p].items()})"))),
        "checks is_contiguous after the fix": patched(repaired_losses, (  # p was fixed: nothing restarts
            _RESTART, "if not p.is_contiguous():\n                optimizer.state.pop(p)")),
        "clears every parameter's state": patched(repaired_losses, (_RESTART, "optimizer.state.clear()")),
        "new nn.Parameter objects": patched(  # the optimizer still holds (and updates) the old ones
            repaired_losses,
            ("for p in model.parameters():", "for name, p in list(model.named_parameters()):"),
            (_FIX, 'owner, _, attr = name.rpartition(".")\n            setattr(model.get_submodule(owner), '
                   "attr, nn.Parameter(p.detach().contiguous()))"),
            (_RESTART, "pass")),
        "fixes encoder.weight only": patched(repaired_losses, (
            "for p in model.parameters():",
            'for p in [model.encoder.weight] if hasattr(model, "encoder") else []:')),
    },
    alternatives={
        "audit() names the parameters; set_ keeps each one": _with_audit,
        "decides from the param groups first, then fixes": _decide_first,
    },
)
