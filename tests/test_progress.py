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


def test_a_first_attempt_on_a_form_decides_completion():
    progress.record_quiz("01", 0.8)
    progress.record_quiz("01", 0.4)
    q = progress.load()["quizzes"]["01"]
    assert q["best"] == 0.8 and q["last"] == 0.4 and q["complete"] is True
    progress.record_quiz("02", 0.6)
    progress.record_quiz("02", 1.0)  # the same form again, its answers shown: practice
    q = progress.load()["quizzes"]["02"]
    assert q["complete"] is False and q["best"] == 0.6 and q["practice_best"] == 1.0
    progress.record_quiz("02", 0.8, form=1)  # a first attempt on another form counts
    q = progress.load()["quizzes"]["02"]
    assert q["complete"] is True and q["counted"]["attempt"] == 3 and q["counted"]["form"] == 1


def test_rows_and_status_summarise_for_the_command_line():
    progress.record_attempt("01.x", passed=False)
    progress.record_quiz("01", 1.0)
    rows = progress.rows()
    assert rows[0][:3] == ("01.x", "not yet", "1")
    assert rows[1][:2] == ("quiz 01", "complete (attempt 1, form 1)")
    assert progress.status("01.x") == "01.x: not passed yet after 1 check(s)"
    assert progress.status("09.none") == "09.none: not attempted"


def test_the_file_is_plain_sorted_json(progress_home):
    progress.record_hint("01.x", 2)
    data = json.loads((progress_home / "progress.json").read_text())
    assert data["hints"] == {"01.x": 2} and data["version"] == 1


@pytest.mark.slow
def test_run_all_twice_on_lesson_00_leaves_attempts_and_hints_unchanged(progress_home):
    import nbformat

    from course_utils.author.execute import client
    from tests.conftest import ROOT

    path = ROOT / "notebooks" / "00_start_here.ipynb"
    progress.record_attempt("01.batch_bytes", passed=False, answer_key="mine")  # the learner's own
    progress.record_hint("01.batch_bytes", 1)

    def counters(book: dict) -> dict:
        return {"attempts": {k: e["attempts"] for k, e in book.get("exercises", {}).items()},
                "hints": book.get("hints", {})}

    def run_all() -> dict:
        nb = nbformat.read(path, as_version=4)
        client(nb, path, timeout=180, allow_errors=True).execute()  # allow_errors: its demo failure
        return progress.load()

    learner_before = counters(progress.load())
    first = run_all()
    assert counters(first) == learner_before, "lesson 00's demo cells counted as the learner's"
    demo = counters(first["demos"])
    assert demo["attempts"] == {"00.count_params": 2} and demo["hints"] == {"00.count_params": 2}
    second = run_all()
    assert counters(second) == learner_before and counters(second["demos"]) == demo


def test_a_demo_check_is_kept_apart_from_the_learners_work(capsys):
    from course_utils import CheckFailed, bank, check, hint

    reference = bank.get("00.count_params").reference
    with pytest.raises(CheckFailed):
        check("00.count_params", lambda model: 0, seed=1)
    hint("00.count_params")
    check("00.count_params", reference, seed=1)
    data = progress.load()
    assert data["exercises"] == {} and data["hints"] == {}
    assert data["demos"]["exercises"]["00.count_params"]["attempts"] == 2
    assert capsys.readouterr().out.startswith("Hint 2/")  # the demo's ladder climbs as a learner's
    assert progress.status("00.count_params").endswith("after 2 check(s)" + progress.DEMO_NOTE)
    assert [r[0] for r in progress.rows()] == []


def test_course_progress_shows_drill_cards_and_timed_rounds(progress_home, capsys):
    from course_utils import cli
    from course_utils.drills import record_answer
    from course_utils.learner.drilling.history import record_session
    from course_utils.learner.drilling.scoring import Result

    record_answer("gradients.missing_zero_grad", correct=True)  # a card in lesson 07
    record_session([Result("losses.a", "losses", "A", True, 30.0, False),  # a timed round
                    Result("losses.b", "losses", "B", False, 50.0, False),
                    Result("data.c", "data", "C", False, 40.0, False),
                    Result("data.d", "data", "D", False, 40.0, False)], seed=1, source="terminal")
    rows = {r[0]: r for r in progress.rows()}
    assert rows["drill cards"][1] == "1/1 right"
    assert rows["drill rounds"][1:3] == ("best 25%", "1")
    assert rows["  drills: losses"][1:] == ("50% diagnosed", "2", "no fix tried; 40 s per drill")
    assert cli.main(["progress"]) == 0
    out = capsys.readouterr().out
    assert "drill rounds" in out and "drills: data" in out


def test_course_progress_counts_predictions_locked_in():
    with progress.update() as data:  # as the lessons' predict-then-run prompts keep them
        data["predictions"] = {"05.a": {"attempts": 2, "choice": "x", "right": True},
                               "03.b": {"attempts": 1, "choice": "y", "right": False}}
    assert ("predictions", "1/2 right", "3", "predict, then run") in progress.rows()


def _hammer(prefix: str, n: int, home: str) -> None:
    """One writer process: ``n`` attempts, a hint and a drill answer, each a separate update."""
    import os

    os.environ[progress.ENV_HOME] = home
    from course_utils.drills import record_answer

    for i in range(n):
        progress.record_attempt(f"{prefix}.{i}", passed=True)
        progress.record_hint("01.shared", i + 1)
    record_answer(f"{prefix}.drill", correct=True)


def test_concurrent_writer_processes_lose_no_update(progress_home):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_hammer, args=(f"0{k}", 20, str(progress_home))) for k in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(30)
    assert [w.exitcode for w in writers] == [0] * 4
    data = progress.load()
    assert sorted(data["exercises"]) == sorted(f"0{k}.{i}" for k in range(4) for i in range(20))
    assert data["hints"] == {"01.shared": 20} and len(data["drills"]) == 4
