"""Emulated CPU fallback of MPS operators, for machines without an Apple GPU (lesson 04).

``emulate_fallback(unsupported=...)`` acts at PyTorch's dispatcher (a ``TorchDispatchMode``), so
unmodified code such as ``nn.Embedding(max_norm=...)`` is affected. What is emulated, precisely:

- **Which ops lack an MPS kernel**: the ``unsupported`` names you pass, plus the ops MPS always
  sends to the CPU (``ALWAYS_FALLBACK``, R48 in references.md). Every other op counts as having a
  kernel.
- **Where tensors live**, when the course device is the CPU (no Apple GPU): tensors made before the
  emulation starts, or with an explicit ``device=``, are on the emulated device ("mps"); tensors made
  inside it without ``device=`` and the results of ``.cpu()`` / ``.to("cpu")`` are on the host
  (``nn.Parameter`` wraps a new tensor, so parameters count as on the device); an op's results live
  where its inputs live; ``.to(<a torch.device>)`` moves a host tensor to the device.
  On a real accelerator (mps, cuda) the real devices are used instead.
- **The copies a fallback implies, as real memory copies** (what PyTorch's ``cpu_fallback`` does):
  each device tensor argument is cloned into a separate host buffer, the op runs on those, each
  result is cloned into a new device buffer, and arguments the op writes to are copied back.
  ``.cpu()`` and ``.to(device)`` between host and device are real clones too.
- **The messages**: the MPS UserWarning text plus " [emulated]", once per process-like scope
  (``reset_warn_once()`` starts a new one) or every time under ``torch.set_warn_always(True)``; with
  ``enable_fallback=False``, the NotImplementedError you get when PYTORCH_ENABLE_MPS_FALLBACK is unset.

Not emulated: the GPU's speed, the wait for queued GPU work a real fallback forces (R40),
device-mismatch errors, and ``.numpy()`` refusing a device tensor.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterable

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten
from torch.utils.weak import WeakTensorKeyDictionary

WARNING = ("The operator '{op}' is not currently supported on the MPS backend and will fall back to "
           "run on the CPU. This may have performance implications.")
# MPSFallback.mm's wording with #141287 (R48 in references.md); {sha} is the build's commit hash.
ERROR = ("The operator '{op}' is not currently implemented for the MPS device. If you want this op "
         "to be considered for addition please comment on "
         "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in "
         "missing op as well as commit hash {sha}. As a temporary fix, you can set the environment "
         "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. "
         "WARNING: this will be slower than running natively on MPS.")
LABEL = " [emulated]"
# Registered to fall back even without the variable in 2.13's MPSFallback.mm (R48 in references.md);
# col2im (pytorch#152282) and upsample_nearest3d (#156090) have MPS kernels in 2.13 now.
ALWAYS_FALLBACK = ("aten::embedding_renorm_", "aten::linalg_svd")
HOST, DEVICE = "host", "device"
COPY_OP = "aten::_to_copy"  # the name a real trace shows for .cpu() / .to(device)
_EMULATED_DEVICE = """\
emulated here, where there is no Apple GPU:
  - which ops lack an MPS kernel: the names you pass, plus the always-fallback ops
    (R48 in references.md)
  - the device itself: tensors made before the emulation, or with device=, are on 'mps';
    tensors made inside it without device=, and the results of .cpu(), are on the host
  - the copies a fallback makes: real memory copies to separate host buffers and back
  - the warning (once per process; every time with torch.set_warn_always(True)) and the error
not emulated: GPU speed, the wait for queued GPU work a real fallback forces, device-mismatch errors"""
_REAL_DEVICE = """\
emulated on this {name} device:
  - which ops lack an MPS kernel: the names you pass, plus the always-fallback ops (R48 in
    references.md);
    those run on the CPU with real copies to and from the device
  - the warning (once per process; every time with torch.set_warn_always(True)) and the error
real: the device, the copies and their cost; ops not named still run (or fall back) as usual"""


def what_is_emulated(device: torch.device | str | None = None) -> str:
    """What ``emulate_fallback`` emulates on ``device`` (default: ``pick_device()``), in words."""
    if device is None:
        from course_utils.toolkit.device import pick_device

        device = pick_device()
    kind = torch.device(device).type
    return _EMULATED_DEVICE if kind == "cpu" else _REAL_DEVICE.format(name=kind)


class EmulatedFallbackWarning(UserWarning):
    """The emulated MPS fallback warning (a UserWarning, as on a Mac)."""


class EmulatedNotImplementedError(NotImplementedError):
    """The emulated error for an unsupported op when the fallback variable is not set."""


_warn_once = {"warned": False}
_active: list[Emulation] = []


def reset_warn_once() -> None:
    """Start a new process-like scope: the next emulated fallback warns again (lesson 04).

    The real warning is ``TORCH_WARN_ONCE`` at one call site: one warning per process, for any op.
    """
    _warn_once["warned"] = False


def op_matches(op: str, names: Iterable[str]) -> bool:
    """Whether ``op`` ("aten::cumsum.out") is named in ``names``; a name without an overload
    ("aten::cumsum") matches all its overloads."""
    names = names if isinstance(names, set | frozenset) else set(names)
    return op in names or op.split(".", 1)[0] in names


def active() -> Emulation | None:
    """The emulation now in effect, or None."""
    return _active[-1] if _active else None


def tensors_in(tree) -> list[torch.Tensor]:
    """Every tensor in a nest of tuples, lists and dicts."""
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _written(func, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensor arguments an op writes to (``Tensor(a!)`` in its schema)."""
    out: list[torch.Tensor] = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            out += tensors_in(value)
    return out


_INTERNAL = (os.path.dirname(torch.__file__),
             os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside torch and course_utils."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    return level


def _numpy_backed(t: torch.Tensor) -> bool:
    """Host memory torch did not allocate (``torch.from_numpy``): no op makes it, its storage tells."""
    try:
        return t.device.type == "cpu" and not t.untyped_storage().resizable()
    except (RuntimeError, NotImplementedError):
        return False


class _Dispatch(TorchDispatchMode):
    def __init__(self, emulation: Emulation):
        super().__init__()
        self.emulation = emulation

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.emulation._dispatch(func, args, kwargs or {})


class _Functions(TorchFunctionMode):
    def __init__(self, emulation: Emulation):
        super().__init__()
        self.emulation = emulation

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.emulation._function(func, args, kwargs or {})


class Emulation:
    """An active ``emulate_fallback``: placement of tensors, the fallback, and what fell back."""

    def __init__(self, unsupported: Iterable[str], enable_fallback: bool, always: Iterable[str],
                 device: torch.device | str | None):
        if device is None:
            from course_utils.toolkit.device import pick_device

            device = pick_device()
        self.device = torch.device(device)
        self.unsupported, self.always = frozenset(unsupported), frozenset(always)
        self._names = self.unsupported | self.always
        self.enable_fallback = enable_fallback
        self.emulated_device = self.device.type == "cpu"
        self.name = "mps" if self.emulated_device else self.device.type
        self.fallbacks: list[str] = []  # every fallback, in order
        self.listeners: list[Callable[[str, str, str, int], None]] = []  # (op, from, to, bytes)
        self._host = WeakTensorKeyDictionary()
        self._context: list[tuple[str, bool]] = []  # (side, forced) of the torch functions running
        self._modes: list = []

    def __repr__(self) -> str:
        names = sorted(self._names)
        return (f"emulate_fallback(device={self.name}{' emulated on cpu' if self.emulated_device else ''}, "
                f"enable_fallback={self.enable_fallback}, unsupported={names})")

    # --- placement -------------------------------------------------------------------------------
    def side(self, t: torch.Tensor) -> str:
        """"host" or "device": where this tensor lives in the emulated world."""
        if not self.emulated_device:
            return HOST if t.device.type == "cpu" else DEVICE
        return HOST if self._host.get(t, False) or _numpy_backed(t) else DEVICE

    def op_side(self, inputs: list[torch.Tensor]) -> str:
        """Where an op with these tensor inputs runs, before any fallback."""
        if self._context and (self._context[-1][1] or not inputs):
            return self._context[-1][0]
        return DEVICE if not inputs or any(self.side(t) == DEVICE for t in inputs) else HOST

    def input_sides(self, inputs: list[torch.Tensor]) -> list[str]:
        """Where each input of an op lives (inside a factory, its inputs are the factory's)."""
        if self._context and self._context[-1][1]:
            return [self._context[-1][0]] * len(inputs)
        return [self.side(t) for t in inputs]

    def falls_back(self, op: str) -> bool:
        """Whether ``op`` has no (emulated) MPS kernel."""
        return op_matches(op, self._names)

    def _tag(self, outputs: list[torch.Tensor], side: str, inputs: list[torch.Tensor]) -> None:
        if not self.emulated_device:
            return
        forced = bool(self._context) and self._context[-1][1]
        keep = set() if forced else {id(t) for t in inputs}  # in-place results keep their placement
        for t in outputs:
            if side == HOST and id(t) not in keep:
                self._host[t] = True

    # --- dispatcher level ------------------------------------------------------------------------
    def _dispatch(self, func, args: tuple, kwargs: dict):
        op = func.name()
        inputs = tensors_in((args, kwargs))
        side = self.op_side(inputs)
        if side == DEVICE and self.falls_back(op):
            return self._fallback(func, op, args, kwargs)
        out = func(*args, **kwargs)
        self._tag(tensors_in(out), side, inputs)
        return out

    def _fallback(self, func, op: str, args: tuple, kwargs: dict):
        if not (self.enable_fallback or op_matches(op, self.always)):
            raise EmulatedNotImplementedError(
                ERROR.format(op=op, sha=getattr(torch.version, "git_version", "Unknown")) + LABEL)
        self._warn(op)
        self.fallbacks.append(op)
        flat, spec = tree_flatten((args, kwargs))
        host = {id(t): self._to_host(t) for t in flat
                if isinstance(t, torch.Tensor) and self.side(t) == DEVICE}
        hargs, hkwargs = tree_unflatten([host.get(id(v), v) if isinstance(v, torch.Tensor) else v
                                         for v in flat], spec)
        out = func(*hargs, **hkwargs)
        written = {}
        for t in _written(func, args, kwargs):
            if id(t) in host:
                t.copy_(host[id(t)])  # host -> device: the op's writes land in the original
                written[id(host[id(t)])] = t

        def back(o):
            if not isinstance(o, torch.Tensor):
                return o
            return written[id(o)] if id(o) in written else self._to_device(o)

        return tree_map(back, out)

    def _to_host(self, t: torch.Tensor) -> torch.Tensor:
        return t.clone() if self.emulated_device else t.to("cpu")

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        return t.clone() if self.emulated_device else t.to(self.device)

    def _warn(self, op: str) -> None:
        if _warn_once["warned"] and not torch.is_warn_always_enabled():
            return
        _warn_once["warned"] = True
        warnings.warn(WARNING.format(op=op) + LABEL, EmulatedFallbackWarning, stacklevel=_caller_level())

    # --- torch-function level (only where the device itself is emulated) -------------------------
    def _function(self, func, args: tuple, kwargs: dict):
        inputs = tensors_in((args, kwargs))
        target = self._transfer_target(func, args, kwargs)
        if target is not None and self.side(args[0]) != target:
            return self._transfer(func, args, kwargs, target)
        if inputs:
            side, forced = self.op_side(inputs), False
        else:  # a factory: the host unless told device=
            side, forced = (DEVICE if kwargs.get("device") is not None else HOST), True
        self._context.append((side, forced))
        try:
            return func(*args, **kwargs)
        finally:
            self._context.pop()

    def _transfer_target(self, func, args: tuple, kwargs: dict) -> str | None:
        """HOST or DEVICE for a call that moves a tensor, else None."""
        if func in (torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.tolist):
            return HOST
        if func is not torch.Tensor.to:
            return None
        for value in (*args[1:], *kwargs.values()):
            if isinstance(value, str):
                return HOST if torch.device(value).type == "cpu" else DEVICE
            if isinstance(value, torch.device):
                return DEVICE  # on this machine pick_device() gives the cpu: it stands for the device
            if isinstance(value, torch.Tensor):
                return self.side(value)
        return None

    def _transfer(self, func, args: tuple, kwargs: dict, target: str):
        src = args[0]
        for report in self.listeners:
            report(COPY_OP, self.side(src), target, src.nbytes)
        if func in (torch.Tensor.numpy, torch.Tensor.tolist):
            with _disable_current_modes():
                return func(*args, **kwargs)
        with _disable_current_modes():
            dtype = torch._C._nn._parse_to(*args[1:], **kwargs)[1] if func is torch.Tensor.to else None
            out = src.to(dtype=dtype or src.dtype, copy=True)  # a real copy into a separate buffer
        if target == HOST:
            self._host[out] = True
        return out

    # --- context manager -------------------------------------------------------------------------
    def __enter__(self) -> Emulation:
        if _active:
            raise RuntimeError("emulate_fallback() is already active; leave it before entering another")
        self._modes = [_Functions(self)] if self.emulated_device else []
        self._modes.append(_Dispatch(self))
        for mode in self._modes:
            mode.__enter__()
        _active.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _active.pop()
        for mode in reversed(self._modes):
            mode.__exit__(*exc)


def emulate_fallback(unsupported: Iterable[str] = (), *, enable_fallback: bool = True,
                     always: Iterable[str] = ALWAYS_FALLBACK,
                     device: torch.device | str | None = None) -> Emulation:
    """Emulate MPS CPU fallback for the ops named in ``unsupported`` (lesson 04).

    Use as ``with emulate_fallback({"aten::cumsum"}) as emu:``. ``enable_fallback`` plays
    PYTORCH_ENABLE_MPS_FALLBACK=1: when False an unsupported op raises EmulatedNotImplementedError,
    except the ``always`` ops, which fall back regardless (R48 in references.md). ``device`` is the
    device that plays MPS (default: ``pick_device()``); on the CPU the device itself is emulated
    too. The module docstring says exactly what is emulated and what is not.
    """
    return Emulation(unsupported, enable_fallback, always, device)
