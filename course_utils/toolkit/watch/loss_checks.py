"""What losses receive (``course watch``, deep windows): probabilities where the loss expects logits
(a softmax or sigmoid applied twice), an ``nll_loss`` given probabilities or raw logits where it
expects log-probabilities, a softmax taken over the batch, padded positions scored as
targets, and classification targets that never vary. Each finding states the numbers it saw.

The inputs are read where the loss is called (``F.cross_entropy`` and friends are torch functions,
so the deep windows' function mode sees them, hand-written losses through their ops); a per-token
loss computed with ``reduction="none"`` is followed until it is reduced, and is fine if a mask
multiplies it on the way. A padding mask the script builds in the step (a (B, T) comparison whose
rows are True then False, of different lengths) and then leaves out of the loss names the padding
where the targets alone cannot (the padding label is also a common real one).
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

from course_utils.toolkit.watch.chance import ChanceLevel
from course_utils.toolkit.watch.findings import Finding

_SOFTMAX = {F.softmax, F.log_softmax, torch.softmax, torch.log_softmax, torch.Tensor.softmax,
            torch.Tensor.log_softmax}
_CLASS_LOSSES = {F.cross_entropy, F.nll_loss}
_LOGIT_LOSSES = {F.binary_cross_entropy_with_logits}
_TARGET_LOSSES = {F.cross_entropy, F.nll_loss, F.binary_cross_entropy_with_logits, F.binary_cross_entropy,
                  F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss}
_MADE = {torch.ones, torch.zeros, torch.full, torch.ones_like, torch.zeros_like, torch.full_like,
         torch.Tensor.new_ones, torch.Tensor.new_zeros, torch.Tensor.new_full, torch.Tensor.fill_}
_KEEPS = {torch.Tensor.to, torch.Tensor.float, torch.Tensor.view, torch.Tensor.reshape, torch.Tensor.squeeze,
          torch.Tensor.unsqueeze, torch.Tensor.expand, torch.Tensor.type, torch.Tensor.cuda}
_REDUCE = {torch.Tensor.mean, torch.Tensor.sum, torch.mean, torch.sum}
CONSTANT_WINDOWS = 3  # deep windows in a row with one target value before it is reported
SIGMOID_WINDOWS = 3  # deep windows in a row with logits in [0, 1] before they are called probabilities
LOG_PROBABILITY_TOLERANCE = 0.05  # |logsumexp| of a row of log-probabilities (log(p + eps) included)


def _arg(args: tuple, kwargs: dict, i: int, name: str, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


def probability_rows(x: torch.Tensor, dim: int = 1) -> bool:
    """Every value in [0, 1] and every row along ``dim`` summing to 1: a softmax's output."""
    if not x.is_floating_point() or x.dim() < 2 or x.numel() < 4:
        return False
    x = x.detach()
    if x.min() < 0 or x.max() > 1:
        return False
    return bool(((x.sum(dim) - 1).abs() < 1e-3).all())


def made_by(x: torch.Tensor, node: str) -> bool:
    """Whether ``x`` comes out of an op whose autograd node is ``node``, through at most 3 reshapes."""
    fn = x.grad_fn
    for _ in range(4):
        if fn is None:
            return False
        name = type(fn).__name__
        if name.startswith(node):
            return True
        if not re.match(r"(View|Squeeze|Unsqueeze|Reshape|Alias|Expand|Permute|Transpose|Clone)", name):
            return False
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return False


def in_unit_interval(x: torch.Tensor) -> bool:
    """Every value in [0, 1] (a sigmoid's output), with enough values for that to mean something."""
    return x.is_floating_point() and x.numel() >= 8 and bool(x.min() >= 0) and bool(x.max() <= 1)


def padding_mask(m: torch.Tensor) -> torch.Tensor | None:
    """The real positions of a (B, T) boolean padding mask (each row real, then padding, rows of
    different lengths; True may mark either side), else None."""
    if m.dtype != torch.bool or m.dim() != 2 or m.shape[0] < 2 or m.shape[1] < 4:
        return None
    steps = m.int().diff(dim=1)
    real = m if bool((steps <= 0).all()) else ~m if bool((steps >= 0).all()) else None
    if real is None or bool(real.all()) or not bool(real[:, 0].all()):
        return None
    lengths = real.sum(1)
    return real if len(torch.unique(lengths)) > 1 else None


def padded_tail(target: torch.Tensor) -> tuple | None:
    """(pad value, padded positions, positions, rows padded) when a (B, T) target ends, in rows of
    different lengths, with a run of one value (the padding pad_sequence adds); else None."""
    if target.dim() != 2 or target.shape[0] < 2 or target.shape[1] < 4:
        return None
    t = target.detach()
    pad = t[:, -1].mode().values
    same = t == pad
    # length of the run of ``pad`` at the end of each row
    run = torch.flip(same.int(), [1]).cumprod(1).sum(1)
    padded = run >= 2
    if int(padded.sum()) < 2 or len(torch.unique(run[padded])) < 2 or bool((run == t.shape[1]).all()):
        return None
    tail = int(run.sum())
    elsewhere = int(same.sum()) - tail  # the value inside the rows: a real class or value, not padding
    if tail < 0.1 * t.numel() or elsewhere > 0.05 * (t.numel() - tail):
        return None
    return pad.item(), tail, t.numel(), int(padded.sum())


class LossInputs:
    """The loss-side checks of one deep window after another."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.unmasked: WeakIdKeyDictionary = WeakIdKeyDictionary()  # per-token loss -> (site, evidence)
        self.made: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensors built as constants
        self.constant: dict = {}  # site -> (value, windows in a row, last window)
        self.batch = 0  # the first dimension of the last loss target: the batch
        self.sigmoid: dict = {}  # site -> (deep windows in a row with inputs in [0, 1], last window)
        self.pending = None
        self.masks: dict = {}  # shape -> (window, real positions) of padding masks built in the window
        self.chance = ChanceLevel(watcher)
        self.broken = False

    def guarded(self, check, *args) -> None:
        """Run one of the checks; an error in it switches these checks off, not the watcher."""
        if self.broken:
            return
        try:
            check(*args)
        except Exception:  # noqa: BLE001 - a check that cannot read its tensors must not stop the others
            self.broken = True

    # --- before the call ------------------------------------------------------------------------
    def before(self, func, args: tuple, kwargs: dict, site) -> None:
        if func in _SOFTMAX:
            self._softmax(func, args, kwargs, site)
            return
        if func not in _TARGET_LOSSES or len(args) < 2:
            return
        if not all(isinstance(a, torch.Tensor) for a in args[:2]):
            return
        x, target = args[0], args[1]
        if target.dim() >= 1:
            self.batch = target.shape[0]
        if func is F.nll_loss and x.requires_grad:
            self._log_probabilities(site, x)
        elif func in _CLASS_LOSSES and x.requires_grad and probability_rows(x):
            self._logits(site, func, x, "rows in [0, 1] that sum to 1 (a softmax's output)")
        elif func in _LOGIT_LOSSES and x.requires_grad:
            self._sigmoid(site, func, x)
        self._padding(func, x, target, kwargs, site)
        if func in _CLASS_LOSSES:
            self.chance.on_loss(func, x, target, kwargs, site)
        if func in (F.cross_entropy, F.nll_loss, F.binary_cross_entropy_with_logits, F.binary_cross_entropy):
            self._constant(func, target, site)

    def _logits(self, site, func, x, seen: str) -> None:
        lo, hi = float(x.detach().min()), float(x.detach().max())
        self.report("probabilities as logits", site,
                    f"{func.__name__} received {tuple(x.shape)} inputs with {seen}, min {lo:.3g}, max "
                    f"{hi:.3g}: it applies the softmax/sigmoid itself, so it is applied twice")

    def _log_probabilities(self, site, x) -> None:
        """nll_loss takes -x[target]: its rows must be log-probabilities (logsumexp 0 over the
        classes). Probabilities make the loss -p, in [-1, 0]; raw logits make it unbounded below."""
        if not x.is_floating_point() or x.dim() < 2 or x.shape[1] < 2:
            return
        if probability_rows(x):
            seen, loss = "rows in [0, 1] that sum to 1 (a softmax's output)", "-p[target], in [-1, 0]"
        else:
            lse = torch.logsumexp(x.detach().float(), dim=1).flatten()
            off = lse.abs() > LOG_PROBABILITY_TOLERANCE
            if float(off.float().mean()) < 0.9:
                return
            seen = (f"rows whose logsumexp over the classes is not 0 ({int(off.sum())} of {lse.numel()} "
                    f"rows, from {float(lse.min()):.3g} to {float(lse.max()):.3g})")
            loss = "-logit[target], with no lower bound"
        self.report("not log-probabilities", site,
                    f"nll_loss received {tuple(x.shape)} inputs with {seen}: it expects log-probabilities "
                    f"(log_softmax's output) and takes -x[target], so the loss is {loss}")

    def _sigmoid(self, site, func, x) -> None:
        """Logits can all fall in [0, 1] in one batch by chance (a GAN's discriminator): a sigmoid's
        output is named once it stays in [0, 1] for SIGMOID_WINDOWS sampled steps and spreads
        over more than half of that interval, as the probabilities of a model that learns do."""
        if made_by(x, "SigmoidBackward"):
            self._logits(site, func, x, "values made by a sigmoid (its autograd node)")
            return
        window = self.watcher.ops.window
        count, last = self.sigmoid.get(site, (0, -1))
        if last == window:
            return
        x = x.detach()
        count = count + 1 if in_unit_interval(x) else 0
        self.sigmoid[site] = (count, window)
        if count >= SIGMOID_WINDOWS and float(x.max() - x.min()) > 0.5:
            seen = f"values all in [0, 1] in {count} sampled steps in a row (a sigmoid's output)"
            self._logits(site, func, x, seen)

    def _softmax(self, func, args, kwargs, site) -> None:
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        dim = _arg(args, kwargs, 1, "dim")
        if x is None or dim is None or x.dim() < 2 or not (x.requires_grad and torch.is_grad_enabled()):
            return
        batch = self.batch or self.watcher.models.batch_size
        if dim % x.dim() == 0 and x.shape[0] > 1 and batch and x.shape[0] == batch and x.shape[-1] != batch:
            self.report("softmax over batch", site,
                        f"{func.__name__}(dim={dim}) over a {tuple(x.shape)} tensor whose dimension 0 is the "
                        f"batch of {batch}: each column is normalised across the batch's samples")

    def _padding(self, func, x, target, kwargs, site) -> None:
        ignore = kwargs.get("ignore_index", -100)
        batch = self.watcher.models.batch_size  # (B, T) targets flattened with their (B, T, C) logits
        flat = target.dim() == 1 and x.dim() == 2 and batch and target.numel() > batch
        if flat and target.numel() % batch == 0:
            target = target.reshape(batch, -1)
        tail = padded_tail(target)
        if tail is None and x.requires_grad and target.dim() == 2:
            self._unused_mask(func, target, kwargs, site)
            return
        if tail is None or (func in _CLASS_LOSSES and tail[0] == ignore) or not x.requires_grad:
            return
        pad, padded, total, rows = tail
        what = (f"{func.__name__} scores {padded} of {total} target positions ({100 * padded / total:.0f}%) "
                f"that are padding: {rows} rows end in a run of {pad!r} of different lengths")
        if kwargs.get("reduction", "mean") == "none":
            self.pending = (site, what)  # judged when the per-token loss is reduced
        else:
            self.report("padding in loss", site, what + f", and ignore_index={ignore}")

    def _mask_for(self, target: torch.Tensor, ignore) -> torch.Tensor | None:
        """A padding mask of the target's shape built in this window, whose padded targets are not
        all ``ignore`` (they would be left out already)."""
        window, real = self.masks.get(tuple(target.shape), (None, None))
        if window != self.watcher.ops.window or real.device != target.device:
            return None
        if ignore is None:
            return real
        return None if bool((target.detach()[~real] == ignore).all()) else real

    def _unused_mask(self, func, target, kwargs, site) -> None:
        ignore = kwargs.get("ignore_index", -100) if func in _CLASS_LOSSES else None
        if kwargs.get("reduction", "mean") == "none":
            self.pending = (site, None, target, ignore)  # the mask may come before the reduction
            return
        real = self._mask_for(target, ignore)
        if real is not None:
            self.report("padding in loss", site, self._masked_out(func.__name__, real))

    @staticmethod
    def _masked_out(name: str, real: torch.Tensor) -> str:
        pad = int((~real).sum())
        return (f"a padding mask of the targets' shape {tuple(real.shape)} was built in this step ({pad} of "
                f"{real.numel()} positions ({100 * pad / real.numel():.0f}%) are padding, rows of "
                f"{len(torch.unique(real.sum(1)))} lengths), but {name} averages over every position: the "
                "mask is never applied to the loss")

    def _constant(self, func, target, site) -> None:
        if target.numel() < 16 or target in self.made:
            return
        t = target.detach()
        value = t.reshape(-1)[0]
        window = self.watcher.ops.window
        if not bool((t == value).all()):
            self.constant[site] = (None, 0, window)
            return
        old, count, last = self.constant.get(site, (None, 0, -1))
        if last == window:
            return
        count = count + 1 if old == value.item() else 1
        self.constant[site] = (value.item(), count, window)
        if count >= CONSTANT_WINDOWS:
            self.report("constant targets", site,
                        f"the {func.__name__} targets were all {value.item()!r} in {count} sampled steps "
                        f"in a row ({t.numel()} values each): the model is taught one answer")

    # --- after the call ---------------------------------------------------------------------------
    def after(self, func, args: tuple, inputs: list, outs: list) -> None:
        if func in _CLASS_LOSSES and outs:
            self.chance.on_output(outs[0])
        for out in outs:
            if out.dtype == torch.bool and out.dim() == 2:
                real = padding_mask(out)
                if real is not None:
                    self.masks[tuple(out.shape)] = (self.watcher.ops.window, real)
        if func in _MADE or inputs and inputs[0] in self.made and func in _KEEPS:
            for t in outs:
                self.made[t] = True
            return
        pending = self.pending
        if pending is not None:
            self.pending = None
            if outs:
                self.unmasked[outs[0]] = pending if pending[1] is not None else (*pending[:2], pending)
            return
        origin = next((self.unmasked[t] for t in inputs if t in self.unmasked), None)
        if origin is None:
            return
        if len(inputs) > 1 or func not in _REDUCE and not outs:  # multiplied or indexed by a mask: fine
            return
        for out in outs:
            if out.dim() == 0 and func in _REDUCE:
                self._reduced(origin)
            elif len(inputs) == 1:
                self.unmasked[out] = origin

    def _reduced(self, origin: tuple) -> None:
        """A per-token loss reduced to one number with nothing multiplied in on the way."""
        if origin[1] is not None:
            self.report("padding in loss", origin[0], origin[1] + ", and the per-token loss is averaged "
                        "without a mask")
            return
        _, _, (site, _, target, ignore) = origin
        real = self._mask_for(target, ignore)
        if real is not None:
            what = self._masked_out("the reduction of the per-token loss", real)
            self.report("padding in loss", site, what)

    def report(self, kind: str, site, what: str) -> None:
        self.watcher.log.add(Finding(kind, what, site, self.watcher.step + 1, subject=f"{kind} {site}"))
