"""The minimal repro: does an in-place op into a non-contiguous output come out wrong on a machine?"""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson06._shared import machine_judge
from course_utils.core.exercise import Case, Exercise, patched
from course_utils.toolkit.emulate.inplace import ADDC_OPS, HEALTHY, RANDOM_OPS, Machine
from course_utils.toolkit.emulate.inplace import AFFECTED as STORY  # torch 2.2.1 on macOS 14 (emulated)


def shows_bug(machine: Machine, op: str = "addcmul_") -> bool:
    """Reference: run ``op`` into a non-contiguous output on ``machine``; True when it came out wrong."""
    g = torch.Generator().manual_seed(0)
    out = torch.rand(3, 2, generator=g).t()  # (2, 3) with strides (1, 2): not contiguous
    a, b = torch.rand(2, 3, generator=g), torch.rand(2, 3, generator=g) + 0.5
    expected = getattr(torch, op.removesuffix("_"))(out, a, b)  # out of place: nothing written in place
    with machine:
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


_SAME = "whether the write into the non-contiguous output is lost does not depend on the values"

MACHINES = (STORY, HEALTHY, Machine("random-op bug only", RANDOM_OPS),
            Machine("only addcdiv_ broken", ("addcdiv_",)), Machine("only addcmul_ broken", ("addcmul_",)))


def _fixed() -> list[Case]:
    return [Case(f"{m.name}, {op}", (m, op)) for m in MACHINES for op in ADDC_OPS]


def _random(rng: random.Random) -> Case:
    pool = ("addcmul_", "addcdiv_", "lerp_", "mul_", "add_", "normal_")
    ops = tuple(sorted(rng.sample(pool, rng.randint(0, 3))))
    machine = Machine(f"a Mac losing {list(ops) or 'nothing'}", ops)
    op = rng.choice(ADDC_OPS)
    return Case(f"{machine.name}, {op}", (machine, op))


def _clone_outside(machine: Machine, op: str = "addcmul_") -> bool:
    """An alternative answer: the reference is the same in-place op on a clone, outside the machine."""
    out = torch.rand(4, 3).t()
    a, b = torch.rand(3, 4), torch.rand(3, 4) + 1.0
    expected = out.clone()
    getattr(expected, op)(a, b)  # no machine here: nothing is lost
    with machine:
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


def _as_strided(machine: Machine, op: str = "addcmul_") -> bool:
    """An alternative answer: a column-major output made with as_strided; did the op change it?"""
    out = torch.zeros(6).as_strided((2, 3), (1, 2))
    before = out.clone()
    with machine:
        getattr(out, op)(torch.ones(2, 3), torch.full((2, 3), 2.0))
    return torch.equal(out, before)  # the op must change every element: unchanged means lost


_OUT = "torch.rand(3, 2, generator=g).t()"
_INPUTS = "torch.rand(2, 3, generator=g), torch.rand(2, 3, generator=g) + 0.5"
_IN_PLACE = "getattr(out, op)(a, b)"

EXERCISE = Exercise(
    id="06.minimal_repro",
    title="The minimal repro",
    reference=shows_bug,
    fixed=_fixed,
    random=_random,
    n_random=10,
    judge=machine_judge(),
    hints=(
        "The bug is about the OUTPUT: the tensor the in-place op writes into must be "
        "non-contiguous, e.g. torch.rand(3, 2).t(). The inputs' layout does not matter.",
        "Compute the expected result where no in-place write is involved: the out-of-place "
        "torch.addcmul(out, a, b) (or outside the machine). A reference made with the same "
        "in-place op on out.clone() breaks too: clone() keeps the layout.",
        "Use the op you are given: getattr(out, op)(a, b) runs 'addcmul_' or 'addcdiv_'. "
        "Return not torch.allclose(out, expected).",
    ),
    mutants={
        "contiguous output": patched(shows_bug, (_OUT, "torch.rand(2, 3, generator=g)")),
        "non-contiguous inputs only": patched(shows_bug, (_OUT, "torch.rand(2, 3, generator=g)"), (
            _INPUTS, "torch.rand(3, 2, generator=g).t(), torch.rand(3, 2, generator=g).t() + 0.5")),
        "reference from an in-place op on .clone()": patched(shows_bug, (
            _IN_PLACE, "expected = getattr(out.clone(), op)(a, b)\n        getattr(out, op)(a, b)")),
        "tests the out-of-place op":
            patched(shows_bug, (_IN_PLACE, 'out = getattr(torch, op.removesuffix("_"))(out, a, b)')),
        "always tests addcmul_": lambda machine, op="addcmul_": shows_bug(machine, "addcmul_"),
    },
    equivalent={
        "in-place: `torch.rand(3, 2, generator=g).t()` -> `torch.rand(3, 2, generator=g).t_()`":
            "t_() transposes a fresh tensor nobody else holds: the same non-contiguous (2, 3) output",
        "constant: `0` -> `1`": "another seed, other values: " + _SAME,
        "constant: `0` -> `-1`": "another seed, other values: " + _SAME,
        "keyword dropped: `torch.rand(2, 3, generator=g)` -> `torch.rand(2, 3)`":
            "values from the global generator: " + _SAME,
        "keyword dropped: `torch.rand(2, 3, generator=g)` -> `torch.rand(2, 3)` #2":
            "values from the global generator: " + _SAME,
        "keyword dropped: `torch.rand(3, 2, generator=g)` -> `torch.rand(3, 2)`":
            "values from the global generator: " + _SAME,
        "arithmetic: `torch.rand(2, 3, generator=g) + 0.5` -> `torch.rand(2, 3, generator=g) - 0.5`":
            "b in (-0.5, 0.5), never 0 with seed 0: the op still changes every element; " + _SAME,
        "constant: `2` -> `1`": "a (1, 3) input broadcasts over the (2, 3) output: every element is "
                                "still written",
        "constant: `2` -> `1` #3": "a (1, 3) input broadcasts over the (2, 3) output: every element is "
                                   "still written",
    },
    alternatives={
        "the same in-place op on a clone, outside the machine": _clone_outside,
        "an as_strided output: unchanged means lost": _as_strided,
    },
)
