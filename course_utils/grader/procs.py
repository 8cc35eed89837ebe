"""Find and end every process a graded submission started (``course grade``, instructors).

Standard library only: the supervisor runs this file's functions without importing the course
package (and so without torch). On Linux it reads ``/proc``; elsewhere the scans find nothing and
only process-group kills remain (the README's security notes say what that leaves open).

A sweep first *stops* every selected process (SIGSTOP), scanning again until no new process
appears, then kills them all: a stopped process cannot fork, so even a fork loop is caught.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PROC = "/proc"


@dataclass(frozen=True)
class Proc:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    pgid: int
    sid: int


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the running program's libc; no ldconfig lookup
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper(on: bool = True) -> bool:
    """Orphaned descendants are re-parented to this process, not to init (Linux; else False)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, int(on))


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux; else False)."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def _stat(pid: int) -> Proc | None:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # the name in (...) may hold spaces
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]))
    except (IndexError, ValueError):
        return None


def snapshot() -> dict[int, Proc]:
    """Every visible process by pid (empty where there is no /proc)."""
    try:
        names = os.listdir(PROC)
    except OSError:
        return {}
    found = (_stat(int(n)) for n in names if n.isdigit())
    return {p.pid: p for p in found if p is not None}


def env_value(pid: int, name: bytes) -> bytes | None:
    """The value of variable ``name`` in the process's initial environment block, if readable."""
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except OSError:
        return None
    prefix = name + b"="
    return next((e[len(prefix):] for e in entries if e.startswith(prefix)), None)


def descendants(procs: dict[int, Proc], roots: Iterable[int]) -> set[int]:
    """The roots' descendants by parent links (the roots themselves excluded)."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out: set[int] = set()
    todo = [r for r in roots]
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in out:
                out.add(kid)
                todo.append(kid)
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group, ignoring one that is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


Selector = Callable[[dict[int, Proc]], set[int]]


def sweep(select: Selector, spare: Iterable[int] = (), rounds: int = 50) -> set[int]:
    """Stop, then kill, every process ``select`` picks plus all their descendants.

    ``spare`` (e.g. this process and its parent) is never signalled. Returns the pids killed.
    """
    keep = {os.getpid(), *spare}
    stopped: set[int] = set()
    for _ in range(rounds):
        procs = snapshot()
        picked = select(procs)
        targets = (picked | descendants(procs, picked | stopped)) - keep
        new = {pid for pid in targets if pid in procs} - stopped
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return stopped


def reap_children(deadline_s: float = 5.0) -> int:
    """Wait for every child of this process (orphans included when a subreaper); returns how many."""
    reaped, end = 0, time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            time.sleep(0.01)
        else:
            reaped += 1
    return reaped


def reap(pids: Iterable[int], deadline_s: float = 5.0) -> None:
    """Wait for these specific children (killed orphans adopted by a subreaper grader)."""
    end = time.monotonic() + deadline_s
    for pid in pids:
        while time.monotonic() < end:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            time.sleep(0.01)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back for the block and act on it at its end (the handler that was
    there runs then: ``KeyboardInterrupt`` by default). A process started in the block is thus
    always known to the caller, never lost to an interrupt between its start and its record.
    On a thread other than the main one (which never gets ``KeyboardInterrupt``) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        if caught and callable(previous):
            previous(signal.SIGINT, caught[0])
        elif caught and previous == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)


def halt(proc: subprocess.Popen, within: float, fallback: Callable[[], object]) -> None:
    """Tell ``proc`` (a supervisor) to stop (SIGTERM, and SIGCONT should it be stopped) and wait
    while it cleans up, reading its pipes, at most ``within`` s. One that does not end in time (or
    a second Ctrl-C meanwhile) is killed and ``fallback()`` cleans up in its place."""
    done = False
    try:
        for sig in (signal.SIGTERM, signal.SIGCONT):
            _signal(proc.pid, sig)
        proc.communicate(timeout=within)
        done = True
    except subprocess.TimeoutExpired:
        pass
    finally:
        if not done:
            proc.kill()
            fallback()
            proc.wait()
