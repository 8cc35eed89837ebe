"""When ``course watch`` looks closer: check steps (steps 1..warm-up, then every ``check_every``th)
and deep windows (the set-up with the first step, steps 2 and 3, then spaced so their measured
extra time stays near ``budget`` of the run; the step after a non-finite value or a gradient
spike; every ``deep_every``th step if asked). ``Watcher`` inherits it.
"""

from __future__ import annotations

import math
import time
import weakref

from torch.nn.modules import module as module_hooks

from course_utils.toolkit.watch.cost_budget import median
from course_utils.toolkit.watch.findings import user_site
from course_utils.toolkit.watch.ops import loss_nodes


class Schedule:
    """Mixed into ``Watcher``: uses its ``ops``, ``deep``, ``models`` and counters."""

    def _closure_as_user(self, closure, ow, optimizer, check: bool, args: tuple, kwargs: dict):
        """``optimizer.step(closure)``: the closure is the user's forward and backward, watched as
        such (not as the optimizer's own work); the step's checks start after its first call, when
        the gradients exist. Returns the step's new (args, kwargs)."""
        first = [True]

        def closure_as_user():
            self.in_step = False
            self.ops.resume()
            try:
                return closure()
            finally:
                self.in_step = True
                if self.ops.open and not (self.ops.cut and self._drop_window()):
                    self.ops.suspend()
                if first[0]:
                    first[0] = False
                    ow.before_step(optimizer, check)

        if len(args) > 1:
            return (args[0], closure_as_user, *args[2:]), kwargs
        return args, {**kwargs, "closure": closure_as_user}

    def _takes_over(self, ow, optimizer) -> bool:
        """A second optimizer that steps twice while the first one does not (pretraining done, a
        fine-tuning optimizer now) becomes the one whose steps count; optimizers that take turns (a
        GAN) do not."""
        if ow.primary_mark != self.step:
            ow.primary_mark = self.step
            return False
        self._primary = weakref.ref(optimizer)
        self.step_site = user_site(3)
        self._coverage_at = self.step + 3
        self._armed = True  # its model may be new: the next step is watched op by op, which finds it
        return True

    def _is_check(self, ow) -> bool:
        """Decided once per step of each optimizer: a check step is skipped while the budget is
        spent (never the first)."""
        n = ow.steps + 1
        seen = self._checks.get(id(ow))
        if seen is None or seen[0] != n:
            due = n <= self.warmup or n % self.check_every == 0
            seen = self._checks[id(ow)] = (n, due and (n == 1 or self.cost.left() > 0))
        return seen[1]

    def _discover(self, on: bool) -> None:
        if on and not self._discovery:
            self._discovery = [
                module_hooks.register_module_forward_pre_hook(self._on_forward_pre),
                module_hooks.register_module_forward_hook(self.models.on_forward, always_call=True),
            ]
        elif not on:
            for handle in self._discovery:
                handle.remove()
            self._discovery = []
            self.models.depth = 0

    def _window_boundary(self) -> None:
        now = time.perf_counter()
        if self.ops.open:
            first, cut = self.deep_steps == 1, self.ops.cut
            self._close_window()
            if not first and not cut:  # the first window also holds the set-up
                self._extra.append(now - self._window_start)
        elif self._last_post:
            self._plain.append(now - self._last_post)
            self._plain_cpu.append(self.cost.clock() - self._last_post_cpu)
            for cost in self._unrated:  # windows before any plain step: sized on the first one
                self.cost.rate(cost, self._plain_cpu[-1])
            self._unrated = []
        self._last_post, self._last_post_cpu = time.perf_counter(), self.cost.clock()
        if self.deep.allocs:
            self.deep.judge(self.step)
        upcoming = self.step + 1
        if self.deep_every is not None:
            deep = upcoming % self.deep_every == 0 or upcoming <= 3 or self._armed
        else:
            deep = upcoming <= 3 or upcoming >= self._next_deep or self._armed
            deep = deep and self.cost.may_open(self._recent_plain())
        if deep and not self.ops.compiled:
            self._armed = False
            self._open_window()
        if self.step >= 1 and self._discovery and not self.ops.open:
            self._discover(False)

    def _open_window(self, one_step: bool = True) -> None:
        """Watch op by op from here; ``one_step``: opened at a step boundary, so it spans one step
        (the set-up window, opened before any step is known, may span many passes)."""
        self.deep_steps += 1
        self._window_one_step = one_step
        self._window_step = self.step + 1  # the step it watches (a cut window is left before it ends)
        self.deep.passes_at_open = (self.backwards, self.models.top_forwards)
        self._discover(True)
        self.models.relays.wake()  # a window sees every forward
        self.ops.start()
        loss = self.loss_ref() if self.loss_ref is not None else None  # still the script's: may be read
        self.ops.loss_nodes = loss_nodes(loss.grad_fn) if loss is not None else []
        self.ops.restart_clock()
        now = self.ops.opened_at
        self._window_plain = self._recent_plain()  # to size the next windows by
        # the set-up (imports, data) is the script's own time: the budget counts from a model's forward
        self.ops.deadline = self.cost.deadline(now) if self.models.roots else math.inf
        self.ops.cut = False
        self._window_start = time.perf_counter()

    def _drop_window(self) -> bool:
        """Leave a window cut for its cost, at a safe point (its modes on top of the stacks, or
        left for the optimizer's step); what it counted per step so far is dropped, not judged (the
        tensors it saw made are kept for the memory-growth check)."""
        ops = self.ops
        if not ops.open or not ops.stop():
            return False
        # The next window spans one step: one like this one, had it ended, needs more room than it
        # used (a rollout of hundreds of forwards per step); the set-up window's per pass.
        passes = 1 if self._window_one_step else self._passes_since(self.deep.passes_at_open)
        cost = self.ops.cost()
        self.cost.charge(cost, window=True, passes=passes)
        self._rate(cost)  # a part of its step cost this much: the whole step costs more
        self.deep.keep_allocs(ops.allocs, self._window_step)  # tensors seen made are facts, cut or not
        ops.syncs, ops.copies, ops.fallbacks, ops.allocs, ops.cut = [], [], [], [], False
        ops.dead_units.drop()
        ops.loss_nodes = []
        self._flush_nan()  # models are still looked for while the budget has room (a GAN's second one)
        return True

    def _close_window(self) -> None:
        if self.ops.cut:
            self._drop_window()
            return
        if not self.ops.open or not self.ops.stop():
            return
        self._discover(False)
        self.deep.close(self.ops, self.step)
        cost = self.ops.cost()  # the fold of its counts included
        self.cost.charge(cost, window=True, complete=True)
        self._rate(cost)
        self._flush_nan()
        if self._plain and self._extra:
            plain = sorted(self._plain)[len(self._plain) // 2]
            extra = max(0.0, sorted(self._extra)[len(self._extra) // 2] - plain)
            self._next_deep = self.step + 1 + min(500, max(8, math.ceil(extra / (self.budget * plain))))
        else:
            self._next_deep = self.step + 8

    def _rate(self, cost: float) -> None:
        """Size the next windows by this one's cost per second of plain step (a window of one
        step only; one before any plain step waits for the first)."""
        if self._window_one_step and self._window_plain:
            self.cost.rate(cost, self._window_plain)
        elif self._window_one_step:
            self._unrated.append(cost)

    def _recent_plain(self) -> float:
        """The budget clock's seconds of a plain step now: the median of the last three (a step
        that also evaluated or saved a checkpoint is one of them)."""
        return median(self._plain_cpu)

    def _passes_since(self, mark: tuple[int, int]) -> int:
        """Forward/backward passes since ``mark`` (backwards, top-level forwards): the larger count."""
        return max(self.backwards - mark[0], self.models.top_forwards - mark[1])
