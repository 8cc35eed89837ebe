"""Feedback for every learner: ``course grade --feedback`` writes one page per learner (HTML and
Markdown) that no submission's output can inject into, ``course feedback release`` copies each
page into its learner's own workspace (never over a file, never through a link), a re-grade adds
pages beside the old, and ``course check`` with the run's seed shows the verdicts the page shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils.core.errors import CourseError
from course_utils.grader.feedback import folder_name, write_pages
from course_utils.instructor.feedback_release import latest_pages, release

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "grading" / "class"

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "````\n# not a heading",
           "[click](javascript:alert(3))", "</pre><script>x</script>", "\u202e\x00evil"]


def details(*subs: dict, seed: int = 7) -> dict:
    return {"seed": seed, "status": "complete", "exercises": ["01.batch_bytes", "01.same_device"],
            "submissions": list(subs)}


def sub(name: str, **results: dict) -> dict:
    return {"submission": name, "lesson": "01", "total": sum(r["status"] == "pass" for r in
            results.values()), "out_of": len(results), "note": "", "results": results}


def hostile_doc() -> dict:
    bad = " ".join(HOSTILE)
    return details(
        sub("alice/01_mps_setup.ipynb",
            **{"01.batch_bytes": {"status": "fail", "case": bad, "expected": "12", "got": bad},
               "01.same_device": {"status": "error", "detail": bad}}),
        sub("bob/01_mps_setup.ipynb", **{"01.batch_bytes": {"status": "pass"},
                                         "01.same_device": {"status": "pass"}}))


def test_a_page_per_learner_with_verdicts_values_hints_and_class_rates(tmp_path):
    written = write_pages(hostile_doc(), {}, tmp_path, stamp="s")
    assert set(written) == {"alice", "bob"}
    page = (tmp_path / "alice" / "feedback-s.html").read_text()
    assert "01.batch_bytes" in page and "failed" in page and "raised an error" in page
    assert "class: 50% pass" in page, "the learner's result beside the class's pass rate"
    assert "hint:" in page and "--seed 7" in page
    bob = (tmp_path / "bob" / "feedback-s.md").read_text()
    assert "hint:" not in bob and "passed" in bob
    index = json.loads((tmp_path / "feedback.json").read_text())
    assert index["learners"]["alice"] == ["alice/feedback-s.html", "alice/feedback-s.md"]


def test_nothing_a_submission_printed_becomes_markup_or_script(tmp_path):
    write_pages(hostile_doc(), {}, tmp_path, stamp="s")
    page = (tmp_path / "alice" / "feedback-s.html").read_text()
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = (tmp_path / "alice" / "feedback-s.md").read_text()
    outside_fences = re.sub(r"(`{3,})text\n.*?\n\1", "", md, flags=re.S)
    assert "<" not in outside_fences and "javascript:" not in outside_fences.replace("\\", "")
    assert not re.search(r"^# not a heading", outside_fences, re.M)


def test_a_regrade_writes_new_pages_beside_the_old_and_names_stay_distinct(tmp_path):
    write_pages(hostile_doc(), {}, tmp_path, stamp="s")
    first = (tmp_path / "alice" / "feedback-s.html").read_bytes()
    write_pages(hostile_doc(), {}, tmp_path, stamp="s")
    assert (tmp_path / "alice" / "feedback-s.html").read_bytes() == first
    assert (tmp_path / "alice" / "feedback-s-2.html").exists()
    assert folder_name("a/b") != folder_name("a_b") and folder_name("ok-name") == "ok-name"


def homes(tmp_path: Path, *names: str) -> Path:
    top = tmp_path / "home"
    for name in names:
        (top / name / "mps-detective" / "workspace").mkdir(parents=True)
    return top


def test_release_copies_each_page_into_its_learners_workspace_only(tmp_path):
    write_pages(hostile_doc(), {}, tmp_path / "fb", stamp="s")
    top = homes(tmp_path, "jupyter-alice", "jupyter-bob", "jupyter-carol")
    done = release(tmp_path / "fb", [str(top)], strip_prefix="jupyter-")
    assert done.copied == {"alice": ["feedback-s.html", "feedback-s.md"],
                           "bob": ["feedback-s.html", "feedback-s.md"]}
    alice = top / "jupyter-alice" / "mps-detective" / "workspace"
    assert "&lt;script&gt;" in (alice / "feedback" / "feedback-s.html").read_text()
    assert "alice" not in (top / "jupyter-bob/mps-detective/workspace/feedback/feedback-s.html").read_text()
    assert not (top / "jupyter-carol" / "mps-detective" / "workspace" / "feedback").exists()
    assert latest_pages(alice) == [alice / "feedback" / "feedback-s.html"]
    assert json.loads(done.record.read_text())["copied"] == done.copied


def test_release_never_overwrites_and_never_follows_a_link_out_of_a_home(tmp_path):
    write_pages(hostile_doc(), {}, tmp_path / "fb", stamp="s")
    top = homes(tmp_path, "alice", "bob")
    mine = top / "alice" / "mps-detective" / "workspace" / "feedback"
    mine.mkdir()
    (mine / "feedback-s.html").write_text("my own notes")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, top / "bob" / "mps-detective" / "workspace" / "feedback")
    done = release(tmp_path / "fb", [str(top)])
    assert (mine / "feedback-s.html").read_text() == "my own notes"
    assert done.copied == {"alice": ["feedback-s.md"]}
    assert any("already there" in s for s in done.skipped)
    assert any(s.startswith("bob:") and "link" in s for s in done.skipped)
    assert list(outside.iterdir()) == []


def test_release_without_feedback_or_with_a_learner_missing_says_so(tmp_path):
    with pytest.raises(CourseError, match="feedback.json"):
        release(tmp_path, [str(tmp_path)])
    write_pages(hostile_doc(), {}, tmp_path / "fb", stamp="s")
    done = release(tmp_path / "fb", [str(homes(tmp_path, "alice"))])
    assert "bob: no home found among the paths given" in done.skipped


@pytest.mark.slow
def test_course_check_with_the_runs_seed_shows_the_verdicts_of_the_feedback_page(tmp_path):
    klass = tmp_path / "class" / "dana"
    klass.mkdir(parents=True)
    nb = nbformat.read(FIXTURES / "01_partly_wrong.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("notes = 'my own work'"))  # not a copy of a fixture
    nbformat.write(nb, klass / "01_mps_setup.ipynb")
    cli = [sys.executable, "-m", "course_utils.cli"]
    graded = subprocess.run([*cli, "grade", str(tmp_path / "class"), "--out", str(tmp_path / "g.csv"),
                             "--seed", "11", "--feedback", str(tmp_path / "fb")],
                            capture_output=True, text=True, cwd=ROOT)
    assert graded.returncode == 0, graded.stderr
    doc = json.loads((tmp_path / "g.details.json").read_text())
    on_page = {ex: r["status"] for ex, r in doc["submissions"][0]["results"].items()}
    page = next((tmp_path / "fb" / "dana").glob("feedback-*.md")).read_text()
    for ex in on_page:
        assert f"### {ex}: " in page.replace("\\", ""), ex
    checked = subprocess.run([*cli, "check", str(klass / "01_mps_setup.ipynb"), "--seed", "11"],
                             capture_output=True, text=True, cwd=ROOT)
    seen = dict(re.findall(r"^(\d\d\.\w+)\s+(\w+)", checked.stdout, re.M))
    assert {ex: seen[ex] for ex in on_page} == on_page
    assert {"pass", "fail"} <= set(on_page.values()), "the fixture passes some and fails some"
