"""Does ``course grade`` survive what a class folder or a submission can do to it?

File-system oddities are made here, at test time, in tmp_path (never in git): a FIFO, a link to
/dev/zero, links out of the class folder and into the course's solutions, a non-UTF-8 file name, a
formula for a name. Then the grader itself is interrupted, killed and stopped, and the pieces
that keep the references out of reach (the in-process guard, the namespaces) are tested alone.
The notebooks that need a submission's process are in the fixture class (test_grader_class.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_utils import cli
from course_utils.core.compare import mismatch
from course_utils.grader import isolation, outputs, submissions, text
from course_utils.grader.batch import INTERRUPTED, PENDING, Graded, Options, grade
from course_utils.grader.gradebook import Row
from course_utils.grader.judging import Verdict
from course_utils.grader.results import read_results, read_results_fd
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
GRADER = ROOT / "course_utils" / "grader"
FORMULA = ("=", "+", "-", "@")


def write_nb(path: Path, *sources: str, **meta) -> Path:
    nb = new_notebook(cells=[new_markdown_cell("# a submission")] + [new_code_cell(s) for s in sources])
    nb.metadata.update(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def run_grade(args: list[str], out: Path) -> tuple[int, list[dict], dict]:
    code = cli.main(["grade", *args, "--out", str(out / "gradebook.csv"), "--json", str(out / "details.json"),
                     "--seed", "3"])
    rows = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_bytes().decode("utf-8"))))
    return code, rows, json.loads((out / "details.json").read_bytes().decode("utf-8"))


# --- the class folder: every path a row, nothing read that is not a regular file ---------------------


@pytest.mark.timeout(120)
def test_is_every_odd_path_in_a_class_folder_a_row_named_as_given(tmp_path):
    cls = tmp_path / "class"
    write_nb(cls / "alice" / "01_x.ipynb")  # no code: graded without a process
    (cls / "bob").mkdir()
    (cls / "bob" / "01_x.ipynb").symlink_to("../alice/01_x.ipynb")  # a classmate's file
    (cls / "carol").mkdir()
    os.mkfifo(cls / "carol" / "01_x.ipynb")  # nobody ever writes to it
    (cls / "dave").mkdir()
    (cls / "dave" / "01_x.ipynb").symlink_to("/dev/zero")
    (cls / "erin").mkdir()
    (cls / "erin" / "01_x.ipynb").symlink_to(ROOT / "solutions" / "01_mps_setup.ipynb")
    write_nb(tmp_path / "elsewhere" / "01_x.ipynb")
    (cls / "frank").mkdir()
    (cls / "frank" / "01_x.ipynb").symlink_to(tmp_path / "elsewhere" / "01_x.ipynb")
    write_nb(Path(os.fsdecode(bytes(cls / "grace") + b"/01_caf\xe9.ipynb")))  # Latin-1 bytes, not UTF-8
    write_nb(cls / "=01_formula.ipynb")
    (cls / "heidi").symlink_to(cls / "alice")  # a linked folder is not walked
    write_nb(cls / "ivan" / "01_folder.ipynb" / "01_inside.ipynb")  # a folder named like a notebook
    code, rows, doc = run_grade([str(cls)], tmp_path / "out")
    assert code == 0
    by_name = {r["submission"]: r for r in rows}
    assert sorted(by_name) == sorted([
        "alice/01_x.ipynb", "bob/01_x.ipynb", "carol/01_x.ipynb", "dave/01_x.ipynb", "erin/01_x.ipynb",
        "frank/01_x.ipynb", "grace/01_caf\\xe9.ipynb", "'=01_formula.ipynb",
        "ivan/01_folder.ipynb/01_inside.ipynb"])
    ids = doc["exercises"]
    statuses = {name: {r[i] for i in ids} for name, r in by_name.items()}
    assert statuses["alice/01_x.ipynb"] == statuses["bob/01_x.ipynb"] == {"missing"}
    assert by_name["bob/01_x.ipynb"]["note"] == "symbolic link to alice/01_x.ipynb"
    assert "not a regular file (a FIFO)" in by_name["carol/01_x.ipynb"]["note"]
    assert "out of the class folder (to /dev/zero)" in by_name["dave/01_x.ipynb"]["note"]
    assert "out of the class folder" in by_name["erin/01_x.ipynb"]["note"]
    assert "out of the class folder" in by_name["frank/01_x.ipynb"]["note"]
    for refused in ("carol/01_x.ipynb", "dave/01_x.ipynb", "erin/01_x.ipynb", "frank/01_x.ipynb"):
        assert statuses[refused] == {"malformed"}
    assert all(not r[k].startswith(FORMULA) for r in rows for k in ("submission", "note"))
    assert doc["status"] == "complete" and doc["submissions_graded"] == len(rows) == len(doc["submissions"])
    page = (tmp_path / "out" / "gradebook.html").read_bytes().decode("utf-8")
    assert "grace/01_caf\\xe9.ipynb" in page


@pytest.mark.timeout(120)
def test_is_a_link_into_the_solutions_refused_even_inside_the_class_folder(tmp_path, monkeypatch):
    course = tmp_path / "course"
    write_nb(course / "solutions" / "01_mps_setup.ipynb", "x = 1")
    monkeypatch.setattr(submissions, "course_folders", lambda: [str(course / "solutions")])
    (tmp_path / "course" / "class").mkdir()
    link = course / "class" / "01_mine.ipynb"
    link.symlink_to(course / "solutions" / "01_mps_setup.ipynb")
    sub = submissions.load(link, "01_mine.ipynb", root=course)  # the instructor graded the course folder
    assert sub.malformed.startswith("refused: a symbolic link into the course's solutions/")


@pytest.mark.timeout(120)
def test_is_a_copy_of_the_courses_solution_not_graded_as_the_learners_work(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    solution = ROOT / "solutions" / "01_mps_setup.ipynb"
    (cls / "01_copy.ipynb").write_bytes(solution.read_bytes())
    graded = grade([cls], Options(seed=1, progress=False))
    (row,) = graded.rows
    assert {v.status for v in row.verdicts.values()} == {"error"} and row.total == 0
    assert {v.reason for v in row.verdicts.values()} == {"copy of a course notebook"}
    assert "solutions/01_mps_setup.ipynb" in next(iter(row.verdicts.values())).detail


def test_are_fifos_and_devices_refused_without_waiting(tmp_path):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ValueError, match="not a regular file \\(a FIFO\\)"):
        submissions.read_capped(fifo)
    with pytest.raises(ValueError, match="a character device"):
        submissions.read_capped("/dev/zero", follow=True)
    with pytest.raises(ValueError, match="too large"):
        submissions.read_capped(__file__, cap=10)
    assert read_results(fifo, cap=1000) == ([], "its results file was replaced by something that is not a "
                                                "regular file")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert read_results_fd(fd, cap=1000)[0] == []
    finally:
        os.close(fd)
    assert time.monotonic() - started < 60  # a read that waited for a writer would never return


def test_does_metadata_of_the_wrong_type_never_stop_the_lesson_being_read(tmp_path):
    path = write_nb(tmp_path / "carol.ipynb", 'check("04.prefix_sum", f)', mps_detective="not a dict")
    sub = submissions.load(path, "carol.ipynb")
    assert sub.malformed is None and sub.lesson == "04"
    nb = nbformat.read(path, as_version=4)
    nb.metadata["mps_detective"] = {"generated_from": 5}
    assert submissions.lesson_of(path, nb) == "04"


# --- the text the gradebook shows -------------------------------------------------------------------


def test_is_every_text_cleaned_and_every_description_bounded():
    assert text.clean("a\ud800b\udcffc") == "a\\ud800b\\xffc"
    assert text.csv_cell("=1+1") == "'=1+1" and text.csv_cell("-x") == "'-x" and text.csv_cell("a=b") == "a=b"
    assert text.shown(16 ** 3990).startswith("<an integer of")
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert "cannot be shown" in text.shown(deep)

    class Hostile:
        def __repr__(self):
            raise SystemExit(3)

    assert text.shown(Hostile()) == "<Hostile that cannot be shown (SystemExit)>"
    assert len(text.shown("x" * 10_000)) <= text.SHOWN_LIMIT


@pytest.mark.parametrize("got, passes", [
    (12, True), (np.int64(12), True), (12.0, False), (13.0, False), (True, False), (torch.tensor(12), False),
    (11, False)])
def test_is_an_integer_answer_judged_exactly_and_only_as_an_integer(got, passes):
    assert (mismatch(12, got) is None) is passes
    assert mismatch(12.0, 12) is None and mismatch(True, 1) is not None


def test_is_a_partial_gradebook_written_as_rows_finish(tmp_path):
    files = outputs.GradebookFiles(tmp_path / "gradebook.csv", tmp_path / "details.json", interval_s=0)
    (tmp_path / "gradebook.csv").write_text("an old gradebook\n")
    assert files.set_aside() == [tmp_path / "gradebook.previous.csv"]
    rows = [Row("a.ipynb", "01", {"01.x": Verdict("pass")}), Row("b.ipynb", "01", note=PENDING, graded=False)]
    graded = Graded(rows, ["01.x"], 1, 0.0, status="in progress")
    files.progress(graded, Options())
    rows = list(csv.DictReader((tmp_path / "gradebook.csv").open()))
    assert [(r["submission"], r["01.x"], r["note"]) for r in rows] == [("a.ipynb", "pass", ""),
                                                                       ("b.ipynb", "", PENDING)]
    doc = json.loads((tmp_path / "details.json").read_text())
    assert (doc["status"], doc["submissions_graded"], doc["notebooks"]) == ("in progress", 1, 2)
    assert "not a complete gradebook" in (tmp_path / "gradebook.html").read_text()
    files.failed(Options(), RuntimeError("boom"))
    assert json.loads((tmp_path / "details.json").read_text())["status"].startswith("failed (RuntimeError")
    assert (tmp_path / "gradebook.previous.csv").read_text() == "an old gradebook\n"


def test_does_a_failed_run_never_leave_an_old_gradebook_looking_current(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("gradebook.csv", "gradebook.html", "details.json"):
        (out / name).write_text("from last week\n")
    assert cli.main(["grade", str(tmp_path / "nowhere"), "--out", str(out / "gradebook.csv"),
                     "--json", str(out / "details.json")]) == 2
    assert sorted(p.name for p in out.iterdir()) == ["details.previous.json", "gradebook.previous.csv",
                                                     "gradebook.previous.html"]


# --- the grader interrupted, killed, stopped ----------------------------------------------------------


def processes_mentioning(needle: str) -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    line = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in line:
                found.append(line)
    return found


def wait_until(condition, within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def a_row_is_graded(csv_path: Path) -> bool:
    try:
        rows = list(csv.DictReader(csv_path.open()))
    except OSError:
        return False
    return any(r["note"] != PENDING for r in rows) and len(rows) == 2


def started_as_a_background_job() -> None:
    """A shell script's background job starts with SIGINT ignored; Ctrl-C must still stop a run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_does_an_interrupted_or_killed_grader_leave_a_marked_gradebook_and_nothing_running(tmp_path, sig):
    cls, out, work = tmp_path / "class", tmp_path / "out", tmp_path / "work"
    write_nb(cls / "01_a_quick.ipynb", "x = 1")
    write_nb(cls / "01_b_loops.ipynb", "while True:\n    pass", "while True:\n    pass")
    work.mkdir()
    out.mkdir()
    (out / "gradebook.csv").write_text("last week's gradebook\n")
    grader = subprocess.Popen(
        [sys.executable, "-m", "course_utils.cli", "grade", str(cls), "--out", str(out / "gradebook.csv"),
         "--json", str(out / "details.json"), "--timeout", "40", "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(work)},
        preexec_fn=started_as_a_background_job)
    try:
        assert wait_until(lambda: a_row_is_graded(out / "gradebook.csv"), within=120)
        assert wait_until(lambda: processes_mentioning(str(work)), within=30)  # 01_b_loops is running
        grader.send_signal(sig)
        stdout, stderr = grader.communicate(timeout=60)
    finally:
        grader.kill()
    rows = {r["submission"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert rows["01_a_quick.ipynb"]["01.batch_bytes"] == "missing"
    doc = json.loads((out / "details.json").read_text())
    if sig == signal.SIGINT:
        assert grader.returncode == 130, stderr[-2000:]
        assert rows["01_b_loops.ipynb"]["note"] == INTERRUPTED and doc["status"] == "interrupted"
        assert "INTERRUPTED: 1 of 2 submissions graded" in stdout
    else:  # the rows written as they finished stay, marked as a run that did not end
        assert rows["01_b_loops.ipynb"]["note"] == PENDING and doc["status"] == "in progress"
    assert (out / "gradebook.previous.csv").read_text() == "last week's gradebook\n"
    if sig == signal.SIGINT:  # an interrupted grader ends only after its submissions' processes
        assert not processes_mentioning(str(work))
    assert wait_until(lambda: not processes_mentioning(str(work)), within=60)  # ends when all are gone


STOPPER = '''import os, signal

def grader_processes():
    """Every process that looks like the grader or its supervisor, as a submission would look."""
    found = {os.getppid()}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                line = fh.read()
        except OSError:
            continue
        if b"course_utils.cli" in line or b"supervise.py" in line:
            found.add(int(name))
    return sorted(p for p in found if p > 1)

SEEN = grader_processes()
for pid in SEEN:
    os.kill(pid, signal.SIGSTOP)
for pid in SEEN:
    os.kill(pid, signal.SIGKILL)
print("found", SEEN)'''


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_can_a_submission_neither_find_nor_stop_the_grader_in_namespaces(tmp_path):
    if isolation.probe([]) is not None:
        pytest.skip(f"no namespaces here: {isolation.probe([])}")
    from tests.fixtures.grading.make_fixtures import solved

    cls = tmp_path / "class"
    write_nb(cls / "01_stopper.ipynb", STOPPER, *solved())
    code, rows, doc = run_grade([str(cls), "--isolation", "namespaces", "--timeout", "30"], tmp_path / "out")
    assert code == 0 and doc["status"] == "complete"
    assert [r["total"] for r in rows] == ["4"]
    assert "found []" in doc["submissions"][0]["run"]["stdout"]


# --- what keeps the references out of reach -------------------------------------------------------


GUARDED = r'''
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("guard", sys.argv[1])
guard = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guard)
blocked, allowed, work = sys.argv[2], sys.argv[3], sys.argv[4]
guard.install_guard([blocked], [allowed])
os.chdir(work)
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = "reached"
    except (PermissionError, ImportError):
        results[name] = "refused"
    except OSError as err:
        results[name] = type(err).__name__
parent = os.path.dirname(blocked)
attempt("absolute", lambda: open(os.path.join(blocked, "answer.txt")).read())
attempt("the folder holding it", lambda: os.open(parent, os.O_RDONLY))
def by_descriptor():  # relative to the current folder it would lead elsewhere: only the fd leads in
    above = os.open(os.path.dirname(work), os.O_RDONLY)
    os.open("../course/secret/answer.txt", os.O_RDONLY, dir_fd=above)
attempt("relative to a descriptor", by_descriptor)
attempt("hard link", lambda: os.link(os.path.join(blocked, "answer.txt"), "stolen.txt"))
attempt("symbolic link", lambda: os.symlink(parent, "way_in"))
attempt("/proc/self/root", lambda: open("/proc/self/root" + blocked + "/answer.txt").read())
attempt("rename", lambda: os.rename(os.path.join(blocked, "answer.txt"), "moved.txt"))
attempt("allowed", lambda: open(os.path.join(allowed, "fine.txt")).read())
attempt("own folder", lambda: open("mine.txt", "w").write("ok"))
print(json.dumps(results))
'''


def test_does_the_guard_refuse_every_pure_python_way_to_the_references(tmp_path):
    secret = tmp_path / "course" / "secret"
    secret.mkdir(parents=True)
    (secret / "answer.txt").write_text("42")
    allowed = tmp_path / "course" / "env"
    allowed.mkdir()
    (allowed / "fine.txt").write_text("ok")
    work = tmp_path / "work" / "deeper"
    work.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", GUARDED, str(GRADER / "guard.py"), str(tmp_path / "course"),
                           str(allowed), str(work)], capture_output=True, text=True, timeout=60)
    results = json.loads(done.stdout)
    assert results.pop("allowed") == results.pop("own folder") == "reached", done.stderr
    assert set(results.values()) == {"refused"}, results
    assert (secret / "answer.txt").read_text() == "42"


JAILED = r'''
import json, os, socket, sys
facts = {"pid": os.getpid(), "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
         "hidden": os.listdir(sys.argv[1]), "kept": os.listdir(sys.argv[2]),
         "bank": os.listdir(os.path.join(sys.argv[2], "bank"))}
try:
    socket.create_connection(("192.0.2.1", 80), timeout=1)
    facts["network"] = "up"
except OSError:
    facts["network"] = "down"
with open("/proc/self/status") as fh:
    facts["capabilities"] = [line.split()[1] for line in fh if line.startswith("CapEff")]
try:
    open(os.path.join(sys.argv[1], "x"), "w")
    facts["hidden_writable"] = True
except OSError:
    facts["hidden_writable"] = False
print(json.dumps(facts))
'''


def test_does_the_jail_hide_the_course_and_the_machine(tmp_path):
    if isolation.probe([]) is not None:
        pytest.skip(f"no namespaces here: {isolation.probe([])}")
    hidden, kept = tmp_path / "course", tmp_path / "course" / "env"
    kept.mkdir(parents=True)
    (hidden / "solution.txt").write_text("42")
    (kept / "python-lives-here").write_text("")
    (kept / "bank").mkdir()  # hidden again inside a kept folder (a package installed there)
    (kept / "bank" / "reference.py").write_text("answer = 42")
    spec = tmp_path / "jail.json"
    spec.write_text(json.dumps({"hide": [str(hidden), str(kept / "bank")],
                                "keep": isolation.python_dirs() + [str(kept)], "writable": []}))
    command = [sys.executable, "-I", "-c", JAILED, str(hidden), str(kept)]
    done = subprocess.run([sys.executable, "-E", "-s", str(GRADER / "jail.py"), str(spec), "--", *command],
                          capture_output=True, text=True, timeout=60)
    facts = json.loads(done.stdout)
    assert (facts["pid"], facts["processes"]) == (2, [1, 2]), done.stderr  # PID 1: the jail's init
    assert facts["hidden"] == ["env"] and sorted(facts["kept"]) == ["bank", "python-lives-here"]
    assert facts["bank"] == []
    assert facts["network"] == "down" and facts["capabilities"] == ["0000000000000000"]
    assert facts["hidden_writable"] is False
