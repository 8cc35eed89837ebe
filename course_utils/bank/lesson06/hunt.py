"""Hunt a planted bug with a differential test."""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson06._shared import machine_judge
from course_utils.core.exercise import Case, Exercise, patched
from course_utils.toolkit.difftest import SPECS, inplace_ops, lay_out, sweep
from course_utils.toolkit.emulate.inplace import HEALTHY, Machine

CANDIDATES = inplace_ops()  # the in-place ops the difftest can run on 2-D tensors


def hunt(machine: Machine) -> str | None:
    """Reference: the one candidate in-place op that ``machine`` breaks, found by a difftest; or None."""
    with machine:
        result = sweep(CANDIDATES, layouts=("transposed",), variants=("in-place",), device="cpu")
    found = result.flagged()
    return found[0] if found else None


def _fixed() -> list[Case]:
    return [Case("a healthy machine", (HEALTHY,))] + [
        Case(f"a machine with the bug planted in {op}", (Machine(f"planted: {op}", (op,)),))
        for op in ("addcdiv_", "lerp_", "relu_")]


def _random(rng: random.Random) -> Case:
    op = rng.choice(CANDIDATES)
    return Case("a machine with the bug planted in a secret op", (Machine("planted: ?", (op,)),))


def _reference_inside(machine):
    """A difftest by hand whose expected value is the same in-place op on a clone, on the machine."""
    for name in CANDIDATES:
        spec = SPECS[name.removesuffix("_")]
        x, *others = [torch.rand(shape) + 0.5 for shape in spec.arg_shapes(2)]
        x = lay_out(x, "transposed")
        with machine:
            expected = x.clone()  # keeps the layout: the reference breaks along with the test
            spec.call_inplace(expected, *others)
            spec.call_inplace(x, *others)
        if not torch.allclose(x, expected):
            return name
    return None


def _by_hand(machine):
    """An alternative answer: a difftest by hand whose reference runs outside the machine."""
    g = torch.Generator().manual_seed(0)
    for name in CANDIDATES:
        spec = SPECS[name.removesuffix("_")]
        values = [torch.randn(shape, generator=g) for shape in spec.arg_shapes(2)]  # signs vary
        x, *others = [v.abs() + 0.5 if i in spec.positive else v for i, v in enumerate(values)]
        x = lay_out(x, "transposed")
        expected = x.clone()
        spec.call_inplace(expected, *others)  # outside the machine: the oracle
        with machine:
            spec.call_inplace(x, *others)
        if not torch.allclose(x, expected, equal_nan=True):
            return name
    return None


def _every_layout(machine):
    """An alternative answer: the whole sweep (every layout and variant), one op at a time."""
    with machine:
        for name in CANDIDATES:
            if sweep([name], device="cpu").flagged():
                return name
    return None


EXERCISE = Exercise(
    id="06.hunt",
    title="Hunt a planted bug with a differential test",
    reference=hunt,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=machine_judge(),
    hints=(
        "Inside `with machine:`, run every candidate in place on a NON-contiguous tensor and "
        "compare with a result computed out of place (or outside the machine).",
        "course_utils.toolkit.difftest.sweep(inplace_ops(), layouts=('transposed',), "
        "variants=('in-place',), "
        "device='cpu') does exactly that; .flagged() names the ops that went wrong.",
        "Test every candidate, not only the ops Adam uses: the bug is planted anywhere. Return "
        "None when nothing is wrong.",
    ),
    mutants={
        "tests contiguous tensors only":
            patched(hunt, ('layouts=("transposed",)', 'layouts=("contiguous",)')),
        "tests out-of-place and out= only":
            patched(hunt, ('variants=("in-place",)', 'variants=("out-of-place", "out=")')),
        "reference computed on the broken machine": _reference_inside,
        "tests only Adam's ops":
            patched(hunt, ("sweep(CANDIDATES,", 'sweep(("lerp_", "mul_", "addcmul_", "addcdiv_"),')),
    },
    equivalent={
        "keyword dropped: `sweep(CANDIDATES, layouts=('transposed',), variants=('in-pl…` -> "
        "`sweep(CANDIDATES, variants=('in-place',), device='cpu')`":
            "every layout includes 'transposed': more checks, one broken op, the same one flagged",
        "keyword dropped: `sweep(CANDIDATES, layouts=('transposed',), variants=('in-pl…` -> "
        "`sweep(CANDIDATES, layouts=('transposed',), device='cpu')`":
            "every variant includes 'in-place': more checks, one broken op, the same one flagged",
        "constant: `0` -> `-1`": "one op at most is broken, so flagged() has at most one name: first == last",
    },
    alternatives={
        "a difftest by hand, the reference outside the machine": _by_hand,
        "the whole sweep, one op at a time": _every_layout,
    },
)
