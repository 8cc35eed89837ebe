"""Does the version matrix pin the torch it names, read pytest's verdict right, and stay reachable
from bootstrap.py? (The matrix itself installs torch builds of gigabytes: it is run by hand or on CI,
not here.)"""

from __future__ import annotations

import json
import re
import sys

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from course_utils import bootstrap, matrix
from tests.conftest import ROOT


def test_the_constraints_pin_exactly_the_torch_asked_for_and_keep_every_other_pin():
    pinned = matrix.pinned_constraints("2.6.0").splitlines()
    torch_lines = [line for line in pinned if re.match(r"torch\s*==", line)]
    assert torch_lines == ["torch==2.6.0"] and pinned[0] == "torch==2.6.0"
    others = [line for line in bootstrap.CONSTRAINTS.read_text().splitlines()
              if "==" in line and not line.startswith("torch==")]
    assert others and all(line in pinned for line in others)


@pytest.mark.parametrize("tail, expected", [
    ("1 failed, 820 passed, 14 skipped in 612.30s (0:10:12)", (820, 1, 14, 0)),
    ("900 passed in 10.0s", (900, 0, 0, 0)),
    ("2 errors, 3 passed, 1 skipped in 1.0s", (3, 0, 1, 2)),
    ("1 error in 0.5s", (0, 0, 0, 1)),
    ("", (0, 0, 0, 0)),
])
def test_pytests_summary_line_is_read_into_counts(tail, expected):
    found = matrix.counts(f"some output\n{tail}\n")
    assert (found["passed"], found["failed"], found["skipped"], found["error"]) == expected


def test_the_tested_versions_are_admitted_by_the_declared_range():
    text = (ROOT / "pyproject.toml").read_text()
    spec = next(Requirement(r).specifier for r in re.findall(r'"(torch[<>=!~][^"]*)"', text))
    assert all(Version(v) in spec for v in matrix.TESTED)
    assert min(matrix.TESTED, key=Version) == str(min(Version(s.version) for s in spec
                                                      if s.operator == ">=")) + ".0"


def test_bootstrap_hands_the_matrix_command_to_the_matrix_script(monkeypatch):
    calls = []
    monkeypatch.setattr(bootstrap, "run", lambda *cmd, env=None: calls.append(cmd) or 0)
    monkeypatch.setattr(bootstrap, "setup", lambda **kw: pytest.fail("the matrix must not touch .venv"))
    assert bootstrap.main(["matrix", "2.14.1"]) == 0
    assert calls == [(sys.executable, ROOT / "course_utils" / "matrix.py", "2.14.1")]


def _row(torch: str, ok: bool = True, passed: int = 10) -> dict:
    return {"torch": torch, "build": f"{torch}+cpu", "ok": ok, "passed": passed, "failed": 0 if ok else 1,
            "skipped": 2, "error": 0, "wall_s": 1800, "date": "2026-01-01", "machine": "x86_64 Linux"}


def test_publishing_a_version_replaces_its_own_row_and_keeps_the_others(tmp_path, monkeypatch):
    """Two versions run by two commands end in one table; a rerun replaces only its version's row."""
    (tmp_path / "performance.md").write_text(
        f"intro\n<!-- table {matrix.TABLE}: written by `x --publish`; do not edit -->\n| old |\n"
        f"<!-- end table {matrix.TABLE} -->\nafter\n")
    monkeypatch.setattr(matrix, "ROOT", tmp_path)
    (tmp_path / "tests" / "benchmarks").mkdir(parents=True)
    source = (ROOT / "tests" / "benchmarks" / "doc_tables.py").read_text()
    (tmp_path / "tests" / "benchmarks" / "doc_tables.py").write_text(source)
    (tmp_path / "docs").mkdir()
    (tmp_path / "performance.md").rename(tmp_path / "docs" / "performance.md")
    matrix.publish([_row("2.13.0", ok=False)])
    matrix.publish([_row("2.14.1")])
    matrix.publish([_row("2.13.0", passed=12)])
    stored = json.loads((tmp_path / "docs" / "figures" / f"{matrix.TABLE}.json").read_text())["rows"]
    assert sorted((r["torch"], r["ok"], r["passed"]) for r in stored) == [("2.13.0", True, 12),
                                                                          ("2.14.1", True, 10)]
    page = (tmp_path / "docs" / "performance.md").read_text()
    assert "| old |" not in page and page.startswith("intro\n") and page.endswith("after\n")
    rows = [r for r in page.splitlines() if r.startswith("| 2.")]
    assert [r.split(" | ")[0] for r in rows] == ["| 2.14.1+cpu", "| 2.13.0+cpu"]  # newest first
    assert all("| green |" in r for r in rows)


def test_a_failed_run_is_published_as_failed_with_its_counts():
    table = matrix.render([_row("2.14.1", ok=False, passed=7)])
    assert "| 2.14.1+cpu | **failed** | 7 | 1 | 2 | 0 | 30 min |" in table


@pytest.mark.parametrize("args", [["--publish", "--paths", "notebooks"], ["--publish", "--pytest", "-k x"]])
def test_a_partial_run_cannot_be_published(args, monkeypatch, capsys):
    monkeypatch.setattr(matrix, "run_one", lambda *a, **k: pytest.fail("nothing may run"))
    with pytest.raises(SystemExit) as stopped:
        matrix.main([*args, "2.14.1"])
    assert stopped.value.code == 2 and "complete runs only" in capsys.readouterr().err


def test_a_pytest_killed_from_outside_is_named_with_its_signal():
    """A master pytest killed by a signal prints no summary; its workers' only trace is 'cannot send'."""
    assert "killed by SIGKILL" in matrix.ending(-9, "bringing up nodes...\n..")
    assert "killed by SIGTERM" in matrix.ending(-15, "")
    assert "no summary" in matrix.ending(3, "INTERNALERROR> boom")
    assert matrix.ending(1, "1 failed, 9 passed in 3.0s") == matrix.ending(0, "9 passed in 1s") == ""
