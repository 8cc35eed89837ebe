"""Find the hidden sync points of a function: where the host must wait for the device (lesson 03).

On an accelerator, PyTorch queues work and returns at once; the host waits only when it needs a
value (R39, R40 in references.md): ``.item()``, ``.tolist()``, ``.cpu()``, printing a tensor,
``if tensor:``, or an op whose output size depends on the data (``nonzero``, ``x[mask]``).
``find_sync_points(fn, *args)`` runs ``fn`` under a ``TorchFunctionMode`` (sees Python-level calls
such as ``Tensor.cpu``) and a ``TorchDispatchMode`` (sees every aten op), and lists each such read
with the kind and the line of *your* code that caused it.

Which tensors count as "on the device"? Tensors on mps/cuda, and on a CPU-only machine the tensors
``fn`` receives (with the parameters and buffers of any module it receives) and everything computed
from them: the tool follows them op by op. Tensors made inside ``fn`` by factories such as
``torch.zeros(3)`` are host tensors; reading them never waits. So on CPU the report lists what
*would* sync on an accelerator. The emulated asynchronous device
(``course_utils.toolkit.emulate.async_queue``)
uses the same watcher and really waits at each point.

The parts: ``host_reads`` (what counts as a sync, and the watcher), ``listing`` (the report and
the user's line); their public names are importable from here too. The generated loops that
03.sync_lines practises on are case inputs (``course_utils.labs.case_inputs.make_loop``).
"""

from __future__ import annotations

from collections.abc import Callable

from course_utils.toolkit.syncs.host_reads import (
    KINDS,
    SyncWatch,
    active_watches,
    dispatch_kind,
    function_kind,
    note_sync,
    tensors_in,
)
from course_utils.toolkit.syncs.listing import Location, SyncGroup, SyncPoint, SyncReport, user_location

__all__ = ["KINDS", "Location", "SyncGroup", "SyncPoint", "SyncReport", "SyncWatch",
           "active_watches", "dispatch_kind", "find_sync_points", "function_kind", "note_sync",
           "tensors_in", "user_location"]


def find_sync_points(fn: Callable, *args, **kwargs) -> SyncReport:
    """Run ``fn(*args, **kwargs)`` and list where the host would wait for the device (lesson 03).

    Tensor arguments, and the parameters and buffers of module arguments, count as device tensors
    (on mps/cuda the real device decides). When none is passed in (``find_sync_points(train)``), the
    tensors ``fn`` creates count as device tensors instead, as if made with ``device=``, and
    ``report.note`` says so. The report groups sync points by kind and line; ``report.result`` is
    what ``fn`` returned.
    """
    watch = SyncWatch()
    watch.mark((args, kwargs))
    passed = tensors_in((args, kwargs))
    if not watch._storages and not any(t.device.type not in ("cpu", "meta") for t in passed):
        watch.adopt = True
        watch.report.note = ("no tensor or module was passed in: the tensors the function creates "
                             "count as device tensors (as if made with device=)")
    with watch:
        result = fn(*args, **kwargs)
    watch.report.result = result
    return watch.report
