"""The numeric checks around each optimizer's steps (``course watch``): cheap, batched, sampled.

On a *check step* the pre-step hook copies the parameters into a snapshot; the post-step hook
takes, in one device-to-host read, the norms of every update, parameter and gradient and the
loss. From those: non-finite values, parameters that never get a gradient, frozen parameters
(judged at float resolution: an update lr x |grad| below eps x |p| rounds away, which is
information, not lost updates), update-to-weight ratios out of range, a flat loss while gradients
are non-zero and a total gradient norm that keeps growing. Every step (no read): the learning
rate (collapse). Around check steps only (a gradient hook costs a few percent of a small step):
on two probe parameters whether backward adds to last step's gradient (a missing ``zero_grad``)
or ran at all before ``step()``: by the gradient's version counter, and where something else changed
it in place (clipping, a GradScaler's unscaling) by a few of its entries: a gradient scaled as a
whole still holds the last step's in the same proportion as the new one.
"""

from __future__ import annotations

import math
import weakref
from collections import deque

import torch

from course_utils.toolkit.watch import optim_checks
from course_utils.toolkit.watch.findings import Finding
from course_utils.toolkit.watch.trends import Trends

SAMPLE = 256  # gradient entries a probe compares across a step (a spread over the tensor)


class OptimizerWatch(Trends):
    """The checks of one optimizer."""

    def __init__(self, watcher, optimizer: torch.optim.Optimizer):
        self.watcher, self.ref = watcher, weakref.ref(optimizer)
        self.name = type(optimizer).__name__
        self.steps = 0
        self.primary_mark = -1  # the run's step count at this optimizer's last step (not the primary)
        self.max_lr = 0.0
        self.collapse_step = 0
        self.lr_dipped, self.lr_cycles = False, 0  # near-zero dips the lr came back from
        self.ever_grad: set[int] = set()
        self.no_grad_checks: dict[int, int] = {}
        self.losses: deque = deque(maxlen=6)
        self.norms: list[float] = []
        self.norm_losses: list = []  # the loss at each of those checks (None: none seen)
        self.ratio_hi = self.ratio_lo = 0
        self.ratio_loss = None  # the loss at the first check of a run of high update ratios
        self._snap: list[torch.Tensor] | None = None
        self._params: list[torch.Tensor] = []
        self._with_grad: list[int] = []
        self._sparse: set[int] = set()
        self._grads: list[torch.Tensor] = []
        self._probe_handles: list = []
        self._probe_fired = False
        self._after_step: dict[int, tuple] = {}  # probe id -> (grad id, version after step, backwards)
        self.accumulated = 0
        self.still: dict[int, tuple] = {}  # parameter id -> (checks with a zero gradient and a change, top)
        self.left_by_backward: dict[int, list] = {}  # parameter id -> [hook handle, what backward left]
        self.rows: dict[int, tuple] = {}  # embedding id -> (checks, rows that ever had a gradient)
        self.lr_first: float | None = None
        self.lr_last, self.lr_fell = 0.0, False
        self.schedulers: list | None = None  # weak references, found once
        self.schedule: tuple | None = None  # (scheduler, its step() calls, at optimizer step, peak lr)
        self._add_probes(optimizer)

    # --- probes: did backward run, did it add to last step's gradient? --------------------------
    def _add_probes(self, optimizer) -> None:
        trainable = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
        self._probes = list({id(p): p for p in (trainable[:1] + trainable[-1:])}.values())
        if self.watcher._is_check(self):
            self._arm_probes()

    def _arm_probes(self) -> None:
        """Hook the probes for the backward passes before the next step (a check step)."""
        if not self._probe_handles:  # a probe frozen since (requires_grad_(False)) takes no hook
            self._probe_handles = [p.register_hook(_probe(self, p)) for p in self._probes if p.requires_grad]

    def on_probe(self, p: torch.Tensor, grad: torch.Tensor) -> None:
        """Backward reached probe ``p`` with ``grad`` (before adding it to ``p.grad``)."""
        self._probe_fired = True
        after = self._after_step.get(id(p))
        if after is not None and p.grad is not None and id(p.grad) == after[0]:
            gid, version, passes, old, added = after  # backward adds to last step's gradient
            if old is not None and not grad.is_sparse:
                ops = self.watcher.ops
                ops.paused += 1  # the probe's own copies are not the script's tensors
                try:
                    new = _entries(grad)
                    added = new if added is None else added + new
                finally:
                    ops.paused -= 1
            self._after_step[id(p)] = (gid, version, passes + 1, old, added)

    def _stale_gradients(self) -> None:
        """At a step: is a probe's gradient still the one the last step used, with backward's additions
        and nothing else (no zero_grad)? Then this step sees old batches' gradients too. (Between the
        steps it may be added to on purpose: a GAN's generator loss passes through the discriminator.)"""
        for probe in self._probes:
            after = self._after_step.pop(id(probe), None)
            grad = probe.grad
            if after is None or grad is None or id(grad) != after[0] or not after[2]:
                continue
            if grad._version == after[1] + after[2] or _kept_old(after[3], after[4], grad):
                self.accumulated += 1
                break
        if self.accumulated >= 2:
            self.watcher.log.add(
                Finding(
                    "missing zero_grad",
                    f"{self.name} stepped with gradients that still held the previous steps' "
                    f"({self.accumulated} steps so far): they are never cleared between steps",
                    self.watcher.where_step,
                    self.watcher.step,
                    subject=self.name,
                )
            )

    def finish(self) -> None:
        """At the end of the run: the verdicts that need the whole run."""
        optim_checks.unfinished_warmup(self)

    def close(self) -> None:
        """At the end of the watch: every hook this optimizer's checks put on tensors removed."""
        self._disarm_probes()
        optim_checks.disarm(self)

    def _disarm_probes(self) -> None:
        for handle in self._probe_handles:
            handle.remove()
        self._probe_handles.clear()

    # --- every step -------------------------------------------------------------------------------
    def before_step(self, optimizer, check: bool) -> None:
        if self._after_step:
            self._stale_gradients()
        lr = optimizer.param_groups[0].get("lr", 0.0)
        if check or not isinstance(lr, torch.Tensor):  # a tensor lr is read on check steps only (a sync)
            lr = float(lr)
            optim_checks.note_lr(self, lr)
            if lr > self.max_lr:
                self.max_lr, self.collapse_step = lr, 0
            elif lr < 1e-3 * self.max_lr and not self.collapse_step:
                self.collapse_step = self.steps + 1
            if lr < 1e-2 * self.max_lr:
                self.lr_dipped = True
            elif self.lr_dipped and lr >= 0.5 * self.max_lr:
                self.lr_dipped, self.lr_cycles = False, self.lr_cycles + 1
        if not check:
            return
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self._params = params
        self._with_grad = [i for i, p in enumerate(params) if p.grad is not None and not p.grad.is_sparse]
        self._sparse = {i for i, p in enumerate(params) if p.grad is not None and p.grad.is_sparse}
        self._grads = [
            params[i].grad for i in self._with_grad
        ]  # a manual loop may clear them before after_step
        if not self._with_grad and not self._sparse:
            self._no_gradients_at_step(optimizer)
        decayed = [(p, g) for g in optimizer.param_groups if g.get("weight_decay") for p in g["params"]
                   if p.dim() == 2 and p.grad is not None]
        if decayed:
            optim_checks.untouched_rows(self, *zip(*decayed, strict=True))
        with torch.no_grad():
            if (
                self._snap is None
                or len(self._snap) != len(params)
                or any(
                    s.shape != p.shape or s.dtype != p.dtype for s, p in zip(self._snap, params, strict=True)
                )
            ):
                self._snap = [p.detach().clone() for p in params]
            else:
                torch._foreach_copy_(self._snap, params)  # under no_grad: no detach needed

    def after_step(self, optimizer, check: bool, loss: torch.Tensor | None) -> None:
        self.steps += 1
        if self.watcher._is_check(self):  # the probes watch the backward passes before a check step
            self._arm_probes()
            for probe in self._probes:
                g = probe.grad
                if g is not None:
                    old = None if g.is_sparse else _entries(g)
                    self._after_step[id(probe)] = (id(g), g._version, 0, old, None)
        elif self._probe_handles:
            self._disarm_probes()
        self._probe_fired = False
        if check and self._snap is not None:
            with torch.no_grad():
                self._check(optimizer, loss)
        self._check_lr(optimizer)
        if check:
            optim_checks.watch_schedule(self, optimizer)

    def _no_gradients_at_step(self, optimizer) -> None:
        w = self.watcher
        if not w.backward_since_step or not any(p.requires_grad for p in self._params):
            return
        if self._probe_fired:
            w.log.add(
                Finding(
                    "zero grad at step",
                    f"{self.name}.step() runs with every gradient None "
                    "although backward() computed them since the last step: they were "
                    "cleared in between",
                    w.where_step,
                    w.step + 1,
                    subject=self.name,
                )
            )
        # else: no parameter got a gradient at all; counted per parameter in _check

    # --- the batched check --------------------------------------------------------------------------
    def _check(self, optimizer, loss) -> None:
        params, with_grad = self._params, self._with_grad
        torch._foreach_sub_(self._snap, params)  # snapshot := old - new (under no_grad)
        grads, self._grads = self._grads, []
        parts = list(torch._foreach_norm([*self._snap, *params, *grads]))
        has_loss = isinstance(loss, torch.Tensor) and loss.numel() == 1
        if has_loss:
            parts.append(loss.detach().reshape(()))
        if len({t.dtype for t in parts}) > 1 or len({t.device for t in parts}) > 1:
            parts = [t.double().cpu() for t in parts]
        values = torch.stack(parts).tolist() if parts else []  # the one device-to-host read
        n, g = len(params), len(with_grad)
        moved, norms = values[:n], values[n : 2 * n]
        gnorm = dict(zip(with_grad, values[2 * n : 2 * n + g], strict=True))
        loss_v = values[-1] if has_loss else None
        w = self.watcher
        w.on_values(loss_v, gnorm, norms, self)
        if w._primary is not None and w._primary() is optimizer:
            w.ops.losses.chance.on_check(loss_v, params[0] if params else None)
        lr_of = [float(gr.get("lr", 0.0)) for gr in optimizer.param_groups for _ in gr["params"]]
        group_of = [gr for gr in optimizer.param_groups for _ in gr["params"]]
        frozen: list[tuple] = []
        still: list[tuple] = []
        for i, p in enumerate(params):
            if i in gnorm or i in self._sparse:  # a sparse gradient (nn.Embedding(sparse=True)) counts
                self.ever_grad.add(id(p))
                self.no_grad_checks.pop(id(p), None)
            elif p.requires_grad and with_grad:
                count = self.no_grad_checks[id(p)] = self.no_grad_checks.get(id(p), 0) + 1
                if count >= 6 and id(p) not in self.ever_grad:
                    w.report_no_gradient(p, count)
            grad = gnorm.get(i)
            if grad == 0 and moved[i] > 0 and lr_of[i] > 0:
                still.append((p, group_of[i], moved[i], norms[i]))
            if grad and math.isfinite(grad) and moved[i] == 0 and lr_of[i] > 0 and p.requires_grad:
                frozen.append((p, group_of[i], grad, grads[with_grad.index(i)]))
        if frozen:
            self._frozen(frozen)
        optim_checks.still_moving(self, still)

        if not with_grad and not self._sparse and w.backward_since_step and not self._probe_fired:
            w.report_no_gradient(None, 1)
        self._check_ratios(params, moved, norms, lr_of, gnorm, loss_v)
        self._check_growth([v for v in gnorm.values()], loss_v)
        self._check_flat(loss_v, gnorm, lr_of)


def _probe(owner: OptimizerWatch, p: torch.Tensor):
    ref_owner, ref_p = weakref.ref(owner), weakref.ref(p)

    @torch.utils.hooks.unserializable_hook
    def hook(grad):
        o, q = ref_owner(), ref_p()
        if o is not None and q is not None and o.watcher.live:
            o.on_probe(q, grad)

    return hook


def _entries(t: torch.Tensor) -> torch.Tensor:
    """Up to ``SAMPLE`` entries of ``t``, spread over it, as a float32 copy on its device."""
    flat = t.detach().reshape(-1)
    if flat.numel() > SAMPLE:
        flat = flat[torch.linspace(0, flat.numel() - 1, SAMPLE, device=flat.device).long()]
    return flat.float().clone()


def _kept_old(old: torch.Tensor | None, added: torch.Tensor | None, grad: torch.Tensor) -> bool:
    """Does ``grad`` (changed in place since the last step by more than backward's additions) still
    hold the last step's gradient ``old``? Its entries are fitted as ``a * old + b * added``: cleared,
    ``a`` is 0; kept and scaled as a whole (clipping, unscaling), ``a`` equals ``b``. Undecided (False)
    where ``old`` and ``added`` point nearly the same way, or the fit is not exact. One small read."""
    if old is None or added is None or grad.is_sparse:
        return False
    x, y, z = torch.stack([old, added, _entries(grad)]).cpu().double().unbind()
    xx, yy, xy = float(x @ x), float(y @ y), float(x @ y)
    xz, yz, zz = float(x @ z), float(y @ z), float(z @ z)
    det = xx * yy - xy * xy
    if xx <= 0 or yy <= 0 or det <= 0.01 * xx * yy:  # |cos| >= 0.995: the two cannot be told apart
        return False
    a, b = (xz * yy - yz * xy) / det, (yz * xx - xz * xy) / det
    residual = float(((z - a * x - b * y) ** 2).sum())
    return b > 0 and abs(a - b) <= 0.05 * b and residual <= 1e-6 * zz
