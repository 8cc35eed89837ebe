"""The ``course`` command: doctor, lab, start, check, progress, build-exercises, run-notebooks,
grade, collect, hub-config, drill, watch."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from course_utils.core.errors import CourseError, course_root
from course_utils.core.registry import UnknownId
from course_utils.learner.lab import NEWS_SETTING, quiet_news  # noqa: F401 - importable from here as before


def _doctor(args) -> int:
    from course_utils.learner import doctor

    return doctor.main()


def _lab(args) -> int:
    """``course lab``: JupyterLab at the learner's own copy of lesson 00 (``course.lab.open_lab``)."""
    from course_utils.learner import lab

    return lab.open_lab(args.jupyter_args)


def _start(args) -> int:
    """Copy lesson NN (outputs cleared) and its exercises into the workspace; say which copies
    are new and which were kept (they hold the learner's work; --force backs them up first)."""
    from course_utils.learner.workspace import start_lesson

    existed = _existing_copies(args.lesson)
    for copy in start_lesson(args.lesson, force=args.force):
        what = "exercises" if copy.parent.name != "lessons" else "lesson"
        state = ("started over (a backup of yours is in backups/)" if args.force and copy in existed
                 else "kept as you left it" if copy in existed else "new")
        print(f"your {what}: {copy} ({state})")
    print("Open them in JupyterLab (course lab); they are yours: nothing overwrites them.")
    return 0


def _existing_copies(lesson: str) -> set[Path]:
    from course_utils.learner.workspace import exercise_copy, lesson_notebook, workspace_dir

    source = lesson_notebook(course_root() / "notebooks", lesson)
    here = workspace_dir(course_root())
    return {p for p in (here / "lessons" / source.name, exercise_copy(source, here)) if p.exists()}


def _check(args) -> int:
    from course_utils.grader.learner_check import check_notebook

    results = check_notebook(Path(args.path), timeout=args.timeout, seed=args.seed,
                             memory_mb=args.memory)
    if not results:
        print(f"{args.path}: no exercises found (is it named NN_*.ipynb after its lesson?)")
        return 1
    for r in results:
        first = r.detail.splitlines()[0] if r.detail else ""
        print(f"{r.exercise_id:<22} {r.result:<12} {first}")
    graded = [r for r in results if r.result != "not graded"]
    passed = sum(r.result == "pass" for r in graded)
    print(f"\n{passed} of {len(graded)} graded exercises pass")
    return 0 if passed == len(graded) else 1


def _progress(args) -> int:
    from course_utils.core import progress

    rows = progress.rows()
    print(f"progress file: {progress.path()}")
    _mention_feedback()
    if not rows:
        print("nothing yet: solve an exercise with check() or take a lesson's quiz")
        return 0
    print(f"{'item':<24} {'status':<16} {'attempts':>8}  detail")
    for item, status, attempts, detail in rows:
        print(f"{item:<24} {status:<16} {attempts:>8}  {detail}")
    if progress.load().get("drill_sessions"):
        from course_utils.learner.drilling.plan import plan_text

        print("\n" + plan_text())
    return 0


def _mention_feedback() -> None:
    """Say where the instructor's feedback is, when there is some."""
    from course_utils.instructor.feedback_release import latest_pages
    from course_utils.learner.workspace import workspace_dir

    pages = latest_pages(workspace_dir())
    if pages:
        print(f"feedback from your instructor: {pages[0]} (open it in JupyterLab; "
              f"{len(pages)} page(s) in {pages[0].parent})")


def _build_exercises(args) -> int:
    from course_utils.author.authoring import build

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
    from course_utils.author.execute import execute_all
    from course_utils.bootstrap import scratch_env

    os.environ.update(scratch_env())  # CPU reference run; progress kept out of the learner's file
    root = course_root()
    paths = [Path(p) for p in args.paths] or sorted(
        [*(root / "notebooks").glob("*.ipynb"), *(root / "solutions").glob("*.ipynb")])
    changed = execute_all(paths, timeout=args.timeout, refresh=args.refresh)
    print(f"re-executed {len(paths)} notebooks; {len(changed)} changed")
    return 0


def _grade(args) -> int:
    """``course grade``: each submission in a fresh, limited process; gradebook, report, JSON."""
    from course_utils.grader.batch import Options
    from course_utils.grader.outputs import grade_and_write
    from course_utils.grader.sandbox import MIN_MEMORY_MB, Limits

    if args.jobs < 1 or args.timeout <= 0 or args.memory < 0:
        raise CourseError("--jobs must be >= 1, --timeout > 0 and --memory >= 0 (0: no limit)")
    if args.lesson is not None and not (args.lesson.isdigit() and len(args.lesson) <= 2):
        raise CourseError(f"--lesson takes a lesson number such as 01, not '{args.lesson}'")
    if 0 < args.memory < MIN_MEMORY_MB:
        print(f"course grade: warning: --memory {args.memory} is below the ~{MIN_MEMORY_MB} MB that "
              "importing torch needs; every submission may fail", file=sys.stderr)
    limits = Limits(timeout=args.timeout, memory_mb=args.memory)
    options = Options(limits=limits, jobs=args.jobs, seed=args.seed, reap_orphans=True,
                      lesson=args.lesson.zfill(2) if args.lesson else None, isolation=args.isolation)
    details = Path(args.json) if args.json else None
    if args.feedback and details is None:  # the pages are built from the details
        details = Path(args.out).with_suffix(".details.json")
    code = grade_and_write(args.paths, options, Path(args.out), details,
                           Path(args.lms) if args.lms else None)
    if args.feedback and code == 0:
        _write_feedback(args.paths, details, Path(args.feedback))
    return code


def _write_feedback(paths: list[str], details: Path, out: Path) -> None:
    """``course grade --feedback DIR``: a page per learner from the run's details."""
    import json

    from course_utils.grader.feedback import write_pages
    from course_utils.grader.lms import LmsFile

    learner_of, _ = LmsFile(out / "unused.csv", [Path(p) for p in paths]).learners()
    written = write_pages(json.loads(details.read_text(encoding="utf-8")), learner_of, out)
    print(f"feedback: {sum(map(len, written.values())) // 2} page(s) for {len(written)} learner(s) "
          f"in {out}; next: course feedback release {out} HOME...")


def _feedback(args) -> int:
    """``course feedback release``: each learner's pages into their own workspace."""
    from course_utils.instructor import feedback_release

    done = feedback_release.release(Path(args.feedback), args.homes, strip_prefix=args.strip_prefix)
    print(feedback_release.report(done))
    return 0


def _collect(args) -> int:
    """``course collect``: each learner's exercise notebooks into a new class folder."""
    from course_utils.instructor import collect

    print(collect.report(collect.collect(args.homes, Path(args.out), strip_prefix=args.strip_prefix)))
    return 0


def _hub_config(args) -> int:
    """``course hub-config``: the course on JupyterHub 6 (plain, TLJH or z2jh)."""
    from course_utils.jupyter.hub import hub_config

    print(hub_config(args.flavour, Path(args.out) if args.out else None, args.prefix, args.source))
    return 0


def _mutants(args) -> int:
    """``course mutants``: the automatic mutants of each exercise's reference, run through check()."""
    if args.drills:  # the fix-it drills' tables
        from course_utils.drills.fix_mutants import report

        return report(args.ids)
    from course_utils import bank
    from course_utils.author import mutation

    ids = args.ids or bank.ids()
    scores = []
    for i, exercise_id in enumerate(ids, 1):
        print(f"[{i}/{len(ids)}] {exercise_id}", file=sys.stderr, flush=True)
        scores.append(mutation.score(bank.get(exercise_id)))
    print(mutation.table(scores))
    return 0 if all(not s.survivors and not s.stale for s in scores) else 1


def _author_test(args) -> int:
    """``course author-test ID``: one exercise, drill or watch check, and exactly its tests."""
    from course_utils.author.author_loop import run

    return run(args.subject)


def _drill(args) -> int:
    """``course drill``: lesson 08's timed spot-the-bug drills in the terminal."""
    from course_utils.learner.drilling.terminal import play_round

    adaptive = args.seed is None and args.category is None and not args.random
    return play_round(category=args.category, count=args.count, seed=args.seed, allow_pipe=args.stdin,
                      adaptive=adaptive)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="course", description="MPS Detective course tools")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check this machine's setup").set_defaults(fn=_doctor)
    lab = sub.add_parser("lab", help="open JupyterLab at your copy of lesson 00 (other options go to "
                                     "jupyter)")
    lab.set_defaults(fn=_lab)
    st = sub.add_parser("start", help="copy lesson NN (outputs cleared) and its exercises into "
                                      "workspace/; never overwrites")
    st.add_argument("lesson", help="lesson number, e.g. 01")
    st.add_argument("--force", action="store_true", help="start over (keeps a backup)")
    st.set_defaults(fn=_start)
    ck = sub.add_parser("check", help="grade your notebook exactly as course grade would")
    ck.add_argument("path")
    ck.add_argument("--timeout", type=float, default=300,
                    help="seconds for the whole notebook (a cell or an exercise: a quarter)")
    ck.add_argument("--seed", type=int, default=None, help="draw the random cases from this seed")
    ck.add_argument("--memory", type=int, default=4096, help="MB of address space (0: no limit)")
    ck.set_defaults(fn=_check)
    sub.add_parser("progress", help="show your progress").set_defaults(fn=_progress)
    be = sub.add_parser("build-exercises", help="generate exercises/ from solutions/")
    be.add_argument("--check", action="store_true", help="exit 1 if exercises/ is stale")
    be.set_defaults(fn=_build_exercises)
    rn = sub.add_parser("run-notebooks", help="re-execute lessons and solutions, store outputs")
    rn.add_argument("paths", nargs="*", help="notebooks (default: notebooks/ and solutions/)")
    rn.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    rn.add_argument("--refresh", action="store_true", help="store every new output, also where it "
                    "differs from the stored one only in timings, measured ratios or a plot's pixels")
    rn.set_defaults(fn=_run_notebooks)
    gr = sub.add_parser("grade", help="(instructors) grade a class's notebooks, each in a fresh, "
                        "limited process; write a gradebook and a class report")
    gr.add_argument("paths", nargs="+", metavar="PATH", help="submitted notebooks or folders of them")
    gr.add_argument("--out", required=True, help="gradebook CSV (the HTML report goes beside it)")
    gr.add_argument("--json", help="also write every detail (cases, expected, got, output) here")
    gr.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel (default 1)")
    gr.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per submission (wall time less time spent waiting for a CPU, at most 3x "
                         "in all); a cell or one exercise gets a quarter")
    gr.add_argument("--memory", type=int, default=2048,
                    help="address-space limit per submission in MB (default 2048; 0: none), "
                         "plus what a CUDA torch's GPU libraries map")
    gr.add_argument("--seed", type=int, help="seed of the random cases (default: fresh, reported)")
    gr.add_argument("--lesson", help="grade every notebook as lesson NN (default: from NN_ file names)")
    gr.add_argument("--isolation", choices=("auto", "namespaces", "guards"), default="auto",
                    help="namespaces: the course is hidden from submissions (Linux); guards: in-process "
                    "guards only; auto (default): namespaces where they work")
    gr.add_argument("--lms", help="also write an LMS-friendly CSV here: one row per learner (the "
                    "folder below the class folder), total, possible, percent")
    gr.add_argument("--feedback", metavar="DIR", help="also write one feedback page per learner "
                    "into DIR (for course feedback release)")
    gr.set_defaults(fn=_grade)
    fb = sub.add_parser("feedback", help="(instructors) release each learner's feedback pages into "
                        "their workspace: course feedback release DIR HOME...")
    fb.add_argument("action", choices=("release",))
    fb.add_argument("feedback", metavar="DIR", help="the folder course grade --feedback wrote")
    fb.add_argument("homes", nargs="+", metavar="HOME", help="learners' homes, or folders of them")
    fb.add_argument("--strip-prefix", default="", help="drop this prefix from learner names "
                    "(jupyter- on TLJH), as for course collect")
    fb.set_defaults(fn=_feedback)
    co = sub.add_parser("collect", help="(instructors) copy each learner's exercise notebooks into a "
                        "new class folder, CLASS/<learner>/NN_slug.ipynb, for course grade")
    co.add_argument("homes", nargs="+", metavar="HOME", help="learners' homes, or folders of them (/home)")
    co.add_argument("--out", required=True, help="the class folder: must be new (or empty)")
    co.add_argument("--strip-prefix", default="", help="drop this prefix from learner names "
                    "(jupyter- on TLJH)")
    co.set_defaults(fn=_collect)
    hc = sub.add_parser("hub-config", help="(instructors) the course on JupyterHub 6: print or write "
                        "its configuration")
    hc.add_argument("--flavour", choices=("plain", "tljh", "z2jh"), default="plain",
                    help="plain jupyterhub_config.py (default), The Littlest JupyterHub, or z2jh")
    hc.add_argument("--out", help="write the files into this folder (default: print them)")
    hc.add_argument("--prefix", help="the course's Python environment on the server (default: this "
                    "one for plain, /opt/mps-detective/.venv otherwise)")
    hc.add_argument("--source", help="the course checkout on the server (default: this one for "
                    "plain, /opt/mps-detective otherwise)")
    hc.set_defaults(fn=_hub_config)
    dr = sub.add_parser("drill", help="timed spot-the-bug drills in the terminal (lesson 08)")
    dr.add_argument("--category", help="drills of one category only (e.g. losses, data, numerics)")
    dr.add_argument("--count", type=int, default=5, help="drills in the round (default 5)")
    dr.add_argument("--seed", type=int, help="fixes the drills and their order (default: fresh, printed)")
    dr.add_argument("--random", action="store_true", help="a random round instead of one drawn from "
                    "your missed drills and weakest categories (the default)")
    dr.add_argument("--stdin", action="store_true",
                    help="read the answers from a pipe instead of a terminal")
    dr.set_defaults(fn=_drill)
    mu = sub.add_parser("mutants", help="(authors) automatic mutants of each reference: killed, "
                        "declared equivalent, surviving")
    mu.add_argument("ids", nargs="*", help="exercise ids (default: all), or drill ids with --drills")
    mu.add_argument("--drills", action="store_true", help="the fix-it drills instead: every fix "
                    "accepted, every degenerate edit of the fixed code rejected")
    mu.set_defaults(fn=_mutants)
    at = sub.add_parser("author-test", help="(authors) run exactly the tests and notebooks of one "
                        "exercise, drill or watch check")
    at.add_argument("subject", help="an exercise id (01.batch_bytes), a drill id "
                    "(losses.double_softmax) or watch:KIND")
    at.set_defaults(fn=_author_test)
    sub.add_parser("watch", add_help=False, help="run a training script unmodified and report silent "
                   "training bugs: course watch [--json F] [--html F] script.py [args...]")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``course`` console command."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["watch"]:  # its own options, then the script's arguments, untouched
        from course_utils.toolkit.watch.command import main as watch

        return watch(argv[1:])
    p = parser()
    args, extra = p.parse_known_args(argv)
    if extra and args.command != "lab":
        p.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = extra
    try:
        return args.fn(args)
    except (CourseError, UnknownId) as err:  # the user's mistake, explained: one line, exit 2
        print(f"course {args.command}: {err}", file=sys.stderr)
        return 2
    # Anything else is a bug of the course: it shows its traceback.


if __name__ == "__main__":
    sys.exit(main())
