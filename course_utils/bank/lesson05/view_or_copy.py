"""View, copy or error? What an op gives for a tensor of a given layout."""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson05._shared import LAYOUTS, Shape, random_layout
from course_utils.bank.lesson05.is_contiguous import is_contiguous
from course_utils.core.exercise import Case, Exercise, patched

ALWAYS_VIEW = ("t.transpose(0, 1)", "t[::2]", "t.narrow(-1, 0, 1)", "t.unsqueeze(0)")
ALWAYS_COPY = ("t.flip(0)", "t.clone()")
DEPENDS = ("t.contiguous()", "t.reshape(-1)", "t.view(-1)", "t.flatten()")
OPS = ALWAYS_VIEW + ALWAYS_COPY + DEPENDS


def flattens_in_place(shape: Shape, strides: Shape) -> bool:
    """Can the tensor be seen as 1-D without copying? Each non-size-1 dimension must step exactly
    over the next one: stride[i] == stride[j] * size[j] (the last stride may be anything)."""
    kept = [(size, stride) for size, stride in zip(shape, strides, strict=True) if size != 1]
    return all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(kept, kept[1:], strict=False))


def view_or_copy(shape: Shape, strides: Shape, op: str) -> str:
    """Reference: 'view' (shares the storage), 'copy' (new storage) or 'error' (raises)."""
    if op in ALWAYS_VIEW:
        return "view"
    if op in ALWAYS_COPY:
        return "copy"
    if op == "t.contiguous()":
        return "view" if is_contiguous(shape, strides) else "copy"
    if flattens_in_place(shape, strides):
        return "view"
    return "error" if op == "t.view(-1)" else "copy"


def _fixed() -> list[Case]:
    picks = [(0, "t.view(-1)"), (1, "t.view(-1)"), (1, "t.reshape(-1)"), (1, "t.contiguous()"),
             (2, "t.view(-1)"), (2, "t.contiguous()"), (3, "t.flatten()"), (5, "t.contiguous()"),
             (5, "t.view(-1)"), (6, "t.reshape(-1)"), (0, "t.contiguous()"), (0, "t.flip(0)"),
             (1, "t.clone()"), (1, "t.transpose(0, 1)"), (2, "t[::2]"), (0, "t.reshape(-1)"),
             (2, "t.flatten()")]
    return [Case(f"{LAYOUTS[i][0]} (shape {LAYOUTS[i][1]} strides {LAYOUTS[i][2]}): {op}",
                 (LAYOUTS[i][1], LAYOUTS[i][2], op)) for i, op in picks]


def _random(rng: random.Random) -> Case:
    shape, strides, _, how = random_layout(rng)
    op = rng.choice(OPS + DEPENDS)  # the layout-dependent ops twice as often
    return Case(f"t = torch.empty{how} (shape {shape} strides {strides}): {op}",
                (shape, strides, op))


def _asks_pytorch(shape: Shape, strides: Shape, op: str) -> str:
    """An alternative answer: make such a tensor, run the op, compare the storages."""
    t = torch.empty_strided(shape, strides)
    try:
        out = eval(op, {"t": t})  # noqa: S307 - one of the exercise's ten op strings
    except RuntimeError:
        return "error"
    return "view" if out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() else "copy"


def _mergeable(shape: Shape, strides: Shape) -> bool:
    """Whether the dimensions of size > 1, walked from the last, each step over the next."""
    span = None
    for size, stride in reversed(list(zip(shape, strides, strict=False))):
        if size == 1:
            continue
        if span is not None and stride != span:
            return False
        span = stride * size
    return True


_BY_OP = {
    "t.contiguous()": lambda shape, strides: "view" if is_contiguous(shape, strides) else "copy",
    "t.view(-1)": lambda shape, strides: "view" if _mergeable(shape, strides) else "error",
    "t.reshape(-1)": lambda shape, strides: "view" if _mergeable(shape, strides) else "copy",
    "t.flatten()": lambda shape, strides: "view" if _mergeable(shape, strides) else "copy",
    "t.flip(0)": lambda shape, strides: "copy",
    "t.clone()": lambda shape, strides: "copy",
}


def _table(shape: Shape, strides: Shape, op: str) -> str:
    """An alternative answer: one rule per op, in a table (the stride-only ops are views)."""
    return _BY_OP.get(op, lambda shape, strides: "view")(shape, strides)


def _view_needs_contiguous(shape, strides, op):
    if op == "t.view(-1)":
        return "view" if is_contiguous(shape, strides) else "error"
    return view_or_copy(shape, strides, op)


EXERCISE = Exercise(
    id="05.view_or_copy",
    title="View, copy or error?",
    reference=view_or_copy,
    fixed=_fixed,
    random=_random,
    hints=(
        "transpose, slicing, narrow and unsqueeze only change shape/strides/offset: views. "
        "flip and clone always write new memory.",
        "contiguous() returns the tensor itself when it is already contiguous (your "
        "is_contiguous from exercise 2), and a copy otherwise.",
        "view(-1) works whenever each non-size-1 dimension steps exactly over the next one "
        "(stride[i] == stride[j] * size[j]), even if the tensor is not contiguous; "
        "otherwise it raises. reshape(-1) and flatten() then copy instead of raising.",
    ),
    mutants={
        "contiguous() always copies":
            patched(view_or_copy, ('"view" if is_contiguous(shape, strides) else "copy"', '"copy"')),
        "view(-1) needs a contiguous tensor": _view_needs_contiguous,
        "reshape always copies": patched(
            view_or_copy, ("if flattens_in_place(", "if op == 't.view(-1)' and flattens_in_place(")),
        "flip is a view, as in NumPy":
            patched(view_or_copy, ("ALWAYS_VIEW:", 'ALWAYS_VIEW + ("t.flip(0)",):')),
    },
    alternatives={
        "asks PyTorch: empty_strided, the op, and the storages compared": _asks_pytorch,
        "from the rules: a table of one rule per op": _table,
    },
)
