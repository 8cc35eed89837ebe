"""``course author-test``: the authors' fast loop. One exercise, drill or ``course watch`` check, and
exactly the tests and notebooks that judge it, in seconds to a minute instead of the whole suite.

    course author-test 01.batch_bytes       # an exercise: its bank, mutant and call tests, its
                                            # solution notebook (strict nbval), exercises/ in sync
    course author-test losses.double_softmax # a drill: its form, symptom and fix tests
    course author-test watch:lost_update    # a watch check: the unit tests that name the kind, and
                                            # course watch on every benchmark pair that expects it

It runs from a checkout (the tests are not installed with the package).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError, course_root

EXERCISE_TESTS = ("test_bank.py", "test_mutation.py", "test_check_calls.py", "test_grading.py",
                  "test_bank_evidence.py")
DRILL_TESTS = ("test_drills.py", "test_drill_mode.py", "test_drill_cli.py")
NBVAL = ("--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
         "--nbval-cell-timeout", "180")


@dataclass
class Plan:
    """What to run for one id: pytest invocations and course commands, each a list of arguments."""

    subject: str
    steps: list[tuple[str, list[str]]] = field(default_factory=list)


def _existing(root: Path, names) -> list[str]:
    return [f"tests/{n}" for n in names if (root / "tests" / n).exists()]


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args]


def exercise_plan(root: Path, exercise_id: str) -> Plan:
    """An exercise: the tests parametrized by its id, its solution notebook, exercises/ in sync."""
    lesson = exercise_id.split(".", 1)[0]
    plan = Plan(f"exercise {exercise_id}")
    plan.steps.append(("its bank, mutant and call tests",
                       _pytest(*_existing(root, EXERCISE_TESTS), "-k", exercise_id)))
    notebooks = sorted((root / "solutions").glob(f"{lesson}_*.ipynb"))
    if notebooks:
        plan.steps.append((f"its solution notebook {notebooks[0].name} (strict nbval)",
                           _pytest(str(notebooks[0].relative_to(root)), *NBVAL)))
    plan.steps.append(("exercises/ in sync with solutions/",
                       [sys.executable, "-m", "course_utils.cli", "build-exercises", "--check"]))
    return plan


def drill_plan(root: Path, drill_id: str) -> Plan:
    """A drill: every test parametrized by its id (forms, symptom, fix, widget, terminal)."""
    plan = Plan(f"drill {drill_id}")
    plan.steps.append(("its drill tests", _pytest(*_existing(root, DRILL_TESTS), "-k", drill_id)))
    return plan


def watch_pairs(root: Path, kind: str) -> list[str]:
    """Benchmark pairs (``NAME_bug.py`` / ``NAME_fixed.py``) whose bug is expected to show ``kind``."""
    folder = root / "tests" / "benchmarks" / "watch_scripts"
    names = []
    for bug in sorted(folder.glob("*_bug.py")):
        found = re.search(r"^expect: (.*)$", bug.read_text(encoding="utf-8"), re.M)
        if found and kind in {k.strip() for k in found.group(1).split(",")}:
            names.append(bug.name[: -len("_bug.py")])
    return names


def watch_plan(root: Path, kind: str) -> Plan:
    """A watch check: the unit tests whose names mention the kind, and each benchmark pair for it."""
    from course_utils.toolkit.watch import KINDS

    if kind not in KINDS:
        raise CourseError(f"no course watch kind {kind!r}; kinds: {', '.join(sorted(KINDS))}")
    plan = Plan(f"course watch check {kind}")
    tests = sorted(str(p.relative_to(root)) for p in (root / "tests").glob("test_watch*.py"))
    plan.steps.append((f"unit tests whose names mention {kind}",
                       _pytest(*tests, "-k", kind.replace("-", "_"))))
    folder = root / "tests" / "benchmarks" / "watch_scripts"
    for name in watch_pairs(root, kind):
        for version in ("bug", "fixed"):
            script = folder / f"{name}_{version}.py"
            plan.steps.append((f"course watch {script.name} (expect {kind} "
                               f"{'named' if version == 'bug' else 'quiet'})",
                               [sys.executable, "-m", "course_utils.cli", "watch", str(script)]))
    return plan


def plan_for(subject: str, root: Path | None = None) -> Plan:
    """The plan for ``subject``: an exercise id, a drill id, or ``watch:KIND``."""
    from course_utils import bank, drills

    root = root or course_root()
    if not (root / "tests").is_dir():
        raise CourseError("course author-test runs from a checkout of the course (no tests/ here)")
    if subject.startswith("watch:"):
        return watch_plan(root, subject.split(":", 1)[1])
    if subject in bank.ids():
        return exercise_plan(root, subject)
    if subject in {d.id for d in drills.all_drills()}:
        return drill_plan(root, subject)
    raise CourseError(f"{subject!r} is neither an exercise id (e.g. 01.batch_bytes), a drill id "
                      "(e.g. losses.double_softmax) nor watch:KIND")


def run(subject: str) -> int:
    """Run the plan for ``subject`` step by step; 0 when every step passed."""
    root = course_root()
    plan = plan_for(subject, root)
    failed = []
    for number, (what, command) in enumerate(plan.steps, 1):
        print(f"[{number}/{len(plan.steps)}] {plan.subject}: {what}", flush=True)
        if subprocess.call(command, cwd=root):
            failed.append(what)
    print(f"{plan.subject}: " + ("all steps passed" if not failed else f"FAILED: {'; '.join(failed)}"))
    return 1 if failed else 0
