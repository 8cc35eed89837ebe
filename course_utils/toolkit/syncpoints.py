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

``make_loop(statements, name)`` compiles a small training loop whose body ends with
``statements``, to practise on (03.sync_lines): its source stays inspectable, and it pickles, so
``course grade`` can send it to a submission's process.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

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


# --- where: the user's line --------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    """A line of the user's code: file (basename, or "cell" in a notebook), line, function, text."""

    file: str
    line: int
    function: str
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


def _internal_dirs() -> tuple[str, ...]:
    here = os.path.dirname(os.path.abspath(__file__))
    return (os.path.dirname(torch.__file__) + os.sep, sysconfig.get_paths()["stdlib"] + os.sep,
            os.path.join(here, "emulate") + os.sep, os.path.join(here, "syncpoints.py"),
            os.path.join(here, "timing.py"))


_INTERNAL = _internal_dirs()
_CELL = re.compile(r"ipykernel_\d+|<ipython-input-")


def _short(path: str) -> str:
    return "cell" if _CELL.search(path) else os.path.basename(path)


def user_location() -> Location:
    """The innermost calling frame outside torch, the standard library and this tool."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename) if not frame.f_code.co_filename.startswith(
            "<") else frame.f_code.co_filename
        if not path.startswith(_INTERNAL) and not path.startswith("<frozen"):
            code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).split("  #")[0].strip()
            return Location(_short(path), frame.f_lineno, frame.f_code.co_name, code)
        frame = frame.f_back
    return Location("?", 0, "?")


# --- the report --------------------------------------------------------------------------------

@dataclass(frozen=True)
class SyncPoint:
    """One time the host had to wait: what caused it and where."""

    kind: str
    where: Location


@dataclass(frozen=True)
class SyncGroup:
    """Sync points of one kind at one line, with how many times they happened."""

    kind: str
    where: Location
    count: int


@dataclass
class SyncReport:
    """What ``find_sync_points`` saw: every sync point in order, the ops launched, fn's result."""

    points: list[SyncPoint] = field(default_factory=list)
    ops: int = 0
    result: Any = None

    def __len__(self) -> int:
        return len(self.points)

    def groups(self) -> list[SyncGroup]:
        """Sync points grouped by (kind, line), in order of first appearance."""
        counts: dict[tuple[str, Location], int] = {}
        for p in self.points:
            counts[(p.kind, p.where)] = counts.get((p.kind, p.where), 0) + 1
        return [SyncGroup(kind, where, n) for (kind, where), n in counts.items()]

    def by_line(self) -> dict[int, int]:
        """{line number: syncs there}, all kinds together."""
        out: dict[int, int] = {}
        for p in self.points:
            out[p.where.line] = out.get(p.where.line, 0) + 1
        return out

    def count(self, kind: str | None = None) -> int:
        """How many sync points (of one kind, or all)."""
        return sum(kind is None or p.kind == kind for p in self.points)

    def __str__(self) -> str:
        groups = self.groups()
        if not groups:
            return f"no sync points ({self.ops} device ops launched)"
        head = (f"{len(self.points)} sync points at {len(groups)} places "
                f"({self.ops} device ops launched)")
        rows = [f"{'count':>5}  {'kind':<20} {'where':<32} code"]
        for g in groups:
            rows.append(f"{g.count:>5}  {g.kind:<20} {str(g.where):<32} {g.where.code}")
        return "\n".join([head, *rows])


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
        if self._quiet or not any(self.is_device(t) for t in tensors_in((args, kwargs))):
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
