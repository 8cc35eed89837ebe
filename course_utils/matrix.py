"""Run the course against each torch in the version matrix, each in its own virtual environment.

    python3 course_utils/bootstrap.py matrix                    # the tested matrix (TESTED below)
    python3 course_utils/bootstrap.py matrix 2.6.0 2.14.1       # or the versions you name
    python3 course_utils/bootstrap.py matrix --paths notebooks -- 2.14.1   # a part, one version
    python3 course_utils/matrix.py --venvs /tmp/m 2.14.1        # the same, run directly

For each version it makes (or reuses) ``<venvs>/torch-<version>`` (default ``build/matrix/``), writes
a constraints file that is ``constraints.txt`` with torch pinned to that version, installs torch first
and then the course with its ``dev`` extra under those constraints (so nothing can replace that
torch), and runs the unit tests and every lesson and solution under nbval-lax (errors fail, outputs
are not compared: they were stored from one torch). It prints one line per version: passed, failed,
skipped and errors, and the wall time; the exit status is non-zero if any version failed.

Standard library only, like bootstrap.py, whose helpers it reuses.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
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


def counts(output: str) -> dict[str, int]:
    """pytest's closing summary (``3 failed, 120 passed, 2 skipped in 40s``) as numbers."""
    summary = re.compile(r"\d+ (passed|failed|errors?)\b.* in ")
    summaries = [line for line in output.splitlines() if summary.search(line)]
    tail = summaries[-1] if summaries else ""
    found = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
             for n, kind in SUMMARY.findall(tail)}
    return {k: found.get(k, 0) for k in ("passed", "failed", "skipped", "error")}


def run_one(venvs: Path, version: str, extra: list[str], paths=PATHS) -> tuple[int, str]:
    """Install and test one torch; its exit status and a one-line summary."""
    start = time.monotonic()
    python = prepare(venvs / f"torch-{version}", version)
    seen = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, cwd=ROOT).stdout.strip()
    env = bootstrap.scratch_env()
    env["MPS_DETECTIVE_VENV"] = str(python.parent.parent)
    say(f"torch {version} (imports as {seen}): unit tests, lessons and solutions (nbval-lax)")
    returncode, output = streamed([str(python), *PYTEST, *paths, *extra], env)
    n = counts(output)
    line = (f"torch {seen or version}: {'ok' if returncode == 0 else 'FAILED'}: "
            f"{n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped, {n['error']} errors "
            f"in {time.monotonic() - start:.0f} s")
    return returncode, line


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
    options = parser.parse_args(argv)
    bootstrap.ensure_chromium()
    bootstrap.ensure_proxy()
    results = [run_one(options.venvs, v, options.pytest.split(), options.paths) for v in options.versions]
    for _, line in results:
        say(line)
    return 1 if any(code for code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
