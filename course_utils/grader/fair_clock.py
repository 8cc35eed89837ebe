"""Time limits that count a submission's own time, not the time it spent waiting for a CPU.

A wall-clock limit alone fails good submissions on a busy machine: on two cores shared by sixteen
busy processes a cell that needs one second of CPU takes eight. Linux records, per thread, how long
it sat runnable in the scheduler's queue (``/proc/PID/schedstat``, second field, nanoseconds). A
limit here is "seconds of wall time, less the time spent queued", and the queue time forgiven is
capped at ``MAX_STRETCH`` times the limit: a submission that loads the machine itself to stretch its
own deadline gets at most ``1 + MAX_STRETCH`` times the limit. Where schedstat cannot be read (not
Linux, no /proc) the limit is plain wall time.

Standard library only: the supervisor imports this file without the course package.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

MAX_STRETCH = 2.0


def queued_s(pid: int | str = "thread-self") -> float:
    """Seconds the thread (a pid: its main thread) has waited runnable for a CPU; 0.0 if unknown."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def forgiven_s(queued: float, seconds: float, max_stretch: float = MAX_STRETCH) -> float:
    """The queue time a limit of ``seconds`` forgives: all of it, up to ``max_stretch`` x the limit."""
    return min(max(0.0, queued), max_stretch * seconds)


def most_queued_s(pids: Iterable[int]) -> float:
    """The longest any of these processes' main threads waited for a CPU (processes started after
    the limit began, so all their queue time counts)."""
    return max((queued_s(pid) for pid in pids), default=0.0)


class FairTimer:
    """``seconds`` of this thread's own time from now: wall time less what it spent queued."""

    def __init__(self, seconds: float, pid: int | str = "thread-self", max_stretch: float = MAX_STRETCH):
        self.seconds, self.pid, self.max_stretch = seconds, pid, max_stretch
        self.started, self.queued_at_start = time.monotonic(), queued_s(pid)

    def left(self) -> float:
        """Seconds still left (negative once overrun)."""
        waited = queued_s(self.pid) - self.queued_at_start
        elapsed = time.monotonic() - self.started
        return self.seconds - elapsed + forgiven_s(waited, self.seconds, self.max_stretch)


def latest_end(seconds: float) -> float:
    """The longest a limit of ``seconds`` can take in wall time, however busy the machine."""
    return seconds * (1 + MAX_STRETCH)


__all__ = ["MAX_STRETCH", "FairTimer", "forgiven_s", "latest_end", "most_queued_s", "queued_s"]
