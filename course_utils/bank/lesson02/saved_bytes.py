"""Bytes saved for backward, counted with a hook: the learner rebuilds the toolkit's own count.

The reference is ``course_utils.toolkit.memory.saved_bytes`` itself (the course counts memory in one
place); the mutants are the toolkit's record of every save (``SavedTensors.saves``) summed wrongly.
The forwards a case runs are ``case_inputs.SAVING_EXAMPLES``.
"""

from __future__ import annotations

import random

import torch

from course_utils.core.exercise import Case, Exercise
from course_utils.labs.case_inputs import SAVING_EXAMPLES
from course_utils.toolkit.memory.saved import SavedTensors, saved_bytes


def _leaf(*shape: int, transposed: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if transposed:
        return torch.randn(*reversed(shape), generator=g).t().detach().requires_grad_()
    return torch.randn(*shape, generator=g, requires_grad=True)


def _fixed() -> list[Case]:
    ops = SAVING_EXAMPLES
    return [Case(f"{name} on a (4, 8) input", (fn, _leaf(4, 8))) for name, fn in ops.items()] + [
        Case("x @ x.T on a transposed (8, 4) input", (ops["x @ x.T"], _leaf(8, 4, transposed=True))),
        Case("a slice's sin on a transposed input", (ops["a slice's sin"], _leaf(6, 8, transposed=True))),
    ]


def _random(rng: random.Random) -> Case:
    name = rng.choice(sorted(SAVING_EXAMPLES))
    rows, cols = rng.randint(1, 9), rng.randint(6, 12)
    transposed = rng.random() < 0.5
    x = _leaf(rows, cols, transposed=transposed, seed=rng.randint(0, 999))
    label = f"{name} on a {'transposed ' if transposed else ''}({rows}, {cols}) input"
    return Case(label, (SAVING_EXAMPLES[name], x))


def _saves(fn, x) -> list:
    with SavedTensors() as saved:
        fn(x)
    return saved.saves


def _output_bytes(fn, x) -> int:
    out = fn(x)
    return out.numel() * out.element_size()


EXERCISE = Exercise(
    id="02.saved_bytes",
    title="Bytes saved for backward, counted with a hook",
    reference=saved_bytes,
    fixed=_fixed,
    random=_random,
    hints=(
        "torch.autograd.graph.saved_tensors_hooks(pack, unpack) calls pack(t) for every tensor "
        "saved for backward; return t from pack and use lambda t: t as unpack.",
        "The same storage can be saved twice (x * x saves x twice, x @ x.T saves x and a view of "
        "it): key a dict by t.untyped_storage().data_ptr().",
        "A saved view keeps its whole storage alive: count t.untyped_storage().nbytes(), not "
        "t.numel() * t.element_size().",
    ),
    mutants={
        "counts a storage once per save": lambda fn, x: sum(s.storage_bytes for s in _saves(fn, x)),
        "counts the view, not the storage it keeps alive": lambda fn, x: sum(
            {s.storage: s.view_bytes for s in _saves(fn, x)}.values()),
        "measures the output instead": _output_bytes,
    },
)
