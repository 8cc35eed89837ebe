"""``course grade`` throughput: 30 lesson-01 submissions with --jobs 1 and --jobs 2.

    .venv/bin/python tests/benchmarks/bench_grade.py [--submissions 30] [--repeat 1]
    .venv/bin/python tests/benchmarks/bench_grade.py --memory   # the grader's peak memory


Not part of the test suite (pytest collects test_*.py only). The class is the solved lesson-01
notebook copied 30 times, every third copy with one of four wrong answers learners write. The runs
alternate (jobs 1, jobs 2, jobs 1, ...) so both see the same machine load; with --repeat N the
median of N runs each is reported. ``rows()`` gives the figures to tests/benchmarks/bench.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WRONG = {  # (the correct line in solutions/01, a wrong answer learners write)
    "batch_bytes": ("return math.prod(shape) * dtype.itemsize", "return math.prod(shape) * 4"),
    "read_report": ('report["fallback_at_torch_import"] == "1"', 'report["fallback_now"] == "1"'),
    "choose_device": ('"mps": mps_built and mps_available', '"mps": mps_built'),
    "same_device": ('raise RuntimeError(f"the model is on {where} but tensor {i} is on {t.device}")',
                    'raise RuntimeError("device mismatch")'),
}


def make_class(folder: Path, count: int) -> int:
    """Write ``count`` submissions; return how many exercises they should pass in all."""
    import nbformat

    solved = nbformat.read(ROOT / "solutions" / "01_mps_setup.ipynb", as_version=4)
    mistakes = list(WRONG.values())
    passes = 0
    for i in range(count):
        nb = nbformat.from_dict(solved)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        if i % 3 == 0:
            right, wrong = mistakes[(i // 3) % len(mistakes)]
            cell = next(c for c in nb.cells if right in c.source)
            cell.source = cell.source.replace(right, wrong)
            passes += len(WRONG) - 1
        else:
            passes += len(WRONG)
        target = folder / f"student{i:02d}" / "01_mps_setup.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)
    return passes


def grade_once(folder: Path, jobs: int):
    from course_utils.grader import Options, grade
    from course_utils.grader.gradebook import csv_text

    start = time.perf_counter()
    # the class is made of the course's own solution: not flagged as copies here
    graded = grade([folder], Options(jobs=jobs, seed=1, progress=False, flag_copies=False))
    seconds = time.perf_counter() - start
    return seconds, csv_text(graded.rows, graded.ids), sum(r.total for r in graded.rows)


def measure(count: int = 30, repeat: int = 1) -> dict:
    """Median wall time of grading the class with --jobs 1 and --jobs 2 (interleaved)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        expected = make_class(folder, count)
        times: dict[int, list[float]] = {1: [], 2: []}
        books = set()
        for _ in range(repeat):
            for jobs in (1, 2):
                seconds, book, passed = grade_once(folder, jobs)
                assert passed == expected, f"jobs={jobs}: {passed} passes, expected {expected}"
                times[jobs].append(seconds)
                books.add(book)
        assert len(books) == 1, "--jobs changed the gradebook"
    one, two = statistics.median(times[1]), statistics.median(times[2])
    return {"submissions": count, "jobs1_s": one, "jobs2_s": two, "ratio": one / two,
            "jobs1_per_min": 60 * count / one, "jobs2_per_min": 60 * count / two, "repeat": repeat}


def rows(count: int = 30) -> list[tuple[str, str, str, bool]]:
    """Rows for bench.py: both timings, and the speed-up (budget: --jobs 2 at least 1.2x faster)."""
    m = measure(count)
    return [
        (f"course grade, {count} subs, --jobs 1", f"{m['jobs1_s']:.1f} s ({m['jobs1_per_min']:.0f}/min)",
         "-", True),
        (f"course grade, {count} subs, --jobs 2", f"{m['jobs2_s']:.1f} s ({m['jobs2_per_min']:.0f}/min)",
         "-", True),
        ("course grade, --jobs 2 speed-up", f"{m['ratio']:.2f}x", ">= 1.2x", m["ratio"] >= 1.2),
    ]


HEAVY_MB = 19.7


def make_heavy_class(folder: Path) -> None:
    """Files whose parsing or describing once cost the grader gigabytes: a 60 MB notebook, and
    19.7 MB notebooks of many ``{}``, of nested brackets, and of one cell of nested braces."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    size = int(HEAVY_MB * 2**20)
    folder.mkdir(parents=True, exist_ok=True)
    big = new_notebook(cells=[new_code_cell("x = 1", outputs=[new_output("stream", text="y" * 60 * 2**20)])])
    nbformat.write(big, folder / "01_big.ipynb")
    (folder / "01_many_objects.ipynb").write_text('{"cells": [' + ",".join(["{}"] * (size // 3)) + "]}")
    (folder / "01_nested.ipynb").write_text('{"cells": ' + "[" * (size // 2) + "]" * (size // 2) + "}")
    nbformat.write(new_notebook(cells=[new_code_cell("{" * (size // 2) + "}" * (size // 2))]),
                   folder / "01_brace_cell.ipynb")


PEAK = """
import resource, sys
from course_utils.grader import Limits, Options, grade, submissions
if sys.argv[3] == "unbounded":  # the shape check off: what parsing costs without it
    submissions.MAX_CONTAINERS = submissions.MAX_NESTING = 10**12
options = Options(jobs=int(sys.argv[2]), seed=1, progress=False, flag_copies=False, limits=Limits(timeout=60))
grade([sys.argv[1]], options)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def peak_mb(folder: Path, jobs: int, shape_check: bool = True) -> int:
    """The grading process's peak resident memory (MB) grading ``folder`` (its children apart)."""
    import subprocess

    done = subprocess.run([sys.executable, "-W", "ignore", "-c", PEAK, str(folder), str(jobs),
                           "bounded" if shape_check else "unbounded"], cwd=ROOT,
                          capture_output=True, text=True, check=True, env={**__import__("os").environ,
                                                                            "PYTHONPATH": str(ROOT)})
    return int(done.stdout.strip().splitlines()[-1])


def memory() -> list[dict]:
    """Peak memory of the grading process, one plain submission alone and with the heavy files
    beside it (--jobs 1 and 2), and with the shape check off (what the heavy files cost without it)."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        plain, heavy = Path(tmp) / "plain", Path(tmp) / "heavy"
        make_class(plain, 1)
        make_heavy_class(heavy)
        make_class(heavy, 1)
        for jobs, check in ((1, True), (2, True), (2, False)):
            found.append({"jobs": jobs, "shape_check": check, "plain_mb": peak_mb(plain, jobs),
                          "heavy_mb": peak_mb(heavy, jobs, shape_check=check)})
    return found


def render_memory(rows: list[dict]) -> str:
    """The peak-memory table in Markdown."""
    lines = ["| --jobs | shape check | one plain submission | with the heavy files beside it | ratio |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['jobs']} | {'on' if r['shape_check'] else 'off'} | {r['plain_mb']} MB | "
              f"{r['heavy_mb']} MB | {r['heavy_mb'] / r['plain_mb']:.2f}x |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, interleaved; medians")
    parser.add_argument("--memory", action="store_true", help="the grading process's peak memory instead")
    parser.add_argument("--publish", action="store_true",
                        help="with --memory: write the table in docs/performance.md")
    args = parser.parse_args()
    if args.memory:
        found = memory()
        print(render_memory(found))
        if args.publish:
            from tests.benchmarks.doc_tables import publish

            print("wrote", publish("grade_memory", "performance.md", found, render_memory(found)))
        return 0
    import os

    m = measure(args.submissions, args.repeat)
    print(f"{m['submissions']} submissions of lesson 01 (4 exercises each), {os.cpu_count()} cores, "
          f"median of {m['repeat']} run(s) each")
    print(f"--jobs 1: {m['jobs1_s']:6.1f} s  {m['jobs1_per_min']:5.1f} submissions/min")
    print(f"--jobs 2: {m['jobs2_s']:6.1f} s  {m['jobs2_per_min']:5.1f} submissions/min")
    print(f"--jobs 2 is {m['ratio']:.2f}x as fast as --jobs 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
