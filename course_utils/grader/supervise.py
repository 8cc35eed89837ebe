"""The supervisor between the grader and one submission's process (``course grade``).

Run by path (``python supervise.py SPEC.json``) so that neither the course package nor torch is
imported: it starts in well under a second and holds no references. It

1. becomes a *child subreaper* (Linux), so every process the submission forks, even after a double
   fork and ``setsid``, is re-parented here instead of escaping to init;
2. asks to be told when the grader dies (``PR_SET_PDEATHSIG``) and then cleans up and exits;
3. starts the submission in a new session (its own process group) with CPU, address-space,
   file-size and core-dump limits, its stdout/stderr on pipes;
4. prints the child's pid, then lets it run (a "go" byte on its stdin): the grader knows whom to
   clean up even if the submission kills this supervisor at once;
5. keeps at most ``output_cap`` bytes of each stream (the rest is read and dropped, so a flood
   neither blocks the child nor fills memory), kills the whole tree at the deadline (wall time
   less the time it waited for a CPU: ``fair_clock``), and in every case stops-then-kills every
   descendant before printing one status line (JSON).
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import time

if __package__:
    from course_utils.grader import fair_clock, procs
else:  # run by path: this file's folder is sys.path[0]
    import fair_clock
    import procs

LIMITS = {"cpu_seconds": resource.RLIMIT_CPU, "memory_bytes": resource.RLIMIT_AS,
          "fsize_bytes": resource.RLIMIT_FSIZE}


class Capture:
    """The first ``cap`` bytes of a stream and how many bytes it carried in all."""

    def __init__(self, cap: int):
        self.cap, self.head, self.total = cap, bytearray(), 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]

    def text(self) -> str:
        return self.head.decode("utf-8", errors="replace")


def _limiter(spec: dict):
    """preexec_fn for the child: resource limits, no core files, die when this supervisor dies."""
    parent = os.getpid()

    def apply() -> None:
        for key, which in LIMITS.items():
            value = spec.get(key)
            if value:
                hard = value + 1 if key == "cpu_seconds" else value
                try:
                    resource.setrlimit(which, (int(value), int(hard)))
                except (ValueError, OSError):
                    pass  # e.g. macOS refuses some limits; the wall clock still applies
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ValueError, OSError):
            pass
        procs.die_with_parent(signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(70)

    return apply


def _drain(sel: selectors.BaseSelector, wait: float) -> None:
    for key, _ in sel.select(wait):
        try:
            data = os.read(key.fd, 1 << 16)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if data:
            key.data.add(data)
        else:
            sel.unregister(key.fileobj)


def _resume(pid: int) -> None:
    """SIGCONT to the grader: a submission that stops it (SIGSTOP) does not stall the run."""
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


def _left(child: subprocess.Popen, deadline: float, seconds: float) -> float:
    """Seconds left before the deadline, which moves back by the time the submission's processes
    waited for a CPU (``fair_clock``; read only once the plain deadline has passed)."""
    left = deadline - time.monotonic()
    if left > 0:
        return left
    tree = procs.descendants(procs.snapshot(), [child.pid]) | {child.pid}
    return left + fair_clock.forgiven_s(fair_clock.most_queued_s(tree), seconds)


def _watch(child: subprocess.Popen, sel, started: float, seconds: float, stop: list) -> bool:
    """Read output until the child exits, the deadline passes (True) or we are told to stop."""
    grader = os.getppid()
    while child.poll() is None and not stop:
        _resume(grader)
        left = _left(child, started + seconds, seconds)
        if left <= 0:
            return True
        if sel.get_map():
            _drain(sel, min(left, 0.2))
        else:
            time.sleep(min(left, 0.05))
    return False


def _clean_up(child: subprocess.Popen, token: tuple[bytes, bytes]) -> int:
    """Kill the child's group and every descendant of this supervisor; reap them all."""
    procs.kill_group(child.pid)
    child.kill()
    child.wait()
    me = os.getpid()

    def ours(ps: dict) -> set[int]:
        return {p.pid for p in ps.values() if p.ppid == me or p.sid == child.pid
                or p.pgid == child.pid or procs.env_value(p.pid, token[0]) == token[1]}

    killed = procs.sweep(ours, spare={os.getppid()})
    procs.reap_children()
    return len(killed)


def supervise(spec: dict) -> dict:
    """Run the child the spec describes; return its status (the fields ``sandbox`` reads)."""
    stop: list = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(1))
    subreaper = procs.become_subreaper()
    name, _, value = spec["token"].partition("=")
    token = (name.encode(), value.encode())
    started = time.monotonic()
    child = subprocess.Popen(spec["cmd"], cwd=spec["cwd"], env=spec["env"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                             pass_fds=[spec["results_fd"]] if type(spec.get("results_fd")) is int else [],
                             start_new_session=True, preexec_fn=_limiter(spec))
    print(json.dumps({"child_pid": child.pid}), flush=True)
    try:
        child.stdin.write(b"go")
        child.stdin.close()
    except OSError:
        pass
    out, err = Capture(spec["output_cap"]), Capture(spec["output_cap"])
    sel = selectors.DefaultSelector()
    for stream, capture in ((child.stdout, out), (child.stderr, err)):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ, capture)
    timed_out = _watch(child, sel, started, spec["timeout"], stop)
    swept = _clean_up(child, token)
    _resume(os.getppid())
    end = time.monotonic() + 1.0
    while sel.get_map() and time.monotonic() < end:  # writers are dead: read to EOF
        _drain(sel, 0.05)
    return {"returncode": child.returncode, "timed_out": timed_out, "interrupted": bool(stop),
            "wall_s": round(time.monotonic() - started, 3), "swept": swept,
            "subreaper": subreaper, "stdout": out.text(), "stdout_bytes": out.total,
            "stderr": err.text(), "stderr_bytes": err.total}


def main(argv: list[str]) -> int:
    """``supervise.py SPEC.json``: print the child's pid, then its status, one JSON line each."""
    parent = os.getppid()
    procs.die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:
        return 3  # the grader died before we could ask to be told
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    status = supervise(spec)
    try:
        print(json.dumps(status), flush=True)
    except OSError:
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
