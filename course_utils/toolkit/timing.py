"""Honest timing on asynchronous devices (lesson 03).

On mps and cuda a call returns when its work is *queued*, not done (R39 in references.md), so a
stopwatch around the call measures the launch. ``sync(device)`` waits for the device;
``benchmark(fn, device)`` warms up and times with ``torch.utils.benchmark.Timer`` (which
synchronizes around every block of calls) and reports the median and the spread; ``naive_time(fn)``
is the deliberately wrong stopwatch the lesson starts from. ``open_device(device)`` gives the
lesson's device: the real one on mps/cuda, the emulated asynchronous device
(``course_utils.toolkit.emulate.async_queue``) on a CPU. (The
deterministic device with a fake clock that 03.honest_timer is judged on is a case input:
``course_utils.labs.case_inputs.FakeDevice``.)

Measured times are printed after a "⏱" sign; the course's nbval sanitizer masks the rest of such a
line, because timings differ on every run.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import timeit
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.benchmark import Timer  # its note on CUDA_HOME is dropped in core/startup.py

from course_utils.core.glyphs import glyph
from course_utils.toolkit.plotstyle import DPI, SMALL
from course_utils.toolkit.syncs.finder import note_sync

MARK = glyph("timer")  # "time" instead where fonts lack the emoji (core/glyphs.py)


def fmt_time(seconds: float) -> str:
    """``⏱ 3.12 ms``: a measured duration, marked so the notebooks' sanitizer can mask it."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{MARK} {seconds / scale:.3g} {unit}"
    return f"{MARK} {seconds * 1e9:.3g} ns"


def _has_synchronize(device: Any) -> bool:
    return not isinstance(device, (str, torch.device)) and hasattr(device, "synchronize")


def sync(device: Any = None) -> None:
    """Wait until ``device`` has finished all queued work (lesson 03); a no-op on CPU.

    ``device`` is a ``torch.device`` or name ("mps", "cuda", "cpu"), or the emulated device.
    On mps/cuda this is ``torch.accelerator.synchronize()``. Watchers such as ``find_sync_points``
    count every call as a sync point, also on CPU, where it *would* wait on an accelerator.
    """
    if _has_synchronize(device):
        device.synchronize()
        return
    note_sync("synchronize")
    kind = torch.device(device).type if device is not None else "cpu"
    if kind in ("cpu", "meta"):
        return
    current = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if current is None or current.type != kind:
        raise RuntimeError(f"cannot synchronize {kind}: this machine's accelerator is "
                           f"{current.type if current else 'none'}")
    torch.accelerator.synchronize()


def naive_time(fn: Callable[[], Any]) -> float:
    """Seconds for one call of ``fn``, measured the wrong way on purpose (lesson 03).

    No warm-up, no synchronize, one call: on an asynchronous device this is the launch time, and
    the first call also pays one-time setup costs.
    """
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Launch:
    """One call timed both ways: when it returned (naive) and when the device finished (synced)."""

    naive: float
    synced: float


def launch_and_finish(fn: Callable[[], Any], device: Any) -> Launch:
    """Time one call from a drained device: until it returns, and until the device is done."""
    sync(device)
    start = time.perf_counter()
    fn()
    returned = time.perf_counter()
    sync(device)
    return Launch(returned - start, time.perf_counter() - start)


def naive_vs_synced(fn: Callable[[], Any], device: Any, repeats: int = 5,
                    warmup: int = 1) -> Launch:
    """Medians of ``repeats`` calls of ``launch_and_finish`` after ``warmup`` calls (lesson 03)."""
    for _ in range(warmup):
        fn()
    runs = [launch_and_finish(fn, device) for _ in range(repeats)]
    return Launch(statistics.median(r.naive for r in runs), statistics.median(r.synced for r in runs))


@dataclass(frozen=True)
class Timing:
    """A benchmark result: median and interquartile range (seconds) over ``runs`` timed calls."""

    median: float
    iqr: float
    runs: int
    label: str = ""

    def __str__(self) -> str:
        label = f"{self.label}: " if self.label else ""
        bare = lambda t: fmt_time(t).removeprefix(f"{MARK} ")  # noqa: E731 - the number and unit
        return f"{label}{MARK} median {bare(self.median)}, IQR {bare(self.iqr)}, {self.runs} runs"


def _wait(device: Any) -> None:
    """A timer's own wait: like ``sync`` but not reported as a sync point of the code measured."""
    if _has_synchronize(device):
        device.synchronize(record=False)
    elif device is not None and torch.device(device).type not in ("cpu", "meta"):
        torch.accelerator.synchronize()


def _synced_clock(device: Any) -> Callable[[], float]:
    def clock() -> float:
        _wait(device)
        return timeit.default_timer()

    return clock


def benchmark(fn: Callable[[], Any], device: Any = None, *, warmup: int = 1,
              min_run_time: float = 0.2, label: str = "") -> Timing:
    """Time ``fn()`` honestly with ``torch.utils.benchmark.Timer`` (lesson 03).

    ``warmup`` untimed calls first; then ``Timer.blocked_autorange`` runs blocks of calls for at
    least ``min_run_time`` seconds, reading a clock that synchronizes ``device`` first. (In torch
    2.13 Timer's default clock already calls ``torch.accelerator.synchronize()``, R42; passing
    ours also covers older torch on mps and the emulated device.) Timer keeps this process's thread
    count instead of its default of one thread.
    """
    for _ in range(warmup):
        fn()
    _wait(device)
    timer = Timer(stmt="fn()", globals={"fn": fn}, timer=_synced_clock(device), label=label or "fn",
                  num_threads=torch.get_num_threads())
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(median=m.median, iqr=m.iqr, runs=len(m.raw_times) * m.number_per_run, label=label)


def event_time(fn: Callable[[], Any], device: Any) -> float | None:
    """Seconds ``fn()`` took on the device between two timing events, or None without mps/cuda.

    Uses ``torch.mps.Event`` / ``torch.cuda.Event(enable_timing=True)`` (R29, R39 in
    references.md): the device stamps both events itself, so host-side delays do not count.
    """
    if _has_synchronize(device) or device is None:
        return None
    kind = torch.device(device).type
    event_cls = {"cuda": getattr(torch.cuda, "Event", None), "mps": getattr(torch.mps, "Event", None)}
    current = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if event_cls.get(kind) is None or current is None or current.type != kind:
        return None
    start, end = event_cls[kind](enable_timing=True), event_cls[kind](enable_timing=True)
    fn()  # warm-up
    sync(device)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3  # elapsed_time is in milliseconds


class RealDevice:
    """The lesson's handle on a real accelerator: ``put`` moves, ``synchronize`` waits."""

    def __init__(self, device: torch.device):
        self.device = device
        self.label = device.type
        self.spans: list = []

    def put(self, obj: Any) -> Any:
        """``obj.to(device)``; modules move in place."""
        return obj.to(self.device)

    def synchronize(self, record: bool = True) -> None:
        """Wait for the accelerator (``record=False``: not reported to sync-point watchers)."""
        if record:
            sync(self.device)
        else:
            torch.accelerator.synchronize()

    def __repr__(self) -> str:
        return f"<{self.label} device>"


@contextlib.contextmanager
def open_device(device: torch.device | str) -> Iterator[Any]:
    """Lesson 03's device: the real one on mps/cuda, else an emulated asynchronous device."""
    device = torch.device(device)
    if device.type in ("cpu", "meta"):
        from course_utils.toolkit.emulate.async_queue import AsyncDevice

        with AsyncDevice() as dev:
            yield dev
    else:
        yield RealDevice(device)


def plot_timeline(spans: Sequence, marks: dict[str, tuple[float, float]] | None = None,
                  label: str = "emulated"):
    """A small chart: host launches and waits above, device kernels below (lesson 03).

    ``marks`` shade the interval each timer measured, e.g. ``{"naive": (start, end)}``, in
    ``time.perf_counter()`` seconds like the spans.
    """
    import matplotlib.pyplot as plt

    spans = list(spans)
    origin = min([s.start for s in spans] + [m[0] for m in (marks or {}).values()])
    fig, ax = plt.subplots(figsize=(6, 2.8), dpi=DPI)
    colors = {"launch": "tab:blue", "wait": "tab:red", "kernel": "tab:green"}
    rows = {"host": 1, "device": 0}
    for s in spans:
        ax.broken_barh([((s.start - origin) * 1e3, max((s.end - s.start) * 1e3, 0.02))],
                       (rows[s.lane] - 0.3, 0.6), color=colors[s.kind])
    for (name, (start, end)), color in zip((marks or {}).items(), ("tab:orange", "tab:purple"),
                                           strict=False):
        ax.axvspan((start - origin) * 1e3, (end - origin) * 1e3, color=color, alpha=0.12)
        ax.axvline((end - origin) * 1e3, color=color, lw=2, label=f"{name} stops")
    for kind, color in colors.items():
        ax.plot([], [], color=color, lw=6, label=kind)
    ax.set_yticks([0, 1], ["device", "host"])
    ax.set_ylim(-0.5, 1.5)
    ax.set_xlabel(f"ms after the timers started ({label})")
    ax.legend(fontsize=SMALL, ncol=5, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    return fig


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one CPU thread inside the block (lessons 05, 06, 08): tiny tensors gain nothing
    from a thread pool, and on a busy machine its threads wait for each other and disturb timings."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
