"""Case inputs of lesson 03: an asynchronous device with a fake clock, generated training loops,
and training steps that count the host reads of their losses."""

from __future__ import annotations

import functools
import linecache
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from course_utils.labs.sync_lab import classifier_head, pooled_batches
from course_utils.toolkit.syncs.host_reads import function_kind, tensors_in

# --- 03: a deterministic asynchronous device ---------------------------------------------------


class FakeDevice:
    """A deterministic asynchronous device: a fake clock, a queue, and a sync that drains it.

    ``run()`` costs ``launch`` s of host time and queues ``work`` s of device work (``slow_extra``
    more for the first ``slow_calls`` calls, ``spike`` more for call number ``spike_at``, and
    ``jitter[i % len(jitter)]`` more for call ``i + 1``: per-call noise). ``sync()`` advances the
    clock until the device is idle, plus ``sync_cost``; ``clock()`` reads it.

    The device keeps its own record of what it was asked to do (``events``): a judge reads there
    what a timer really measured (``timed``), never what the timer says it measured.
    """

    def __init__(self, launch: float, work: float, sync_cost: float = 2e-5, slow_calls: int = 0,
                 slow_extra: float = 0.0, spike_at: int | None = None, spike: float = 0.0,
                 jitter: Sequence[float] = ()):
        self.launch, self.work, self.sync_cost = launch, work, sync_cost
        self.slow_calls, self.slow_extra, self.spike_at, self.spike = slow_calls, slow_extra, spike_at, spike
        self.jitter = tuple(jitter)
        self.now = self.busy_until = 0.0
        self.calls = 0
        self.events: list[tuple[str, float, bool]] = []  # (run | sync | clock, time, device idle)

    def run(self) -> None:
        self.calls += 1
        self.now += self.launch
        extra = (self.slow_extra if self.calls <= self.slow_calls else 0.0) + (
            self.spike if self.calls == self.spike_at else 0.0)
        if self.jitter:
            extra += self.jitter[(self.calls - 1) % len(self.jitter)]
        self.busy_until = max(self.now, self.busy_until) + self.work + extra
        self.events.append(("run", self.now, False))

    def sync(self) -> None:
        self.now = max(self.now, self.busy_until) + self.sync_cost
        self.events.append(("sync", self.now, True))

    def clock(self) -> float:
        self.events.append(("clock", self.now, self.busy_until <= self.now))
        return self.now

    def timed(self, warmup: int) -> list[float | None]:
        """What the device saw timed, one entry per call after the first ``warmup``: the time from
        the last clock read before the call (after the call before it) to the first clock read
        after it, both read with the device idle (synchronized); None for a call not timed so."""
        out: list[float | None] = []
        runs = [i for i, (kind, _, _) in enumerate(self.events) if kind == "run"]
        for n, at in enumerate(runs):
            if n < warmup:
                continue
            before = runs[n - 1] if n else -1
            after = runs[n + 1] if n + 1 < len(runs) else len(self.events)
            starts = [e for e in self.events[before + 1:at] if e[0] == "clock"]
            ends = [e for e in self.events[at + 1:after] if e[0] == "clock"]
            if starts and ends and starts[-1][2] and ends[0][2]:
                out.append(ends[0][1] - starts[-1][1])
            else:
                out.append(None)
        return out

    def __repr__(self) -> str:
        jitter = f", jitter {len(self.jitter)}-periodic" if self.jitter else ""
        return (f"FakeDevice(launch={self.launch:.3g}s, work={self.work:.3g}s, "
                f"{self.slow_calls} slow first calls{jitter})")


# --- 03: generated training loops --------------------------------------------------------------

_LOOP_HEAD = """import torch
import torch.nn.functional as F


def loop(model, batches):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history, kept, total = [], [], 0.0
    host_lr = torch.tensor(0.1)
    running = torch.zeros(())
    for step, (x, y) in enumerate(batches):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _compile_loop(statements: tuple[str, ...], name: str) -> Callable:
    source = _LOOP_HEAD + "".join(f"        {s}\n" for s in statements) + "    return history\n"
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch, "F": F}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated code
    return namespace["loop"]


class GeneratedLoop:
    """A training loop ``loop(model, batches)`` compiled from body statements (``make_loop``).

    It calls, and looks like, the compiled function (``__wrapped__``): ``inspect.getsource`` and
    ``find_sync_points`` see its source, ``__code__`` and friends are the function's. A pickle
    carries the statements and the name and compiles the loop again where it is loaded; a deep
    copy is the loop itself, as for a function.
    """

    def __init__(self, statements: Sequence[str], name: str):
        self.statements, self.name = tuple(statements), name
        functools.update_wrapper(self, _compile_loop(self.statements, name))

    def __call__(self, model, batches):
        return self.__wrapped__(model, batches)

    def __getattr__(self, attribute: str):
        if attribute == "__wrapped__":  # not set yet: no function to ask
            raise AttributeError(attribute)
        return getattr(self.__wrapped__, attribute)

    def __reduce__(self):
        return GeneratedLoop, (self.statements, self.name)

    def __deepcopy__(self, memo) -> GeneratedLoop:
        return self

    def __repr__(self) -> str:
        return f"<generated loop {self.name!r}>"


def make_loop(statements: Sequence[str], name: str) -> GeneratedLoop:
    """A training loop whose body ends with ``statements``, its source inspectable under ``<name>``."""
    return GeneratedLoop(statements, name)


# --- 03: training steps that count the host reads of their losses -----------------------------


_LEAVES_THE_DEVICE = ("__reduce_ex__", "__array__", "numpy")  # a pickle or a NumPy array: a host copy
_WRITES = ("__setitem__", "copy_")


def _recorder(reads: list) -> Callable[[str], None]:
    """The one way a tracked tensor records a read: the record itself is not an attribute of the
    tensor (nothing the answer holds can empty it by accident or on purpose)."""

    def note(kind: str) -> None:
        reads.append(kind)

    return note


class _Tracked(torch.Tensor):
    """A tensor standing for one on an accelerator: it counts the host reads made of it.

    A read is any torch call that brings its values to the host (``function_kind``), a pickle or a
    NumPy array of it, or a write of it into a tensor that is not tracked (a host buffer). Its
    copies (``as_subclass`` included) stay tracked."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracked = [t for t in tensors_in((args, kwargs)) if isinstance(t, _Tracked)]
        note = next((t.__dict__["_note"] for t in tracked if "_note" in t.__dict__), None)
        kind = function_kind(func, args, kwargs, lambda t: isinstance(t, _Tracked))
        name = getattr(func, "__name__", "")
        if kind is None and name in _LEAVES_THE_DEVICE:
            kind = "to host"
        if (kind is None and name in _WRITES and args and isinstance(args[0], torch.Tensor)
                and not isinstance(args[0], _Tracked)):
            kind = "to host"  # the device value written into a host tensor
        if kind is not None and note is not None:
            note(kind)
        with torch._C.DisableTorchFunctionSubclass():
            if name == "__reduce_ex__":  # pickled as the plain tensor it holds (the read is noted)
                return torch.Tensor.as_subclass(args[0], torch.Tensor).__reduce_ex__(*args[1:])
            out = func(*args, **kwargs)
        if kind is not None and isinstance(out, _Tracked):  # .cpu() of a cpu stand-in is itself
            with torch._C.DisableTorchFunctionSubclass():
                out = torch.Tensor.as_subclass(out, torch.Tensor)
        if name in _WRITES or kind is not None or note is None:
            return out  # a value on the host, or a plain tensor
        return _wrap(out, note)

    def as_subclass(self, cls):
        """Still tracked: a plain view of a device value is on the device all the same."""
        out = torch.Tensor.as_subclass(self, cls)
        note = self.__dict__.get("_note")
        return out if note is None or isinstance(out, _Tracked) else _wrap(out, note)


def _wrap(value, note: Callable[[str], None]):
    if isinstance(value, torch.Tensor) and not isinstance(value, _Tracked):
        with torch._C.DisableTorchFunctionSubclass():
            value = torch.Tensor.as_subclass(value, _Tracked)
        value._note = note
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_wrap(v, note) for v in value)
    return value


class TrainingRun:
    """``run()`` performs one training step and returns its loss, a tensor "on the device".

    Each deep copy is a fresh run from the same start (``check`` copies its arguments per call).
    The run records what happened to it: ``reads`` lists the host reads made of its losses,
    ``reads_before_step[i]`` how many had been made when step ``i + 1`` was asked for, and
    ``steps_done`` the steps it ran.
    """

    def __init__(self, steps: int, seed: int = 0):
        self.steps, self.seed = steps, seed
        self.reads: list[str] = []
        self.reads_before_step: list[int] = []
        self.copies: list[TrainingRun] = []
        self._note = _recorder(self.reads)
        self._done = 0
        self._model = self._optimizer = self._batches = None

    @property
    def steps_done(self) -> int:
        return self._done

    def __deepcopy__(self, memo) -> TrainingRun:
        fresh = TrainingRun(self.steps, self.seed)
        self.copies.append(fresh)
        return fresh

    def __reduce__(self):
        return TrainingRun, (self.steps, self.seed)  # a fresh run where it is loaded

    def __repr__(self) -> str:
        return f"TrainingRun(steps={self.steps}, seed={self.seed})"

    def __call__(self) -> torch.Tensor:
        if self._model is None:
            self._model = classifier_head(hidden=16, seed=self.seed)
            self._optimizer = torch.optim.SGD(self._model.parameters(), lr=0.5)
            self._batches = pooled_batches(n=self.steps, reports=8, seed=self.seed)
        if self._done >= self.steps:
            raise IndexError(f"this run has only {self.steps} steps")
        self.reads_before_step.append(len(self.reads))
        x, y = self._batches[self._done]
        self._done += 1
        loss = F.cross_entropy(self._model(x), y)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return _wrap(loss.detach(), self._note)
