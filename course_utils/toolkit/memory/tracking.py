"""Peak and retained tensor bytes of a piece of work, on any device (lesson 02).

``tracking()`` counts the tensor storages created inside a block with a ``TorchDispatchMode``;
``measure(fn)`` runs ``fn`` inside it and adds the device allocator's own view where it has one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from course_utils.toolkit.memory.counters import _device, _guarded
from course_utils.toolkit.memory.sizes import mib


def _storage(t: Any) -> torch.UntypedStorage | None:
    """The storage of a dense tensor holding real memory; None for anything else."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.device.type == "meta":
        return None
    return t.untyped_storage()


class _LiveStorages(TorchDispatchMode):
    """Counts the bytes of tensor storages created while active, and frees them when they die.

    Why a dispatch mode (and not ``torch.profiler(profile_memory=True)``): every ATen op passes
    through ``__torch_dispatch__`` on every device, so one mechanism measures cpu, mps and cuda
    alike (torch.mps has no peak counter, R29 in references.md); it counts tensor *storages*, the unit of our
    estimates, free of allocator rounding and caching; and it is cheap and deterministic. A weak
    reference to each new storage tells us when it is freed (torch keeps one Python object per
    storage). Its blind spot: scratch memory a kernel allocates internally, which no op returns.
    """

    def __init__(self):
        super().__init__()
        self.live: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self._refs: dict[int, weakref.ref] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = {st.data_ptr() for st in map(_storage, tree_leaves((args, kwargs))) if st is not None}
        for t in tree_leaves(out):
            st = _storage(t)
            if st is not None and st.data_ptr() not in inputs:  # not a view or in-place result
                self._track(st, t.device.type)
        return out

    def _track(self, st: torch.UntypedStorage, kind: str) -> None:
        key = id(st)
        if key in self._refs:
            return
        n = st.nbytes()
        self.live[kind] = self.live.get(kind, 0) + n
        self.peak[kind] = max(self.peak.get(kind, 0), self.live[kind])
        self._refs[key] = weakref.ref(st, lambda _ref: self._free(key, kind, n))

    def _free(self, key: int, kind: str, n: int) -> None:
        if self._refs.pop(key, None) is not None:
            self.live[kind] -= n


@dataclass
class Tracker:
    """What ``tracking()`` yields: live and peak bytes of storages created inside the block."""

    device: torch.device
    _mode: _LiveStorages

    @property
    def live_bytes(self) -> int:
        return self._mode.live.get(self.device.type, 0)

    @property
    def peak_bytes(self) -> int:
        return self._mode.peak.get(self.device.type, 0)


@contextmanager
def tracking(device: torch.device | str | None = None) -> Iterator[Tracker]:
    """Count tensor storages created inside the block on ``device`` (lesson 02).

    ``peak_bytes``: the most bytes alive at once; ``live_bytes``: still alive now. Storages that
    existed before the block (weights, the batch) are not counted, nor are views of them.
    """
    mode = _LiveStorages()
    with mode:
        yield Tracker(_device(device), mode)


@dataclass(frozen=True)
class Measurement:
    """``measure()``'s answer. ``allocator`` holds the device allocator's own view where it has one."""

    device: torch.device
    peak_bytes: int
    retained_bytes: int
    allocator: dict[str, int] = field(default_factory=dict)
    result: Any = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        text = (f"peak {mib(self.peak_bytes)}, retained {mib(self.retained_bytes)} "
                f"(new tensor storages on {self.device.type})")
        extra = ", ".join(f"{k} {mib(v)}" for k, v in self.allocator.items())
        return text + (f"; allocator: {extra}" if extra else "")


def _allocator_start(device: torch.device) -> int | None:
    if device.type == "mps":
        return _guarded(torch.mps.current_allocated_memory)
    if device.type == "cpu":
        return None
    _guarded(torch.accelerator.reset_peak_memory_stats, device)
    return _guarded(torch.accelerator.memory_allocated, device)


def _allocator_end(device: torch.device, start: int | None) -> dict[str, int]:
    if start is None:
        return {}
    if device.type == "mps":
        now = _guarded(torch.mps.current_allocated_memory)
        return {} if now is None else {"retained": now - start}
    now = _guarded(torch.accelerator.memory_allocated, device)
    peak = _guarded(torch.accelerator.max_memory_allocated, device)
    if now is None or peak is None:
        return {}
    return {"peak": peak - start, "retained": now - start}


def measure(fn: Callable, *args, device: torch.device | str | None = None) -> Measurement:
    """Run ``fn(*args)`` and report the peak and retained bytes of the tensors it created."""
    where = _device(device)
    start = _allocator_start(where)
    with tracking(where) as tracker:
        result = fn(*args)
        peak, retained = tracker.peak_bytes, tracker.live_bytes
    return Measurement(where, peak, retained, _allocator_end(where, start), result)
