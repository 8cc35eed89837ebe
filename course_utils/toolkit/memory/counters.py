"""The memory counters each device really has, each labelled with what it counts (lesson 02).

On CPU torch keeps no allocator counter, so ``snapshot`` reports the process's resident set size;
``empty_cache`` gives an allocator's cached, unused blocks back on any device.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from course_utils.toolkit.memory.sizes import mib


def _device(device: torch.device | str | None) -> torch.device:
    if device is None:
        from course_utils.toolkit.device import pick_device

        return pick_device()
    return torch.device(device)


def _guarded(fn: Callable, *args) -> Any:
    """Call a device memory API; None where this build or machine cannot answer (they raise)."""
    try:
        return fn(*args)
    except (RuntimeError, AttributeError, AssertionError, TypeError):
        return None


@dataclass(frozen=True)
class Counter:
    """One memory counter: its name, its value in bytes (None when unavailable), what it counts."""

    name: str
    bytes: int | None
    counts: str


@dataclass(frozen=True)
class Snapshot:
    """The counters one device offers at one moment (lesson 02)."""

    device: torch.device
    counters: tuple[Counter, ...]

    def __getitem__(self, name: str) -> int | None:
        for c in self.counters:
            if c.name == name:
                return c.bytes
        raise KeyError(f"no counter {name!r} on {self.device}; have {[c.name for c in self.counters]}")

    def __str__(self) -> str:
        width = max(len(c.name) for c in self.counters)
        rows = [f"{c.name:<{width}}  {mib(c.bytes):>12}  {c.counts}" for c in self.counters]
        return f"memory counters on {self.device.type}:\n" + "\n".join(rows)


def _rss_now() -> int | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None  # not Linux (macOS has no /proc)


def _rss_peak() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _cpu_counters() -> tuple[Counter, ...]:
    return (
        Counter("process resident set size", _rss_now(),
                "RAM this whole Python process holds now: tensors, interpreter, libraries"),
        Counter("process peak resident set size", _rss_peak(),
                "the most RAM this process has held since it started (never goes down)"),
    )


def _mps_counters() -> tuple[Counter, ...]:
    mps = torch.mps
    return (
        Counter("mps current allocated", _guarded(mps.current_allocated_memory),
                "bytes of live tensors on mps"),
        Counter("mps driver allocated", _guarded(mps.driver_allocated_memory),
                "all Metal memory of this process: tensors, allocator cache, MPSGraph"),
        Counter("mps recommended max", _guarded(mps.recommended_max_memory),
                "Metal's recommended working-set size for this machine"),
        Counter("mps peak allocated", _guarded(torch.accelerator.max_memory_allocated, "mps"),
                "torch.accelerator.max_memory_allocated, probed: n/a where this torch cannot "
                "answer on mps (R35 in references.md)"),
    )


def _accelerator_counters(device: torch.device) -> tuple[Counter, ...]:
    acc = torch.accelerator
    info = _guarded(acc.get_memory_info, device)
    free, total = info if info is not None else (None, None)
    return (
        Counter(f"{device.type} allocated", _guarded(acc.memory_allocated, device),
                "bytes of live tensors on the device"),
        Counter(f"{device.type} peak allocated", _guarded(acc.max_memory_allocated, device),
                "the most live tensor bytes since the last peak reset"),
        Counter(f"{device.type} reserved", _guarded(acc.memory_reserved, device),
                "bytes the caching allocator holds (live tensors plus its cache)"),
        Counter(f"{device.type} free", free, "free device memory reported by the driver"),
        Counter(f"{device.type} total", total, "total device memory reported by the driver"),
    )


def snapshot(device: torch.device | str | None = None) -> Snapshot:
    """The memory counters ``device`` (default: the course's device) has, each labelled.

    mps: ``torch.mps`` current / driver allocated, the recommended maximum (R29 in references.md) and
    ``torch.accelerator.max_memory_allocated``, tried at run time (R35).
    cuda and other accelerators: ``torch.accelerator``'s memory functions (guarded: they raise
    where no accelerator exists). cpu: torch keeps no allocator counter, so we report what the
    process can (resident set size); ``measure()`` counts tensor bytes on any device.
    """
    where = _device(device)
    if where.type == "cpu":
        return Snapshot(where, _cpu_counters())
    counters = _mps_counters() if where.type == "mps" else _accelerator_counters(where)
    if not _present(where):  # a CUDA build without a GPU answers 0, not an error: say n/a
        counters = tuple(Counter(c.name, None, c.counts) for c in counters)
    return Snapshot(where, counters)


def _present(where: torch.device) -> bool:
    """Whether this machine has the device (an answer about a missing one means nothing)."""
    if where.type == "mps":
        return torch.backends.mps.is_available()
    current = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return current is not None and current.type == where.type


def empty_cache(device: torch.device | str | None = None) -> str:
    """Give the allocator's cached, unused blocks back, on any device; returns what was done."""
    where = _device(device)
    if where.type == "cpu":
        return "cpu: nothing to empty (the CPU allocator keeps no cache)"
    if where.type == "mps":
        usable, call, name = torch.backends.mps.is_available(), torch.mps.empty_cache, "torch.mps"
    else:
        usable, call, name = torch.accelerator.is_available(), torch.accelerator.empty_cache, \
            "torch.accelerator"
    if not usable:
        return f"{where.type} unavailable: nothing emptied"
    try:
        call()
    except RuntimeError as err:  # e.g. an allocator without a cache API (R35 in references.md)
        return f"{name}.empty_cache() failed: {err}"
    return f"{name}.empty_cache()"
