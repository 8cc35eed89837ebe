"""Does ``bootstrap.py colab`` install the course without replacing the torch already there, refuse a
torch outside the declared range before pip runs, and read the range and versions right?"""

from __future__ import annotations

import json
import sys

import pytest

from course_utils import bootstrap, colab
from tests.conftest import ROOT


@pytest.mark.slow
def test_pips_plan_for_the_install_line_keeps_the_torch_already_installed(tmp_path, capsys):
    """A real ``pip install --dry-run`` of the install line into this environment (its torch: 2.13.0
    on CPU, a CUDA 2.14.1 in the version matrix): the plan holds the course and no torch."""
    have = colab.installed_torch(sys.executable)
    code = colab.main(["--dry-run", "--work", str(tmp_path), "--pip-args", "--no-index --no-build-isolation"])
    planned = colab.would_install(tmp_path / "colab-report.json")
    assert code == 0, capsys.readouterr().out
    assert [name for name, _ in planned] == ["mps-detective"]
    assert (tmp_path / "colab-constraints.txt").read_text() == f"torch=={have}\n"
    assert colab.installed_torch(sys.executable) == have


def test_a_plan_that_would_replace_torch_fails_the_dry_run(tmp_path, monkeypatch, capsys):
    def pip(cmd, cwd):
        report = cmd[cmd.index("--report") + 1]
        plan = (("torch", "2.14.1"), ("mps-detective", "0.1.0"))
        items = [{"metadata": {"name": n, "version": v}} for n, v in plan]
        (tmp_path / "colab-report.json").write_text(json.dumps({"install": items}))
        assert report == str(tmp_path / "colab-report.json") and "-c" in cmd
        return 0

    monkeypatch.setattr(colab, "installed_torch", lambda python: "2.13.0+cpu")
    monkeypatch.setattr(colab.subprocess, "call", pip)
    assert colab.main(["--dry-run", "--work", str(tmp_path)]) == 1
    assert "torch 2.14.1" in capsys.readouterr().out


@pytest.mark.parametrize("runtime", ["2.9.0+cu126", "2.12.1", "2.15.0", "2.15.0.dev20260301+cu128", "3.0"])
def test_a_runtime_torch_outside_the_range_is_refused_before_pip_runs(runtime, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(colab, "installed_torch", lambda python: runtime)
    monkeypatch.setattr(colab.subprocess, "call", lambda *a, **k: pytest.fail("pip must not run"))
    assert colab.main(["--work", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"torch {runtime} is outside" in out and "nothing installed" in out


def test_an_install_that_changed_torch_anyway_is_an_error(tmp_path, monkeypatch, capsys):
    seen = iter(["2.13.0+cu126", "2.14.1+cu130"])
    monkeypatch.setattr(colab, "installed_torch", lambda python: next(seen))
    monkeypatch.setattr(colab.subprocess, "call", lambda *a, **k: 0)
    assert colab.main(["--work", str(tmp_path)]) == 1
    assert "torch changed from 2.13.0+cu126 to 2.14.1+cu130" in capsys.readouterr().out


@pytest.mark.parametrize("version, inside", [
    ("2.13.0", True), ("2.13", True), ("2.13.0+cu126", True), ("2.14.1+cpu", True), ("2.14.99", True),
    ("2.12.9", False), ("2.15.0", False), ("2.15", False), ("2.15.0rc1", False), ("10.13.0", False),
    ("2.6.0", False),
])
def test_versions_are_compared_by_their_release_numbers(version, inside):
    assert colab.admitted(version, [(">=", "2.13"), ("<", "2.15")]) is inside


def test_the_range_read_is_the_one_pyproject_declares():
    text = (ROOT / "pyproject.toml").read_text()
    spec = colab.declared_range()
    assert f'"torch{",".join(op + v for op, v in spec)}"' in text.replace(" ", "")
    assert any(op.startswith(">") for op, _ in spec) and any(op.startswith("<") for op, _ in spec)


def test_bootstrap_hands_the_colab_command_to_its_script(monkeypatch):
    calls = []
    monkeypatch.setattr(bootstrap, "run", lambda *cmd, env=None: calls.append(cmd) or 0)
    monkeypatch.setattr(bootstrap, "setup", lambda **kw: pytest.fail("colab must not make .venv"))
    assert bootstrap.main(["colab", "--dry-run"]) == 0
    assert calls == [(sys.executable, ROOT / "course_utils" / "colab.py", "--dry-run")]
