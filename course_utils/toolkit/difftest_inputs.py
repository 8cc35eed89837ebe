"""What lesson 06's differential test runs: the ops and the layouts (``difftest`` runs them).

``OpSpec`` says how to call one op (its arity, shapes, extra arguments, in-place form, tolerance);
``SPECS`` holds the default ops by name (pointwise, reductions, matmuls used in training) and
``spec_for`` looks one up. ``lay_out(values, layout, device)`` copies a CPU tensor onto the device in
one of ``LAYOUTS`` (contiguous, transposed, stepped slice, narrowed with an offset, expanded,
permuted 3-D, ``channels_last``); ``draw_values`` draws an op's inputs for a layout from a generator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

LAYOUTS = ("contiguous", "transposed", "stepped", "narrowed", "expanded", "permuted 3-D",
           "channels_last")
LAYOUT_RANK = {"contiguous": 2, "transposed": 2, "stepped": 2, "narrowed": 2, "expanded": 2,
               "permuted 3-D": 3, "channels_last": 4}
BASE_SHAPE = {2: (4, 6), 3: (2, 3, 4), 4: (2, 3, 4, 5)}

# --- what an op is --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpSpec:
    """How to call one op: ``fn(*tensors, *extra, **kwargs)`` out of place; its in-place form is the
    tensor method ``name + "_"`` when it exists (or ``inplace``); ``out=`` is tried on the CPU once."""

    name: str
    arity: int = 1
    extra: tuple = ()
    kwargs: dict = field(default_factory=dict)
    ranks: tuple[int, ...] = (2, 3, 4)
    shapes: Callable[[tuple[int, ...]], list[tuple[int, ...]]] | None = None
    positive: tuple[int, ...] = ()  # arguments that must be > 0 (log, sqrt, divisors)
    fn: Callable | None = None
    inplace: Callable | None = None  # fn(self, *others) writing into self; default: the method
    tol: float = 1e-5

    def call(self, *tensors: torch.Tensor, out: torch.Tensor | None = None):
        fn = self.fn or getattr(torch, self.name)
        extra = {"out": out} if out is not None else {}
        return fn(*tensors, *self.extra, **self.kwargs, **extra)

    def call_inplace(self, *tensors: torch.Tensor):
        if self.inplace is not None:
            return self.inplace(*tensors, *self.extra, **self.kwargs)
        return getattr(tensors[0], self.name + "_")(*tensors[1:], *self.extra, **self.kwargs)

    def has_inplace(self) -> bool:
        return self.inplace is not None or (self.fn is None and hasattr(torch.Tensor, self.name + "_"))

    def arg_shapes(self, rank: int) -> list[tuple[int, ...]] | None:
        if rank not in self.ranks:
            return None
        base = BASE_SHAPE[rank]
        return self.shapes(base) if self.shapes else [base] * self.arity


def _mm(s):
    return [(s[0], s[1]), (s[1], 5)]


def _bmm(s):
    return [(s[0], s[1], s[2]), (s[0], s[2], 5)]


def _matmul(s):
    return _mm(s) if len(s) == 2 else _bmm(s)


def _addmm(s):
    return [(s[0], 5), (s[0], s[1]), (s[1], 5)]


def _baddbmm(s):
    return [(s[0], s[1], 5), (s[0], s[1], s[2]), (s[0], s[2], 5)]


def _linear(s):
    return [(s[0], s[1]), (5, s[1]), (5,)]


_DIM = {"dim": -1}
SPECS: dict[str, OpSpec] = {spec.name: spec for spec in (
    # pointwise, one input
    *(OpSpec(n) for n in ("neg", "exp", "abs", "sigmoid", "tanh", "relu", "sign", "erf", "sin",
                          "floor")),  # (square is pow with exponent 2 at the dispatcher: see pow)
    *(OpSpec(n, positive=(0,)) for n in ("log", "sqrt", "rsqrt", "reciprocal")),
    OpSpec("clamp", kwargs={"min": -0.5, "max": 0.5}),
    OpSpec("pow", extra=(2.0,)),
    OpSpec("silu", fn=F.silu, inplace=lambda x: F.silu(x, inplace=True)),
    OpSpec("gelu", fn=F.gelu),
    # pointwise, several inputs
    OpSpec("add", 2, kwargs={"alpha": 0.5}), OpSpec("sub", 2), OpSpec("mul", 2),
    OpSpec("div", 2, positive=(1,)), OpSpec("maximum", 2), OpSpec("minimum", 2),
    OpSpec("lerp", 2, extra=(0.3,)),
    OpSpec("addcmul", 3, kwargs={"value": 0.5}),
    OpSpec("addcdiv", 3, kwargs={"value": 0.5}, positive=(2,)),
    # reductions along the last dimension
    *(OpSpec(n, kwargs=_DIM, tol=1e-4) for n in ("sum", "mean", "amax", "var", "logsumexp", "cumsum",
                                                 "softmax", "log_softmax")),
    # matmul family
    OpSpec("mm", 2, ranks=(2,), shapes=_mm, tol=1e-4),
    OpSpec("bmm", 2, ranks=(3,), shapes=_bmm, tol=1e-4),
    OpSpec("matmul", 2, ranks=(2, 3), shapes=_matmul, tol=1e-4),
    OpSpec("addmm", 3, ranks=(2,), shapes=_addmm, tol=1e-4),
    OpSpec("baddbmm", 3, ranks=(3,), shapes=_baddbmm, tol=1e-4),
    OpSpec("linear", 3, ranks=(2,), shapes=_linear, fn=F.linear, tol=1e-4),
)}
DEFAULT_OPS = tuple(SPECS)


def spec_for(op: str | OpSpec) -> OpSpec:
    """The ``OpSpec`` of ``op`` ("addcmul" and "addcmul_" alike); an ``OpSpec`` is returned as is."""
    if isinstance(op, OpSpec):
        return op
    name = op.removesuffix("_")
    if name not in SPECS:
        raise KeyError(f"difftest knows no op {op!r}; known: {', '.join(SPECS)} (or pass an OpSpec)")
    return SPECS[name]


def inplace_ops(ops: Iterable[str] = DEFAULT_OPS) -> tuple[str, ...]:
    """The in-place forms (``"addcmul_"``) of ``ops`` that the sweep can run on 2-D tensors (lesson 06)."""
    specs = [spec_for(op) for op in ops]
    return tuple(f"{s.name}_" for s in specs if s.has_inplace() and 2 in s.ranks)


# --- layouts --------------------------------------------------------------------------------------


def _storage_for(values: torch.Tensor, layout: str, device) -> torch.Tensor | None:
    """An empty tensor on ``device`` with ``values``'s shape in ``layout``; None if it cannot."""
    shape, rank = tuple(values.shape), values.dim()
    kw = {"dtype": values.dtype, "device": device}
    if layout == "contiguous":
        return torch.empty(shape, **kw)
    if layout == "transposed" and rank >= 2:
        return torch.empty(*shape[:-2], shape[-1], shape[-2], **kw).transpose(-1, -2)
    if layout == "stepped" and rank >= 1:
        return torch.empty(*shape[:-1], 2 * shape[-1], **kw)[..., ::2]
    if layout == "narrowed" and rank >= 1:
        big = torch.empty([s + 2 for s in shape], **kw)
        return big[tuple(slice(1, 1 + s) for s in shape)]
    if layout == "permuted 3-D" and rank == 3:
        return torch.empty(shape[2], shape[0], shape[1], **kw).permute(1, 2, 0)
    if layout == "channels_last" and rank == 4:
        return torch.empty(shape, memory_format=torch.channels_last, **kw)
    return None


def lay_out(values: torch.Tensor, layout: str, device=None, written: bool = False) -> torch.Tensor:
    """``values`` (a CPU tensor) copied to ``device`` in ``layout``; a written-to tensor is never
    expanded, and a layout the tensor's rank cannot take leaves it contiguous (lesson 06)."""
    device = device or values.device
    if layout == "expanded" and not written and values.dim() >= 1 and values.shape[0] > 1:
        row = values[:1].to(device)
        return row.expand(values.shape)
    target = _storage_for(values, layout, device)
    if target is None:
        target = torch.empty(values.shape, dtype=values.dtype, device=device)
    target.copy_(values)
    return target



def draw_values(spec: OpSpec, shapes, layout: str, gen: torch.Generator, dtype) -> list[torch.Tensor]:
    """Random CPU inputs of ``shapes`` for ``spec`` (positive where it needs it); for the "expanded"
    layout each input repeats its first row, as an expanded tensor does."""
    out = []
    for i, shape in enumerate(shapes):
        v = torch.randn(shape, generator=gen, dtype=dtype)
        if i in spec.positive:
            v = v.abs() + 0.5
        if layout == "expanded" and v.dim() >= 1:
            v = v[:1].expand(shape).contiguous()  # an expanded tensor repeats its first row
        out.append(v)
    return out

