"""Copies of a model and the mixed-precision order (``course watch``): ``copy.copy`` of a module (its
parameters are the original's tensors), a moving-average copy made with ``copy.deepcopy`` that
never changes while the model trains, and ``clip_grad_norm_`` called on gradients a GradScaler has
scaled and not yet unscaled.

``copy.copy``, ``copy.deepcopy``, ``torch.nn.utils.clip_grad_norm_`` and ``GradScaler.scale`` /
``update`` are wrapped while the watcher is installed (each call costs a type check); the copies
are compared with their first state on the watcher's check steps. ``torch.save`` is wrapped too:
the watcher's forward hooks are taken out of the modules it saves (``relay.take_relays``), and
``torch.compile``, before which an open window's dispatch mode becomes one the compiler skips.
"""

from __future__ import annotations

import copy
import re
import weakref

import torch
from torch import nn

from course_utils.toolkit.watch.findings import Finding, user_frame, user_site
from course_utils.toolkit.watch.relay import put_back, take_relays

AVERAGED = re.compile(r"ema|averag|swa|polyak|moving", re.I)  # a copy meant to follow the model
STALE_AFTER = 50  # optimizer steps of the original with the copy unchanged before it is reported


def fingerprint_params(module: nn.Module) -> tuple:
    """Two sums per parameter (of values and of magnitudes), read in one host transfer."""
    with torch.no_grad():
        sums = [t for p in module.parameters() for t in (p.float().sum(), p.float().abs().sum())]
    return tuple(torch.stack(sums).tolist()) if sums else ()


def _save(original):
    def save(obj, *args, **kwargs):
        try:
            taken = take_relays(obj)
        except Exception:  # noqa: BLE001 - the script's save must happen as it would unwatched
            taken = []
        try:
            return original(obj, *args, **kwargs)
        finally:
            put_back(taken)
    return save


class Copies:
    """The module copies the script made and the GradScalers it uses."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.averaged: list[tuple] = []  # (weakref original, weakref copy, site, first fingerprint, step)
        self.scalers: weakref.WeakSet = weakref.WeakSet()  # scalers that scaled since their update()
        self.stale: dict = {}  # site -> what: averaged copies unchanged at their last check
        self._saved: list[tuple] = []

    # --- wrapping -----------------------------------------------------------------------------------
    def install(self) -> None:
        from torch.amp import grad_scaler
        from torch.nn.utils import clip_grad
        from torch.optim import swa_utils

        targets = [(copy, "copy", self._copy), (copy, "deepcopy", self._deepcopy),
                   (swa_utils, "deepcopy", self._deepcopy),  # AveragedModel's own, imported by name
                   (torch.nn.utils, "clip_grad_norm_", self._clip),
                   (clip_grad, "clip_grad_norm_", self._clip),
                   (grad_scaler.GradScaler, "scale", self._scale),
                   (grad_scaler.GradScaler, "update", self._update), (torch, "save", _save),
                   (torch, "compile", self._compile)]
        for owner, name, make in targets:
            original = getattr(owner, name)
            wrapper = make(original)
            wrapper.__wrapped__ = original
            self._saved.append((owner, name, original, wrapper))
            setattr(owner, name, wrapper)

    def uninstall(self) -> None:
        for owner, name, original, wrapper in reversed(self._saved):
            if getattr(owner, name) is wrapper:
                setattr(owner, name, original)
        self._saved.clear()

    def _active(self) -> bool:
        return self.watcher.live and not self.watcher.paused

    def _copy(self, original):
        def copy_(x):
            out = original(x)
            if self._active() and isinstance(x, nn.Module):
                self._guard(self._shared, x, out)
            return out
        return copy_

    def _deepcopy(self, original):
        def deepcopy(x, memo=None, _nil=[]):  # noqa: B006 - copy.deepcopy's own signature
            out = original(x, memo, _nil)
            if memo is None and self._active() and isinstance(x, nn.Module):
                self._guard(self._remember, x, out)
            return out
        return deepcopy

    def _compile(self, original):
        def compile(*args, **kwargs):
            import torch._dynamo  # noqa: F401 - what compile loads first, before the window's modes change

            self._guard(self.watcher.ops.compiling)
            return original(*args, **kwargs)
        return compile

    def _clip(self, original):
        def clip_grad_norm_(parameters, *args, **kwargs):
            if self._active() and self.scalers:
                parameters = list(parameters) if not isinstance(parameters, torch.Tensor) else parameters
                self._guard(self._scaled_clip)
            return original(parameters, *args, **kwargs)
        return clip_grad_norm_

    def _scale(self, original):
        def scale(scaler, outputs):
            if self._active() and scaler.is_enabled():
                self.scalers.add(scaler)
            return original(scaler, outputs)
        return scale

    def _update(self, original):
        def update(scaler, new_scale=None):
            self.scalers.discard(scaler)
            return original(scaler, new_scale)
        return update

    def _guard(self, check, *args) -> None:
        try:
            check(*args)
        except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
            self.watcher.fail(err, check.__name__)

    # --- the checks ---------------------------------------------------------------------------------
    def _shared(self, module: nn.Module, out) -> None:
        shared = [p for p, q in zip(module.parameters(), out.parameters(), strict=False) if p is q]
        if shared:
            self.report("shared copy", user_site(1), f"copy.copy({type(module).__name__}) shares all "
                        f"{len(shared)} parameter tensors with the original: what trains one changes the "
                        "other")

    def _remember(self, module: nn.Module, out) -> None:
        frame = user_frame(1)
        site = user_site(1)
        name = getattr(frame.f_code, "co_qualname", site.function) if frame is not None else ""
        if not AVERAGED.search(f"{site.code} {name}") or next(out.parameters(), None) is None:
            return
        self.averaged.append((weakref.ref(module), weakref.ref(out), site, fingerprint_params(out),
                              self.watcher.step))

    def _scaled_clip(self) -> None:
        from torch.amp.grad_scaler import OptState

        for scaler in list(self.scalers):
            states = scaler._per_optimizer_states.values()
            if not any(s["stage"] is OptState.UNSCALED for s in states):
                scale = scaler.get_scale()
                self.report("clip before unscale", user_site(1),
                            f"clip_grad_norm_ ran on gradients scaled by the GradScaler (scale {scale:g}) "
                            f"before scaler.unscale_(optimizer): the norm it clips is {scale:g} times too "
                            "large")

    def check(self, step: int) -> None:
        """On a check step: averaged copies unchanged for STALE_AFTER steps of a model that moved are
        stale, unless they change later (SWA collects only from its start epoch on): the verdict is
        the one standing when the run ends (``finish``). After the first verdict, every 100th step."""
        keep = []
        for entry in self.averaged:
            orig_ref, copy_ref, site, first, made_at = entry
            orig, out = orig_ref(), copy_ref()
            if orig is None or out is None:
                continue  # gone: its last verdict stands
            if step - made_at < STALE_AFTER or (site in self.stale and step % 100):
                keep.append(entry)
            elif fingerprint_params(out) != first:
                self.stale.pop(site, None)  # it follows the model: dropped
            else:
                if fingerprint_params(orig) != first:
                    values = sum(p.numel() for p in out.parameters())
                    self.stale[site] = (
                        f"the copy made here ({type(out).__name__}, {values} values) was still bit-identical "
                        f"to its first state after {step - made_at} optimizer steps, while the model it "
                        "copies moved")
                keep.append(entry)
        self.averaged = keep

    def finish(self) -> None:
        """At the end of the run: the averaged copies that never changed."""
        for site, what in self.stale.items():
            self.report("stale copy", site, what)
        self.stale.clear()

    def report(self, kind: str, site, what: str) -> None:
        self.watcher.log.add(Finding(kind, what, site, self.watcher.step + 1, subject=f"{kind} {site}"))
