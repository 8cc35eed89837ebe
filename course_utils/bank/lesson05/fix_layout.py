"""Find and fix a model's non-contiguous parameters with ``audit``."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.toolkit.layout import audit


def fix_layout(model: nn.Module) -> nn.Module:
    """Reference: make every non-contiguous parameter contiguous in place; return the model."""
    for row in audit(model):
        if row.kind == "parameter":
            p = model.get_parameter(row.name)
            p.data = p.data.contiguous()
    return model


def _store_transposed(p: nn.Parameter) -> None:
    """Same values, another layout: 2-D stored transposed, 4-D channels_last, 1-D unchanged."""
    if p.dim() == 2:
        p.data = p.data.T.contiguous().T
    elif p.dim() == 4:
        p.data = p.data.contiguous(memory_format=torch.channels_last)


def _autoencoder() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("encoder", nn.Linear(8, 16))
    model.add_module("decoder", nn.Linear(16, 8))
    model.encoder.weight.data = model.decoder.weight.T.clone()  # lesson 06's tied init
    return model


def _mlp(widths, layouts, frozen=()) -> nn.Module:
    torch.manual_seed(1)
    model = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False)])
    for i in layouts:
        _store_transposed(model[i].weight)
    for i in frozen:
        model[i].requires_grad_(False)
    return model


def _convnet(channels_last: bool) -> nn.Module:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 1))
    if channels_last:
        _store_transposed(model[0].weight)
    return model


def _fixed() -> list[Case]:
    return [
        Case("lesson 06's autoencoder: encoder.weight = decoder.weight.T.clone()", (_autoencoder(),)),
        Case("MLP with two transposed weights", (_mlp((4, 6, 5, 3), layouts=(0, 2)),)),
        Case("conv net with a channels_last weight", (_convnet(True),)),
        Case("MLP whose non-contiguous layer is frozen", (_mlp((4, 6, 3), layouts=(1,), frozen=(1,)),)),
        Case("a model that is already contiguous", (_mlp((3, 3), layouts=()),)),
    ]


def _random(rng: random.Random) -> Case:
    widths = [rng.randint(2, 6) for _ in range(rng.randint(3, 5))]
    layers = len(widths) - 1
    layouts = tuple(i for i in range(layers) if rng.random() < 0.5)
    frozen = tuple(i for i in range(layers) if rng.random() < 0.2)
    model = _mlp(widths, layouts, frozen)
    return Case(f"MLP widths {widths}, transposed weights in layers {list(layouts)}, "
                f"frozen {list(frozen)}", (model,))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if not isinstance(got.value, nn.Module):
        return f"return the model (fixed in place), not {type(got.value).__name__}"
    want, have = dict(expected.value.named_parameters()), dict(got.value.named_parameters())
    if set(want) != set(have):
        return f"the model's parameters changed: {sorted(have)} != {sorted(want)}"
    for name, ref in want.items():
        p = have[name]
        if not p.is_contiguous():
            return f"{name} is still non-contiguous (strides {tuple(p.stride())})"
        if p.requires_grad != ref.requires_grad:
            return f"{name}.requires_grad changed to {p.requires_grad}"
        if not torch.equal(p.detach(), ref.detach()):
            return f"{name}'s values changed: a fix must keep every value"
    return None


_FIX = "p.data = p.data.contiguous()"

EXERCISE = Exercise(
    id="05.fix_layout",
    title="Find and fix the non-contiguous parameters with audit",
    reference=fix_layout,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "audit(model) lists each non-contiguous tensor; rows with kind 'parameter' are yours "
        "to fix, and model.get_parameter(row.name) finds the tensor.",
        "Change the parameter's data in place, p.data = p.data.contiguous(), so it stays the "
        "same Parameter (an optimizer holding it keeps working, requires_grad is kept).",
        "clone() keeps the layout (memory_format=torch.preserve_format): it does not fix anything.",
    ),
    mutants={
        "clone() keeps the layout": patched(fix_layout, (_FIX, "p.data = p.data.clone()")),
        "rebinds the loop variable": patched(fix_layout, (_FIX, "p = p.contiguous()")),
        "fixes only the first finding":
            patched(fix_layout, ("in audit(model):", "in list(audit(model))[:1]:")),
        "skips frozen parameters": patched(fix_layout, (
            'if row.kind == "parameter":',
            'if row.kind == "parameter" and model.get_parameter(row.name).requires_grad:')),
        "new Parameter loses requires_grad": patched(fix_layout, (_FIX, (
            'owner, _, attr = row.name.rpartition(".")\n'
            "            setattr(model.get_submodule(owner), attr, nn.Parameter(p.detach().contiguous()))"))),
    },
)
