"""Does ``course grade`` grade the fixture class right, twice, and leave nothing running?

The class (tests/fixtures/grading/class/, made by make_fixtures.py) holds lesson 01 submissions:
good, partly wrong, and every bad or hostile case the grader must survive. It is graded through the
real command, in a separate process (if containment failed, that process would die, not pytest),
with ``--jobs 2``, then its value-checked submissions again with another seed: every row must match
the table below, the two gradebooks must agree, and no process either run started may be left.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from course_utils.grader.fair_clock import latest_end
from tests.conftest import ROOT

CLASS = ROOT / "tests" / "fixtures" / "grading" / "class"
MARKER = "mps-detective-fixture-orphan"
IDS = ["01.choose_device", "01.same_device", "01.batch_bytes", "01.read_report"]
P, F, E, T, M, X = "pass", "fail", "error", "timeout", "missing", "malformed"

EXPECTED = {  # submission: (choose_device, same_device, batch_bytes, read_report)
    "01_good.ipynb": (P, P, P, P),
    "01_partly_wrong.ipynb": (F, P, F, P),  # two wrong answers learners really write
    "01_renamed.ipynb": (P, P, M, M),  # renamed without its check / deleted; check(ID, pick) found
    "01_import_error.ipynb": (P, E, E, P),  # SyntaxError cell; a failing import before the def
    "01_infinite_loop.ipynb": (P, T, P, P),  # a looping function and a looping cell
    "01_stubborn_loop.ipynb": (P, P, T, T),  # swallows every interruption: killed at --timeout
    "01_memory_hog.ipynb": (P, E, E, P),  # MemoryError under the address-space limit
    "01_sys_exit.ipynb": (P, P, P, E),  # sys.exit in a cell is contained; in a function, an error
    "01_os_exit.ipynb": (E, E, E, E),
    "01_kill_parent.ipynb": (E, E, E, E),
    "01_killpg.ipynb": (E, E, E, E),
    "01_fork_escape.ipynb": (P, P, P, P),  # its orphan is killed; its grades stand
    "01_kill_parent_and_fork.ipynb": (E, E, E, E),
    "01_output_flood.ipynb": (P, P, P, P),
    "01_fake_pass.ipynb": (F, F, F, F),  # patches the checks and prints pass lines
    "01_calls_reference.ipynb": (E, E, E, E),  # imports / opens the course's reference
    "01_strange_values.ipynb": (F, F, F, F),  # objects that claim to equal everything
    "01_unsolved.ipynb": (E, E, E, E),  # the generated exercise notebook, untouched
    "01_not_json.ipynb": (X, X, X, X),
    "01_not_a_notebook.ipynb": (X, X, X, X),
    "01_invalid_schema.ipynb": (X, X, X, X),
    "01_empty.ipynb": (M, M, M, M),
    # what used to crash the run, hang it or pass what was not earned
    "01_unprintable_values.ipynb": (P, E, F, P),  # a module nested 300 deep; an int past the digit limit
    "01_float_off_by_one.ipynb": (P, P, F, P),  # an integer answer returned as a float, off by one
    "01_fifo_results.ipynb": (P, P, P, P),  # its results file replaced by a FIFO; unflushed prints kept
    "01_bad_records.ipynb": (E, P, E, P),  # forged records: unhashable ids, deep nesting, wrong types
    "'=01_hostile_text.ipynb": (E, E, P, F),  # a formula for a name; lone surrogates in messages
    "wrong_type_metadata.ipynb": (P, P, P, P),  # metadata of the wrong type; lesson from its checks
    "01_reads_references.ipynb": (E, E, E, E),  # a directory descriptor, a hard link, a fixture, /proc
}
IN_NAMESPACES = {  # where the supervisor cannot be seen: its parent is the jail's init, deaf to it
    "01_kill_parent.ipynb": (P, P, P, P),
    "01_kill_parent_and_fork.ipynb": (P, P, P, P),
}
TIMEOUT, JOBS, MARGIN_S = 12, 2, 60  # the run ends within latest_end(TIMEOUT) x notebooks / JOBS + MARGIN_S


def ours(needle: str) -> list[str]:
    """Command lines of live processes that contain ``needle``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    line = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in line:
                found.append(line)
    return found


# The second run (another seed) proves that the seed changes no verdict: it grades the submissions
# whose verdicts come from checked values (a wrong answer somewhere, and the good one), not those
# that only crash, hang, escape or are unreadable, whose verdicts no random case reaches.
SECOND_RUN = tuple(name for name, row in EXPECTED.items() if F in row) + ("01_good.ipynb",)
WAITS_FOR_TIMEOUT = ("01_stubborn_loop.ipynb", "01_infinite_loop.ipynb")  # killed at --timeout


def grade_class(out: Path, seed: int, only: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    work = out / "tmp"
    work.mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(work)}  # every submission's folder lives under `out`
    chosen = {name.removeprefix("'") for name in only}  # the CSV's defused name of a formula-like one
    paths = [str(p) for p in sorted(CLASS.glob("*.ipynb")) if p.name in chosen] if only else [str(CLASS)]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "course_utils.cli", "grade", *paths, "--out", str(out / "gradebook.csv"),
         "--json", str(out / "details.json"), "--jobs", str(JOBS), "--timeout", str(TIMEOUT),
         "--seed", str(seed)], capture_output=True, text=True, env=env, timeout=300)
    done.wall_s = time.monotonic() - started
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The two runs, made once per test session: under pytest-xdist the first worker to get here
    grades the class and the others wait for it and read what it found (a file lock in the folder
    all workers share), so the class is not graded once per worker."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs Linux /proc to prove no process is left")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(shared / "grader-class.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = shared / "grader-class.json"
        if not found.exists():
            first, second = shared / "grader-class-run1", shared / "grader-class-run2"
            done = [grade_class(first, seed=1), grade_class(second, seed=2, only=SECOND_RUN)]
            found.write_text(json.dumps([
                [str(folder), vars(result), ours(str(folder)) + ours(MARKER)]
                for folder, result in zip((first, second), done, strict=True)]))
    return [(Path(folder), SimpleNamespace(**result), leftovers)
            for folder, result, leftovers in json.loads(found.read_text())]


def expected(folder: Path) -> dict[str, tuple[str, ...]]:
    """EXPECTED for the notebooks the run graded (the second grades SECOND_RUN), for the isolation
    it had (``--isolation auto`` takes namespaces where they work)."""
    jailed = json.loads((folder / "details.json").read_text())["isolation"].startswith("namespaces")
    rows = {**EXPECTED, **IN_NAMESPACES} if jailed else EXPECTED
    graded = rows if folder.name.endswith("run1") else {n: rows[n] for n in SECOND_RUN}
    return dict(graded)


def table(path: Path) -> dict[str, tuple[str, ...]]:
    rows = list(csv.DictReader(path.open()))
    return {r["submission"]: tuple(r[i] for i in IDS) for r in rows}


@pytest.mark.slow
def test_is_every_row_of_the_fixture_class_right_with_nothing_left_running(runs):
    for folder, result, leftovers in runs:
        assert result.returncode == 0, result.stderr[-3000:]
        assert table(folder / "gradebook.csv") == expected(folder)
        assert leftovers == []
        assert result.wall_s < latest_end(TIMEOUT) * len(expected(folder)) / JOBS + MARGIN_S
        assert json.loads((folder / "details.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_does_grading_twice_with_other_seeds_give_the_same_gradebook(runs):
    (first, _, _), (second, _, _) = runs
    both = table(second / "gradebook.csv")
    assert len(both) == len(SECOND_RUN) >= 6
    assert {name: row for name, row in table(first / "gradebook.csv").items() if name in both} == both
    seeds = [json.loads((f / "details.json").read_text())["seed"] for f in (first, second)]
    assert seeds == [1, 2]


@pytest.mark.slow
def test_do_the_details_and_the_report_say_what_happened(runs):
    folder, result, _ = runs[0]
    doc = json.loads((folder / "details.json").read_text())
    rows = {s["submission"]: s for s in doc["submissions"]}
    wrong = rows["01_fake_pass.ipynb"]["results"]["01.batch_bytes"]
    assert (wrong["case"], wrong["expected"], wrong["got"]) == ("the same batch in float16", "6291456",
                                                                "12582912")
    flood = rows["01_output_flood.ipynb"]["run"]
    assert flood["stdout_bytes"] > 30_000_000 and len(flood["stdout"]) <= 20_000
    stolen = rows["01_calls_reference.ipynb"]["results"]
    assert "not available while grading" in stolen["01.choose_device"]["detail"]
    assert "PermissionError" in stolen["01.batch_bytes"]["detail"] or "FileNotFound" in stolen[
        "01.batch_bytes"]["detail"]  # refused by the guard, or not there at all (namespaces)
    escaped = rows["01_fork_escape.ipynb"]["run"]
    assert escaped["swept"] >= 1 or escaped["isolation"] == "namespaces"  # there the kernel ends it
    assert "unflushed words from the learner -- and more" in rows["01_fifo_results.ipynb"]["run"]["stdout"]
    off_by_one = rows["01_float_off_by_one.ipynb"]["results"]["01.batch_bytes"]
    assert off_by_one["detail"].startswith("expected an integer, got float")
    huge = rows["01_unprintable_values.ipynb"]["results"]["01.batch_bytes"]
    assert huge["got"].startswith("<an integer of")
    hostile = rows["=01_hostile_text.ipynb"]["results"]["01.choose_device"]["detail"]
    assert "\\ud800" in hostile and "=HYPERLINK" in hostile  # the surrogate shown as an escape
    assert (folder / "details.json").read_bytes().decode("utf-8")  # valid UTF-8 throughout
    if escaped["isolation"] != "namespaces":
        assert "killed" in rows["01_kill_parent.ipynb"]["note"]
    assert "01.batch_bytes" in result.stdout and "seed 1" in result.stdout
    page = (folder / "gradebook.html").read_text()
    assert "data:image/png;base64," in page and "01_stubborn_loop.ipynb" in page


CHECK_EVERY_FIXTURE = """
import json, sys
from pathlib import Path
from course_utils.core.errors import CourseError
from course_utils.grader.learner_check import check_notebook

def verdicts(path):
    try:
        found = check_notebook(path, timeout=12, seed=1, memory_mb=2048)
    except CourseError:
        return path.name, "malformed"
    return path.name, {v.exercise_id: v.result for v in found}

print(json.dumps(dict(verdicts(Path(p)) for p in sys.argv[1:])))
"""


@pytest.mark.slow
def test_does_course_check_give_every_fixture_the_verdicts_course_grade_gives(runs, tmp_path):
    folder, _, _ = runs[0]  # graded with --seed 1 --timeout 12 and the default memory limit
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    waits = [str(CLASS / name) for name in WAITS_FOR_TIMEOUT]  # one in each half: they wait longest
    rest = sorted(str(p) for p in CLASS.glob("*.ipynb") if str(p) not in waits)
    parts = [[waits[i], *rest[i::2]] for i in (0, 1)]
    halves = [subprocess.Popen([sys.executable, "-c", CHECK_EVERY_FIXTURE, *parts[i]], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    checked = {}
    for proc in halves:  # two processes, like --jobs 2: one process's sandbox reaps only its own
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        checked.update(json.loads(out.strip().splitlines()[-1]))
    as_graded = {"unsolved": E}  # course check names a stub's error verdict "unsolved"
    for name, graded in table(folder / "gradebook.csv").items():
        got = checked[name.removeprefix("'")]  # the CSV defuses a formula-like name
        got = (X,) * len(IDS) if got == "malformed" else tuple(as_graded.get(got[i], got[i]) for i in IDS)
        assert got == graded, name
    assert ours(str(tmp_path)) + ours(MARKER) == []
