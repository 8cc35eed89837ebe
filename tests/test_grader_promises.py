"""Does ``course grade`` keep its promises against a class folder or a submission built to break
them? Shown names stay distinct, every folder the walk skips is reported, one learner's folder
cannot use up a classmate's budget, a submission's work folder is removed however deep it is,
and a folder put where an output goes does not stop the final write.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from course_utils.grader import walk
from course_utils.grader.batch import Options, grade
from course_utils.grader.gradebook import Row, csv_text, json_text
from course_utils.grader.outputs import GradebookFiles
from course_utils.grader.sandbox import Limits, Sandbox, pickle_cases
from course_utils.grader.submissions import find
from course_utils.grader.tidy import remove_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux file names")


def empty_nb(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell("no code")]), path)
    return path


def test_do_distinct_file_names_stay_distinct_in_the_csv_and_the_json(tmp_path):
    names = [b"01_a\x01.ipynb", b"01_a\\x01.ipynb", b"01_b\xff.ipynb", b"01_b\\xff.ipynb",
             b"=01_c.ipynb", b"'=01_c.ipynb", b"''=01_c.ipynb", b"01_d\\.ipynb", b"01_d\\\\.ipynb",
             b"01_e\x1b[31m.ipynb", b"01_e\\x1b[31m.ipynb", b"01_f\t.ipynb", b"01_f\\x09.ipynb"]
    for name in names:
        os.close(os.open(os.path.join(os.fsencode(tmp_path), name), os.O_CREAT | os.O_WRONLY))
    found = find([tmp_path])
    rows = [Row(f.name, "01") for f in found]
    table = list(csv.reader(io.StringIO(csv_text(rows, []))))[1:]
    details = json.loads(json_text(rows, [], {}))["submissions"]
    assert len({r[0] for r in table}) == len(names)
    assert len({d["submission"] for d in details}) == len(names)
    assert all(r[0].isprintable() for r in table)


def test_does_each_learner_have_a_budget_of_their_own_and_is_every_skipped_folder_reported(
        tmp_path, monkeypatch):
    monkeypatch.setattr(walk, "MAX_ENTRIES", 40)
    monkeypatch.setattr(walk, "MAX_DEPTH", 4)
    venv = tmp_path / "class" / "alice" / "venv"
    for i in range(60):  # alice's uploaded environment, sorted before her notebook's folder
        (venv / f"pkg{i:02d}").mkdir(parents=True)
    empty_nb(tmp_path / "class" / "alice" / "work" / "01_alice.ipynb")
    empty_nb(tmp_path / "class" / "bob" / "01_bob.ipynb")
    empty_nb(tmp_path / "class" / "carol" / "a" / "b" / "c" / "d" / "e" / "01_carol.ipynb")
    graded = grade([tmp_path / "class"], Options(progress=False, flag_copies=False))
    rows = {r.name: r.note for r in graded.rows}
    assert "bob/01_bob.ipynb" in rows  # alice's environment did not use up bob's budget
    skipped = {name: note for name, note in rows.items() if name.endswith("/")}
    assert list(skipped) == ["alice/", "carol/a/b/c/d/"], rows
    assert "40 entries" in skipped["alice/"] and "4 folder levels" in skipped["carol/a/b/c/d/"]
    assert all("not searched" in note for note in skipped.values())


def deep_chain(top: Path, depth: int) -> None:
    """A chain of folders deeper than PATH_MAX, the last one unreadable, made by descriptor."""
    fd = os.open(top, os.O_RDONLY)
    for i in range(depth):
        os.mkdir("dd", dir_fd=fd)
        if i % 300 == 0:
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        down = os.open("dd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = down
    os.fchmod(fd, 0)
    os.close(fd)


def test_is_a_folder_chain_of_any_depth_removed_without_following_links(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    deep_chain(work, 1100)
    os.symlink(outside, work / "link")
    assert remove_tree(work) == []
    assert not work.exists() and (outside / "keep.txt").read_text() == "x"


CHAIN = """
import os
import subprocess
fd = os.open(".", os.O_RDONLY)
for _ in range(1100):  # past the recursion limit and, by path, past PATH_MAX
    os.mkdir("ddd", dir_fd=fd)
    down = os.open("ddd", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = down
print("made")
"""
DEEP_CELL = f"""
import subprocess, sys  # a child process: the chain is made at the file system's pace
print(subprocess.run([sys.executable, "-c", {CHAIN!r}], capture_output=True, text=True).stdout)
"""


def test_does_a_deep_chain_in_the_work_folder_neither_stop_the_run_nor_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    sandbox = Sandbox(Limits(timeout=120, memory_mb=0), isolate="guards")
    status = sandbox.run([DEEP_CELL], [], pickle_cases({}))
    sandbox.close()
    assert "made" in status.stdout and status.problem is None
    assert not sandbox.run_dir.exists()


def test_is_the_gradebook_written_where_a_folder_was_put_in_its_way(tmp_path):
    out = tmp_path / "gradebook.csv"
    files = GradebookFiles(out, tmp_path / "details.json")
    files.set_aside()
    out.mkdir()
    (out / "inside").mkdir()
    (tmp_path / "details.json").mkdir()
    from course_utils.grader.batch import Graded

    graded = Graded([Row("alice/01_a.ipynb", "01")], [], seed=1, elapsed_s=0.0)
    files.final(graded, Options())
    assert out.is_file() and "alice/01_a.ipynb" in out.read_text()
    assert json.loads((tmp_path / "details.json").read_text())["submissions"][0]["submission"]
    assert (tmp_path / "gradebook.csv.in-the-way-1" / "inside").is_dir()


# --- what a jailed submission sees: everything read-only, nothing of the run or another run -------

VIEW = r'''
import json, os, sys
work, home, others, outputs, classroom = sys.argv[1:6]
def writes(folder):
    try:
        with open(os.path.join(folder, "planted.py"), "w") as fh:
            fh.write("x = 1")
        return True
    except OSError:
        return False
def sees(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []
print(json.dumps({
    "writes": {name: writes(folder) for name, folder in [
        ("work", work), ("home", home), ("stdlib", os.path.dirname(os.__file__)),
        ("environment", sys.prefix), ("interpreter", os.path.dirname(os.path.realpath(sys.executable)))]},
    "another run": sees(others), "gradebook folder": sees(outputs), "class": sees(classroom),
    "fds": sorted(os.listdir("/proc/self/fd"))}))
'''


@pytest.mark.parametrize("tool", ["bwrap", "jail"])
def test_does_the_jail_show_everything_read_only_and_nothing_of_the_run_or_another_run(tmp_path, monkeypatch,
                                                                                      tool):
    from course_utils.grader import bwrap, isolation

    if tool == "jail":  # the built-in jail, where bubblewrap is not installed
        monkeypatch.setattr(bwrap, "binary", lambda: None)

    tmp = tmp_path / "tmp"  # TMPDIR of two runs at once
    run, other = tmp / "course-grade-this", tmp / "course-grade-other"
    for folder in (run / "submission-1", other / "submission-1"):
        folder.mkdir(parents=True)
    (other / "submission-1" / "plan.json").write_text("{}")
    outputs, classroom = tmp_path / "marks", tmp_path / "class"
    outputs.mkdir()
    (outputs / "gradebook.csv").write_text("alice,expected 42")
    classroom.mkdir()
    (classroom / "01_alice.ipynb").write_text("{}")
    iso = isolation.choose("auto", [str(classroom)], run, [str(outputs / "gradebook.csv")])
    if iso.mode != "namespaces":
        pytest.skip(f"no namespaces here: {iso.reason}")
    assert iso.tool == tool
    work = run / "submission-1"
    argv = [sys.executable, "-I", "-c", VIEW, str(work), os.path.expanduser("~"), str(other), str(outputs),
            str(classroom)]
    command = iso.wrap(run / "jail.json", argv, [], str(work))
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=work)
    facts = json.loads(done.stdout)
    assert facts["writes"] == {"work": True, "home": False, "stdlib": False, "environment": False,
                               "interpreter": False}, (iso.tool, done.stderr)
    assert facts["another run"] == facts["gradebook folder"] == facts["class"] == []
    assert not (outputs / "planted.py").exists()


def test_does_a_submission_write_its_results_to_a_file_no_path_leads_to(tmp_path):
    from course_utils.grader.sandbox import _unnamed_file

    fd = _unnamed_file(tmp_path)
    try:
        os.write(fd, b'{"event": "done"}\n')
        assert os.listdir(tmp_path) == []  # nothing another run's submission could append to
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)


def test_is_a_notebook_whose_shape_would_cost_gigabytes_refused_before_it_is_parsed(tmp_path):
    from course_utils.grader import submissions

    many = tmp_path / "01_many.ipynb"  # 100,001 empty objects: about 60 MB to validate, 300 KB on disk
    many.write_text('{"cells": [' + ",".join(["{}"] * (submissions.MAX_CONTAINERS + 1)) + "]}")
    deep = tmp_path / "01_deep.ipynb"
    deep.write_text('{"cells": [], "metadata": {"x": ' + "[" * 250 + "]" * 250 + "}}")
    braces_in_text = empty_nb(tmp_path / "01_text.ipynb")  # brackets inside strings are text
    nb = nbformat.read(braces_in_text, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("x = " + "[" * 300 + "]" * 300 + "  # {{{{ " * 2000))
    nbformat.write(nb, braces_in_text)
    assert "too many JSON objects" in submissions.load(many, many.name).malformed
    assert "nested deeper than" in submissions.load(deep, deep.name).malformed
    assert submissions.load(braces_in_text, braces_in_text.name).malformed is None
    for course_nb in Path(submissions.__file__).resolve().parents[2].glob("*/*.ipynb"):
        submissions.check_shape(course_nb.read_bytes())  # every notebook of the course passes


def test_are_the_gradebook_files_out_of_the_submissions_reach_while_they_run(tmp_path, monkeypatch):
    from course_utils.grader import batch, outputs

    seen = {}

    def graded_as(paths, options, progress=None):
        seen["private"], seen["progress"] = options.private, progress
        return batch.Graded([Row("01_a.ipynb", "01")], [], seed=1, elapsed_s=0.0)

    monkeypatch.setattr(batch, "grade", graded_as)
    out = tmp_path / "marks" / "gradebook.csv"
    outputs.grade_and_write([tmp_path], Options(progress=False), out, tmp_path / "details.json")
    assert set(seen["private"]) == {str(out), str(out.with_suffix(".html")), str(tmp_path / "details.json")}
    assert seen["progress"] is not None  # hidden there: rewritten as rows finish
    in_root = outputs.GradebookFiles(Path("/gradebook.csv"))
    assert outputs._progress(in_root, Options()) is None  # "/" cannot be hidden: written at the end
