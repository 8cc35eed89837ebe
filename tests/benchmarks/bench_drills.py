"""The drill bank in figures: drills, forms, the timed pool, each drill's clock, and
how long the machine takes to show a symptom.

    .venv/bin/python tests/benchmarks/bench_drills.py [--forms]

Not part of the test suite. Per category: drills, of them in the timed pool, forms (the declared
code plus its variants). Per drill: its clock in a timed round (``drill_scoring.time_limit``, an
estimate from its code lines and question words) and the wall time of ``symptom()`` +
``fix_check()`` (the "run the buggy code" a learner may press), for the declared form, or with
``--forms`` for every form (the slowest shown). The distributed drill starts two processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run_seconds(drill, forms: bool) -> float:
    """The slowest symptom() + fix_check() wall time over the forms asked for."""
    times = []
    for k in range(drill.forms if forms else 1):
        form = drill.variant(k)
        start = time.perf_counter()
        form.symptom(), form.fix_check()
        times.append(time.perf_counter() - start)
    return max(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forms", action="store_true", help="time every form, not only the declared one")
    args = parser.parse_args(argv)

    from course_utils import drills
    from course_utils.learner.drilling.scoring import clock_text, time_limit

    pool = {d.id for d in drills.timed_pool()}
    everything = drills.all_drills()
    print(f"{len(everything)} drills, {sum(d.forms for d in everything)} forms, "
          f"{len(pool)} in the timed pool, {len(drills.TAUGHT)} worked in lesson 07")
    print(f"{'category':<13}{'drills':>7}{'pool':>6}{'forms':>7}")
    for category, group in drills.by_category().items():
        print(f"{category:<13}{len(group):>7}{sum(d.id in pool for d in group):>6}"
              f"{sum(d.forms for d in group):>7}")
    print(f"\n{'drill':<44}{'lines':>6}{'clock':>7}{'run s':>8}")
    clocks, runs = [], []
    for drill in everything:
        lines = sum(1 for ln in drill.buggy_code.splitlines() if ln.strip())
        clock, seconds = time_limit(drill), run_seconds(drill, args.forms)
        clocks.append(clock)
        runs.append(seconds)
        print(f"{drill.id:<44}{lines:>6}{clock_text(clock):>7}{seconds:>8.2f}")
    print(f"\nclock per drill: median {clock_text(statistics.median(clocks))}, "
          f"range {clock_text(min(clocks))}-{clock_text(max(clocks))}; "
          f"symptom + fix run: median {statistics.median(runs):.2f} s, max {max(runs):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
