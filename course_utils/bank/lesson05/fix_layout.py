"""Find and fix a model's non-contiguous parameters with ``audit``."""

from __future__ import annotations

import random
from collections import OrderedDict

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import grad_mode_left_off
from course_utils.labs.case_inputs import LinearKeepingGrad
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


def _remember(model: nn.Module) -> nn.Module:
    """Note each parameter object on the model: copies of the model (``check()`` hands the
    answer one) copy the note with it, so the judge can tell a kept Parameter from a new one."""
    model._case_parameters = dict(model.named_parameters())
    return model


def _autoencoder() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("encoder", nn.Linear(8, 16))
    model.add_module("decoder", nn.Linear(16, 8))
    model.encoder.weight.data = model.decoder.weight.T.clone()  # lesson 06's tied init
    return _remember(model)


def _mlp(widths, layouts, frozen=()) -> nn.Module:
    torch.manual_seed(1)
    model = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False)])
    for i in layouts:
        _store_transposed(model[i].weight)
    for i in frozen:
        model[i].requires_grad_(False)
    return _remember(model)


def _convnet(channels_last: bool) -> nn.Module:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 1))
    if channels_last:
        _store_transposed(model[0].weight)
    return _remember(model)


def _bare_layer() -> nn.Module:
    """Not a container: the model is one layer, so the names have no dot ("weight")."""
    torch.manual_seed(3)
    layer = nn.Linear(5, 3)
    _store_transposed(layer.weight)
    return _remember(layer)


def _nested() -> nn.Module:
    """Containers in containers (names like "features.0.weight", "heads.score.weight"), a
    channels_last conv, an eval-mode model, and a (1, 6) weight whose transposed storage is
    still contiguous (a size-1 dimension)."""
    torch.manual_seed(4)
    features = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU())
    heads = nn.ModuleDict({"score": nn.Linear(6, 1), "box": nn.Linear(6, 4)})
    model = nn.Sequential(OrderedDict(features=features, heads=heads))
    _store_transposed(features[0].weight)
    _store_transposed(heads.score.weight)
    _store_transposed(heads.box.weight)
    return _remember(model.eval())


def _shared_storage() -> nn.Module:
    """Two weights that are transposed views of ONE storage, at offsets 0 and 16."""
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
    base = torch.randn(2, 4, 4)
    model[0].weight.data, model[2].weight.data = base[0].T, base[1].T
    return _remember(model)


def _with_gradients() -> nn.Module:
    """Transposed weights that carry a gradient: audit lists their .grad (kind 'grad') too."""
    torch.manual_seed(6)
    model = nn.Sequential(LinearKeepingGrad(3, 4), nn.ReLU(), LinearKeepingGrad(4, 2))
    _store_transposed(model[0].weight)
    model(torch.randn(5, 3)).sum().backward()
    return _remember(model)


def _fixed() -> list[Case]:
    return [
        Case("lesson 06's autoencoder: encoder.weight = decoder.weight.T.clone()", (_autoencoder(),)),
        Case("MLP with two transposed weights", (_mlp((4, 6, 5, 3), layouts=(0, 2)),)),
        Case("conv net with a channels_last weight", (_convnet(True),)),
        Case("MLP whose non-contiguous layer is frozen", (_mlp((4, 6, 3), layouts=(1,), frozen=(1,)),)),
        Case("a model that is already contiguous", (_mlp((3, 3), layouts=()),)),
        Case("a bare nn.Linear (no container) stored transposed", (_bare_layer(),)),
        Case("nested containers (Sequential > ModuleDict), in eval mode", (_nested(),)),
        Case("two weights viewing one storage at offsets 0 and 16", (_shared_storage(),)),
        Case("transposed weights with a gradient (audit lists the .grad too)", (_with_gradients(),)),
    ]


def _random(rng: random.Random) -> Case:
    widths = [rng.randint(1, 6) for _ in range(rng.randint(3, 5))]
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
    left = grad_mode_left_off()
    if left:
        return left
    want, have = dict(expected.value.named_parameters()), dict(got.value.named_parameters())
    if set(want) != set(have):
        return f"the model's parameters changed: {sorted(have)} != {sorted(want)}"
    if got.value.training != expected.value.training:
        mode = "training" if got.value.training else "eval"
        return f"the model was switched to {mode} mode: leave it as it was"
    born = getattr(got.value, "_case_parameters", None) or {}  # in check()'s process only
    for name, ref in want.items():
        p = have[name]
        if name in born and p is not born[name]:
            return (f"{name} is a new nn.Parameter: keep the same object (change its .data), or an "
                    "optimizer that holds the old one keeps training that one")
        if not p.is_contiguous():
            return f"{name} is still non-contiguous (strides {tuple(p.stride())})"
        if p.requires_grad != ref.requires_grad:
            return f"{name}.requires_grad changed to {p.requires_grad}"
        if not torch.equal(p.detach(), ref.detach()):
            return f"{name}'s values changed: a fix must keep every value"
    return None


def _each_parameter(model: nn.Module) -> nn.Module:
    """An alternative answer: no audit, every parameter asked."""
    with torch.no_grad():
        for p in model.parameters():
            if not p.is_contiguous():
                p.data = p.data.contiguous()
    return model


def _copy_into_fresh(model: nn.Module) -> nn.Module:
    """An alternative answer: audit by module, copy into a new row-major tensor, ``set_`` it."""
    for module in model.modules():
        for _name, p in list(module.named_parameters(recurse=False)):
            if p.stride() != torch.empty(p.shape).stride() and not p.is_contiguous():
                fresh = torch.empty(p.shape, dtype=p.dtype, device=p.device)
                fresh.copy_(p.detach())
                with torch.no_grad():
                    p.set_(fresh)
    return model


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
        "ignores the row's kind (a .grad row is not a parameter)":
            patched(fix_layout, ('if row.kind == "parameter":', "if True:")),
    },
    alternatives={
        "asks each parameter is_contiguous()": _each_parameter,
        "a contiguous copy written into a fresh tensor, set in place": _copy_into_fresh,
    },
)
