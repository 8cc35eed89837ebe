"""The sync-point watcher (lesson 03): which calls make the host wait, and ``SyncWatch``, which
follows device tensors through every op and notices each host read of one.

``function_kind`` and ``dispatch_kind`` classify a Python-level torch call and an aten op into one
of ``KINDS`` (or None: it can stay queued). ``SyncWatch`` runs a ``TorchFunctionMode`` and a
``TorchDispatchMode`` and records each host read in its ``SyncReport``; ``find_sync_points``
(``finder``) uses it as is, the emulated asynchronous device subclasses it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils.toolkit.syncs.listing import SyncPoint, SyncReport, user_location

KINDS = {
    "item": ".item(), float(t), int(t): one value back to Python",
    "tolist": ".tolist(): every value back to Python",
    "numpy": ".numpy() / np.asarray(t): on mps/cuda this raises until you add .cpu(), which syncs",
    "to host": ".cpu(), .to('cpu'), copying into a CPU tensor",
    "print": "printing or formatting a tensor (print, f-strings, repr)",
    "bool": "a tensor used as a Python bool: if / while / and / or, torch.equal",
    "data-dependent shape": "the output size depends on the values: nonzero, masked_select, x[mask], unique",
    "synchronize": "an explicit wait: sync(device), torch.accelerator.synchronize()",
}

# Python-level calls that read a device tensor on the host (matched by name on torch / torch.Tensor).
_FUNCTION_KINDS = {
    "item": "item", "__float__": "item", "__int__": "item", "__index__": "item",
    "__complex__": "item", "tolist": "tolist", "numpy": "numpy", "__array__": "numpy",
    "__bool__": "bool", "__contains__": "bool", "equal": "bool", "allclose": "bool",
    "__repr__": "print", "__str__": "print", "__format__": "print", "cpu": "to host", "to": "to host",
}
_MASK_DTYPES = (torch.bool, torch.uint8)
# aten ops that return Python values computed from metadata only: no wait.
_METADATA_OPS = frozenset({"is_same_size", "_has_compatible_shallow_copy_type", "is_set_to", "size",
                           "stride", "numel", "dim", "sym_size", "sym_stride", "sym_numel",
                           "sym_storage_offset", "_nnz", "dense_dim", "sparse_dim", "is_coalesced"})


# --- classification ----------------------------------------------------------------------------

def _to_host(args: tuple, kwargs: dict, is_device: Callable) -> bool:
    """Whether ``t.to(...)`` copies device tensor ``t`` to the host.

    On a real accelerator any CPU target does. For CPU tensors that only *stand for* device
    tensors, ``t.to(device)`` with a ``torch.device`` is taken as a move within the run (library code
    such as ``clip_grad_norm_`` writes ``.to(grads[0].device)``); a ``"cpu"`` string, or a host
    tensor as target, is a copy to the host.
    """
    target = args[1] if len(args) > 1 else kwargs.get("device", kwargs.get("other"))
    if isinstance(target, torch.Tensor):
        return not is_device(target)
    if isinstance(target, str):
        return torch.device(target).type == "cpu"
    if isinstance(target, torch.device):
        return target.type == "cpu" and args[0].device.type != "cpu"
    return False


def function_kind(func: Callable, args: tuple, kwargs: dict, is_device: Callable) -> str | None:
    """The sync kind of a Python-level torch call, or None when it does not read device values."""
    name = getattr(func, "__name__", "")
    kind = _FUNCTION_KINDS.get(name)
    if kind is None or not (getattr(torch.Tensor, name, None) is func or getattr(torch, name, None)
                            is func):
        return None
    if not any(is_device(t) for t in tensors_in((args, kwargs))):
        return None
    if name == "to":
        return "to host" if _to_host(args, kwargs, is_device) else None
    return kind


def _has_mask(indices: Any) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in _MASK_DTYPES for i in tensors_in(indices))


def dispatch_kind(func: torch._ops.OpOverload, args: tuple, kwargs: dict,
                  is_device: Callable) -> str | None:
    """The sync kind of an aten op on device tensors, or None when it can stay queued."""
    name = func.overloadpacket.__name__
    if name in ("index", "index_put", "index_put_", "_index_put_impl_"):
        return "data-dependent shape" if _has_mask(args[1]) else None
    if name == "copy_":  # copy_(dst, src): a device source into a host destination
        return "to host" if is_device(args[1]) and not is_device(args[0]) else None
    if name == "_to_copy":  # from a real accelerator to the CPU (stand-ins: see _to_host)
        device = kwargs.get("device")
        to_cpu = device is not None and torch.device(device).type == "cpu"
        return "to host" if to_cpu and args[0].device.type != "cpu" else None
    if name in _METADATA_OPS:
        return None
    if name == "one_hot":
        num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
        return "data-dependent shape" if num_classes < 0 else None
    if name == "repeat_interleave":
        return None if kwargs.get("output_size") is not None else "data-dependent shape"
    if torch.Tag.dynamic_output_shape in func.tags:
        return "data-dependent shape"
    returns = [str(r.type) for r in func._schema.returns]
    if any("Tensor" not in r for r in returns):
        return "bool" if returns == ["bool"] else "item"
    return None


def tensors_in(tree: Any) -> list[torch.Tensor]:
    """The tensors in nested tuples, lists and dicts (a fast path for op arguments)."""
    out: list[torch.Tensor] = []
    todo = [tree]
    while todo:
        item = todo.pop()
        if isinstance(item, torch.Tensor):
            out.append(item)
        elif isinstance(item, (tuple, list)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
    return out


# --- the watcher -------------------------------------------------------------------------------

class _FunctionMode(TorchFunctionMode):
    def __init__(self, watch: SyncWatch):
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        return self.watch.on_function(func, args, kwargs)


class _DispatchMode(TorchDispatchMode):
    def __init__(self, watch: SyncWatch):
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        return self.watch.on_dispatch(func, args, kwargs)


_ACTIVE: list[SyncWatch] = []


def active_watches() -> tuple[SyncWatch, ...]:
    """The watchers running now, outermost first: a ``find_sync_points`` run, an emulated device.

    Code that hands tensors to a watched run marks them on each (``watch.mark``) so their reads
    count as device reads (lesson 08's capstone does)."""
    return tuple(_ACTIVE)


def note_sync(kind: str = "synchronize") -> None:
    """Tell the active watchers about an explicit wait (called by ``timing.sync``)."""
    for watch in list(_ACTIVE):
        watch.host_read(kind)


class SyncWatch:
    """Follows device tensors through every op and notices each host read of one.

    ``find_sync_points`` uses it as is (record, run normally); the emulated asynchronous device
    subclasses it to queue device ops and to really wait at each read.
    """

    def __init__(self) -> None:
        self.report = SyncReport()
        self._storages: dict[int, StorageWeakRef] = {}
        self._quiet = 0
        self._added = 0
        self.adopt = False  # tensors the watched code creates count as device tensors
        self._modes: contextlib.ExitStack | None = None

    # which tensors are on the device
    def is_device(self, t: Any) -> bool:
        """True for tensors on a real accelerator, or whose storage this watcher marked."""
        if not isinstance(t, torch.Tensor):
            return False
        if t.device.type not in ("cpu", "meta"):
            return True
        try:
            key = t.untyped_storage()._cdata
        except (RuntimeError, NotImplementedError):
            return False
        ref = self._storages.get(key)
        return ref is not None and not ref.expired()

    def mark(self, tree: Any) -> None:
        """Mark every tensor in ``tree`` (and every module's parameters and buffers) as on the device."""
        for leaf in pytree.tree_leaves(tree):
            if isinstance(leaf, torch.nn.Module):
                self.mark([*leaf.parameters(), *leaf.buffers()])
            elif isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu":
                try:
                    storage = leaf.untyped_storage()
                except (RuntimeError, NotImplementedError):
                    continue
                self._storages[storage._cdata] = StorageWeakRef(storage)
                self._added += 1
        if self._added > 4096:  # forget storages that were freed
            self._storages = {k: r for k, r in self._storages.items() if not r.expired()}
            self._added = 0

    # hooks the emulated device overrides
    def host_read(self, kind: str) -> None:
        """The host needs device values now: record where (the device also waits here)."""
        self.report.points.append(SyncPoint(kind, user_location()))

    def run_device_op(self, func, args: tuple, kwargs: dict) -> Any:
        """Run an op on device tensors: here at once; its outputs are device tensors."""
        out = func(*args, **kwargs)
        self.mark(out)
        return out

    # the two modes call these
    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Inside a host read already recorded: run ops directly, record nothing more."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def host_copy(self, out: Any) -> Any:
        """A copy to the host must not share memory with the device tensor (on CPU it would)."""
        if not isinstance(out, torch.Tensor) or not self.is_device(out):
            return out
        with self.quiet():
            return out.clone()

    def on_function(self, func, args: tuple, kwargs: dict) -> Any:
        if self._quiet:
            return func(*args, **kwargs)
        kind = function_kind(func, args, kwargs, self.is_device)
        if kind is None:
            return func(*args, **kwargs)
        self.host_read(kind)
        with self.quiet():
            out = func(*args, **kwargs)
        return self.host_copy(out) if kind == "to host" else out

    def on_dispatch(self, func, args: tuple, kwargs: dict) -> Any:
        inputs = tensors_in((args, kwargs))
        if self.adopt and not self._quiet and not inputs:  # a factory: what fn creates is the device's
            out = func(*args, **kwargs)
            self.mark(out)
            return out
        if self._quiet or not any(self.is_device(t) for t in inputs):
            return func(*args, **kwargs)
        kind = dispatch_kind(func, args, kwargs, self.is_device)
        if kind is None:
            self.report.ops += 1
            return self.run_device_op(func, args, kwargs)
        self.host_read(kind)
        with self.quiet():
            out = func(*args, **kwargs)
        if kind != "to host":
            self.mark(out)
        return out

    def __enter__(self) -> SyncWatch:
        self._modes = contextlib.ExitStack()
        self._modes.enter_context(_FunctionMode(self))
        self._modes.enter_context(_DispatchMode(self))
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)
        modes, self._modes = self._modes, None
        modes.close()
