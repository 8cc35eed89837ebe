"""Case inputs of lesson 04: tensors whose ops are recorded at the dispatcher."""

from __future__ import annotations

import copy

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# --- 04: tensors whose ops are recorded at the dispatcher --------------------------------------

_seen: list[str] = []  # ops recorded since the last case's inputs were copied


class _Log(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        _seen.append(func.name())
        return func(*args, **(kwargs or {}))


_HOST_READS = ("numpy", "tolist", "item", "__array__", "__reduce_ex__")


class Watched(torch.Tensor):
    """A tensor whose every torch call is recorded at the dispatcher (see ``ops_seen()``), so a
    check sees an op even when it hides inside another function. Reading its values to the host
    (``.numpy()``, ``.tolist()``, ``.item()``, a pickle) is recorded as ``host read: <name>``;
    ``as_subclass`` gives a watched tensor again (a way out of the record is not a way out)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _HOST_READS:
            _seen.append(f"host read: {name}")
        with _Log():
            return super().__torch_function__(func, types, args, kwargs or {})

    def as_subclass(self, cls):
        out = torch.Tensor.as_subclass(self, cls)
        return out if isinstance(out, Watched) else torch.Tensor.as_subclass(out, Watched)

    def __deepcopy__(self, memo):
        _seen.clear()  # check() copies a case's inputs right before each call: a new record starts
        plain = torch.Tensor.as_subclass(self, torch.Tensor)
        return torch.Tensor.as_subclass(copy.deepcopy(plain, memo), Watched)


def ops_seen() -> list[str]:
    """The aten ops run on watched tensors since their last copy."""
    return list(_seen)
