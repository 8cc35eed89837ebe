"""Does `course drill` run a whole seeded round from piped answers, refuse a pipe it was not told
about, explain bad input, and record the round in the same history as the notebook?"""

import io
import os
import subprocess
import sys

import pytest

from course_utils import cli
from course_utils.core.errors import CourseError
from course_utils.learner.drilling import mode as drill_mode
from course_utils.learner.drilling import terminal as drill_cli
from course_utils.learner.drilling.mode import LETTERS, history, pick
from tests.conftest import ROOT


def answers_for(seed: int, count: int, right: list[bool], category=None) -> str:
    """Piped input for a round: a hypothesis line, then a letter, per drill."""
    lines = []
    for drill, ok in zip(pick(seed, category, count), right, strict=True):
        n = len(drill.question.choices)
        index = drill.question.answer if ok else (drill.question.answer + 1) % n
        lines += [f"the loss and the gradients in {drill.category}", LETTERS[index]]
    return "\n".join(lines) + "\n"


def play(text: str, **kwargs) -> str:
    out = io.StringIO()
    assert drill_cli.play_round(stdin=io.StringIO(text), out=out, allow_pipe=True, **kwargs) == 0
    return out.getvalue()


def test_without_a_terminal_and_without_stdin_flag_it_stops_with_a_clear_message():
    with pytest.raises(CourseError, match="not a terminal.*--stdin"):
        drill_cli.play_round(stdin=io.StringIO("A\n"), out=io.StringIO())
    assert history()["sessions"] == []


def test_the_course_command_exits_2_and_says_why(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert cli.main(["drill", "--count", "1"]) == 2
    assert "course drill: stdin is not a terminal" in capsys.readouterr().err


def test_a_full_seeded_round_from_stdin_prints_the_score_table_and_records_it():
    drills = pick(21, None, 4)
    out = play(answers_for(21, 4, [True, False, True, True]), seed=21, count=4)
    for i, drill in enumerate(drills, 1):
        assert f"Drill {i} of 4 · {drill.category}" in out
        assert drill.question.prompt in out and drill.title not in out.split("The fix:")[0]
    assert out.count("The fix:") == 4
    assert "score: 3 of 4 points (75%)" in out
    for i, drill in enumerate(drills, 1):
        assert any(line.split()[:2] == [str(i), drill.id] for line in out.splitlines())
    entry = history()["sessions"][-1]
    assert (entry["source"], entry["seed"], entry["count"], entry["score"]) == ("terminal", 21, 4, 0.75)


def test_the_notebook_and_the_terminal_serve_the_same_round_for_a_seed():
    session = drill_mode.DrillSession(seed=8, count=3)
    out = play(answers_for(8, 3, [True] * 3), seed=8, count=3)
    positions = [out.index(f"\n    {d.buggy_code.splitlines()[-1]}") for d in session.drills]
    assert positions == sorted(positions)


def test_a_category_limits_the_round():
    out = play(answers_for(2, 2, [True, True], "losses"), seed=2, count=2, category="losses")
    assert out.count("· losses ·") == 2 and "category losses" in out


def test_an_unknown_category_lists_the_categories():
    with pytest.raises(CourseError, match="choose one of: gradients, losses"):
        drill_cli.play_round(category="nope", stdin=io.StringIO(""), out=io.StringIO(), allow_pipe=True)


def test_a_question_mark_runs_the_buggy_code_and_shows_its_measured_symptom():
    drill = pick(0, "losses", 1)[0]
    out = play(f"the loss looks wrong\n?\n{LETTERS[drill.question.answer]}\n", seed=0, count=1,
               category="losses")
    assert f"symptom (measured): {drill.symptom()}" in out


def test_empty_or_empty_worded_hypotheses_and_bad_letters_are_asked_again():
    drill = pick(5, None, 1)[0]
    out = play(f"\n\nasdf qwer zxcv\nthe loss looks wrong\nZ\nAB\n{LETTERS[drill.question.answer]}\n",
               seed=5, count=1)
    assert out.count("write your hypothesis first") == 2
    assert out.count("name what you suspect") == 1
    assert out.count("answer with one letter") == 2 and "✔ Right" in out


def test_q_ends_the_round_and_records_only_what_was_answered():
    text = answers_for(6, 1, [True]) + "the next loss looks wrong\nq\n"
    out = play(text, seed=6, count=3)
    assert "round ended (quit) after 1 of 3 drills" in out
    assert history()["sessions"][-1]["count"] == 1


def test_input_that_ends_before_any_answer_records_nothing():
    out = play("the loss looks wrong\n", seed=6, count=2)
    assert "input ended" in out and "nothing recorded" in out
    assert history()["sessions"] == []


@pytest.mark.slow
def test_the_installed_command_plays_a_piped_round_and_refuses_a_pipe_without_the_flag(tmp_path):
    course = [sys.executable, "-m", "course_utils.cli"]
    env = {**os.environ, "MPS_DETECTIVE_HOME": str(tmp_path)}
    done = subprocess.run([*course, "drill", "--seed", "3", "--count", "2", "--stdin"],
                          input=answers_for(3, 2, [True, True]), capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "score: 2 of 2 points (100%)" in done.stdout
    assert (tmp_path / "progress.json").exists()
    refused = subprocess.run([*course, "drill"], input="A\n", capture_output=True, text=True,
                             env=env, cwd=ROOT, timeout=120)
    assert refused.returncode == 2 and "--stdin" in refused.stderr
