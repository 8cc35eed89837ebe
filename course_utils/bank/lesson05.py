"""Lesson 05's exercises: contiguous strides, is_contiguous, the storage index of an element,
view or copy, and fixing a model's non-contiguous parameters with ``audit``."""

from __future__ import annotations

import math
import random

import torch
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.toolkit.layout import audit

Shape = tuple[int, ...]

# --- random layouts, made by real view operations -----------------------------------------------


def random_layout(rng: random.Random, min_size: int = 1) -> tuple[Shape, Shape, int, str]:
    """(shape, strides, offset, how) of a view made by 1-3 random view ops on a fresh tensor."""
    base = torch.empty([rng.randint(min_size, 5) for _ in range(rng.randint(2, 4))])
    t, how = base, []
    for _ in range(rng.randint(1, 3)):
        t, step = _random_view(rng, t)
        how.append(step)
    return tuple(t.shape), tuple(t.stride()), t.storage_offset(), f"{tuple(base.shape)}{''.join(how)}"


def _random_view(rng: random.Random, t: torch.Tensor) -> tuple[torch.Tensor, str]:
    dim = rng.randrange(t.dim())
    kind = rng.choice(("transpose", "permute", "narrow", "step", "unsqueeze", "expand"))
    if kind == "transpose" and t.dim() >= 2:
        a, b = rng.sample(range(t.dim()), 2)
        return t.transpose(a, b), f".transpose({a}, {b})"
    if kind == "permute":
        order = rng.sample(range(t.dim()), t.dim())
        return t.permute(order), f".permute{tuple(order)}"
    if kind == "narrow" and t.shape[dim] >= 1:
        start = rng.randint(0, max(t.shape[dim] - 1, 0))
        length = rng.randint(0 if t.shape[dim] == 0 else 1, t.shape[dim] - start)
        return t.narrow(dim, start, length), f".narrow({dim}, {start}, {length})"
    if kind == "step":
        step = rng.randint(2, 3)
        index = (slice(None),) * dim + (slice(None, None, step),)
        return t[index], f"[{':, ' * dim}::{step}]"
    if kind == "unsqueeze" or t.dim() >= 4:
        return t.unsqueeze(dim), f".unsqueeze({dim})"
    sizes = list(t.shape)
    sizes.insert(dim, rng.randint(2, 3))
    return t.unsqueeze(dim).expand(sizes), f".unsqueeze({dim}).expand{tuple(sizes)}"


def _tuple_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Compare sequences of ints, accepting a list where a tuple is expected."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    value = tuple(got.value) if isinstance(got.value, list) else got.value
    return mismatch(expected.value, value)


# --- 05.contiguous_strides ----------------------------------------------------------------------


def contiguous_strides(shape: Shape) -> Shape:
    """Reference: the strides PyTorch gives a new (contiguous) tensor of this shape."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)  # a size-0 dimension must not zero the strides before it
    return tuple(reversed(strides))


def _strides_fixed() -> list[Case]:
    shapes = [(3, 4), (2, 3, 4), (5,), (), (4, 1, 3), (1, 1), (2, 0, 3), (0,), (32, 3, 224, 224)]
    return [Case(f"shape {s}", (s,)) for s in shapes]


def _strides_random(rng: random.Random) -> Case:
    shape = tuple(rng.choice((0, 1, 1, 2, 3, 4, 5, 7)) for _ in range(rng.randint(0, 5)))
    return Case(f"shape {shape}", (shape,))


def _strides_fortran(shape):
    strides, step = [], 1
    for size in shape:
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)


def _strides_zero_sizes(shape):
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def _strides_from_last_size(shape):
    return tuple(math.prod(shape[i:]) for i in range(len(shape)))


def _strides_at_least_one_dim(shape):
    strides = [1]
    for size in reversed(shape[1:]):
        strides.insert(0, strides[0] * max(size, 1))
    return tuple(strides)


# --- 05.is_contiguous ---------------------------------------------------------------------------


def is_contiguous(shape: Shape, strides: Shape) -> bool:
    """Reference: PyTorch's rule. Empty tensors are contiguous; size-1 dimensions are skipped;
    every other dimension's stride must equal the product of the sizes after it."""
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in reversed(list(zip(shape, strides, strict=True))):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


LAYOUTS = [
    ("a new (3, 4) tensor", (3, 4), (4, 1)),
    ("(3, 4) transposed", (4, 3), (1, 4)),
    ("(3, 4) with [:, ::2]", (3, 2), (4, 2)),
    ("(3, 4) with [:, :2]", (3, 2), (4, 1)),
    ("(3, 4) with [:2]", (2, 4), (4, 1)),
    ("size-1 dim with an odd stride", (3, 1, 4), (4, 99, 1)),
    ("(4, 1) expanded to (4, 3)", (4, 3), (1, 0)),
    ("(1, 4) with a stride-0 size-1 dim", (1, 4), (0, 1)),
    ("empty tensor with odd strides", (0, 3), (1, 5)),
    ("a scalar", (), ()),
    ("(2, 3, 4) permuted (2, 0, 1)", (4, 2, 3), (1, 12, 4)),
    ("(6,) with [::2]", (3,), (2,)),
]


def _contig_fixed() -> list[Case]:
    return [Case(f"{label}: shape {shape} strides {strides}", (shape, strides))
            for label, shape, strides in LAYOUTS]


def _contig_random(rng: random.Random) -> Case:
    shape, strides, _, how = random_layout(rng, min_size=0)
    return Case(f"x = torch.empty{how}: shape {shape} strides {strides}", (shape, strides))


def _contig_exact_strides(shape, strides):
    return tuple(strides) == contiguous_strides(shape)


def _contig_forgets_empty(shape, strides):
    kept = [(size, stride) for size, stride in zip(shape, strides, strict=True) if size != 1]
    return all(st == math.prod(sz for sz, _ in kept[i + 1:]) for i, (_, st) in enumerate(kept))


def _contig_strides_decrease(shape, strides):
    return list(strides) == sorted(strides, reverse=True)


def _contig_last_stride_one(shape, strides):
    return not strides or strides[-1] == 1


# --- 05.storage_index ---------------------------------------------------------------------------


def storage_index(index: Shape, shape: Shape, strides: Shape, offset: int) -> int:
    """Reference: where element ``t[index]`` sits in the storage."""
    return offset + sum(i * s for i, s in zip(index, strides, strict=True))


def _index_fixed() -> list[Case]:
    return [
        Case("t = arange(12).view(3, 4); t[1, 2]", ((1, 2), (3, 4), (4, 1), 0)),
        Case("t.T; element [2, 1]", ((2, 1), (4, 3), (1, 4), 0)),
        Case("t[1:, 1:]; element [0, 0] (offset 5)", ((0, 0), (2, 3), (4, 1), 5)),
        Case("t[:, 1::2]; element [2, 1] (offset 1)", ((2, 1), (3, 2), (4, 2), 1)),
        Case("t[2]; element [3] (offset 8)", ((3,), (4,), (1,), 8)),
        Case("expanded (4, 1) -> (4, 3); element [2, 2]", ((2, 2), (4, 3), (1, 0), 0)),
        Case("a scalar at offset 7", ((), (), (), 7)),
    ]


def _index_random(rng: random.Random) -> Case:
    shape, strides, offset, how = random_layout(rng)
    index = tuple(rng.randrange(size) for size in shape)
    return Case(f"x = torch.empty{how}; element {list(index)} (offset {offset})",
                (index, shape, strides, offset))


def _index_no_offset(index, shape, strides, offset):
    return sum(i * s for i, s in zip(index, strides, strict=True))


def _index_own_strides(index, shape, strides, offset):
    return offset + sum(i * s for i, s in zip(index, contiguous_strides(shape), strict=True))


def _index_reversed(index, shape, strides, offset):
    return offset + sum(i * s for i, s in zip(index, reversed(strides), strict=False))


# --- 05.view_or_copy ----------------------------------------------------------------------------

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


def _voc_fixed() -> list[Case]:
    picks = [(0, "t.view(-1)"), (1, "t.view(-1)"), (1, "t.reshape(-1)"), (1, "t.contiguous()"),
             (2, "t.view(-1)"), (2, "t.contiguous()"), (3, "t.flatten()"), (5, "t.contiguous()"),
             (5, "t.view(-1)"), (6, "t.reshape(-1)"), (0, "t.contiguous()"), (0, "t.flip(0)"),
             (1, "t.clone()"), (1, "t.transpose(0, 1)"), (2, "t[::2]"), (0, "t.reshape(-1)"),
             (2, "t.flatten()")]
    return [Case(f"{LAYOUTS[i][0]} (shape {LAYOUTS[i][1]} strides {LAYOUTS[i][2]}): {op}",
                 (LAYOUTS[i][1], LAYOUTS[i][2], op)) for i, op in picks]


def _voc_random(rng: random.Random) -> Case:
    shape, strides, _, how = random_layout(rng)
    op = rng.choice(OPS + DEPENDS)  # the layout-dependent ops twice as often
    return Case(f"t = torch.empty{how} (shape {shape} strides {strides}): {op}",
                (shape, strides, op))


def _voc_contiguous_copies(shape, strides, op):
    return "copy" if op == "t.contiguous()" else view_or_copy(shape, strides, op)


def _voc_view_needs_contiguous(shape, strides, op):
    if op == "t.view(-1)":
        return "view" if is_contiguous(shape, strides) else "error"
    return view_or_copy(shape, strides, op)


def _voc_reshape_copies(shape, strides, op):
    return "copy" if op in ("t.reshape(-1)", "t.flatten()") else view_or_copy(shape, strides, op)


def _voc_numpy_flip(shape, strides, op):
    return "view" if op == "t.flip(0)" else view_or_copy(shape, strides, op)


# --- 05.fix_layout ------------------------------------------------------------------------------


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


def _fix_fixed() -> list[Case]:
    return [
        Case("lesson 06's autoencoder: encoder.weight = decoder.weight.T.clone()", (_autoencoder(),)),
        Case("MLP with two transposed weights", (_mlp((4, 6, 5, 3), layouts=(0, 2)),)),
        Case("conv net with a channels_last weight", (_convnet(True),)),
        Case("MLP whose non-contiguous layer is frozen", (_mlp((4, 6, 3), layouts=(1,), frozen=(1,)),)),
        Case("a model that is already contiguous", (_mlp((3, 3), layouts=()),)),
    ]


def _fix_random(rng: random.Random) -> Case:
    widths = [rng.randint(2, 6) for _ in range(rng.randint(3, 5))]
    layers = len(widths) - 1
    layouts = tuple(i for i in range(layers) if rng.random() < 0.5)
    frozen = tuple(i for i in range(layers) if rng.random() < 0.2)
    model = _mlp(widths, layouts, frozen)
    return Case(f"MLP widths {widths}, transposed weights in layers {list(layouts)}, "
                f"frozen {list(frozen)}", (model,))


def _fix_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
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


def _fix_clone(model):
    for row in audit(model):
        p = model.get_parameter(row.name)
        p.data = p.data.clone()  # preserve_format: the layout survives the clone
    return model


def _fix_rebinds(model):
    for p in model.parameters():
        if not p.is_contiguous():
            p = p.contiguous()  # the mistake: only the loop variable changes
    return model


def _fix_first_only(model):
    rows = list(audit(model))
    if rows:
        p = model.get_parameter(rows[0].name)
        p.data = p.data.contiguous()
    return model


def _fix_trainable_only(model):
    for p in model.parameters():
        if p.requires_grad and not p.is_contiguous():
            p.data = p.data.contiguous()
    return model


def _fix_new_parameter(model):
    for row in audit(model):
        owner, _, attr = row.name.rpartition(".")
        module = model.get_submodule(owner)
        setattr(module, attr, nn.Parameter(getattr(module, attr).detach().contiguous()))
    return model


EXERCISES = [
    Exercise(
        id="05.contiguous_strides",
        title="The strides of a new tensor",
        reference=contiguous_strides,
        fixed=_strides_fixed,
        random=_strides_random,
        judge=_tuple_judge,
        hints=(
            "The last dimension has stride 1; each dimension's stride is the next one's stride "
            "times the next one's size.",
            "Walk the shape from the end: keep a running product, starting at 1.",
            "PyTorch multiplies by max(size, 1): a size-0 dimension must not zero the strides "
            "before it (compare torch.empty(2, 0, 3).stride()). A scalar shape () has strides ().",
        ),
        mutants={
            "column-major (Fortran) order": _strides_fortran,
            "multiplies by a size 0": _strides_zero_sizes,
            "starts from the last size instead of 1": _strides_from_last_size,
            "assumes at least one dimension": _strides_at_least_one_dim,
        },
    ),
    Exercise(
        id="05.is_contiguous",
        title="is_contiguous(shape, strides), PyTorch's rule",
        reference=is_contiguous,
        fixed=_contig_fixed,
        random=_contig_random,
        hints=(
            "Contiguous means: the strides are those of a new tensor of this shape, walked from "
            "the last dimension (expected stride 1, then times each size).",
            "Dimensions of size 1 are never stepped over, so their stride does not matter: skip them.",
            "A tensor with no elements is contiguous whatever its strides.",
        ),
        mutants={
            "does not skip size-1 dimensions": _contig_exact_strides,
            "forgets empty tensors": _contig_forgets_empty,
            "only checks that strides decrease": _contig_strides_decrease,
            "only checks the last stride is 1": _contig_last_stride_one,
        },
    ),
    Exercise(
        id="05.storage_index",
        title="Where does t[index] live in the storage?",
        reference=storage_index,
        fixed=_index_fixed,
        random=_index_random,
        hints=(
            "Each index moves you stride[d] elements along the storage, starting at the offset.",
            "Use the strides you are given, not the ones a new tensor of this shape would have: "
            "views (transpose, slices, expand) have their own.",
            "offset + sum(i * s for i, s in zip(index, strides))",
        ),
        mutants={
            "ignores the offset": _index_no_offset,
            "uses the shape's contiguous strides": _index_own_strides,
            "pairs the index with reversed strides": _index_reversed,
        },
    ),
    Exercise(
        id="05.view_or_copy",
        title="View, copy or error?",
        reference=view_or_copy,
        fixed=_voc_fixed,
        random=_voc_random,
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
            "contiguous() always copies": _voc_contiguous_copies,
            "view(-1) needs a contiguous tensor": _voc_view_needs_contiguous,
            "reshape always copies": _voc_reshape_copies,
            "flip is a view, as in NumPy": _voc_numpy_flip,
        },
    ),
    Exercise(
        id="05.fix_layout",
        title="Find and fix the non-contiguous parameters with audit",
        reference=fix_layout,
        fixed=_fix_fixed,
        random=_fix_random,
        judge=_fix_judge,
        hints=(
            "audit(model) lists each non-contiguous tensor; rows with kind 'parameter' are yours "
            "to fix, and model.get_parameter(row.name) finds the tensor.",
            "Change the parameter's data in place, p.data = p.data.contiguous(), so it stays the "
            "same Parameter (an optimizer holding it keeps working, requires_grad is kept).",
            "clone() keeps the layout (memory_format=torch.preserve_format): it does not fix anything.",
        ),
        mutants={
            "clone() keeps the layout": _fix_clone,
            "rebinds the loop variable": _fix_rebinds,
            "fixes only the first finding": _fix_first_only,
            "skips frozen parameters": _fix_trainable_only,
            "new Parameter loses requires_grad": _fix_new_parameter,
        },
    ),
]

QUIZ = Quiz("05", [
    Question(
        "w = x.T.clone() where x is a new (3, 4) tensor. Is w contiguous?",
        ("Yes: clone() always makes a fresh contiguous tensor",
         "No: clone() uses memory_format=torch.preserve_format and keeps the transposed strides",
         "Only on MPS", "It depends on the dtype"),
        1, "clone() and zeros_like default to preserve_format, which is how the encoder of the "
        "addcmul_ story stayed non-contiguous (facts §1)."),
    Question(
        "t = torch.arange(12).view(3, 4). Which of these is a copy?",
        ("t.T", "t[:, ::2]", "t.flip(0)", "t.unsqueeze(0)"),
        2, "flip writes a new tensor in PyTorch (unlike NumPy's flip); the others only change "
        "shape, strides or offset (lesson 05, section 2)."),
    Question(
        "t.T.view(-1) raises, t.T.reshape(-1) works. Why?",
        ("view is deprecated", "view never copies, and no single stride walks the transposed "
         "elements in order; reshape copies when it must", "reshape is slower so it is safer",
         "view only works on 1-D tensors"),
        1, "view must reuse the storage as is; reshape returns a view when it can and a copy "
        "otherwise (lesson 05, section 3)."),
    Question(
        "In the data-path study, which type accounts for the largest share of memory bugs?",
        ("Segmentation faults (20.9%)", "Non-contiguity (30.2%)", "Indexing (14%)",
         "Memory format (11.6%)"),
        1, "non-contiguity bugs were 30.2% of memory bugs, ahead of segmentation faults "
        "(seed 002, section V-B)."),
    Question(
        "In the paper's augmentation experiment, what did keeping every step contiguous give?",
        ("No change", "23 s instead of 40 s on 60,000 CIFAR-10 images",
         "40 s instead of 23 s", "A crash"),
        1, "23 s contiguity-aware vs 40 s default (seed 002, section VI-A); lesson 05 measures "
        "its own ratio and says how it compares."),
    Question(
        "Adam's exp_avg_sq for a parameter stored transposed is created by "
        "zeros_like(p, memory_format=torch.preserve_format). What layout does it get?",
        ("Contiguous", "The parameter's transposed layout", "channels_last", "It depends on lr"),
        1, "the state inherits the parameter's strides, so a bug in in-place ops on "
        "non-contiguous outputs reaches the optimizer too (facts §1, lesson 06)."),
])
