"""Do the grader's time limits forgive the time a submission waited for a CPU, and only that?

A child process is pinned to one CPU beside three busy processes pinned to the same CPU, so it gets
about a quarter of it: its wall time runs about four times its CPU time. The child measures, in its
own terms, whether a fair timer still has time left after work that a plain wall clock would have
timed out, whether the cap on forgiven time makes it a plain wall clock, and whether a step limit
(``runner.time_limit``) lets such work finish while it still stops a loop that never ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from course_utils.grader.fair_clock import FairTimer, forgiven_s, latest_end

CHILD = r"""
import json, os, sys, time
from course_utils.grader.fair_clock import FairTimer
from course_utils.grader.runner import StepTimeout, time_limit
os.sched_setaffinity(0, {int(sys.argv[1])})  # after the imports: only the measured work is crowded

def work(cpu_s):
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass

found = {}
fair, plain = FairTimer(0.3, max_stretch=100.0), FairTimer(0.3, max_stretch=0.0)
started = time.monotonic()
work(0.15)
found["elapsed"] = time.monotonic() - started
found["fair_left"], found["plain_left"] = fair.left(), plain.left()
started = time.monotonic()
try:
    with time_limit(0.3, max_stretch=100.0):  # the cap is tested on its own, below
        work(0.15)
    found["step"] = "finished"
except StepTimeout:
    found["step"] = "stopped"
found["step_elapsed"] = time.monotonic() - started
try:
    with time_limit(0.3, max_stretch=100.0):
        while True:
            pass
except StepTimeout:
    found["loop"] = "stopped"
print(json.dumps(found))
"""

HOG = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


@pytest.fixture()
def crowded_cpu():
    """One CPU with three busy processes pinned to it; they are killed afterwards."""
    if not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/self/schedstat"):
        pytest.skip("needs Linux CPU affinity and /proc schedstat")
    cpu = min(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(cpu)]) for _ in range(3)]
    yield cpu
    for hog in hogs:
        hog.kill()
        hog.wait()


def test_does_a_fair_limit_forgive_queueing_that_a_wall_clock_counts(crowded_cpu):
    done = subprocess.run([sys.executable, "-c", CHILD, str(crowded_cpu)], capture_output=True,
                          text=True, timeout=120, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["elapsed"] > 0.3, found  # the work waited: a wall clock alone would have run out
    assert found["fair_left"] > 0, found
    assert found["plain_left"] < 0, found  # no stretch allowed: the same wall clock
    assert found["step_elapsed"] > 0.3 and found["step"] == "finished", found
    assert found["loop"] == "stopped", found


def test_is_the_forgiven_time_capped_so_a_limit_ends_within_three_times_its_seconds():
    assert forgiven_s(100.0, 2.0) == 4.0
    assert forgiven_s(-1.0, 2.0) == 0.0
    assert forgiven_s(1.5, 2.0) == 1.5
    assert latest_end(12) == 36
    assert FairTimer(5.0).left() <= 5.0
