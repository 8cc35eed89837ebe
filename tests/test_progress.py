"""Is progress kept safely: atomic writes, and a broken file never lost?"""

import json

import pytest

from course_utils.core import progress


def test_progress_lives_in_the_folder_the_environment_names(progress_home):
    progress.record_attempt("01.batch_bytes", passed=True)
    assert (progress_home / "progress.json").exists()


def test_the_first_pass_is_kept_and_later_fails_do_not_undo_it():
    progress.record_attempt("01.x", passed=True)
    progress.record_attempt("01.x", passed=False)
    entry = progress.load()["exercises"]["01.x"]
    assert entry["passed"] is True and entry["attempts"] == 2 and entry["last"] == "fail"


def test_a_corrupt_file_is_set_aside_not_overwritten(progress_home):
    progress_home.mkdir(parents=True)
    (progress_home / "progress.json").write_text("{not json")
    with pytest.warns(UserWarning, match="kept it as"):
        data = progress.load()
    assert data["exercises"] == {}
    kept = list(progress_home.glob("progress.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{not json"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(progress_home, monkeypatch):
    progress.record_attempt("01.x", passed=True)
    before = (progress_home / "progress.json").read_text()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("course_utils.core.files.os.fsync", boom)  # fails mid-write
    with pytest.raises(OSError):
        progress.record_attempt("01.y", passed=True)
    assert (progress_home / "progress.json").read_text() == before
    assert sorted(p.name for p in progress_home.iterdir()) == ["progress.json", "progress.json.lock"]


def test_quiz_best_score_decides_completion():
    progress.record_quiz("01", 0.8)
    progress.record_quiz("01", 0.4)
    q = progress.load()["quizzes"]["01"]
    assert q["best"] == 0.8 and q["last"] == 0.4 and q["complete"] is True
    progress.record_quiz("02", 0.6)
    assert progress.load()["quizzes"]["02"]["complete"] is False


def test_rows_and_status_summarise_for_the_command_line():
    progress.record_attempt("01.x", passed=False)
    progress.record_quiz("01", 1.0)
    rows = progress.rows()
    assert rows[0][:3] == ("01.x", "not yet", "1")
    assert rows[1][:2] == ("quiz 01", "complete")
    assert progress.status("01.x") == "01.x: not passed yet after 1 check(s)"
    assert progress.status("09.none") == "09.none: not attempted"


def test_the_file_is_plain_sorted_json(progress_home):
    progress.record_hint("01.x", 2)
    data = json.loads((progress_home / "progress.json").read_text())
    assert data["hints"] == {"01.x": 2} and data["version"] == 1


@pytest.mark.slow
def test_run_all_twice_on_lesson_00_leaves_attempts_and_hints_unchanged(progress_home):
    import nbformat

    from course_utils.course.execute import client
    from tests.conftest import ROOT

    path = ROOT / "notebooks" / "00_start_here.ipynb"

    def run_all() -> dict:
        nb = nbformat.read(path, as_version=4)
        client(nb, path, timeout=180, allow_errors=True).execute()  # allow_errors: its demo failure
        data = progress.load()
        return {"attempts": {k: e["attempts"] for k, e in data["exercises"].items()},
                "hints": data["hints"]}

    first = run_all()
    assert first["attempts"] or first["hints"], "lesson 00 checks and asks for hints"
    assert run_all() == first


def test_course_progress_rows_show_drill_cards_and_rounds(progress_home):
    from course_utils.drills import record_answer

    record_answer("gradients.missing_zero_grad", correct=True)
    with progress.update() as data:
        data["drill_sessions"] = {"best": 0.5, "sessions": [{"score": 0.5}],
                                  "categories": {"losses": {"right": 1, "answered": 4}}}
    rows = {r[0]: r for r in progress.rows()}
    assert rows["drill cards"][1] == "1/1 right"
    assert rows["drill rounds"][1:3] == ("best 50%", "1")
    assert rows["  drills: losses"][1] == "25% right"


def test_two_writers_at_once_lose_nothing(progress_home):
    import threading

    def many(prefix: str) -> None:
        for i in range(25):
            progress.record_attempt(f"{prefix}.{i}", passed=True)

    threads = [threading.Thread(target=many, args=(p,)) for p in ("01", "02")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(progress.load()["exercises"]) == 50
