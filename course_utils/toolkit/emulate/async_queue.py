"""An emulated asynchronous device for machines without one (lesson 03). Everything here is *emulated*.

On mps and cuda, an op call only *queues* a kernel and returns; the GPU runs it later, and the host
waits only where it needs a value (R39 in references.md). ``AsyncDevice`` reproduces that on a CPU, at the
dispatcher: inside ``with AsyncDevice() as dev:`` every aten op on a device tensor is handed to a
background worker thread and the call returns at once with an output tensor that will be filled
in later. Reading a value (``.item()``, ``.tolist()``, printing, ``if tensor``), copying to the host
(``.cpu()``) or ``dev.synchronize()`` blocks until the queue drains. Unmodified PyTorch code
(``nn.Linear``, autograd, ``torch.optim``) is affected exactly as on a real accelerator, so
naive timers really do measure only the launch.

Device tensors are made with ``dev.put(tensor)`` (a copy, like ``.to(device)``) or
``dev.put(module)`` (in place, like ``module.to(device)``); anything computed from them stays on the
device. Factory calls such as ``torch.zeros(3)`` make host tensors; with ``device=x.device`` (a
``torch.device``, as correct device code writes it) they make device tensors. Like a real device it refuses
non-scalar host tensors in device ops and ``.numpy()`` on device tensors. Its tensors still report
``device == cpu``: ``.to(t.device)`` stays on the device, ``.cpu()`` and ``.to("cpu")`` copy to the
host. It watches the thread that opened it (PyTorch's modes are per thread).

What is not emulated: the device's speed (kernels run on this CPU), separate device memory, and
a separate random generator (queued random ops draw from torch's default generator in queue order).
The sync points it waits at are the ones ``toolkit.syncs.finder`` finds; the two share one watcher.
What a launch computes before its kernel runs (output shapes from meta kernels) is in ``meta_specs``.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from course_utils.toolkit.emulate.meta_specs import flat, launch_results, out_variant, output_specs
from course_utils.toolkit.syncs.host_reads import SyncWatch, active_watches, note_sync

_METADATA_MUTATORS = frozenset({"set_", "resize_", "resize_as_", "_resize_output_", "detach_"})


@dataclass(frozen=True)
class Span:
    """One interval of the timeline: the host launching or waiting, or the device running a kernel."""

    lane: str  # "host" or "device"
    kind: str  # "launch", "wait" (host) or "kernel" (device)
    name: str
    start: float
    end: float



class AsyncDevice(SyncWatch):
    """An emulated accelerator whose ops run on a background worker thread (lesson 03).

    ``launch_blocking=True`` makes every launch wait for its kernel, like ``CUDA_LAUNCH_BLOCKING=1``.
    ``spans`` records the host/device timeline; ``report`` lists the sync points it waited at.
    """

    label = "emulated"

    def __init__(self, *, launch_blocking: bool = False, threads: int | None = None) -> None:
        super().__init__()
        self.launch_blocking = launch_blocking
        # the device's "cores": all but one, which the host keeps for launching (as with a real GPU)
        self.threads = threads or max(1, (os.cpu_count() or 2) - 1)
        self._host_threads = torch.get_num_threads()
        self.spans: list[Span] = []
        self.fallbacks: list[str] = []  # ops the emulation had to run synchronously
        self._specs: dict = {}  # (op, argument signature) -> output specs: a launch's shape work, cached
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._pending = 0
        self._error: tuple[str, BaseException] | None = None
        self._worker: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<{self.label} asynchronous device{' (launch blocking)' if self.launch_blocking else ''}>"

    # --- public API ------------------------------------------------------------------------------

    def put(self, obj: Any) -> Any:
        """Move to the device: a tensor is copied (like ``.to``); a module is moved in place."""
        if isinstance(obj, torch.nn.Module):
            where = {t.device.type for t in (*obj.parameters(), *obj.buffers())} - {"cpu"}
            if where:
                raise ValueError(f"the emulated device takes CPU modules; this one is on {where}")
            self.mark(obj)
            return obj
        if not isinstance(obj, torch.Tensor):
            raise TypeError(f"put() takes a tensor or a module, got {type(obj).__name__}")
        if self.is_device(obj):
            return obj
        obj = obj.cpu()
        with self.quiet():
            copy = obj.detach().clone().requires_grad_(obj.requires_grad)
        self.mark(copy)
        return copy

    def synchronize(self, record: bool = True) -> None:
        """Block until every queued kernel has run; ``record=False`` for timers' own waits."""
        if record and self in active_watches():
            note_sync("synchronize")
        else:
            self._drain()

    @property
    def setups(self) -> int:
        """Op signatures set up so far (the first launch of each computes its output shapes)."""
        return len(self._specs)

    def pending(self) -> int:
        """Kernels queued or running right now."""
        return self._pending

    def timeline(self, since: float = 0.0) -> list[Span]:
        """The spans that started at or after ``since`` (a ``time.perf_counter()`` value)."""
        return [s for s in list(self.spans) if s.start >= since]

    def clear(self) -> None:
        """Forget recorded spans and sync points (the queue is drained first)."""
        self._drain()
        self.spans.clear()
        self.report.points.clear()
        self.report.ops = 0

    # --- the queue -------------------------------------------------------------------------------

    def _work(self) -> None:
        torch.set_num_threads(self.threads)  # OpenMP: this thread only
        # Kernels run below autograd: version counters were already bumped at launch.
        with torch._C._AutoDispatchBelowADInplaceOrView():
            while True:
                item = self._queue.get()
                if item is None:
                    torch.set_num_threads(self._host_threads)  # MKL's setting is process-wide
                    return
                name, kernel = item
                start = time.perf_counter()
                try:
                    kernel()
                except Exception as err:  # noqa: BLE001 - reported at the next sync, like CUDA
                    if self._error is None:
                        self._error = (name, err)
                self.spans.append(Span("device", "kernel", name, start, time.perf_counter()))
                with self._cond:
                    self._pending -= 1
                    if not self._pending:
                        self._cond.notify_all()

    def _submit(self, name: str, kernel: Callable[[], None]) -> None:
        with self._cond:
            self._pending += 1
        self._queue.put((name, kernel))
        if self.launch_blocking:
            self._drain()

    def _drain(self, kind: str | None = None) -> None:
        start = time.perf_counter()
        with self._cond:
            while self._pending:
                self._cond.wait()
        if kind is not None:
            self.spans.append(Span("host", "wait", kind, start, time.perf_counter()))
        if self._error is not None:
            (name, err), self._error = self._error, None
            raise RuntimeError(f"an earlier queued op (aten::{name}) failed on the emulated device; "
                               f"the error shows up at the next sync, as on CUDA: {err}") from err

    # --- SyncWatch hooks -------------------------------------------------------------------------

    def is_device(self, t: Any) -> bool:
        """Only CPU tensors this device marked: tensors on a real accelerator are not its own."""
        return isinstance(t, torch.Tensor) and t.device.type == "cpu" and super().is_device(t)

    def host_read(self, kind: str) -> None:
        super().host_read(kind)
        self._drain(kind)

    def on_function(self, func, args: tuple, kwargs: dict) -> Any:
        name = getattr(func, "__name__", "")
        if name in ("numpy", "__array__") and not self._quiet and self.is_device(args[0]):
            raise TypeError("can't convert emulated device tensor to numpy. Use Tensor.cpu() to "
                            "copy the tensor to host memory first.")
        if isinstance(kwargs.get("device"), torch.device) and not self._quiet and not any(
                isinstance(a, torch.Tensor) for a in args):
            # A factory told device=x.device (here that reads cpu): made where it was asked, on the device.
            with self.quiet():
                out = func(*args, **kwargs)
            self.mark(out)
            return out
        return super().on_function(func, args, kwargs)

    def run_device_op(self, func, args: tuple, kwargs: dict) -> Any:
        name = func.overloadpacket.__name__
        if func.is_view:  # metadata only: done now, shares the device storage
            return func(*args, **kwargs)
        if name in _METADATA_MUTATORS or torch.Tag.inplace_view in func.tags or (
                func._schema.is_mutable and "out" in func._schema.overload_name):
            return self._run_now(func, args, kwargs, name)
        start = time.perf_counter()
        with torch._C.DisableTorchFunction():
            args, kwargs = self._check_and_snapshot(func, args, kwargs, name)
            specs = output_specs(func, args, kwargs, self._specs)
            if specs is None:  # no meta kernel, data-dependent, or an error: run it synchronously
                self.fallbacks.append(name)
                return self._run_now(func, args, kwargs, name)
            result, holders, positions = launch_results(func, args, kwargs, specs)
        self.mark(holders)

        variant = out_variant(func) if not func._schema.is_mutable else None
        if variant is not None and len(holders) == len(variant[1]):  # compute straight into the holders

            def kernel() -> None:
                variant[0](*args, **kwargs, **dict(zip(variant[1], holders, strict=True)))
        else:

            def kernel() -> None:
                out = flat(func(*args, **kwargs))
                for holder, position in zip(holders, positions, strict=True):
                    holder.copy_(out[position])

        self._submit(name, kernel)
        self.spans.append(Span("host", "launch", name, start, time.perf_counter()))
        return result

    # --- helpers ---------------------------------------------------------------------------------

    def _run_now(self, func, args, kwargs, name: str) -> Any:
        self._drain()
        out = func(*args, **kwargs)
        self.mark(out)
        return out

    def _check_and_snapshot(self, func, args, kwargs, name):
        """Refuse non-scalar host tensors (as a real device does); copy host scalars now."""
        schema = func._schema
        written = {a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write}

        def fix(value, arg_name):
            if not isinstance(value, torch.Tensor) or self.is_device(value):
                return value
            host_ok = name == "copy_" or arg_name == "indices"  # uploads; CPU index tensors
            if arg_name in written or (value.dim() > 0 and not host_ok):
                raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                                   f"two devices, emulated and cpu! (aten::{name}, a cpu tensor of "
                                   f"shape {tuple(value.shape)}; move it with dev.put)")
            return value.clone()

        names = [a.name for a in schema.arguments]
        new_args = tuple(
            [fix(v, names[i]) for v in value] if isinstance(value, (list, tuple)) else fix(value, names[i])
            for i, value in enumerate(args))
        new_kwargs = {k: fix(v, k) for k, v in kwargs.items()}
        return new_args, new_kwargs

    def __enter__(self) -> AsyncDevice:
        if self._worker is not None:
            raise RuntimeError("this emulated device is already open")
        self._host_threads = torch.get_num_threads()
        self._worker = threading.Thread(target=self._work, name="emulated-device", daemon=True)
        self._worker.start()
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        try:
            self._drain()
        except RuntimeError:
            if exc[0] is None:  # a queued op failed: report it, unless another error is on its way
                raise
        finally:
            super().__exit__(*exc)
            self._queue.put(None)
            self._worker.join()
            self._worker = None
