"""Does the grading sandbox contain what a submission's process does?

These tests drive the supervisor with tiny ``python -c`` children (no torch, milliseconds each):
floods of output, runaway loops, double forks that call setsid and exec with an empty environment,
and children that kill their supervisor. Every child names itself with a unique marker so the
tests can prove, by scanning /proc, that nothing it started is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from course_utils.grader import procs
from course_utils.grader.address_space import gpu_library_bytes
from course_utils.grader.sandbox import SUPERVISOR, Limits, Sandbox, read_results

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

ESCAPE = """
import os, sys
def escape(marker):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker], {})
        os._exit(0)
    os.wait()
"""


@pytest.fixture
def marker() -> str:
    """A unique word for the command lines of the processes one test starts."""
    return f"grader-test-{uuid.uuid4().hex[:12]}"


def alive(marker: str) -> list[int]:
    """Processes whose command line holds the marker (zombies have none, so they do not count)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


# Deadlines of the waits below: each wait ends as soon as its state holds; only a process that
# truly never starts or never dies reaches one (a loaded machine is slow, not stuck).
STUCK_S = 60


def gone(marker: str, within: float = STUCK_S) -> bool:
    """Whether every process with the marker has ended (waits until so, at most ``within`` s)."""
    end = time.monotonic() + within
    while alive(marker) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(marker)


def started(marker: str, count: int, within: float = STUCK_S) -> list[int]:
    """The processes with the marker, once ``count`` of them run (waits at most ``within`` s)."""
    end = time.monotonic() + within
    while len(alive(marker)) < count and time.monotonic() < end:
        time.sleep(0.05)
    return alive(marker)


def supervise(tmp_path: Path, code: str, *args: str, timeout: float = 10, reap: bool = True,
              output_cap: int = 1000):
    """Run ``python -c code args...`` under a supervisor, as the grader does; return its status."""
    sandbox = Sandbox(Limits(timeout=timeout, output_cap=output_cap), reap_orphans=reap)
    token = f"{sandbox.run_token}.1"
    (tmp_path / "tmp").mkdir(exist_ok=True)
    spec = sandbox._spec(tmp_path, token)
    spec["cmd"] = [sys.executable, "-c", code, *args]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    try:
        return sandbox._supervise(path, token)
    finally:
        sandbox.close()


def test_does_a_sweep_stop_and_kill_a_whole_process_tree(marker):
    code = ("import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        os.fork()\n"
            "        time.sleep(600)\ntime.sleep(600)")
    root = subprocess.Popen([sys.executable, "-c", code, marker])
    assert len(started(marker, 7)) == 7
    killed = procs.sweep(lambda ps: {root.pid})
    root.wait()
    assert len(killed) == 7 and gone(marker)


def test_is_a_flood_of_output_read_to_the_end_but_only_its_head_kept(tmp_path):
    code = "import sys\nfor _ in range(2000):\n    print('x' * 9999)\nsys.stderr.write('e' * 5_000_000)"
    status = supervise(tmp_path, code, output_cap=1000)
    assert status.returncode == 0 and not status.timed_out
    assert status.stdout == "x" * 1000 and status.stdout_bytes == 20_000_000
    assert len(status.stderr) == 1000 and status.stderr_bytes == 5_000_000


def test_does_the_wall_clock_limit_kill_the_child_and_its_group(tmp_path, marker):
    code = (f"import os, sys, time\nif os.fork() == 0:\n    os.execv(sys.executable, [sys.executable, '-c', "
            f"'import time; time.sleep(600)', '{marker}'])\nwhile True:\n    pass")
    status = supervise(tmp_path, code, timeout=1.5)
    # Killed by the wall clock (SIGKILL), not by the CPU-time limit (SIGXCPU at 3 s of CPU, which
    # takes a busy loop at least 3 s of wall time): the state says which limit acted, no stopwatch.
    assert status.timed_out and status.returncode == -signal.SIGKILL
    assert gone(marker)


def test_is_a_double_forked_setsid_escapee_with_an_empty_environment_killed(tmp_path, marker):
    status = supervise(tmp_path, ESCAPE + f"escape({marker!r})")
    assert status.returncode == 0 and status.swept >= 1
    assert gone(marker)


@pytest.mark.parametrize("how", ["os.kill(os.getppid(), signal.SIGKILL)",
                                 "os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)"])
def test_does_a_child_that_kills_its_supervisor_leave_nothing_behind(tmp_path, marker, how):
    code = ESCAPE + f"escape({marker!r})\nimport signal, time\n{how}\ntime.sleep(600)"
    status = supervise(tmp_path, code)
    assert status.supervisor_died  # ... and we, the grader, are still here to say so
    assert gone(marker)


def test_does_killing_its_own_group_hurt_only_the_child(tmp_path):
    status = supervise(tmp_path, "import os, signal\nos.killpg(0, signal.SIGKILL)")
    assert not status.supervisor_died and status.returncode == -signal.SIGKILL


def test_does_the_child_run_in_its_own_session_under_the_limits(tmp_path):
    code = ("import os, resource, json\nprint(json.dumps({'session_leader': os.getsid(0) == os.getpid(), "
            "'limits': [resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU, "
            "resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)], 'env': sorted(os.environ)}))")
    status = supervise(tmp_path, code, timeout=7, output_cap=10_000)
    seen = json.loads(status.stdout)
    lim = Limits()
    assert seen["session_leader"]
    assert seen["limits"] == [lim.memory_mb * 2**20 + gpu_library_bytes(), 9, lim.result_cap, 0]
    assert "MPS_DETECTIVE_GRADING" in seen["env"] and "OMP_NUM_THREADS" in seen["env"]
    assert not any(v.startswith(("SSH", "AWS", "GITHUB")) for v in seen["env"])


def test_does_the_supervisor_clean_up_when_the_grader_dies(tmp_path, marker):
    sandbox = Sandbox(Limits(timeout=60), reap_orphans=False)
    (tmp_path / "tmp").mkdir()
    spec = sandbox._spec(tmp_path, f"{sandbox.run_token}.1")
    spec["cmd"] = [sys.executable, "-c", "import time; time.sleep(600)", marker]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    grader = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                               f"subprocess.Popen([sys.executable, {str(SUPERVISOR)!r}, "
                               f"{str(tmp_path / 'spec.json')!r}])\ntime.sleep(600)"])
    assert started(marker, 1)
    grader.kill()
    grader.wait()
    assert gone(marker)
    sandbox.close()


def test_are_the_results_read_with_a_size_cap_and_garbage_skipped(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"event": "cells"}\nnot json\n[1, 2]\n' + '{"exercise": "x"}\n' * 10)
    records, problem = read_results(path, cap=10_000)
    assert records[0] == {"event": "cells"} and len(records) == 11 and problem is None
    records, problem = read_results(path, cap=60)
    assert len(records) < 11 and "exceed" in problem
    assert read_results(tmp_path / "absent.jsonl", cap=10) == ([], None)


class LoopingSandbox(Sandbox):
    """The sandbox with a child that loops forever (named by ``marker``) in place of the runner."""

    marker = ""

    def _spec(self, workdir, token) -> dict:
        return {**super()._spec(workdir, token),
                "cmd": [sys.executable, "-c", "while True:\n    pass", self.marker]}


def our_live_children() -> set[int]:
    """This process's children that still run (zombies excluded)."""
    me = os.getpid()
    found = set()
    for pid, p in procs.snapshot().items():
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if p.ppid == me and state != b"Z":
            found.add(pid)
    return found


# Moments after Sandbox.run starts: while the supervisor is being started, while it starts its child,
# while the child runs. Whatever the moment, nothing may be left when the interrupt comes out.
@pytest.mark.parametrize("after_s", [0.0, 0.002, 0.01, 0.05, 0.15, 0.4])
def test_does_ctrl_c_at_any_moment_of_a_run_leave_nothing_running_when_it_returns(marker, after_s):
    box = LoopingSandbox(Limits(timeout=30))
    box.marker = marker
    before = our_live_children()
    timer = threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGINT))
    # Ctrl-C as in a terminal, also where the tests were started with SIGINT ignored (a background job)
    was = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            timer.start()
            box.run([], [], b"")
        timer.join()
        assert not alive(marker), "the submission outlived the Ctrl-C"
        assert our_live_children() <= before, "a supervisor outlived the Ctrl-C"
    finally:
        signal.signal(signal.SIGINT, was)
        box.close()


def test_does_a_run_started_after_an_interrupt_start_no_process(marker):
    box = LoopingSandbox(Limits(timeout=30))  # course grade: a worker thread reaching run() after Ctrl-C
    box.marker = marker
    try:
        box.interrupt()
        before = our_live_children()
        status = box.run([], [], b"")
        assert "interrupted" in status.problem and status.returncode is None
        assert not alive(marker) and our_live_children() <= before
    finally:
        box.close()
