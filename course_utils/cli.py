"""The ``course`` command: doctor, lab, start, check, progress, build-exercises, run-notebooks."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from course_utils.learner import CourseError, course_root


def _doctor(args) -> int:
    from course_utils import doctor

    return doctor.main()


def _lab(args) -> int:
    root = course_root()
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={root}",
           "notebooks/00_start_here.ipynb", *args.jupyter_args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers often run as root; Jupyter refuses it otherwise
    print(f"opening JupyterLab at lesson 00 ({root / 'notebooks/00_start_here.ipynb'})")
    return subprocess.call(cmd, cwd=root)


def _start(args) -> int:
    from course_utils.learner import start

    target = start(args.lesson, force=args.force)
    print(f"your copy: {target} (open it in JupyterLab; it is yours, nothing overwrites it)")
    return 0


def _check(args) -> int:
    from course_utils.learner import check_notebook

    results = check_notebook(Path(args.path), timeout=args.timeout)
    if not results:
        print(f"{args.path}: no exercises found (no check() ran and the lesson has none)")
        return 1
    for r in results:
        first = r.detail.splitlines()[0] if r.detail else ""
        print(f"{r.exercise_id:<22} {r.result:<12} {first}")
    passed = sum(r.result == "pass" for r in results)
    print(f"\n{passed} of {len(results)} exercises pass")
    return 0 if passed == len(results) else 1


def _progress(args) -> int:
    from course_utils import progress

    rows = progress.rows()
    print(f"progress file: {progress.path()}")
    if not rows:
        print("nothing yet: solve an exercise with check() or take a lesson's quiz")
        return 0
    print(f"{'item':<24} {'status':<16} {'attempts':>8}  detail")
    for item, status, attempts, detail in rows:
        print(f"{item:<24} {status:<16} {attempts:>8}  {detail}")
    return 0


def _build_exercises(args) -> int:
    from course_utils.authoring import build

    root = course_root()
    changed = build(root / "solutions", root / "exercises", check=args.check)
    if args.check and changed:
        names = ", ".join(p.name for p in changed)
        print(f"exercises/ is out of date with solutions/: {names}. Run: course build-exercises")
        return 1
    verb = "up to date" if not changed else f"wrote {len(changed)}"
    print(f"exercises/: {verb}")
    return 0


def _run_notebooks(args) -> int:
    from course_utils.bootstrap import scratch_env
    from course_utils.execute import execute_all

    os.environ.update(scratch_env())  # CPU reference run; progress kept out of the learner's file
    root = course_root()
    paths = [Path(p) for p in args.paths] or sorted(
        [*(root / "notebooks").glob("*.ipynb"), *(root / "solutions").glob("*.ipynb")])
    changed = execute_all(paths, timeout=args.timeout)
    print(f"re-executed {len(paths)} notebooks; {len(changed)} changed")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="course", description="MPS Detective course tools")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check this machine's setup").set_defaults(fn=_doctor)
    lab = sub.add_parser("lab", help="open JupyterLab at lesson 00 (other options go to jupyter)")
    lab.set_defaults(fn=_lab)
    st = sub.add_parser("start", help="copy exercise notebook NN into workspace/")
    st.add_argument("lesson", help="lesson number, e.g. 01")
    st.add_argument("--force", action="store_true", help="start over (keeps a backup)")
    st.set_defaults(fn=_start)
    ck = sub.add_parser("check", help="run a notebook in a fresh kernel and grade its exercises")
    ck.add_argument("path")
    ck.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    ck.set_defaults(fn=_check)
    sub.add_parser("progress", help="show your progress").set_defaults(fn=_progress)
    be = sub.add_parser("build-exercises", help="generate exercises/ from solutions/")
    be.add_argument("--check", action="store_true", help="exit 1 if exercises/ is stale")
    be.set_defaults(fn=_build_exercises)
    rn = sub.add_parser("run-notebooks", help="re-execute lessons and solutions, store outputs")
    rn.add_argument("paths", nargs="*", help="notebooks (default: notebooks/ and solutions/)")
    rn.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    rn.set_defaults(fn=_run_notebooks)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``course`` console command."""
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "lab":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    try:
        return args.fn(args)
    except (CourseError, KeyError) as err:
        print(f"course {args.command}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
