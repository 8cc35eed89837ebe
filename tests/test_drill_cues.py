"""The drill questions measure understanding: no surface cue beats chance by more than 10 points.

The battery (``course_utils.drills.answer_cues``) reads no code and understands nothing: the longest
or shortest choice, word overlap with the stem or the code, the odd one out, a fixed position,
absolute words, and more. Run on every form of every drill and on the timed pool.
"""

from __future__ import annotations

import pytest

from course_utils import drills
from course_utils.core.questions import Question
from course_utils.drills.answer_cues import SOLVERS, credit, solver_scores, table

BAR = 0.10


def _forms(pool):
    return [(d.variant(k).question, d.variant(k).buggy_code) for d in pool for k in range(d.forms)]


@pytest.mark.parametrize("name", ["every drill form", "the timed pool"])
def test_no_surface_solver_is_more_than_10_points_from_chance(name):
    pool = drills.all_drills() if name == "every drill form" else drills.timed_pool()
    scores = solver_scores(_forms(pool))
    off = {s: hit for s, (hit, chance) in scores.items() if abs(hit - chance) > BAR}
    assert not off, f"{name}: solvers off chance by more than {BAR:.0%}:\n{table(scores)}"
    assert len(scores) >= 15


def test_the_battery_catches_a_question_set_whose_answers_share_a_cue():
    """A rigged set (the right answer always the longest, with the stem's words) fails the bar."""
    rigged = [Question(f"The loss explodes at step {i}. Why?", (
        "Adam", "SGD step", f"The loss explodes because step {i} doubles the rate", "lr"), 2, "")
        for i in range(8)]
    scores = solver_scores((q, "") for q in rigged)
    assert scores["longest"][0] == 1.0 and scores["most shared with stem"][0] == 1.0
    assert scores["shortest"][0] == 0.0 and scores["position 3"][0] == 1.0


def test_a_tie_splits_the_credit_between_the_tied_choices():
    assert credit([1, 3, 3, 0], 1) == 0.5 and credit([1, 3, 3, 0], 0) == 0.0
    assert credit([2, 2, 2, 2], 3) == 0.25
    assert set(SOLVERS) >= {"longest", "shortest", "most shared with stem", "most shared with code",
                            "odd one out", "no absolute words", "position 1"}


def test_log_of_zero_states_the_gap_its_own_code_has():
    from course_utils.drills.numerics import logit_gap

    drill = drills.get("numerics.log_of_zero")
    gap = logit_gap(drill.runner(drill.buggy_code, drill.id))
    assert f"{gap:.1f}" == "119.4"
    assert f"gap of {gap:.1f}" in drill.explanation and f"{gap:.1f} above" in drill.question.why
    assert "120 above" not in drill.explanation + drill.question.why


def test_the_rank_drill_gives_nccls_default_timeout_and_the_layernorm_drill_keys_the_mismatch():
    skip = drills.get("distributed.rank_skips_batch")
    assert "10 minutes with NCCL" in skip.explanation
    norm = drills.get("seed.layernorm_cpu_round_trip")
    assert "device mismatch" in norm.question.choices[norm.question.answer]
    assert norm.symptom().values["moved_norm_weights"] > 0  # model.to() would move them


@pytest.mark.parametrize("name", ["every drill form", "the timed pool"])
def test_the_quizzes_battery_holds_on_the_drills_too(name):
    """The mastery quizzes' own battery (course/cue_solvers.py) gives the same verdict."""
    from course_utils.author import cue_solvers

    pool = drills.all_drills() if name == "every drill form" else drills.timed_pool()
    questions = [q for q, _ in _forms(pool)]
    base = cue_solvers.chance(questions)
    off = {s: round(cue_solvers.accuracy(f, questions), 3) for s, f in cue_solvers.SOLVERS.items()
           if abs(cue_solvers.accuracy(f, questions) - base) > cue_solvers.MARGIN}
    assert not off, f"{name}: {off}"
