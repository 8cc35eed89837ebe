"""The difftest's default sweep on the CPU (budget <= 30 s).

    .venv/bin/python tests/benchmarks/bench_difftest.py

Not part of the test suite. Times ``sweep()`` with its default ops, layouts and variants on the CPU,
healthy and under ``mps_inplace_bug()``, alternating, 3 times each; reports the slower median (the
first sweep of the process, which pays one-off warm-ups, is run before timing and reported apart).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BUDGET_S = 30.0


def timings(repeats: int = 3) -> dict[str, float]:
    from course_utils.toolkit.difftest import sweep
    from course_utils.toolkit.emulate.inplace import mps_inplace_bug

    start = time.perf_counter()
    first = sweep(device="cpu")
    out = {"first": time.perf_counter() - start, "checks": len(first.checks)}
    runs: dict[str, list[float]] = {"healthy": [], "emulated": []}
    for _ in range(repeats):
        for name in runs:
            start = time.perf_counter()
            if name == "emulated":
                with mps_inplace_bug(device="cpu"):
                    sweep(device="cpu")
            else:
                sweep(device="cpu")
            runs[name].append(time.perf_counter() - start)
    out.update({name: statistics.median(values) for name, values in runs.items()})
    return out


def row() -> tuple[str, str, str, bool]:
    """(what, measured, budget, met) for tests/benchmarks/bench.py."""
    t = timings()
    worst = max(t["healthy"], t["emulated"], t["first"])
    text = (f"{worst:.2f} s ({int(t['checks'])} checks; healthy {t['healthy']:.2f} s, "
            f"emulated {t['emulated']:.2f} s, first {t['first']:.2f} s)")
    return ("difftest default sweep, cpu", text, f"<= {BUDGET_S:.0f} s", worst <= BUDGET_S)


if __name__ == "__main__":
    what, measured, budget, met = row()
    print(f"{what}: {measured}   budget {budget}   {'ok' if met else 'OVER BUDGET'}")
    sys.exit(0 if met else 1)
