"""Memory you measure instead of guess (lesson 02).

- ``tensor_bytes`` and ``snapshot``: what a tensor costs, and the counters each device really has,
  each labelled with what it counts (on CPU there is no allocator counter: we report the process).
- ``tracking`` / ``measure``: peak and retained tensor bytes of a piece of work, on any device.
- ``training_step_breakdown``: weights, gradients, optimizer state and the activations autograd
  really saves, against the measured peak of one training step (table and stacked bar chart).
- ``retry_on_oom``: the correct version of a retry-on-out-of-memory helper (seed 001's is broken).

``TinyIssueClassifier`` is the lesson's model: the running (batch, tokens, features) example of
seed 003 shrunk to run in milliseconds, with one self-attention block so sequence length matters.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

log = logging.getLogger(__name__)

MiB = 2**20
TOLERANCE = 0.20  # training_step_breakdown: |measured peak / estimate - 1| stays within this
# (checked in tests/test_memory.py on the lesson's model from 4 to 1024 tokens, five optimizers)


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    """Bytes of a contiguous tensor: elements times bytes per element (lesson 02)."""
    return math.prod(shape) * dtype.itemsize


def storage_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor keeps alive: its whole storage, which a view (a slice, ``.T``) shares."""
    return t.untyped_storage().nbytes()


def mib(n: int | None) -> str:
    """``n`` bytes as MiB with two decimals ("n/a" for None)."""
    return "n/a" if n is None else f"{n / MiB:.2f} MiB"


def _device(device: torch.device | str | None) -> torch.device:
    if device is None:
        from course_utils.device import pick_device

        return pick_device()
    return torch.device(device)


def _guarded(fn: Callable, *args) -> Any:
    """Call a device memory API; None where this build or machine cannot answer (they raise)."""
    try:
        return fn(*args)
    except (RuntimeError, AttributeError, AssertionError, TypeError):
        return None


# --- snapshot -----------------------------------------------------------------------------------


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

    mps: ``torch.mps`` current / driver allocated and the recommended maximum (facts §3).
    cuda and other accelerators: ``torch.accelerator``'s memory functions (guarded: they raise
    where no accelerator exists). cpu: torch keeps no allocator counter, so we report what the
    process can (resident set size); ``measure()`` counts tensor bytes on any device.
    """
    where = _device(device)
    if where.type == "cpu":
        return Snapshot(where, _cpu_counters())
    if where.type == "mps":
        return Snapshot(where, _mps_counters())
    return Snapshot(where, _accelerator_counters(where))


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
    except RuntimeError as err:  # e.g. an allocator without a cache API (facts §3)
        return f"{name}.empty_cache() failed: {err}"
    return f"{name}.empty_cache()"


# --- measure ------------------------------------------------------------------------------------


def _storage(t: Any) -> torch.UntypedStorage | None:
    """The storage of a dense tensor holding real memory; None for anything else."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.device.type == "meta":
        return None
    return t.untyped_storage()


class _LiveStorages(TorchDispatchMode):
    """Counts the bytes of tensor storages created while active, and frees them when they die.

    Why a dispatch mode (and not ``torch.profiler(profile_memory=True)``): every ATen op passes
    through ``__torch_dispatch__`` on every device, so one mechanism measures cpu, mps and cuda
    alike (MPS has no peak counter, facts §3); it counts tensor *storages*, the unit of our
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


# --- the bill of a training step ----------------------------------------------------------------


class TinyIssueClassifier(nn.Module):
    """Lesson 02's model: (batch, tokens, features) -> 3 logits, with one self-attention block.

    The attention scores are (batch, tokens, tokens): the one activation that grows with the
    square of the sequence length.
    """

    def __init__(self, features: int = 64, hidden: int = 128, classes: int = 3):
        super().__init__()
        self.embed = nn.Linear(features, hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        h = h + scores.softmax(dim=-1) @ v
        h = h + self.mlp(h)
        return self.head(h.mean(dim=1))


def _trainable(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [p for p in params if p.requires_grad]


def _scalar_bytes() -> int:
    """Adam's per-tensor step counter is a float32 scalar (float64 when that is the default)."""
    return 8 if torch.get_default_dtype() == torch.float64 else 4


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> tuple[int, str]:
    """Bytes of state ``optimizer`` keeps after its first step, and the rule used (lesson 02).

    SGD: none; SGD with momentum: one buffer per trainable parameter; Adam/AdamW: two moments
    (three with amsgrad) plus a scalar step counter per parameter. Raises TypeError for others.
    """
    if isinstance(optimizer, torch.optim.SGD):
        total = sum(p.nbytes for g in optimizer.param_groups if g["momentum"] != 0
                    for p in _trainable(g["params"]))
        momentum = any(g["momentum"] != 0 for g in optimizer.param_groups)
        return total, "1 momentum buffer per weight" if momentum else "none (plain SGD)"
    if isinstance(optimizer, torch.optim.Adam):  # AdamW is a subclass
        total = 0
        for g in optimizer.param_groups:
            moments = 3 if g["amsgrad"] else 2
            total += sum(moments * p.nbytes + _scalar_bytes() for p in _trainable(g["params"]))
        amsgrad = any(g["amsgrad"] for g in optimizer.param_groups)
        return total, f"{type(optimizer).__name__}: {3 if amsgrad else 2} moments per weight + step counters"
    raise TypeError(f"no state rule for {type(optimizer).__name__}: count optimizer.state instead")


def _counted_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    return sum(t.nbytes for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t))


class SavedTensors:
    """Context manager: bytes of distinct storages autograd saves for backward (lesson 02).

    ``saved_tensors_hooks`` hands every tensor saved for backward to ``pack``; we count each
    storage once (``x * x`` saves ``x`` twice) and skip ``exclude`` (e.g. the weights and the batch,
    which the bill counts elsewhere).
    """

    def __init__(self, exclude: Sequence[torch.Tensor] = ()):
        self._skip = {t.untyped_storage().data_ptr() for t in exclude}
        self.storages: dict[int, int] = {}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in self._skip:
            self.storages[st.data_ptr()] = st.nbytes()
        return t

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())

    def __enter__(self) -> SavedTensors:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)


def saved_bytes(fn: Callable, *args, exclude: Sequence[torch.Tensor] = ()) -> int:
    """Bytes autograd saves for backward while ``fn(*args)`` runs (distinct storages)."""
    with SavedTensors(exclude) as saved:
        fn(*args)
    return saved.bytes


@dataclass(frozen=True)
class Part:
    """One line of the bill: what, how many bytes, and how the number was obtained."""

    name: str
    bytes: int
    how: str


@dataclass(frozen=True)
class Breakdown:
    """``training_step_breakdown``'s answer: the estimated bill and the measured peak."""

    label: str
    parts: tuple[Part, ...]
    measured_peak: int
    tolerance: float = TOLERANCE

    @property
    def estimate(self) -> int:
        return sum(p.bytes for p in self.parts)

    @property
    def ratio(self) -> float:
        """Measured peak / estimate."""
        return self.measured_peak / self.estimate

    @property
    def agrees(self) -> bool:
        return abs(self.ratio - 1) <= self.tolerance

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parts]

    def __getitem__(self, name: str) -> int:
        return self.parts[self.names.index(name)].bytes

    def table(self) -> str:
        rows = [f"{self.label}", f"{'part':<18}{'bytes':>12}{'MiB':>9}  how it is counted"]
        rows += [f"{p.name:<18}{p.bytes:>12,}{p.bytes / MiB:>9.2f}  {p.how}" for p in self.parts]
        rows.append(f"{'estimate (sum)':<18}{self.estimate:>12,}{self.estimate / MiB:>9.2f}")
        rows.append(f"{'measured peak':<18}{self.measured_peak:>12,}{self.measured_peak / MiB:>9.2f}"
                    f"  ratio {self.ratio:.2f}, within ±{self.tolerance:.0%}: {self.agrees}")
        return "\n".join(rows)

    __str__ = table

    def plot(self, ax=None):
        """This breakdown as one stacked bar (see ``plot_breakdowns``)."""
        return plot_breakdowns([self], ax=ax)


def _distinct_bytes(tensors: Sequence[torch.Tensor]) -> int:
    return sum({t.untyped_storage().data_ptr(): storage_bytes(t) for t in tensors}.values())


def training_step_breakdown(model: nn.Module, optimizer: torch.optim.Optimizer,
                            batch: tuple[torch.Tensor, ...], loss_fn: Callable,
                            label: str | None = None) -> Breakdown:
    """The bill of one training step, estimated part by part, and its measured peak (lesson 02).

    Runs two ordinary steps (``zero_grad()``, forward, ``loss_fn(output, *targets)``, backward,
    ``step()``) on ``model``, so it trains it: the first creates the optimizer state, the second is
    measured with ``tracking()`` while ``SavedTensors`` counts the activations saved for backward.
    The estimate adds weights, gradients, optimizer state (by rule, per optimizer kind), saved
    activations, backward's working space and the batch. Working space is a rule of thumb: while
    backward passes the largest saved activation it holds a gradient of the same size. The peak
    measured (what was alive before the step plus the tracker's peak) agrees within ``TOLERANCE``;
    the rest is timing: activations are freed as gradients appear, and other temporaries come and go.
    """
    inputs, *targets = batch
    params, device = list(model.parameters()), inputs.device

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(model(inputs), *targets).backward()
        optimizer.step()

    step()
    optimizer.zero_grad()
    state_tensors = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    weights = [*params, *model.buffers()]
    before = _distinct_bytes([*weights, *state_tensors, *batch])
    with tracking(device) as tracker, SavedTensors(exclude=[*weights, *batch]) as saved:
        step()
    try:
        state, state_how = optimizer_state_bytes(optimizer)
    except TypeError:
        state, state_how = _counted_state_bytes(optimizer), "counted in optimizer.state"
    parts = (
        Part("weights", _distinct_bytes(weights), "parameters and buffers"),
        Part("gradients", sum(p.nbytes for p in _trainable(params)), "1 per trainable weight"),
        Part("optimizer state", state, state_how),
        Part("activations", saved.bytes, "saved for backward (saved_tensors_hooks)"),
        Part("working space", max(saved.storages.values(), default=0),
             "gradient of the largest saved activation (rule of thumb)"),
        Part("batch", _distinct_bytes(batch), "inputs and targets"),
    )
    return Breakdown(label or type(optimizer).__name__, parts, before + tracker.peak_bytes)


COLORS = {"weights": "#4c72b0", "gradients": "#dd8452", "optimizer state": "#55a868",
          "activations": "#c44e52", "working space": "#e8a3a5", "batch": "#8172b3"}


def plot_breakdowns(breakdowns: Sequence[Breakdown], ax=None):
    """Stacked bars of estimated parts, one per breakdown, with the measured peak marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3), dpi=80)
    xs = range(len(breakdowns))
    for name, color in COLORS.items():
        bottoms = [sum(p.bytes for p in b.parts[: b.names.index(name)]) / MiB for b in breakdowns]
        ax.bar(xs, [b[name] / MiB for b in breakdowns], bottom=bottoms, color=color, label=name,
               width=0.55)
    peaks = [b.measured_peak / MiB for b in breakdowns]
    errs = [b.estimate * b.tolerance / MiB for b in breakdowns]
    ax.errorbar(xs, [b.estimate / MiB for b in breakdowns], yerr=errs, fmt="none", ecolor="grey",
                capsize=6, label=f"estimate ±{breakdowns[0].tolerance:.0%}")
    ax.scatter(xs, peaks, marker="D", color="black", zorder=3, label="measured peak")
    ax.set_xticks(list(xs), [b.label for b in breakdowns])
    ax.set_ylabel("MiB")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax


# --- watermarks and the two memory pictures -----------------------------------------------------


@dataclass(frozen=True)
class Watermark:
    """An MPS allocator variable, its default and meaning (facts §3, PyTorch 'MPS Environment Variables')."""

    name: str
    default: str
    meaning: str

    @property
    def now(self) -> str | None:
        return os.environ.get(self.name)


WATERMARKS = (
    Watermark("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "1.7",
              "hard cap = ratio x recommended_max_memory(); 0.0 removes the cap (risks a system OOM)"),
    Watermark("PYTORCH_MPS_LOW_WATERMARK_RATIO", "1.4 (unified) / 1.0 (discrete)",
              "soft target: above it the allocator collects garbage and commits adaptively"),
)


def draw_memory_models(ax=None):
    """Lesson 02's diagram: a discrete GPU's two memories vs Apple silicon's one shared pool."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2.8), dpi=80)

    def box(x, y, w, h, text, color, size=9):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="black"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)

    box(0.0, 0.45, 0.18, 0.3, "CPU", "#dbe9f6")
    box(0.0, 0.0, 0.18, 0.3, "system RAM", "#9ecae1")
    box(0.28, 0.45, 0.18, 0.3, "GPU", "#fde0c5")
    box(0.28, 0.0, 0.18, 0.3, "VRAM\n(its own)", "#fdae6b")
    for x in (0.09, 0.37):
        ax.add_patch(FancyArrowPatch((x, 0.45), (x, 0.32), arrowstyle="<->", mutation_scale=10))
    ax.add_patch(FancyArrowPatch((0.18, 0.14), (0.28, 0.14), arrowstyle="<->", mutation_scale=12))
    ax.text(0.23, 0.2, "PCIe", ha="center", fontsize=8)
    ax.text(0.23, 0.88, 'discrete GPU: .to("cuda") copies\nacross to a second memory',
            ha="center", fontsize=9)
    box(0.58, 0.0, 0.42, 0.3, "one memory pool, shared by all", "#c7e9c0")
    for x, name in ((0.59, "CPU"), (0.74, "GPU"), (0.89, "macOS +\napps")):
        box(x, 0.45, 0.10, 0.3, name, "#e5f5e0", size=8)
        ax.add_patch(FancyArrowPatch((x + 0.05, 0.45), (x + 0.05, 0.32), arrowstyle="<->",
                                     mutation_scale=10))
    ax.text(0.79, 0.88, 'Apple silicon: .to("mps") makes an mps\ntensor in the same pool',
            ha="center", fontsize=9)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.05, 1.05)
    ax.axis("off")
    return ax


# --- retry_on_oom -------------------------------------------------------------------------------


def is_out_of_memory(err: BaseException) -> bool:
    """True for torch.OutOfMemoryError (CUDA and others) and MPS's "MPS backend out of memory"."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "out of memory" in str(err).lower())


class MinBatchOutOfMemoryError(RuntimeError):
    """Even the smallest allowed batch ran out of memory: shrink the work another way."""


@dataclass(frozen=True)
class Retried:
    """``retry_on_oom``'s answer: one result per chunk, the final chunk size, and the OOMs met."""

    results: list
    batch_size: int
    ooms: int


def _rows(batch) -> int:
    return len(batch[0]) if isinstance(batch, tuple | list) else len(batch)


def _chunk(batch, start: int, stop: int):
    if isinstance(batch, tuple | list):
        return type(batch)(t[start:stop] for t in batch)
    return batch[start:stop]


def retry_on_oom(step: Callable, batch, min_batch: int = 1,
                 device: torch.device | str | None = None,
                 report: Callable[[str], None] | None = None) -> Retried:
    """Run ``step`` over all of ``batch``, halving the chunk size whenever it runs out of memory.

    ``batch`` is a tensor or a tuple/list of tensors sharing dim 0. ``step(chunk)`` is called on
    consecutive chunks (first the whole batch); after an out-of-memory error the cache is emptied
    and the failed chunk is retried at half the size, never below ``min_batch``. Other errors
    propagate untouched; when ``min_batch`` itself fails, ``MinBatchOutOfMemoryError`` is raised.
    No row is skipped or run twice, so for training let ``step`` do forward and backward only
    (loss scaled by ``len(chunk) / len(batch)``) and call ``optimizer.step()`` once afterwards:
    gradient accumulation, which keeps the effective batch (lesson 02).
    """
    if min_batch < 1:
        raise ValueError(f"min_batch must be at least 1, got {min_batch}")
    say = report or log.info
    total, size, start, results, ooms = _rows(batch), _rows(batch), 0, [], 0
    while start < total:
        failed = False
        try:
            results.append(step(_chunk(batch, start, start + size)))
        except Exception as err:  # noqa: BLE001 - filtered at once: only OOM is handled
            if not is_out_of_memory(err):
                raise
            if size <= min_batch:
                raise MinBatchOutOfMemoryError(
                    f"out of memory even at batch size {size} (min_batch={min_batch}): shorten "
                    "sequences, use a smaller model or precision, or free other memory") from err
            failed = True
        if failed:  # outside `except`: the traceback (and the tensors it holds) is gone now
            ooms += 1
            done = empty_cache(device)
            size = max(min_batch, size // 2)
            say(f"out of memory: {done}; retrying rows {start}.. with batch size {size}")
            continue
        start += size
    return Retried(results, size, ooms)
