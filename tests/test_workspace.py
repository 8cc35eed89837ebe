"""The learner's own copies: a lesson without its stored outputs, its exercises, never
overwritten, a practice link to the matching exercise, and a repository left clean."""

import shutil
import subprocess

import nbformat
import pytest

from course_utils.core.errors import CourseError
from course_utils.learner.workspace import practice, practice_links, start_lesson, workspace_dir
from tests.conftest import ROOT


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A throwaway copy of the course's notebook folders, with its default workspace."""
    monkeypatch.delenv("MPS_DETECTIVE_WORKSPACE", raising=False)
    for folder in ("exercises", "notebooks"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    return tmp_path


def outputs(path) -> int:
    return sum(len(c.get("outputs", [])) for c in nbformat.read(path, as_version=4).cells)


def test_start_lesson_copies_the_lesson_without_outputs_and_its_exercises(course):
    lesson, exercise = start_lesson("5", root=course)
    assert lesson == course / "workspace" / "lessons" / "05_non_contiguous_tensors.ipynb"
    assert exercise == course / "workspace" / "05_non_contiguous_tensors_exercises.ipynb"
    assert outputs(course / "notebooks" / lesson.name) > 0 and outputs(lesson) == 0
    stored = nbformat.read(course / "notebooks" / lesson.name, as_version=4)
    assert [c.source for c in nbformat.read(lesson, as_version=4).cells] == [c.source for c in stored.cells]
    assert (lesson.parent / "references.md").exists()  # the lesson's links still resolve
    assert exercise.read_bytes() == (course / "exercises" / lesson.name).read_bytes()
    assert exercise.name != lesson.name  # two JupyterLab tabs the learner can tell apart


def test_lesson_00_has_no_exercise_notebook_and_gets_only_its_lesson(course):
    assert [p.name for p in start_lesson("00", root=course)] == ["00_start_here.ipynb"]


def test_start_lesson_keeps_a_learners_copies_and_force_backs_them_up(course):
    lesson, exercise = start_lesson("01", root=course)
    lesson.write_text("my notes")
    exercise.write_text("my answers")
    start_lesson("01", root=course)
    assert lesson.read_text() == "my notes" and exercise.read_text() == "my answers"
    start_lesson("01", force=True, root=course)
    backups = sorted(p.read_text() for p in (course / "workspace" / "backups").glob("01_mps_setup*"))
    assert backups == ["my answers", "my notes"]
    assert outputs(lesson) == 0
    assert exercise.read_bytes() == (course / "exercises" / lesson.name).read_bytes()


def test_practice_makes_the_copy_once_and_links_to_the_exercise_heading(course, monkeypatch):
    monkeypatch.chdir(course / "notebooks")
    link = practice("05.view_or_copy", root=course)
    copy = course / "workspace" / "05_non_contiguous_tensors_exercises.ipynb"
    assert link.target == copy and copy.exists()
    heading = next(c for c in nbformat.read(copy, as_version=4).cells if "`05.view_or_copy`" in c.source)
    assert link.href() == f"../workspace/05_non_contiguous_tensors_exercises.ipynb#cell-id={heading.id}"
    assert "05.view_or_copy" in link._repr_html_() and "href='../workspace/" in link._repr_html_()
    copy.write_text("my answers")
    practice("05.is_contiguous", root=course)
    assert copy.read_text() == "my answers"  # first use only: never overwritten
    with pytest.raises(CourseError, match="no exercise '05.nope'"):
        practice("05.nope", root=course)


def test_the_workspace_is_ignored_by_git_so_running_a_lesson_there_leaves_the_checkout_clean():
    copy = workspace_dir(ROOT) / "lessons" / "00_start_here.ipynb"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(copy)], cwd=ROOT, check=False)
    assert ignored.returncode == 0, "workspace/ must be git-ignored"


@pytest.mark.slow
def test_running_a_lesson_as_a_learner_leaves_git_status_clean(tmp_path, monkeypatch):
    """In a fresh clone: copy lesson 01 as `course start` does, run all its cells (its practice
    links make the exercise copy too), and git sees no change at all."""
    from course_utils.author.execute import client

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    monkeypatch.delenv("MPS_DETECTIVE_WORKSPACE", raising=False)
    monkeypatch.setenv("MPS_DETECTIVE_ROOT", str(clone))
    monkeypatch.setenv("MPS_DETECTIVE_HOME", str(tmp_path / "progress"))
    lesson, exercises = start_lesson("01", root=clone)
    nb = nbformat.read(lesson, as_version=4)
    client(nb, lesson, timeout=180).execute()
    nbformat.write(nb, lesson)  # the learner saves their run
    assert outputs(lesson) > 0 and exercises.exists()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"running a lesson changed the checkout:\n{status}"


def test_practice_links_list_every_exercise_of_a_lesson_in_order(course, monkeypatch):
    monkeypatch.chdir(course / "notebooks")
    links = practice_links("03", root=course)
    assert [link.exercise_id for link in links.links] == ["03.honest_timer", "03.sync_lines",
                                                          "03.log_every_n"]
    assert repr(links).count("workspace/03_sync_and_timing_exercises.ipynb") == 3
    assert links._repr_html_().count("<a href=") == 3


def test_every_practice_link_in_a_lesson_names_an_exercise_of_that_lesson(course, monkeypatch):
    import re

    monkeypatch.chdir(course / "notebooks")
    named = [(path.name, ex_id) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
             for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
             for ex_id in re.findall(r'practice\("(\d\d\.\w+)"\)', cell.source)]
    assert len(named) >= 20, "each lesson section with an exercise links to it"
    for lesson, ex_id in named:
        assert lesson[:2] == ex_id[:2], f"{lesson} links to another lesson's {ex_id}"
        practice(ex_id, root=course)  # raises for an exercise its notebook does not have


def test_an_exercise_copy_under_the_older_name_keeps_being_the_learners_copy(course, monkeypatch):
    """A copy made as workspace/NN_slug.ipynb (before lessons and exercises had two names) is
    the one every link and command uses; nothing makes a second, empty copy beside it."""
    monkeypatch.chdir(course / "notebooks")
    older = course / "workspace" / "02_unified_memory.ipynb"
    older.parent.mkdir()
    older.write_text("my answers")
    assert start_lesson("02", root=course)[1] == older
    assert practice("02.state_bytes", root=course).target == older
    assert older.read_text() == "my answers"
    assert not (course / "workspace" / "02_unified_memory_exercises.ipynb").exists()
    start_lesson("02", force=True, root=course)  # starting over backs the older copy up first
    backups = [p.read_text() for p in (course / "workspace" / "backups").glob("02_unified_memory.*")]
    assert "my answers" in backups and older.read_text() != "my answers"


def test_next_lesson_makes_the_learners_copies_and_links_to_the_lesson(course, monkeypatch):
    from course_utils.learner.workspace import next_lesson

    lessons = course / "workspace" / "lessons"
    lessons.mkdir(parents=True)
    monkeypatch.chdir(lessons)  # where the learner's copy of the lesson before runs
    link = next_lesson("3", root=course)
    assert link.target == lessons / "03_sync_and_timing.ipynb" and outputs(link.target) == 0
    assert (course / "workspace" / "03_sync_and_timing_exercises.ipynb").exists()
    assert link.href() == "03_sync_and_timing.ipynb"
    assert "href='03_sync_and_timing.ipynb'" in link._repr_html_() and "lesson 03 · " in repr(link)
    link.target.write_text(link.target.read_text().replace("Sync and timing", "my notes"))
    next_lesson("03", root=course)
    assert "my notes" in link.target.read_text()  # a copy the learner has is kept


def test_every_lesson_but_the_last_ends_with_its_link_to_the_next_one():
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for lesson, following in zip(lessons[:-1], lessons[1:], strict=True):
        last = nbformat.read(lesson, as_version=4).cells[-1]
        assert last.cell_type == "code" and f'next_lesson("{following.name[:2]}")' in last.source, lesson.name
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in last.get("outputs", []))
        assert f"workspace/lessons/{following.name}" in shown, f"{lesson.name}: its stored link"
