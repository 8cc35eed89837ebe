"""Run the course against each torch in the version matrix, each in its own virtual environment.

    python3 course_utils/bootstrap.py matrix                    # the tested matrix (TESTED below)
    python3 course_utils/bootstrap.py matrix 2.6.0 2.14.1       # or the versions you name
    python3 course_utils/bootstrap.py matrix --paths notebooks -- 2.14.1   # a part, one version
    python3 course_utils/matrix.py --venvs /tmp/m 2.14.1        # the same, run directly
    python3 course_utils/bootstrap.py matrix --publish          # ... and write the docs table

For each version it makes (or reuses) ``<venvs>/torch-<version>`` (default ``build/matrix/``), writes
a constraints file that is ``constraints.txt`` with torch pinned to that version, installs torch first
and then the course with its ``dev`` extra under those constraints (so nothing can replace that
torch), and runs the unit tests and every lesson and solution under nbval-lax (errors fail, outputs
are not compared: they were stored from one torch). It prints one line per version: passed, failed,
skipped and errors, and the wall time; the exit status is non-zero if any version failed.
``--publish`` stores each complete run (every path, no extra pytest arguments) in
``docs/figures/torch_matrix.json``, keeping the other versions' rows, and writes the table in
docs/performance.md from them (through ``tests/benchmarks/doc_tables.py``, like every docs table).

Standard library only, like bootstrap.py, whose helpers it reuses.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_course_bootstrap", HERE / "bootstrap.py")
bootstrap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bootstrap)

ROOT = bootstrap.ROOT
# The oldest and the newest torch pyproject.toml admits (the floor, and the newest release installable
# here); 2.13.0 is also the pin in constraints.txt, which the README's test command runs.
TESTED = ("2.13.0", "2.14.1")
PATHS = ("tests", "notebooks", "solutions")
PYTEST = ("-m", "pytest", "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout", "300",
          "-n", "2", "--dist", "loadfile", "-q", "-rfE", "-p", "no:cacheprovider")
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
TABLE = "torch_matrix"  # docs/performance.md's table, docs/figures/torch_matrix.json its rows


def say(message: str) -> None:
    print(f"[matrix] {message}", flush=True)


def pinned_constraints(version: str) -> str:
    """constraints.txt with its torch line replaced by ``torch==version``."""
    lines = [line for line in bootstrap.CONSTRAINTS.read_text().splitlines()
             if not re.match(r"\s*torch\s*(==|$)", line)]
    return "\n".join([f"torch=={version}", *lines]) + "\n"


def prepare(venv: Path, version: str) -> Path:
    """Make the environment for one torch (torch first, then the course); its python."""
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    if not python.exists() and subprocess.call([sys.executable, "-m", "venv", str(venv)]):
        sys.exit(f"[matrix] could not create {venv}")
    constraints = venv / "constraints.txt"
    constraints.write_text(pinned_constraints(version))
    for what in ([f"torch=={version}"], ["-e", f"{ROOT}[dev]"]):
        say(f"torch {version}: pip install {' '.join(what)}")
        if subprocess.call([str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints),
                            *what], cwd=ROOT):
            sys.exit(f"[matrix] torch {version}: pip install {' '.join(what)} failed")
    return python


CLOSING = re.compile(r"\d+ (passed|failed|errors?)\b.* in ")


def counts(output: str) -> dict[str, int]:
    """pytest's closing summary (``3 failed, 120 passed, 2 skipped in 40s``) as numbers."""
    summaries = [line for line in output.splitlines() if CLOSING.search(line)]
    tail = summaries[-1] if summaries else ""
    found = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
             for n, kind in SUMMARY.findall(tail)}
    return {k: found.get(k, 0) for k in ("passed", "failed", "skipped", "error")}


def run_one(venvs: Path, version: str, extra: list[str], paths=PATHS) -> tuple[int, dict]:
    """Install and test one torch; its exit status and its row (counts, wall time, where)."""
    start = time.monotonic()
    machine = (f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, load "
               f"{os.getloadavg()[0]:.1f} at the start" if hasattr(os, "getloadavg") else platform.machine())
    python = prepare(venvs / f"torch-{version}", version)
    seen = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, cwd=ROOT).stdout.strip()
    env = bootstrap.scratch_env()
    env["MPS_DETECTIVE_VENV"] = str(python.parent.parent)
    say(f"torch {version} (imports as {seen}): unit tests, lessons and solutions (nbval-lax)")
    returncode, output = streamed([str(python), *PYTEST, *paths, *extra], env)
    if ending(returncode, output):
        say(f"torch {version}: {ending(returncode, output)}")
    row = {"torch": version, "build": seen or "(does not import)", "ok": returncode == 0,
           **counts(output), "wall_s": round(time.monotonic() - start),
           "date": datetime.date.today().isoformat(), "machine": machine}
    return returncode, row


def ending(returncode: int, output: str) -> str:
    """How pytest ended when it did not print its summary: the signal that killed it (sent from
    outside the run: a test that killed pytest's own process would be a bug), or no summary."""
    if returncode < 0:
        return (f"pytest was killed by {signal.Signals(-returncode).name} before its summary; "
                "its workers, cut off, may then report 'cannot send (already closed?)'")
    if not any(CLOSING.search(text) for text in output.splitlines()):
        return f"pytest exited with status {returncode} and no summary (see its output above)"
    return ""


def line(row: dict) -> str:
    """One version's result in words."""
    return (f"torch {row['build']}: {'ok' if row['ok'] else 'FAILED'}: {row['passed']} passed, "
            f"{row['failed']} failed, {row['skipped']} skipped, {row['error']} errors "
            f"in {row['wall_s']} s")


def render(rows: list[dict]) -> str:
    """The docs table: one row per torch, newest first."""
    def key(row):
        return tuple(int(n) for n in re.findall(r"\d+", row["torch"]))
    lines = ["| torch | result | passed | failed | skipped | errors | wall time | run on |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['build']} | {'green' if r['ok'] else '**failed**'} | {r['passed']} | {r['failed']} "
              f"| {r['skipped']} | {r['error']} | {r['wall_s'] / 60:.0f} min | {r['date']}, {r['machine']} |"
              for r in sorted(rows, key=key, reverse=True)]
    return "\n".join(lines)


def publish(new_rows: list[dict]) -> Path:
    """Merge these rows into the stored ones (a version's new row replaces its old) and write the
    table through tests/benchmarks/doc_tables.py."""
    tables = ROOT / "tests" / "benchmarks" / "doc_tables.py"
    spec = importlib.util.spec_from_file_location("_doc_tables", tables)
    doc_tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc_tables)
    stored = doc_tables.FIGURES / f"{TABLE}.json"
    rows = {r["torch"]: r for r in (json.loads(stored.read_text())["rows"] if stored.exists() else [])}
    rows.update({r["torch"]: r for r in new_rows})
    return doc_tables.publish(TABLE, "performance.md", list(rows.values()), render(list(rows.values())))


def streamed(cmd: list[str], env: dict) -> tuple[int, str]:
    """Run ``cmd`` from the repository root, printing its output as it comes; (exit status, output)."""
    lines = []
    with subprocess.Popen(cmd, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)
    return proc.returncode, "".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap.py matrix", description=__doc__.split("\n")[0])
    parser.add_argument("versions", nargs="*", default=list(TESTED), help=f"default: {' '.join(TESTED)}")
    parser.add_argument("--venvs", type=Path, default=ROOT / "build" / "matrix",
                        help="where each torch-<version> environment lives (default: build/matrix)")
    parser.add_argument("--pytest", default="", help="extra pytest arguments, e.g. '-k lesson'")
    parser.add_argument("--paths", nargs="+", default=list(PATHS),
                        help=f"what pytest runs (default: {' '.join(PATHS)})")
    parser.add_argument("--publish", action="store_true",
                        help="store the runs and write the table in docs/performance.md")
    options = parser.parse_args(argv)
    if options.publish and (options.pytest.strip() or tuple(options.paths) != PATHS):
        parser.error("--publish takes complete runs only: no --pytest, no --paths")
    bootstrap.ensure_chromium()
    bootstrap.ensure_proxy()
    results = [run_one(options.venvs, v, options.pytest.split(), options.paths) for v in options.versions]
    for _, row in results:
        say(line(row))
    if options.publish:
        say(f"wrote {publish([row for _, row in results])}")
    return 1 if any(code for code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
