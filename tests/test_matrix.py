"""Does the version matrix pin the torch it names, read pytest's verdict right, and stay reachable
from bootstrap.py? (The matrix itself installs torch builds of gigabytes: it is run by hand or on CI,
not here.)"""

from __future__ import annotations

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
