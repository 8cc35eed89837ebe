"""Find the hidden sync points of a function: where the host must wait for the device (lesson 03).

On an accelerator, PyTorch queues work and returns at once; the host waits only when it needs a
value (facts §6): ``.item()``, ``.tolist()``, ``.cpu()``, printing a tensor, ``if tensor:``, or an op
whose output size depends on the data (``nonzero``, ``x[mask]``). ``find_sync_points(fn, *args)``
runs ``fn`` under a ``TorchFunctionMode`` (sees Python-level calls such as ``Tensor.cpu``) and a
``TorchDispatchMode`` (sees every aten op), and lists each such read with the kind and the line of
*your* code that caused it.

Which tensors count as "on the device"? Tensors on mps/cuda, and on a CPU-only machine the tensors
``fn`` receives (with the parameters and buffers of any module it receives) and everything computed
from them: the tool follows them op by op. Tensors made inside ``fn`` by factories such as
``torch.zeros(3)`` are host tensors; reading them never waits. So on CPU the report lists what
*would* sync on an accelerator. The emulated asynchronous device
(``course_utils.toolkit.emulate.async_queue``)
uses the same watcher and really waits at each point.

The parts: ``sync_watch`` (what counts as a sync, and the watcher), ``sync_report`` (the report and
the user's line); their public names are importable from here too.

``make_loop(statements, name)`` compiles a small training loop whose body ends with
``statements``, to practise on (03.sync_lines): its source stays inspectable, and it pickles, so
``course grade`` can send it to a submission's process.
"""

from __future__ import annotations

import functools
import linecache
from collections.abc import Callable, Sequence

import torch

from course_utils.toolkit.sync_report import Location, SyncGroup, SyncPoint, SyncReport, user_location
from course_utils.toolkit.sync_watch import (
    KINDS,
    SyncWatch,
    active_watches,
    dispatch_kind,
    function_kind,
    note_sync,
    tensors_in,
)

__all__ = ["KINDS", "GeneratedLoop", "Location", "SyncGroup", "SyncPoint", "SyncReport", "SyncWatch",
           "active_watches", "dispatch_kind", "find_sync_points", "function_kind", "make_loop", "note_sync",
           "tensors_in", "user_location"]


def find_sync_points(fn: Callable, *args, **kwargs) -> SyncReport:
    """Run ``fn(*args, **kwargs)`` and list where the host would wait for the device (lesson 03).

    Tensor arguments, and the parameters and buffers of module arguments, count as device tensors
    (on mps/cuda the real device decides). The report groups sync points by kind and line;
    ``report.result`` is what ``fn`` returned.
    """
    watch = SyncWatch()
    watch.mark((args, kwargs))
    with watch:
        result = fn(*args, **kwargs)
    watch.report.result = result
    return watch.report


# --- practice loops ----------------------------------------------------------------------------

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
    namespace = {"torch": torch, "F": torch.nn.functional}
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
