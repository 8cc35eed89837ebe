"""Dead ReLU units (``course watch``): a layer whose ReLU outputs 0 for every row of the batch, at
every position, in nearly all of its units, step after step. Such a unit passes no gradient back,
so nothing moves it out again: a learning rate too large for the inputs (raw 0-255 pixels), an
initialisation that puts every pre-activation below 0 (all-positive weights on all-negative
features, a ReLU head whose bias starts negative) leave the layer dead for the rest of the run.

Seen in deep windows: each ``relu`` whose input a linear or convolution layer made (not a norm
layer: a channel whose scale decayed to 0 under it is dead but harmless), on a batch of 2-D (rows,
units) or 4-D (rows, channels, height, width) outputs, is reduced to one flag per unit (positive
anywhere); the flags of a window are read at its close in one transfer. A layer is named once
``DEAD`` of its units were dead in ``WINDOWS`` complete windows of different steps. A ReLU on a
hand-written margin or hinge (its input is a difference, not a layer's output) is left alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.toolkit.watch.findings import Finding

DEAD = 0.9  # of a layer's units that output 0 for every value of a sampled step
WINDOWS = 2  # complete windows, of different steps, in which the layer was that dead
MIN_VALUES = 32  # values per unit in a step (rows x positions): fewer say little about a unit
RELUS = {F.relu, torch.relu, torch.relu_, torch.Tensor.relu, torch.Tensor.relu_}
# the autograd nodes that linear and convolution layers end in; not a norm's: a channel whose scale
# decayed to 0 under a norm is dead but harmless (channel pruning relies on it)
_LAYERS = {"AddmmBackward0", "MmBackward0", "ConvolutionBackward0", "MkldnnConvolutionBackward0"}


class DeadUnits:
    """The per-unit activity of each ReLU layer in the open window, and the dead ones across windows."""

    def __init__(self, watcher):
        self.watcher = watcher
        # id(param) -> [a layer's parameter, alive flags, values per unit, spatial (4-D)]
        self.pending: dict[int, list] = {}
        self.dead: dict[int, dict] = {}  # id(param) -> {step: (dead, units, values per unit, spatial)}
        self.named: set[int] = set()
        self.off = False  # a tensor it could not read: the check stops, the watcher goes on

    def after(self, func, outs: list) -> None:
        """After a call in a window, with gradients on: a layer's ReLU output, reduced per unit."""
        if func not in RELUS or not outs or self.off:
            return
        try:
            self._count(outs[0])
        except Exception:  # noqa: BLE001 - a layout it cannot reduce (sparse, quantized, a subclass)
            self.off = True

    def _count(self, out: torch.Tensor) -> None:
        if out.dim() not in (2, 4) or out.numel() // max(1, out.shape[1]) < MIN_VALUES:
            return
        param = _layer_param(out)
        if param is None:
            return
        with torch.no_grad():
            alive = (out > 0).transpose(0, 1).reshape(out.shape[1], -1).any(1)
        values = out.numel() // out.shape[1]
        entry = self.pending.get(id(param))
        if entry is not None and entry[0] is param and entry[1].shape == alive.shape:
            entry[1] |= alive  # the layer called again in the step (a shared layer, a second batch)
            entry[2] += values
        else:
            self.pending[id(param)] = [param, alive, values, out.dim() == 4]

    def drop(self) -> None:
        """A window cut for its cost: what it saw is not judged."""
        self.pending = {}

    def close(self, step: int) -> None:
        """A complete window: one read of every layer's flags, then the verdict."""
        pending, self.pending = self.pending, {}
        if not pending:
            return
        flags = torch.cat([e[1] for e in pending.values()]).cpu().tolist()
        at, found = 0, []
        for key, (param, alive, values, spatial) in pending.items():
            units = alive.numel()
            dead = units - sum(flags[at:at + units])
            at += units
            if dead >= DEAD * units:
                seen = self.dead.setdefault(key, {})
                seen[step] = (dead, units, values, spatial)
                if len(seen) >= WINDOWS:
                    found.append((param, seen))
        if found and not self.named:
            self._report(found, step)

    def _report(self, found: list, step: int) -> None:
        """One finding for the run: the first dead layer in forward order, and the others after it."""
        self.named.add(id(found[0][0]))
        steps = sorted(found[0][1])
        dead, units, values, spatial = found[0][1][steps[-1]]
        of = f"{values} values (rows x positions)" if spatial else f"{values} rows"
        layers = [f"{self._layer(p)} ({s[max(s)][0]} of {s[max(s)][1]})" for p, s in found[1:]]
        after = f"; dead as well: the ReLUs after {', '.join(layers)}" if layers else ""
        self.watcher.log.add(Finding(
            "dead units",
            f"{_units(dead, units)} of the ReLU after {self._layer(found[0][0])} "
            f"{'outputs' if units == 1 else 'output'} 0 for "
            f"every one of the {of} of a batch, in each of {len(steps)} "
            f"sampled steps (steps {', '.join(map(str, steps))}){after}",
            self.watcher.models.site_of(found[0][0]),
            step,
            subject="dead units",
        ))

    def _layer(self, param: torch.Tensor) -> str:
        models = self.watcher.models
        info = models.param_info.get(param)
        kind = f" ({type(info[1]).__name__})" if info else ""
        return f"`{models.name(param, 'a layer').rsplit('.', 1)[0]}`{kind}"


def _units(dead: int, units: int) -> str:
    """Who outputs 0: the only unit, or how many of the layer's units."""
    return "the only unit" if units == 1 else f"{dead} of the {units} units"


def _layer_param(out: torch.Tensor) -> torch.Tensor | None:
    """A parameter of the layer whose output this ReLU took (None: not a layer's activation)."""
    node = out.grad_fn
    if node is None or not node.next_functions:
        return None
    producer = node.next_functions[0][0]
    if producer is None or producer.name() not in _LAYERS:
        return None
    children = [c for c, _ in producer.next_functions if c is not None]
    # its own parameters (conv weight, linear bias), then one node further (a linear weight's transpose)
    for leaf in (*children, *(g for c in children for g, _ in c.next_functions if g is not None)):
        variable = getattr(leaf, "variable", None)
        if isinstance(variable, torch.Tensor):
            return variable
    return None
