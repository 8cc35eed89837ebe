"""The cost budget of ``course watch``, per run: the watcher measures its own time as it goes (the
deep windows less the script's own kernels they ran, which cost the script as much watched or not;
the hooks' time outside them) and keeps it under a share of the run's time so far, plus a small
allowance for the start.

A deep window opens only when the budget has room for one like the last complete ones, and for
one over a step as long as the last plain ones, at the recent windows' cost per second of plain step
(a rollout's episodes grow from ten actions to hundreds; a window sized on the early ones is cut); a
window that outgrows what is left is cut at the next safe point (a module call, the end of an LBFGS
closure, a step boundary) and its partial counts are dropped. After a cut the next window waits
for room for twice the cut one, four times after two cuts in a row, and so on: a rollout's
whole-episode window that keeps outgrowing the budget is tried a few times in a run, not every time
the allowance has grown back.

Check steps are skipped while the budget is spent, and after a cut window the search for models
(global module hooks) stops once it is spent. Windows leave the check steps (the values most
verdicts are taken on) a part of the share and a start allowance of their own (``CHECKS_FLOOR``):
a window that costs more than the last ones, or first windows that use the whole start allowance of
a short run on a slow or busy machine, cannot leave the check steps skipped until the run has paid
it back. The set-up before the first model's forward is not charged: it is watched op by op only
for its first ``ops.SETUP_CALLS`` torch calls, a bound of its own (the window then waits, modes
left, for the first forward).

The clock is this thread's CPU time: the watcher's work is Python in the training thread, a loaded
machine stretches neither side of the ratio, and time the thread spends waiting (data-loader
workers, I/O) only lowers the allowance.
"""

from __future__ import annotations

import math
import time
from collections import deque

# Of the run's time so far: half the 10% a run may lose, as the clock does not charge all a watched
# run pays and a run's wall time swings by more than the share on a shared box.
SHARE = 0.05
CHECKS = 0.01  # of it windows leave to the check steps
FLOOR = 0.3  # seconds the watcher may use before the run's share covers it (the first windows)
CHECKS_FLOOR = 0.1  # seconds more that only the check steps may use
MIN_WINDOW = 0.002  # a new window needs at least this much room


class Budget:
    """What the watcher has spent and may still spend (``share=inf``: no limit)."""

    def __init__(self, share: float = SHARE, floor: float = FLOOR, clock=time.thread_time,
                 checks: float = CHECKS, checks_floor: float = CHECKS_FLOOR):
        self.share, self.floor, self.clock = share, floor, clock
        self.checks_floor = checks_floor
        self.checks = min(checks, share / 2)  # windows' share: share - checks
        self.start = clock()
        self.spent = 0.0
        self.windows: deque = deque(maxlen=9)  # costs of recent complete windows
        self.per_step: deque = deque(maxlen=9)  # recent windows' cost per second of plain step
        self.need = 0.0  # after a cut: room for 2 ** (cuts in a row) times the cut window
        self.cuts = 0
        self.cuts_in_row = 0

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.share)

    def left(self, now: float | None = None, windows: bool = False) -> float:
        """Seconds the watcher may still spend now (``windows``: on windows, which leave the check
        steps' part and their own start allowance)."""
        if self.unlimited:
            return math.inf
        now = self.clock() if now is None else now
        if windows:
            return self.floor + (self.share - self.checks) * (now - self.start) - self.spent
        return self.floor + self.checks_floor + self.share * (now - self.start) - self.spent

    def deadline(self, now: float) -> float:
        """The clock reading at which a window opened ``now`` has used all that is left to windows
        (the allowance grows while it runs)."""
        return now + self.left(now, windows=True) / (1.0 - min(self.share - self.checks, 0.5))

    def may_open(self, step: float = 0.0) -> bool:
        """Room for a window like the recent complete ones, and for one over a step as long as the
        last plain ones (``step`` seconds), at the recent windows' cost per second of plain step."""
        expected = median(self.windows)
        if step > 0 and self.per_step:
            expected = max(expected, step * median(self.per_step))
        return self.left(windows=True) >= max(MIN_WINDOW, expected, self.need)

    def rate(self, seconds: float, step: float) -> None:
        """Count a window of one step by its cost per second of the plain step before it (a cut
        one's is a lower bound): a rollout's episode can be ten times as long as the last one, and
        a window sized on the last ones would be cut."""
        if step > 0:
            self.per_step.append(seconds / step)

    def charge(self, seconds: float, window: bool = False, complete: bool = False, passes: int = 1) -> None:
        """Count ``seconds`` of the watcher's time; a cut window asks room for twice its cost per
        forward/backward pass it saw before the next opens, doubled again for each cut before it in a
        row (a window opened before the step boundary was known, by hand-written updates, can span
        many passes: the next spans one)."""
        self.spent += seconds
        if window and complete:
            self.windows.append(seconds)
            self.need = 0.0
            self.cuts_in_row = 0
        elif window:
            self.cuts += 1
            self.cuts_in_row += 1
            self.need = 2 ** min(self.cuts_in_row, 30) * seconds / max(1, passes)


def median(values) -> float:
    """The upper median of ``values`` (0 for none)."""
    return sorted(values)[len(values) // 2] if values else 0.0
