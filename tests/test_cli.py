"""Does the course command keep a learner's work safe and explain every bad input?"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils import cli
from course_utils.core.errors import CourseError
from course_utils.grader.learner_check import check_notebook
from course_utils.learner.workspace import lesson_notebook, start
from tests.conftest import ROOT


@pytest.fixture
def course(tmp_path):
    """A throwaway copy of the course folders that `start` and `check` use."""
    for folder in ("exercises", "solutions", "notebooks"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    return tmp_path


def test_start_copies_the_exercise_into_the_workspace(course):
    target = start("1", root=course)
    assert target == course / "workspace" / "01_mps_setup_exercises.ipynb"
    assert target.read_bytes() == (course / "exercises" / "01_mps_setup.ipynb").read_bytes()


def test_start_never_overwrites_a_learners_copy(course):
    target = start("01", root=course)
    target.write_text("my precious work")
    with pytest.raises(CourseError, match="already exists and holds your work"):
        start("01", root=course)
    assert target.read_text() == "my precious work"


def test_start_force_keeps_a_timestamped_backup_first(course):
    target = start("01", root=course)
    target.write_text("my precious work")
    start("01", force=True, root=course)
    (backup,) = (course / "workspace" / "backups").glob("01_mps_setup_exercises.*.ipynb")
    assert backup.read_text() == "my precious work"
    assert target.read_text() != "my precious work"


def test_course_start_copies_the_lesson_and_its_exercises_and_keeps_them_on_a_second_start(
        course, monkeypatch, capsys):
    monkeypatch.setenv("MPS_DETECTIVE_ROOT", str(course))
    monkeypatch.delenv("MPS_DETECTIVE_WORKSPACE", raising=False)
    assert cli.main(["start", "3"]) == 0
    lesson = course / "workspace" / "lessons" / "03_sync_and_timing.ipynb"
    exercises = course / "workspace" / "03_sync_and_timing_exercises.ipynb"
    out = capsys.readouterr().out
    assert f"your lesson: {lesson} (new)" in out and f"your exercises: {exercises} (new)" in out
    assert not any(c.get("outputs") for c in nbformat.read(lesson, as_version=4).cells)
    lesson.write_text(lesson.read_text().replace("Sync and timing", "my notes"))
    assert cli.main(["start", "03"]) == 0
    assert "kept as you left it" in capsys.readouterr().out and "my notes" in lesson.read_text()
    assert cli.main(["start", "03", "--force"]) == 0
    assert "started over" in capsys.readouterr().out and "my notes" not in lesson.read_text()
    assert any("my notes" in b.read_text() for b in (course / "workspace" / "backups").iterdir())


def test_an_unknown_lesson_lists_the_lessons_there_are(course):
    with pytest.raises(CourseError, match="no lesson '42' in exercises/; lessons there: 01"):
        start("42", root=course)
    assert lesson_notebook(course / "notebooks", "0").name == "00_start_here.ipynb"


@pytest.mark.parametrize("content, words", [
    (None, "no such file"),
    ("{ not json", "not valid JSON"),
    ('{"hello": 1}', "JSON but not a notebook"),
    ('{"cells": "nope", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "malformed notebook"),
])
def test_check_explains_a_missing_or_broken_notebook(tmp_path, content, words):
    path = tmp_path / "01_mps_setup.ipynb"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CourseError, match=words):
        check_notebook(path)


@pytest.mark.slow
def test_check_grades_the_solution_as_all_pass_and_leaves_the_file_untouched(course):
    path = course / "solutions" / "01_mps_setup.ipynb"
    before = path.read_bytes()
    results = check_notebook(path)
    assert {r.exercise_id: r.result for r in results} == {
        "01.choose_device": "pass", "01.same_device": "pass", "01.batch_bytes": "pass",
        "01.read_report": "pass"}
    assert path.read_bytes() == before


@pytest.mark.slow
def test_check_reports_unsolved_and_failed_exercises_whether_or_not_check_ran(course, capfd,
                                                                              progress_home):
    path = start("01", root=course)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # a wrong answer to batch_bytes; delete the read_report check
        if "def batch_bytes" in cell.source:
            cell.source = "def batch_bytes(shape, dtype):\n    return 4\n"
        if 'check("01.read_report"' in cell.source:
            cell.source = "pass"
    nbformat.write(nb, path)
    assert cli.main(["check", str(path)]) == 1
    shown = capfd.readouterr()
    lines = {line.split()[0]: line for line in shown.out.splitlines() if line.startswith("01.")}
    unsolved = "unsolved     not solved yet: replace the NotImplementedError in its cell"
    assert lines["01.choose_device"] == f"{'01.choose_device':<22} {unsolved}"  # one line each
    assert lines["01.read_report"].endswith(unsolved)  # graded by its function, as course grade does
    assert "fail" in lines["01.batch_bytes"] and "failed on case" in lines["01.batch_bytes"]
    assert len(shown.out.splitlines()) == 6  # four exercises, a blank line, the total
    assert shown.err == ""  # no traceback, no kernel or reference warnings
    assert "course_utils" not in shown.out and "Traceback" not in shown.out
    assert not progress_home.exists()  # course check is no attempt of the learner's


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "course_utils.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_cli_errors_are_one_line_without_a_traceback(tmp_path):
    done = run_cli("check", str(tmp_path / "nope.ipynb"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"course check: {tmp_path / 'nope.ipynb'}: no such file"


def test_a_mistyped_exercise_id_is_one_line_naming_the_close_ids(capsys):
    assert cli.main(["mutants", "01.batch_byte"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # after the command's "[1/1] ..." progress line
    assert last.startswith("course mutants: no exercise '01.batch_byte'. Did you mean 01.batch_bytes")
    assert "Traceback" not in err


def test_a_bug_inside_a_command_shows_its_traceback_not_a_one_line_message(monkeypatch, capsys):
    from course_utils.core import progress

    def broken():
        return {}["exercises"]  # an internal KeyError: a bug, not the learner's mistake

    monkeypatch.setattr(progress, "rows", broken)
    with pytest.raises(KeyError, match="exercises"):
        cli.main(["progress"])
    assert "course progress:" not in capsys.readouterr().err


def test_cli_rejects_unknown_options_except_for_lab():
    assert run_cli("progress", "--bogus").returncode == 2


def test_progress_prints_a_table(capsys):
    from course_utils.core import progress

    progress.record_attempt("01.batch_bytes", passed=True)
    assert cli.main(["progress"]) == 0
    out = capsys.readouterr().out
    assert "01.batch_bytes" in out and "passed" in out


def test_build_exercises_check_fails_on_a_stale_copy(course, monkeypatch, capsys):
    monkeypatch.setenv("MPS_DETECTIVE_ROOT", str(course))
    assert cli.main(["build-exercises", "--check"]) == 0
    nb = json.loads((course / "exercises" / "01_mps_setup.ipynb").read_text())
    nb["cells"][1]["source"] = ["edited by hand"]
    (course / "exercises" / "01_mps_setup.ipynb").write_text(json.dumps(nb))
    assert cli.main(["build-exercises", "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert cli.main(["build-exercises"]) == 0
    assert cli.main(["build-exercises", "--check"]) == 0


def test_course_lab_turns_the_news_prompt_off_as_jupyterlab_reads_its_settings(tmp_path):
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import get_settings

    from course_utils.learner.lab import NEWS_SETTING, quiet_news

    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "overrides.json").write_text('{"@jupyterlab/x:y": {"a": 1}}')  # the user's own
    assert quiet_news(tmp_path).parent == settings / "overrides.d"
    assert json.loads((settings / "overrides.json").read_text()) == {"@jupyterlab/x:y": {"a": 1}}
    plugin, key = NEWS_SETTING
    schemas = Path(get_app_dir()) / "schemas"  # the schemas the installed JupyterLab serves
    found, _ = get_settings(str(settings), str(schemas), str(tmp_path / "user"), schema_name=plugin)
    assert found["schema"]["properties"][key]["default"] == "false"  # the prompt shows only on "none"


def test_course_lab_goes_on_where_the_environment_is_read_only(tmp_path):
    from course_utils.learner.lab import quiet_news

    (tmp_path / "settings").write_text("a file where the folder would be")
    assert quiet_news(tmp_path) is None


def test_course_lab_opens_the_learners_own_copy_of_lesson_00(course, monkeypatch):
    monkeypatch.setenv("MPS_DETECTIVE_ROOT", str(course))
    monkeypatch.delenv("MPS_DETECTIVE_WORKSPACE", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a shell where the course's environment is not active
    from course_utils.learner import lab

    monkeypatch.setattr(lab, "quiet_news", lambda: None)  # never the real environment's settings
    launched = []
    monkeypatch.setattr(lab.subprocess, "call", lambda cmd, cwd, env: launched.append((cmd, cwd, env)) or 0)
    assert cli.main(["lab", "--no-browser"]) == 0
    (cmd, cwd, env), = launched
    copy = course / "workspace" / "lessons" / "00_start_here.ipynb"
    # The URL the server prints (and opens) is lesson 00's copy, not the Launcher.
    assert f"--ServerApp.root_dir={course}" in cmd
    assert "--LabApp.default_url=/lab/tree/workspace/lessons/00_start_here.ipynb" in cmd
    assert "--no-browser" in cmd and cwd == course
    # The server, its kernels and terminals find `course`; the course's Jupyter settings load.
    assert env["PATH"].split(os.pathsep) == [str(Path(sys.executable).parent), "/usr/bin", "/bin"]
    config = Path(env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0])
    assert "overflow-wrap: anywhere" in (config / "custom" / "custom.css").read_text()
    assert (config / "jupyter_server_config.py").is_file()
    assert not any(c.get("outputs") for c in nbformat.read(copy, as_version=4).cells)  # unspoiled
    copy.write_text(copy.read_text().replace("Start here", "my notes"))
    assert cli.main(["lab"]) == 0
    assert "my notes" in copy.read_text()  # a second start keeps the learner's copy
