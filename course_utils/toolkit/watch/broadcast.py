"""Loss-side broadcasting (``course watch``): a prediction and a target that hold the same values
but broadcast to a larger shape than either, the (B, 1) against (B,) case, which turns B errors
into B x B pairs. Seen in loss functions (``F.mse_loss`` and friends) at once, and in hand-written
losses by following the broadcast result through every op it feeds (weights, masks, per-row
reductions) until it is reduced to a scalar.
A pairwise difference on purpose (``s[:, None] - s``: both sides need gradients) is not flagged.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

from course_utils.toolkit.watch.findings import Finding

_LOSSES = {F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.soft_margin_loss}
_BINARY = {
    getattr(torch.Tensor, n)
    for n in (
        "__sub__",
        "__rsub__",
        "__add__",
        "__radd__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
        "sub",
        "add",
        "mul",
        "div",
    )
} | {torch.sub, torch.add, torch.mul, torch.div}


def _squeezed(shape) -> tuple:
    return tuple(s for s in shape if s != 1)


def bad_broadcast(a, b) -> tuple | None:
    """(shape a, shape b, result shape) when a prediction and a target broadcast to a larger shape
    than either although they hold the same values ((B, 1) against (B,)); else None."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.numel() < 2 or b.numel() < 2:
        return None
    if a.shape == b.shape or _squeezed(a.shape) != _squeezed(b.shape) or a.requires_grad == b.requires_grad:
        return None
    try:
        out = torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        return None
    return (
        (tuple(a.shape), tuple(b.shape), tuple(out)) if math.prod(out) > max(a.numel(), b.numel()) else None
    )


class Broadcasts:
    """Follows broadcast results of one deep window to the loss."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.spread: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> (site, shapes, op)

    def before(self, func, args: tuple, site) -> None:
        if func in _LOSSES and len(args) >= 2:
            shapes = bad_broadcast(args[0], args[1])
            if shapes is not None:
                self.report(site, shapes, func.__name__)

    def after(self, func, args: tuple, inputs: list, outs: list, site) -> None:
        if func in _BINARY and len(inputs) == 2:
            shapes = bad_broadcast(*[a for a in args if isinstance(a, torch.Tensor)])
            if shapes is not None:
                self.spread[outs[0]] = (site, shapes, func.__name__.strip("_"))
                return
        origin = next((self.spread.get(t) for t in inputs if t in self.spread), None) if outs else None
        if origin is None:
            return
        for out in outs:  # weighted, masked, reduced per row: still the B x B pairs
            if out.dim() == 0:
                self.report(origin[0], origin[1], origin[2], reduced_at=site)
            else:
                self.spread[out] = origin

    def report(self, site, shapes, op: str, reduced_at=None) -> None:
        a, b, out = shapes
        reduced = (
            f"; reduced to the loss at {reduced_at}" if reduced_at is not None and reduced_at != site else ""
        )
        self.watcher.log.add(
            Finding(
                "broadcast",
                f"{op} of shapes {a} and {b} broadcasts to {out}: {math.prod(out)} pairs "
                f"instead of {max(math.prod(a), math.prod(b))} element-wise terms{reduced}",
                site,
                self.watcher.step + 1,
                subject=str(site),
            )
        )
