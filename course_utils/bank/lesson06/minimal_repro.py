"""The minimal repro: does an in-place op into a non-contiguous output come out wrong on a machine?"""

from __future__ import annotations

import random

import torch

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
)
