"""``course author-test``: each kind of id maps to exactly its own tests and notebooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.author.author_loop import plan_for, watch_pairs
from course_utils.core.errors import CourseError

ROOT = Path(__file__).resolve().parents[1]


def _collected(command: list[str]) -> list[str]:
    """The test ids a pytest step of a plan would run (collected, not run)."""
    out = subprocess.run([*command, "--collect-only"], cwd=ROOT, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_an_exercise_runs_its_own_tests_its_solution_notebook_and_the_sync_check():
    plan = plan_for("01.batch_bytes", ROOT)
    tests = _collected(plan.steps[0][1])
    assert tests and all("01.batch_bytes" in t for t in tests)
    assert any("mutant" in t for t in tests), "its hand mutants must be among its tests"
    assert "solutions/01_mps_setup.ipynb" in plan.steps[1][1]
    assert plan.steps[2][1][-2:] == ["build-exercises", "--check"]


def test_a_drill_runs_only_tests_that_name_it():
    plan = plan_for("losses.double_softmax", ROOT)
    tests = _collected(plan.steps[0][1])
    assert tests and all("losses.double_softmax" in t for t in tests)


def test_a_watch_kind_runs_every_benchmark_pair_that_expects_it():
    pairs = watch_pairs(ROOT, "broadcast")
    assert pairs, "the benchmark has pairs that expect a broadcast"
    steps = plan_for("watch:broadcast", ROOT).steps
    scripts = [Path(cmd[-1]).name for _, cmd in steps[1:]]
    assert scripts == [f"{n}_{v}.py" for n in pairs for v in ("bug", "fixed")]


@pytest.mark.parametrize("subject", ["99.nothing", "losses.nothing", "watch:nothing"])
def test_an_unknown_id_is_a_clear_error(subject):
    with pytest.raises(CourseError, match="nothing"):
        plan_for(subject, ROOT)


def test_the_command_is_wired(tmp_path):
    out = subprocess.run([sys.executable, "-m", "course_utils.cli", "author-test", "99.nothing"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and "neither an exercise id" in out.stderr
