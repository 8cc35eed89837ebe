"""Does practice adapt: missed drills come back spaced over days, the weakest categories are
drawn first, every choice says why, and course progress shows the scores and the next round?"""

from __future__ import annotations

import datetime as dt

from course_utils import cli, drills
from course_utils.core import progress
from course_utils.learner.drilling.history import record_session
from course_utils.learner.drilling.mode import DrillSession
from course_utils.learner.drilling.plan import memories, plan
from course_utils.learner.drilling.scoring import Result

DAY = dt.date(2026, 5, 1)


def _round(day: dt.date, *answers: tuple[str, bool], fixed: bool | None = None) -> None:
    results = [Result(i, drills.get(i).category, "A", ok, 30.0, False, 180, fixed) for i, ok in answers]
    record_session(results, seed=1)
    with progress.update() as data:
        data["drill_sessions"]["sessions"][-1]["when"] = f"{day.isoformat()}T10:00:00"


def test_with_no_history_the_round_spans_untried_categories_and_says_so():
    chosen = plan(5, seed=3, today=DAY)
    assert len(chosen) == 5 and len({d.category for d, _ in chosen}) == 5
    assert all("not tried yet" in why for _, why in chosen)
    assert not {d.id for d, _ in chosen} & drills.shown_solved()


def test_a_missed_drill_comes_back_the_next_day_then_at_doubling_intervals():
    pool = [d.id for d in drills.timed_pool()]
    missed, right = pool[0], pool[1]
    _round(DAY, (missed, False), (right, True))
    assert not [why for _, why in plan(5, today=DAY) if "due again" in why]  # not on the same day
    first, why = plan(5, today=DAY + dt.timedelta(days=1))[0]
    assert first.id == missed and f"missed on {DAY}" in why and "interval 1 day" in why
    assert right not in [d.id for d, _ in plan(8, today=DAY + dt.timedelta(days=1))[:1]]
    _round(DAY + dt.timedelta(days=1), (missed, True))
    assert memories()[missed].interval == 2
    soon = [d.id for d, why in plan(5, today=DAY + dt.timedelta(days=2)) if "due again" in why]
    later = [d.id for d, why in plan(5, today=DAY + dt.timedelta(days=3)) if "due again" in why]
    assert missed not in soon and missed in later


def test_a_fix_that_was_not_accepted_counts_as_missed():
    drill = next(d for d in drills.timed_pool() if d.other_fixes)
    _round(DAY, (drill.id, True), fixed=False)
    assert not memories()[drill.id].right


def test_the_weakest_category_is_drawn_from_with_its_score_in_the_reason():
    losses = [d.id for d in drills.timed_pool("losses")]
    data = [d.id for d in drills.timed_pool("data")]
    _round(DAY, (losses[0], False), (losses[1], False), (data[0], True), (data[1], True))
    chosen = plan(6, today=DAY)  # nothing due yet on the same day
    reasons = [why for d, why in chosen if d.category == "losses"]
    assert reasons and all("weakest category, losses (0/2 right)" in why for why in reasons)
    assert not [why for d, why in chosen if d.category == "data" and "weakest" in why]


def test_an_adaptive_round_serves_the_plan_and_shows_each_reason():
    missed = drills.timed_pool()[2].id
    _round(dt.date.today() - dt.timedelta(days=3), (missed, False))
    session = DrillSession(seed=4, count=3, adaptive=True)
    assert session.drills[0].id == missed and "chosen from your history" in session.text()
    assert "chosen: missed on" in session.start()


def test_course_progress_shows_diagnosis_and_fix_scores_and_the_next_round(capsys):
    drill = next(d for d in drills.timed_pool() if d.other_fixes)
    _round(DAY, (drill.id, False), fixed=True)
    rows = {r[0]: r for r in progress.rows()}
    assert rows[f"  drills: {drill.category}"][1] == "0% diagnosed"
    assert rows[f"  drills: {drill.category}"][3].startswith("fixes 1/1")
    assert cli.main(["progress"]) == 0
    out = capsys.readouterr().out
    assert "next round" in out and f"a {drill.category} drill (fix-it): missed on {DAY}" in out
