"""The course's performance budgets, measured in one run and printed as a table.

    .venv/bin/python tests/benchmarks/bench.py [--skip-e2e] [--skip-suite] [--markdown] [--publish]

``--publish`` writes the rows to docs/figures/performance.json and the table in docs/performance.md.

Not part of the pass/fail suite: machines are noisy, so every figure is a median of repetitions and
every ratio is measured side by side, interleaved, in the same run. Rows whose subject has not
landed yet say so instead of a figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# The lessons' verdicts on measured speeds (line prefix in an output): the tests do not compare
# them (tests/nbval_sanitize.cfg masks them, a loaded machine can flip them); they are reported here.
VERDICTS = {"03_sync_and_timing": ("the device's work outlasts the launch:",),
            "04_cpu_fallback": ("rewrite at least 2x faster:", "the round trip is slower:"),
            "05_non_contiguous_tensors": (
                "our curve rises with the number of permuted dimensions:",
                "k = 6 takes more than 5x as long as k = 3:",
                "k = 6 moves bytes at less than a third of k = 3's rate:")}


def verdict_rows(path: Path) -> list[tuple[str, str, str, bool]]:
    """The measured verdicts a lesson printed in its executed copy at ``path``."""
    import nbformat

    text = "\n".join(out.get("text", "") for cell in nbformat.read(path, as_version=4).cells
                     for out in cell.get("outputs", []))
    rows = []
    for prefix in VERDICTS.get(path.stem, ()):
        found = [line.split(prefix, 1)[1].strip() for line in text.splitlines() if prefix in line]
        value = found[0] if found else "not printed"
        rows.append((f"lesson {path.stem[:2]}: {prefix.rstrip(':')}", value, "True", value == "True"))
    return rows


def lesson_rows() -> list[tuple[str, str, str, bool]]:
    """Each lesson notebook top to bottom on CPU, on a scratch copy (budget 45 s), and the
    verdicts on measured speeds that it printed."""
    import os
    import shutil

    from course_utils.author.execute import execute_notebook
    from course_utils.bootstrap import scratch_env

    os.environ.update(scratch_env())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
            copy = Path(tmp) / path.name
            shutil.copy(path, copy)
            start = time.perf_counter()
            execute_notebook(copy, timeout=300)
            seconds = time.perf_counter() - start
            rows.append((f"lesson {path.stem}", f"{seconds:.1f} s", "<= 45 s", seconds <= 45))
            rows += verdict_rows(copy)
    return rows


IMPORT_PROBE = ("import time, torch; t = time.perf_counter(); import course_utils; "
                "print(time.perf_counter() - t)")


def import_row() -> tuple[str, str, str, bool]:
    """`import course_utils` beyond `import torch`, in fresh interpreters (budget 0.3 s)."""
    runs = [float(subprocess.check_output([sys.executable, "-c", IMPORT_PROBE], text=True))
            for _ in range(5)]
    value = statistics.median(runs)
    return ("import course_utils beyond torch", f"{value:.3f} s", "<= 0.3 s", value <= 0.3)


def check_row() -> tuple[str, str, str, bool]:
    """The slowest exercise's check() with its reference answer (budget 1 s)."""
    import contextlib
    import io

    from course_utils import bank, check

    worst, worst_id = 0.0, ""
    for exercise_id in bank.ids():
        ex = bank.get(exercise_id)
        with contextlib.redirect_stdout(io.StringIO()):
            value = median_time(lambda i=exercise_id, f=ex.reference: check(i, f, seed=0), 3)
        if value > worst:
            worst, worst_id = value, exercise_id
    return (f"check(), slowest ({worst_id})", f"{worst:.3f} s", "<= 1 s", worst <= 1)


def optional_row(module: str, label: str, budget: str, fn_name: str):
    """Rows of tools from later lessons: measured when the module exists."""
    if importlib.util.find_spec(module) is None:
        return (label, "n/a (not landed yet)", budget, True)
    bench = importlib.import_module(module)
    return getattr(bench, fn_name)()


def suite_row() -> tuple[str, str, str, bool]:
    """The README's whole test command, after setup (budget 8 min)."""
    start = time.perf_counter()
    code = subprocess.call([sys.executable, str(ROOT / "course_utils" / "bootstrap.py"), "test"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    verdict = f"{seconds / 60:.1f} min" + ("" if code == 0 else f" (exit {code})")
    return ("README test command", verdict, "<= 8 min", seconds <= 480 and code == 0)


def e2e_row() -> tuple[str, str, str, bool]:
    """The browser tests alone (tests/e2e: every lesson in JupyterLab and Chromium), budget 3 min."""
    if not Path("/usr/bin/chromium").exists():
        return ("browser tests (tests/e2e) alone", "n/a (no /usr/bin/chromium)", "<= 3 min", True)
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(ROOT / "tests" / "e2e")], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    verdict = f"{seconds:.0f} s" + ("" if code == 0 else f" (exit {code})")
    return ("browser tests (tests/e2e) alone", verdict, "<= 3 min", seconds <= 180 and code == 0)


def render(rows, markdown: bool) -> str:
    if markdown:
        lines = ["| what | measured | budget | met |", "|---|---|---|---|"]
        lines += [f"| {w} | {m} | {b} | {'yes' if ok else 'NO'} |" for w, m, b, ok in rows]
        return "\n".join(lines)
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{w:<{width}}  {m:>22}  {b:<10} {'ok' if ok else 'OVER BUDGET'}"
                     for w, m, b, ok in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-suite", action="store_true", help="skip timing the test command")
    parser.add_argument("--skip-e2e", action="store_true", help="skip timing the browser tests")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--publish", action="store_true",
                        help="write the table into docs/performance.md (and its figures)")
    args = parser.parse_args()
    rows = [import_row(), check_row(), *lesson_rows(),
            optional_row("tests.benchmarks.bench_sentinel", "sentinel overhead, lesson-06 step",
                         "<= 1.10x", "row"),
            optional_row("tests.benchmarks.bench_difftest", "difftest default sweep", "<= 30 s",
                         "row"),
            *optional_rows_grade()]
    if not args.skip_e2e:
        rows.append(e2e_row())
    if not args.skip_suite:
        rows.append(suite_row())
    print(f"machine: {platform.node() or 'unknown'}, {platform.machine()}, "
          f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}")
    print(render(rows, args.markdown))
    if args.publish:
        from tests.benchmarks.doc_tables import publish
        page = publish("performance", "performance.md", [list(r) for r in rows], render(rows, True))
        print(f"wrote {page}")
    return 0


def optional_rows_grade():
    """course grade, 30 submissions, --jobs 2 vs --jobs 1 (a ratio and submissions per minute)."""
    if importlib.util.find_spec("tests.benchmarks.bench_grade") is None:
        return [("course grade, 30 subs, jobs 2 vs 1", "n/a (not landed yet)", "ratio", True)]
    return importlib.import_module("tests.benchmarks.bench_grade").rows()


if __name__ == "__main__":
    sys.exit(main())
