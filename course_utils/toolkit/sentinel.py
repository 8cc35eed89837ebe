"""A training sentinel: cheap checks after every optimizer step that catch silent bugs (lesson 06).

``Sentinel(model, optimizer)``; call ``sentinel.step(loss)`` after each ``optimizer.step()``, or
``Sentinel.attach(model, optimizer)`` once and nothing inside the loop (an optimizer step hook calls
``step()``; ``detach()`` removes it). It reports, once per tensor and kind, as soon as it is sure:

- **frozen**: a parameter with a non-zero gradient whose values are bit-identical to the previous
  check, ``patience`` checks in a row, although its update (lr x gradient) is visible at the
  parameter's float resolution (groups with ``lr == 0``, e.g. a warm-up, are skipped; an update
  that rounds away, such as the ~1e-9 gradient of a bias that feeds a norm layer, is not lost);
- **zero state**: optimizer state (Adam's ``exp_avg_sq``) exactly zero although the gradient is not;
- **non-finite**: NaN or Inf in the loss, a gradient or a parameter;
- **growing grads**: the total gradient norm rose ``growth_window`` checks in a row and at least
  doubled (a missing ``zero_grad()``; measured after any clipping, so clipping hides it);
- **eval mode**: training while ``model.training`` is False;
- **non-contiguous**: non-contiguous parameters or optimizer state (``layout.audit``) when this
  torch/macOS pair has the in-place bug, or under ``mps_inplace_bug()`` (then labelled emulated).

Cost: each check is a handful of ``torch._foreach_*`` calls over all tensors at once and a single
device-to-host read; ``every=N`` checks every N steps. The benchmark holds it to 1.10x a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from course_utils.toolkit.emulate import labelled

ALL_CHECKS = ("frozen", "zero state", "non-finite", "growing grads", "eval mode", "non-contiguous")


@dataclass(frozen=True)
class Finding:
    """One problem the sentinel saw: at which step, what kind, on which tensor, and why."""

    step: int
    kind: str
    name: str
    message: str

    def __str__(self) -> str:
        return f"step {self.step}: {self.kind.upper()} {self.name}: {self.message}"


def _affected() -> tuple[bool, str]:
    """(whether in-place writes to non-contiguous tensors are lost here, where that comes from)."""
    from course_utils.toolkit.emulate import inplace

    if inplace.active() is not None:
        return True, "under mps_inplace_bug() (emulated)"
    return bool(inplace.known_bug_status().addc), "on this torch/macOS"


class Sentinel:
    """Watches a model and its optimizer; ``step(loss)`` after each ``optimizer.step()`` (lesson 06)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, *, every: int = 4,
                 warmup: int = 10, patience: int = 2, growth_window: int = 5, audit_every: int = 100,
                 checks: tuple[str, ...] = ALL_CHECKS, verbose: bool = True):
        unknown = set(checks) - set(ALL_CHECKS)
        if unknown:
            raise ValueError(f"unknown checks {sorted(unknown)}; choose from {ALL_CHECKS}")
        self.model, self.optimizer = model, optimizer
        self.every, self.warmup = max(1, every), warmup
        self.patience, self.growth_window = patience, growth_window
        self.audit_every, self.checks, self.verbose = audit_every, set(checks), verbose
        names = {id(p): n for n, p in model.named_parameters()}
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        self.groups = [g for g in optimizer.param_groups for _ in g["params"]]
        self._hook = None
        self.names = [names.get(id(p), f"param{i}") for i, p in enumerate(self.params)]
        with torch.no_grad():
            self._snapshot = [p.detach().clone() for p in self.params]
        self.steps = self.checked = 0
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, str]] = set()
        self._streak: dict[tuple[str, str], int] = {}
        self._norms: list[float] = []

    @classmethod
    def attach(cls, model: nn.Module, optimizer: torch.optim.Optimizer, **options) -> Sentinel:
        """A sentinel that checks after every ``optimizer.step()`` by itself (a step hook): no line
        inside the training loop. The loss is not seen (attached, it cannot know it)."""
        sentinel = cls(model, optimizer, **options)
        sentinel._hook = optimizer.register_step_post_hook(lambda opt, args, kwargs: sentinel.step())
        return sentinel

    def detach(self) -> None:
        """Stop checking after each step (``attach``)."""
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    # --- reporting ---------------------------------------------------------------------------------
    def _report(self, kind: str, name: str, message: str) -> None:
        if kind not in self.checks or (kind, name) in self._seen:
            return
        self._seen.add((kind, name))
        finding = Finding(self.steps, kind, name, labelled(message))
        self.findings.append(finding)
        if self.verbose:
            print("sentinel:", finding)

    def _streak_of(self, key: tuple[str, str], hit: bool) -> int:
        self._streak[key] = self._streak.get(key, 0) + 1 if hit else 0
        return self._streak[key]

    @property
    def ok(self) -> bool:
        """True while nothing has been found."""
        return not self.findings

    def __str__(self) -> str:
        if not self.findings:
            return f"sentinel: {self.steps} steps, {self.checked} checks, nothing found"
        return "\n".join([f"sentinel: {self.steps} steps, {self.checked} checks, "
                          f"{len(self.findings)} findings"] + [f"  {f}" for f in self.findings])

    # --- the check ---------------------------------------------------------------------------------
    def _state_tensors(self) -> list[tuple[int, str, torch.Tensor]]:
        out, state = [], self.optimizer.state
        for i, p in enumerate(self.params):
            entries = state.get(p)
            if entries:
                out += [(i, key, v) for key, v in entries.items()
                        if isinstance(v, torch.Tensor) and v.shape == p.shape and v.is_floating_point()]
        return out

    def step(self, loss: torch.Tensor | float | None = None) -> list[Finding]:
        """Check after an optimizer step; returns the findings new at this step."""
        self.steps += 1
        if self.steps > self.warmup and self.steps % self.every:
            return []
        with torch.no_grad():
            return self._check(loss)

    def _check(self, loss: torch.Tensor | float | None) -> list[Finding]:
        self.checked += 1
        before = len(self.findings)
        params = self.params
        with_grad = [i for i, p in enumerate(params) if p.grad is not None and not p.grad.is_sparse]
        state = self._state_tensors()
        torch._foreach_sub_(self._snapshot, params)  # the snapshot now holds old - new, in place
        parts = list(torch._foreach_norm([*self._snapshot, *(params[i].grad for i in with_grad),
                                          *(t for _, _, t in state)]))
        torch._foreach_copy_(self._snapshot, params)
        if isinstance(loss, torch.Tensor):
            parts.append(loss.detach().reshape(()))
        if len({t.dtype for t in parts}) > 1:
            parts = [t.double() for t in parts]
        values = torch.stack(parts).tolist()  # the one read from the device
        n, g = len(params), len(with_grad)
        grads = dict(zip(with_grad, values[n:n + g], strict=True))
        loss_v = values[-1] if isinstance(loss, torch.Tensor) else loss
        self._check_values(values[:n], grads, loss_v)
        self._check_state(state, values[n + g:n + g + len(state)], grads)
        self._check_growth(values[n:n + g])
        if not self.model.training:
            self._report("eval mode", "model", "optimizer steps while model.training is False "
                         "(dropout/batch norm behave as in evaluation): call model.train()")
        if "non-contiguous" in self.checks and (self.checked - 1) % self.audit_every == 0:
            self._check_layout()
        return self.findings[before:]

    def _check_values(self, moved: list[float], grads: dict[int, float], loss: float | None) -> None:
        if loss is not None and not _finite(loss):
            self._report("non-finite", "loss", f"the loss is {loss}")
        lr_zero = [bool(g["lr"] == 0) for g in self.optimizer.param_groups for _ in g["params"]]
        for i, name in enumerate(self.names):
            grad = grads.get(i)
            if grad is not None and not _finite(grad):
                self._report("non-finite", f"{name}.grad", f"gradient norm is {grad}")
            if not _finite(moved[i]):
                self._report("non-finite", name, "the parameter holds NaN or Inf")
            hit = grad is not None and grad > 0 and moved[i] == 0 and not lr_zero[i]
            if hit and self._streak.get(("frozen", name), 0) + 1 >= self.patience:
                hit = self._visible(i)  # an update below float resolution rounds away: not lost
            if self._streak_of(("frozen", name), hit) >= self.patience:
                self._report("frozen", name, f"gradient norm {grad:.3g}, yet bit-identical over "
                             f"{self.patience} checks in a row: its updates never land")

    def _visible(self, i: int) -> bool:
        from course_utils.toolkit.watch.trends import visible_fraction

        p, name = self.params[i], type(self.optimizer).__name__
        state = getattr(self.optimizer, "state", {}).get(p)  # Adam's own step size, where it keeps one
        return p.grad is None or visible_fraction(p, p.grad, self.groups[i], name, state) >= 0.5

    def _check_state(self, state: list, norms: list[float], grads: dict[int, float]) -> None:
        for (i, key, _), norm in zip(state, norms, strict=True):
            hit = norm == 0 and (grads.get(i) or 0) > 0
            name = f"state[{self.names[i]}].{key}"
            if self._streak_of(("zero state", name), hit) >= self.patience:
                self._report("zero state", name, "exactly zero although the gradient is not: "
                             "its in-place update is lost")

    def _check_growth(self, grad_norms: list[float]) -> None:
        self._norms.append(sum(v * v for v in grad_norms) ** 0.5)
        window = self._norms[-self.growth_window:]
        rising = all(b > a for a, b in zip(window, window[1:], strict=False))
        if len(window) == self.growth_window and rising and window[-1] >= 2 * window[0] > 0:
            self._report("growing grads", "gradients", f"total gradient norm rose {self.growth_window} "
                         f"checks in a row ({window[0]:.3g} -> {window[-1]:.3g}): is zero_grad() missing?")

    def _check_layout(self) -> None:
        from course_utils.toolkit.layout import audit

        affected, label = _affected()
        if not affected:
            return
        for row in audit(self.optimizer, names=self.model):
            if row.kind in ("parameter", "optimizer state"):
                self._report("non-contiguous", row.name, f"strides {row.strides}: in-place addcmul_/"
                             f"addcdiv_ into it are lost {label}; make it .contiguous()")


def _finite(value: float) -> bool:
    return math.isfinite(value)
