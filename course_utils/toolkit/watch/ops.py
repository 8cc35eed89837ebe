"""The op-level checks of ``course watch``: a TorchFunctionMode and a TorchDispatchMode that run
only during *deep windows* (a few sampled steps), where each costs a few microseconds per op.

In a window they see every torch call of the user's code and every aten op (backward and the
optimizer included) and record: host reads of device values (``.item()``, ``.cpu()``...), tensors
built on the host (factories without ``device=``, numpy-backed tensors) and their copies to the
training device, loss-side broadcasting ((B, 1) against (B,)), the first op whose output is NaN or
Inf from finite inputs, graph cuts (``.detach()`` of a tensor that requires grad), ops that always
fall back on a Mac, and the tensors each step allocates (``deep`` judges which stay alive).

On a CPU-only machine "device" tensors are those of the training device: the models' parameters
and buffers, ``.to(device)`` results and everything computed from them (as ``find_sync_points``).
"""

from __future__ import annotations

import math
import weakref

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.weak import WeakIdKeyDictionary

from course_utils.toolkit.syncs.finder import function_kind, tensors_in
from course_utils.toolkit.watch.broadcast import Broadcasts
from course_utils.toolkit.watch.dead_units import RELUS, DeadUnits
from course_utils.toolkit.watch.deep import fingerprint, in_model_forward
from course_utils.toolkit.watch.findings import (
    call_as_user,
    called_from_user,
    site_of_frame,
    user_frame,
)
from course_utils.toolkit.watch.loss_checks import LossInputs
from course_utils.toolkit.watch.nan import NanTrail
from course_utils.toolkit.watch.window import Window

_FACTORIES = {
    getattr(torch, n)
    for n in (
        "ones",
        "zeros",
        "full",
        "arange",
        "eye",
        "tensor",
        "as_tensor",
        "randn",
        "rand",
        "randint",
        "empty",
        "linspace",
        "tril_indices",
        "triu_indices",
    )
}
_COPIES = {torch.Tensor.to, torch.Tensor.cuda} | (
    {torch.Tensor.mps} if hasattr(torch.Tensor, "mps") else set()
)
_CUTS = {torch.Tensor.detach, torch.Tensor.detach_}
SETUP_CALLS = 2048  # torch calls of the set-up (before any model's forward) watched op by op
PRUNE_AT = 8192  # device-side storages remembered before the dead ones are pruned
_UNINITIALIZED = {
    getattr(torch.ops.aten, n)
    for n in ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_")
}


def _nbytes(t: torch.Tensor) -> int:
    """Bytes of a strided tensor's data; sparse ones (an embedding's sparse gradient) count 0."""
    return t.nbytes if t.layout == torch.strided else 0


def _read_node(t, kind: str):
    """The autograd node of a one-element value read on the host (a loss, or a term of it, when a
    backward of the window starts at or near it: ``loss_nodes``), else None."""
    return t.grad_fn if t is not None and kind in ("item", "print") and t.numel() == 1 else None


def loss_nodes(root, limit: int = 64) -> list:
    """The autograd nodes nearest a backward's root (the loss and the terms it was summed from)."""
    seen, todo, out = set(), [root], []
    while todo and len(out) < limit:
        node = todo.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        todo.extend(n for n, _ in node.next_functions)
    return out


class OpWatch(Window):
    """One deep window at a time: what the user's code did, op by op."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.modes: list = []
        self.broken = False
        self.suspended = False
        self.paused = 0
        self.window = 0
        self.device_type = "cpu"
        self._storages: dict[int, StorageWeakRef] = {}
        self._prune_at = PRUNE_AT  # pruned of dead storages when it grows past this
        self.host: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> (site, how made, window)
        self._numpy: dict[int, int] = {}  # data pointer of numpy-backed memory -> window first seen
        self.broadcasts = Broadcasts(watcher)
        self.losses = LossInputs(watcher)
        self.dead_units = DeadUnits(watcher)
        self.syncs: list[tuple] = []  # (site, kind, autograd node of a value read) this window
        self.loss_nodes: list = []  # the nodes nearest this window's backward roots
        self.copies: list[tuple] = []  # (origin, how, copy site, bytes, model side, fingerprint)
        self.fallbacks: list[tuple] = []  # (op, site)
        self.cuts: dict = {}  # site -> description (graph cuts seen in any window)
        self.allocs: list[tuple] = []  # (weakref, site, nbytes, has history) this window
        self.nan = NanTrail(watcher)
        self._fallback: dict[str, bool] = {}
        self._frame = None  # the user's frame of the torch call being handled
        self.cut = False  # the window outgrew the budget: calls pass through until a safe point
        self.deadline = math.inf  # the budget clock's reading at which the open window is cut
        self.opened_at, self.own = 0.0, 0.0  # its clock at the start; the script's own kernels' time
        self._calls = 0
        self.parked = False  # the set-up's share of op-by-op watching is used: wait for a model
        self._leaving = False  # a profile hook waits to leave the modes (``leave_soon``)

    # --- window -------------------------------------------------------------------------------------
    @property
    def open(self) -> bool:
        return bool(self.modes)

    def on_root(self, root) -> None:
        first = next(root.parameters(), None)
        if first is not None and len(self.watcher.models.roots) == 1:
            self.device_type = first.device.type
        if self.open:
            self.mark([*root.parameters(), *root.buffers()])

    # --- which tensors are on the device ------------------------------------------------------------
    def is_device(self, t) -> bool:
        if not isinstance(t, torch.Tensor):
            return False
        if t.device.type not in ("cpu", "meta"):
            return True
        try:
            ref = self._storages.get(t.untyped_storage()._cdata)
        except (RuntimeError, NotImplementedError):
            return False
        return ref is not None and not ref.expired()

    def mark(self, tensors) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                try:
                    storage = t.untyped_storage()
                except (RuntimeError, NotImplementedError):
                    continue
                self._storages[storage._cdata] = StorageWeakRef(storage)
        if len(self._storages) > self._prune_at:  # at twice what outlived the last pruning: linear
            self._storages = {k: r for k, r in self._storages.items() if not r.expired()}
            self._prune_at = max(PRUNE_AT, 2 * len(self._storages))

    def _host_origin(self, t):
        """(site, how, window, model side) for a tensor the user's code built on the host, else None;
        ``window`` is the deep window it was first seen in (only this window's count as built per
        step); a host array (numpy) moved piece by piece counts as model side: it could live on the
        device."""
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or self.is_device(t):
            return None
        found = self.host.get(t)
        if found is None and not t.untyped_storage().resizable():  # numpy-backed: from_numpy, as_tensor
            ptr = t.untyped_storage().data_ptr()
            found = (None, "torch.from_numpy", self._numpy.setdefault(ptr, self.window), True)
            if len(self._numpy) > 4096:
                self._numpy.clear()
        return found

    def _to_device(self, func, args, kwargs) -> bool:
        if func is not torch.Tensor.to:
            return True
        for value in (*args[1:], kwargs.get("device")):
            if isinstance(value, torch.Tensor):
                value = value.device
            if isinstance(value, (str, torch.device)):
                try:
                    return torch.device(value).type == self.device_type
                except RuntimeError:
                    return False
        return False

    # --- the function mode --------------------------------------------------------------------------
    def over_budget(self) -> bool:
        """Every 64th call: has the open window used what the budget left it? Then it is cut. Has
        the set-up (no model yet) made ``SETUP_CALLS`` torch calls? Then the window is parked
        until a model's first forward. Either way the modes are left at the next chance."""
        self._calls += 1
        if self._calls & 63:
            return False
        if not self.watcher.models.roots and self._calls > SETUP_CALLS:
            self.parked = True
        elif self.overdue():
            self.cut = True
        else:
            return False
        self.leave_soon()
        return True

    def on_function(self, func, args: tuple, kwargs: dict):
        idle = self.broken or self.paused or self.cut or self.parked or self.watcher.in_step
        if idle or self.over_budget():
            return func(*args, **kwargs)  # the optimizer's calls: nothing to see here
        try:
            frame, site, direct, training = self._before_function(func, args, kwargs)
        except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
            self.watcher.fail(err, "on_function")
            return func(*args, **kwargs)
        outer, self._frame = self._frame, frame
        try:
            out = call_as_user(func, args, kwargs, frame)
        finally:
            self._frame = outer
        try:
            with torch._C.DisableTorchFunction():
                self._after_function(func, args, kwargs, out, site, training, direct, frame)
        except Exception as err:  # noqa: BLE001
            self.watcher.fail(err, "on_function")
        return out

    def _before_function(self, func, args: tuple, kwargs: dict):
        w = self.watcher
        training = torch.is_grad_enabled() and not w.in_step
        frame = user_frame(2)
        site = site_of_frame(frame)
        direct = called_from_user(2)
        if training:
            kind = function_kind(func, args, kwargs, self.is_device) if direct else None
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            if kind == "to host" and func is torch.Tensor.to and self._to_device(func, args, kwargs):
                kind = None  # .to(device) towards the run's device (on a CPU run, "cpu"): not a read
            if kind is not None:  # reads torch's own code makes for the user (GradScaler.step) are the API's
                self.syncs.append((site, kind, _read_node(first, kind)))
            if direct and func in _COPIES and args and self._to_device(func, args, kwargs):
                origin = self._host_origin(args[0])
                if origin is not None and origin[2] == self.window:
                    model_side = origin[3] or in_model_forward(frame)
                    made = origin[0] or site
                    self.copies.append(
                        (made, origin[1], site, _nbytes(args[0]), model_side, fingerprint(args[0]))
                    )
            if func in _CUTS and args and args[0].requires_grad:
                self.cuts.setdefault(site, f"{site}: {site.code}")
        self.broadcasts.before(func, args, site)
        self._own(self.losses.guarded, self.losses.before, func, args, kwargs, site)
        return frame, site, direct, training

    def _own(self, check, *args) -> None:
        """Run a check whose own tensor ops are not the script's (the window's modes pass them on)."""
        self.paused += 1
        try:
            check(*args)
        finally:
            self.paused -= 1

    def _after_function(self, func, args, kwargs, out, site, training, direct, frame) -> None:
        inputs = tensors_in((args, kwargs))
        outs = tensors_in(out) if isinstance(out, (torch.Tensor, tuple, list)) else []
        if not outs:
            return
        if func in _FACTORIES:
            device = kwargs.get("device")
            if device is None or torch.device(device).type != self.device_type:
                if direct:
                    model_side = in_model_forward(frame)
                    for t in outs:
                        self.host[t] = (site, f"torch.{func.__name__}", self.window, model_side)
            else:
                self.mark(outs)
                if (
                    direct
                    and training
                    and func in (torch.tensor, torch.as_tensor)
                    and args
                    and not isinstance(args[0], torch.Tensor)
                ):
                    self.copies.append(
                        (site, f"torch.{func.__name__}(host data, device=...)", site, _nbytes(outs[0]),
                         in_model_forward(frame), fingerprint(outs[0]))
                    )
        elif func in _COPIES and self._to_device(func, args, kwargs):
            # a move that copied nothing (a CPU run: .to("cpu") returns its input, a view of the host
            # data set) must not mark the whole host storage as the device's
            if not (args and isinstance(args[0], torch.Tensor) and outs and outs[0] is args[0]):
                self.mark(outs)
        elif direct and inputs and not any(self.is_device(t) for t in inputs):
            origins = [self._host_origin(t) for t in inputs]
            if all(o is not None for o in origins):
                first = min(origins, key=lambda o: o[2])  # data gathered from an older tensor is not new
                for t in outs:
                    self.host[t] = (first[0] or site, first[1], first[2], first[3])
        self.broadcasts.after(func, args, inputs, outs, site)
        self.losses.guarded(self.losses.after, func, args, inputs, outs)
        if training:
            if func in RELUS:  # the only calls it reads: no wrapper on every other op of a window
                self._own(self.dead_units.after, func, outs)
            for t in outs:
                if t.grad_fn is not None:
                    self.nan.node_site[id(t.grad_fn)] = (t.grad_fn, site)
            if self.watcher.step > 0:
                for t in outs:
                    self.allocs.append((weakref.ref(t), site, _nbytes(t), t.grad_fn is not None))

    # --- the dispatch mode --------------------------------------------------------------------------
    def on_dispatch(self, func, args: tuple, kwargs: dict):
        if self.broken or self.paused or self.parked:
            return func(*args, **kwargs)
        if self.cut or self.over_budget():
            return self._kernel(func, *args, **kwargs)
        frame = self._frame or user_frame(2)
        if self.watcher.in_step:
            out = self._kernel(func, *args, **kwargs)
        else:
            out = self._kernel(call_as_user, func, args, kwargs, frame)
        try:
            with torch._C.DisableTorchFunction():
                self._after_dispatch(func, args, kwargs, out, frame)
        except Exception as err:  # noqa: BLE001
            self.watcher.fail(err, "on_dispatch")
        return out

    def _after_dispatch(self, func, args, kwargs, out, frame) -> None:
        inputs = tensors_in((args, kwargs))
        outs = tensors_in(out) if isinstance(out, (torch.Tensor, tuple, list)) else []
        if not self.watcher.in_step and any(self.is_device(t) for t in inputs):
            self.mark(outs)
            name = func.name()
            falls = self._fallback.get(name)
            if falls is None:
                falls = self._fallback[name] = self.watcher.fallback_op(name)
            if falls:
                self.fallbacks.append((name, site_of_frame(frame)))
        if func.is_view or func.overloadpacket in _UNINITIALIZED:
            return
        floats = [t for t in outs if t.is_floating_point() and t.numel()]
        if floats:
            self.nan.add(func, args, kwargs, [t for t in inputs if t.is_floating_point()], floats, frame)
