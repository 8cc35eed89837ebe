"""A deep window's two modes (``course watch``): a TorchFunctionMode and a TorchDispatchMode that
hand every call to ``OpWatch``, entered at a step boundary, left for the optimizer's own step
(under a mode optimizers take a slower path: watching must not change the numbers) and left for
good only when they are on top of the mode stacks (a mode the script entered meanwhile stays).
"""

from __future__ import annotations

import sys

from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

LEAVE_TRIES = 50_000  # Python calls the profile hook waits for the modes to be on top, at most


class _Functions(TorchFunctionMode):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.ops.on_function(func, args, kwargs or {})


class _Dispatch(TorchDispatchMode):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.ops.on_dispatch(func, args, kwargs or {})


class _DispatchNoDynamo(_Dispatch):
    """The same mode, its ``__torch_dispatch__`` not wrapped in ``torch._disable_dynamo``: that
    wrapper imports ``torch._dynamo`` on its first call (about a second of CPU, most of a short
    run's cost). Used only while no script code has loaded ``torch._dynamo``; ``torch.compile``
    swaps it for ``_Dispatch`` first (``Window.compiling``): compiled code must not run under it."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.ops.on_dispatch(func, args, kwargs or {})


def _modes(ops) -> list:
    """A fresh pair of the window's modes (function, dispatch)."""
    dispatch = _Dispatch if "torch._dynamo" in sys.modules else _DispatchNoDynamo
    return [_Functions(ops), dispatch(ops)]


class Window:
    """Mixed into ``OpWatch``: ``start``, ``suspend``, ``resume``, ``stop``."""

    compiled = False  # the script called torch.compile: no window opens from then on

    def start(self) -> None:
        self.window += 1
        roots = self.watcher.models.live_roots()
        first = next((p for r in roots for p in r.parameters()), None)
        self.device_type = first.device.type if first is not None else self.device_type
        self.mark([t for r in roots for t in (*r.parameters(), *r.buffers())])
        self._fallback = {}
        self.modes = _modes(self)
        for mode in self.modes:
            mode.__enter__()

    def restart_clock(self) -> None:
        """The window's cost counts from now (opened, or its model found after the set-up)."""
        self.opened_at, self.own = self.watcher.cost.clock(), 0.0

    def cost(self) -> float:
        """The watcher's time in this window so far: the budget clock less the script's own kernels
        it ran (a step of large ops costs the script as much watched or not)."""
        return self.watcher.cost.clock() - self.opened_at - self.own

    def overdue(self) -> bool:
        """Has the window's cost outgrown the room it had (its ``deadline``, a clock reading)?"""
        return self.watcher.cost.clock() - self.own > self.deadline

    def _kernel(self, call, *args, **kwargs):
        """Run one of the script's own ops; its time is the script's, not the window's."""
        clock = self.watcher.cost.clock
        began = clock()
        try:
            return call(*args, **kwargs)
        finally:
            self.own += clock() - began

    def _on_top(self) -> bool:
        from torch.overrides import _get_current_function_mode
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        return _get_current_dispatch_mode() is self.modes[1] and _get_current_function_mode() is self.modes[0]

    def suspend(self) -> None:
        """Leave the modes for the optimizer step (under a mode, optimizers take their slower
        single-tensor path: watching would change the numbers and cost more)."""
        if self.modes and not self.suspended and self._on_top():
            for mode in reversed(self.modes):
                mode.__exit__(None, None, None)
            self.suspended = True

    def resume(self) -> None:
        self.parked = False
        if self.suspended and self.cut:  # cut for its cost while the optimizer stepped
            self.watcher._drop_window()
        elif self.suspended:
            self.suspended = False
            self.modes = _modes(self)
            for mode in self.modes:
                mode.__enter__()

    def compiling(self) -> None:
        """The script calls ``torch.compile``: compiled code must never run under the window's
        dispatch mode (torch 2.14's compiled backward fails under one with an internal assert), so
        the open window is left now, or at the next safe point, and no window opens after it."""
        self.compiled = True
        if self.modes and not self.suspended and self._on_top() and self.watcher._drop_window():
            return
        if self.modes:
            self.cut = True
            self.leave_soon()

    def leave_soon(self) -> None:
        """Leave the modes at the next Python call that finds them on top of the mode stacks (a
        one-shot profile hook): a window cut for its cost, or a set-up parked, would otherwise pass
        every torch call through both modes (several microseconds each) until the next module
        call or step, through a long set-up or a forward with no module to stop at. Not armed
        while the script has a profiler of its own (the hooks' safe points still apply)."""
        if not self._leaving and sys.getprofile() is None:
            self._leaving, self._events = True, 0
            sys.setprofile(self._on_event)

    def _on_event(self, frame, event, arg) -> None:
        if self.modes and not self.suspended and not self._on_top():
            self._events += 1  # inside a mode's handler, or a mode of the script's is on top
            if self._events < LEAVE_TRIES:
                return
        sys.setprofile(None)
        self._leaving = False
        if not self.modes or self.suspended:
            return
        try:
            if self.cut:
                self.watcher._drop_window()
            elif self.parked:
                self.suspend()
        except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
            self.watcher.fail(err, "leave_soon")

    def stop(self, force: bool = False) -> bool:
        """Leave the modes, if they are on top of the mode stacks (``force``: at the end, anyway)."""

        if not self.modes or not force and not self.suspended and not self._on_top():
            return False
        if not self.suspended:
            if self._on_top():
                for mode in reversed(self.modes):
                    mode.__exit__(None, None, None)
            self._purge_own_modes()
        self.suspended = False
        self.modes = []
        self.nan.clear()
        self.nan.node_site.clear()
        return True

    def _purge_own_modes(self) -> None:
        """Take this watcher's modes off both mode stacks wherever they sit: code that entered and
        left its own modes around ours (a lab's per-forward emulation) can leave ours below the
        top. The other modes stay, in their order."""
        import torch

        def mine(mode) -> bool:
            return isinstance(mode, (_Functions, _Dispatch)) and mode.ops is self

        c = torch._C
        for length, at, pop, push in (
            (c._len_torch_function_stack, c._get_function_stack_at, c._pop_torch_function_stack,
             c._push_on_torch_function_stack),
            (c._len_torch_dispatch_stack, c._get_dispatch_stack_at,
             lambda: c._pop_torch_dispatch_stack(None), c._push_on_torch_dispatch_stack),
        ):
            stack = [at(i) for i in range(length())]
            if any(mine(m) for m in stack):
                for _ in stack:
                    pop()
                for mode in stack:
                    if not mine(mode):
                        push(mode)
