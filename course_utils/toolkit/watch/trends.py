"""What one optimizer's check steps add up to (``course watch``): frozen parameters judged at float
resolution, update-to-weight ratios, a growing gradient norm, a flat loss, a learning rate that
collapsed early. ``OptimizerWatch`` inherits it.
"""

from __future__ import annotations

import math

import torch

from course_utils.toolkit.watch.findings import Finding

ADAPTIVE = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "Adafactor")


def expected_update(
    p: torch.Tensor, grad: torch.Tensor, group: dict, optimizer_name: str, state: dict | None = None
) -> torch.Tensor:
    """A per-element size of the step the optimizer should take (lr x |grad| for SGD; Adam's own
    lr x m_hat / (sqrt(v_hat) + eps) from its ``state`` when given, else ~lr for adaptive methods;
    weight decay included); only its order of magnitude matters."""
    lr = float(group.get("lr", 0.0))
    g = grad.detach().abs().to(p.dtype)
    if state and "exp_avg" in state and "exp_avg_sq" in state and "betas" in group:
        t = max(1.0, float(state.get("step", 1)))
        b1, b2 = (float(b) for b in group["betas"])
        eps = float(group.get("eps", 1e-8) or 1e-8)
        m_hat = state["exp_avg"].detach().abs() / (1 - b1**t)
        step = lr * m_hat / ((state["exp_avg_sq"].detach() / (1 - b2**t)).sqrt() + eps)
    elif optimizer_name in ADAPTIVE or "betas" in group:
        eps = float(group.get("eps", 1e-8) or 1e-8)
        step = lr * g / (g + eps)
    else:
        step = lr * g  # momentum makes later steps larger; the first step is lr x |grad|
    wd = float(group.get("weight_decay", 0.0) or 0.0)
    return step + lr * wd * p.detach().abs() if wd else step


def visible_fraction(
    p: torch.Tensor, grad: torch.Tensor, group: dict, optimizer_name: str, state: dict | None = None
) -> float:
    """Among the elements that have a gradient, the fraction whose expected update would show at the
    float spacing at |p| (a sparse gradient, e.g. top-k features, leaves the others alone)."""
    with torch.no_grad():
        info = torch.finfo(p.dtype)
        spacing = (p.detach().abs() * info.eps).clamp_min(info.tiny)
        # an update of half the spacing rounds to a change; without Adam's state ~lr is only an upper
        # bound of an adaptive method's step (m / sqrt(v) is below 1 for noisy gradients): a margin
        rough = (optimizer_name in ADAPTIVE or "betas" in group) and not (state and "exp_avg" in state)
        visible = expected_update(p, grad, group, optimizer_name, state) >= (4.0 if rough else 0.5) * spacing
        has_grad = grad.detach() != 0
        count = int(has_grad.sum())
        return float((visible & has_grad).sum()) / count if count else 0.0


class Trends:
    """Mixed into ``OptimizerWatch``: uses its ``watcher``, ``name``, counters and history."""

    def _frozen(self, frozen: list[tuple]) -> None:
        """Parameters bit-identical after a step with a non-zero gradient: lost updates where the
        update should be visible at float resolution, otherwise a note (below resolution)."""
        w = self.watcher
        if self.name == "LBFGS":  # its step is a line search, not lr x gradient: it may rightly not move
            return
        lost, small = [], []
        for p, group, grad_norm, grad in frozen:
            state = getattr(self.ref(), "state", {}).get(p)
            fraction = visible_fraction(p, grad, group, self.name, state)
            (lost if fraction >= 0.5 else small).append(
                (w.models.name(p, "a parameter"), p, group, grad_norm, fraction)
            )
        if lost:
            names = ", ".join(n for n, *_ in lost[:4]) + (
                f" and {len(lost) - 4} more" if len(lost) > 4 else ""
            )
            _, p, group, grad_norm, fraction = lost[0]
            w.log.add(
                Finding(
                    "frozen",
                    f"{names}: non-zero gradients (norm {grad_norm:.3g}) and lr "
                    f"{group['lr']:g} should visibly change {fraction:.0%} of the values that have a "
                    "gradient, yet they are bit-identical after the step: the updates are lost",
                    w.models.site_of(p) if w.models.site_of(p).line else w.where_step,
                    w.step,
                    subject=self.name,
                )
            )
        for name, p, _group, grad_norm, _ in small:
            self._below_resolution(name, p, grad_norm)

    def _below_resolution(self, name: str, p, grad_norm: float) -> None:
        from course_utils.toolkit.watch.models import feeds_norm

        w = self.watcher
        roots = w.models.live_roots()
        local = name.split(".", 1)[-1] if len(roots) > 1 else name
        norm = next(
            (feeds_norm(r, local, p.numel()) for r in roots if any(q is p for q in r.parameters())), None
        )
        why = (
            f"it is the bias of a layer that feeds {norm}: the norm removes the mean, so this "
            "gradient is ~0 by construction"
            if norm
            else ""
        )
        fix = "drop the bias (bias=False) before a norm layer" if norm else ""
        w.log.add(
            Finding(
                "below resolution",
                f"{name}: the update lr x |grad| (gradient norm "
                f"{grad_norm:.2g}) is below the float spacing at its values, so it does "
                "not move; this is not lost updates",
                w.models.site_of(p),
                w.step,
                subject=name,
                why=why,
                fix=fix,
            )
        )

    def _scale_free(self, p) -> bool:
        """A weight whose scale a norm layer right after it divides out (``scale_invariant``)."""
        from course_utils.toolkit.watch.models import scale_invariant

        roots = self.watcher.models.live_roots()
        for root in roots:
            for name, q in root.named_parameters():
                if q is p:
                    return scale_invariant(root, name)
        return False

    def _check_ratios(self, params, moved, norms, lr_of, gnorm, loss=None) -> None:
        """Update-to-weight ratios of the weight matrices: a median above 0.25 at three checks in a
        row while the loss has not fallen since the first of them diverges (large early steps of a
        loss that falls are fast learning: small initial weights, momentum); a largest ratio under
        a millionth does not learn. Weights a norm layer makes scale-free are left out: their
        relative steps are large while their norm is small, by design."""
        ratios = [
            moved[i] / norms[i]
            for i, p in enumerate(params)
            if p.dim() >= 2
            and p.numel() >= 16
            and norms[i] > 0
            and lr_of[i] > 0
            and i in gnorm
            and math.isfinite(moved[i])
            and not (moved[i] > 0.25 * norms[i] and self._scale_free(p))
        ]
        if not ratios or self.steps < 3:
            return
        ratios.sort()
        median, top = ratios[len(ratios) // 2], ratios[-1]
        self.ratio_hi = self.ratio_hi + 1 if median > 0.25 else 0
        if self.ratio_hi == 1 or loss is None or not math.isfinite(loss):
            self.ratio_loss = loss
        falling = self.ratio_loss is not None and loss is not None and loss < self.ratio_loss
        # the largest update under a millionth of its weight: nothing learns (1e-4..1e-2 is healthy)
        self.ratio_lo = self.ratio_lo + 1 if top < 1e-6 and any(v > 0 for v in gnorm.values()) else 0
        w = self.watcher
        if self.ratio_hi >= 3 and not falling:
            w.log.add(
                Finding(
                    "update ratio",
                    f"each step changes the weights by {median:.2g} of their "
                    "size (median over weight matrices, 3 checks in a row): far above the "
                    "healthy 1e-4..1e-2; the run is diverging",
                    w.where_step,
                    w.step,
                    subject=f"{self.name} high",
                )
            )
        if self.ratio_lo >= 5 and self.steps >= 40:  # past the first steps of a warm-up
            w.log.add(
                Finding(
                    "update ratio",
                    f"the largest update is {top:.2g} of its weight's size "
                    "(5 checks in a row): the weights have stopped moving (lr "
                    f"{lr_of[0]:.2g})",
                    w.where_step,
                    w.step,
                    subject=f"{self.name} low",
                )
            )

    def _check_growth(self, grad_norms: list[float], loss=None, window: int = 6) -> None:
        """Gradient norms that rise check after check (after the warm-up) by 10x in all while the loss
        does not improve: accumulation or divergence (healthy training can double its gradient norm
        early on, not tenfold steadily). Not judged where several optimizers step in turn (a GAN,
        actor-critic): each one's loss surface moves with the other's updates."""
        if not grad_norms or self.steps <= self.watcher.warmup:  # checks 16 steps apart: a long rise
            return
        if sum(1 for ow in self.watcher.optimizers.values() if ow.steps) > 1:
            return
        self.norms.append(math.sqrt(sum(v * v for v in grad_norms)))
        self.norm_losses.append(loss)
        last, losses = self.norms[-window:], self.norm_losses[-window:]
        if self.watcher.log.has("missing zero_grad") or len(last) < window:
            return
        improved = None not in (losses[0], losses[-1]) and losses[-1] < losses[0]  # NaN: not improved
        if (
            all(b > a for a, b in zip(last, last[1:], strict=False))
            and last[-1] >= 10 * last[0] > 0
            and not improved
        ):
            self.watcher.log.add(
                Finding(
                    "growing grads",
                    f"the total gradient norm rose {window} checks in a row "
                    f"({last[0]:.3g} -> {last[-1]:.3g})",
                    self.watcher.where_step,
                    self.watcher.step,
                    subject=self.name,
                )
            )

    def _check_flat(self, loss, gnorm, lr_of) -> None:
        if loss is None or not math.isfinite(loss) or loss == 0:  # 0: a fit at the loss's floor
            return
        self.losses.append(loss)
        if (
            len(self.losses) == self.losses.maxlen
            and max(self.losses) - min(self.losses) <= 1e-7 * abs(loss)
            and any(v > 0 for v in gnorm.values())
            and max(lr_of) > 0
        ):
            self.watcher.log.add(
                Finding(
                    "flat loss",
                    f"the loss is {loss:.6g} at {len(self.losses)} checks in a row while "
                    f"{self.name} steps with non-zero gradients",
                    self.watcher.loss_site,
                    self.watcher.step,
                    subject=self.name,
                )
            )

    def _check_lr(self, optimizer) -> None:
        if self.lr_cycles >= 2:
            self._check_lr_cycles(optimizer)
        if not self.collapse_step:
            return
        lr = float(optimizer.param_groups[0].get("lr", 0.0))
        if lr >= 1e-3 * self.max_lr:
            self.collapse_step = 0
        elif self.steps >= max(2 * self.collapse_step, self.collapse_step + 20):
            self.watcher.log.add(
                Finding(
                    "lr collapse",
                    f"{self.name}'s learning rate fell from {self.max_lr:.3g} to {lr:.3g} by "
                    f"step {self.collapse_step} and stayed there (now step {self.steps}): the schedule is "
                    f"spent in the first part of training{_schedulers(optimizer)}",
                    self.watcher.step_site,
                    self.watcher.step,
                    subject=self.name,
                )
            )


    def _check_lr_cycles(self, optimizer) -> None:
        """The lr fell to ~0 and came back, again and again: a schedule with an end (a cosine over
        T_max epochs) stepped past it many times, unless its scheduler cycles by design."""
        if self.watcher.log.has("lr collapse", self.name):
            return
        found = _drivers(optimizer)
        if any(type(s).__name__ in _CYCLIC for s in found):
            self.lr_cycles = 0
            return
        self.watcher.log.add(
            Finding(
                "lr collapse",
                f"{self.name}'s learning rate fell to almost 0 and came back {self.lr_cycles} times "
                f"by step {self.steps}: the schedule ran to its end many times over"
                f"{_schedulers(optimizer, found)}",
                self.watcher.step_site,
                self.watcher.step,
                subject=self.name,
            )
        )


_CYCLIC = {"CyclicLR", "CosineAnnealingWarmRestarts"}  # schedulers that restart on purpose


def _drivers(optimizer) -> list:
    """The schedulers that drive ``optimizer`` (found by gc: call it once, not every step)."""
    import gc

    return [
        o
        for o in gc.get_objects()
        if issubclass(type(o), torch.optim.lr_scheduler.LRScheduler)
        and getattr(o, "optimizer", None) is optimizer
    ]


def _horizon(scheduler) -> str:
    for name in ("T_max", "total_iters", "step_size"):
        if isinstance(getattr(scheduler, name, None), int):
            return f" ({name}={getattr(scheduler, name)})"
    return ""


def _schedulers(optimizer, found: list | None = None) -> str:
    """Which schedulers drive this optimizer and how often they were stepped."""
    found = _drivers(optimizer) if found is None else found
    return "".join(
        f"; {type(s).__name__}{_horizon(s)}.step() was called {s.last_epoch} times" for s in found[:2]
    )
