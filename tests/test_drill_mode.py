"""Does drill mode serve drills in a seeded order, time and score each answer, keep its history in
the progress file beside everything else, and give the browser a clock that ticks by itself?"""

import pytest

from course_utils import drills
from course_utils.core import progress
from course_utils.learner.drilling import mode as drill_mode
from course_utils.learner.drilling.mode import (
    FINISH,
    KEY,
    NEXT,
    SECONDS,
    START,
    DrillSession,
    Result,
    history,
    pick,
    record_session,
)
from course_utils.learner.drilling.scoring import time_limit


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def right(drill) -> str:
    return drill_mode.LETTERS[drill.question.answer]


def wrong(drill) -> str:
    return drill_mode.LETTERS[(drill.question.answer + 1) % len(drill.question.choices)]


def test_the_same_seed_gives_the_same_drills_in_the_same_order_and_another_seed_another():
    assert [d.id for d in pick(3, count=6)] == [d.id for d in pick(3, count=6)]
    assert [d.id for d in pick(3, count=6)] != [d.id for d in pick(4, count=6)]
    assert [(d.id, d.variant_index) for d in pick(3, count=6)] == \
        [(d.id, d.variant_index) for d in pick(3, count=6)]
    assert {d.id for d in pick(3, count=None)} == {d.id for d in drills.timed_pool()}


def test_a_category_restricts_the_drills_and_a_prefix_names_it():
    assert {d.category for d in pick(1, "losses", None)} == {"losses"}
    assert {d.category for d in pick(1, "seed", None)} == {"seed advice"}
    with pytest.raises(ValueError, match="choose one of: gradients"):
        pick(1, "nonsense")
    with pytest.raises(ValueError, match="at least 1"):
        pick(1, count=0)


def test_an_answer_without_a_hypothesis_is_refused():
    session = DrillSession(seed=1, count=2)
    session.start()
    with pytest.raises(ValueError, match="hypothesis first"):
        session.answer("A", " ")
    with pytest.raises(ValueError, match="name what you suspect"):
        session.answer("A", "it is broken somehow")
    assert session.results == []


def test_a_round_is_timed_scored_and_recorded_beside_the_other_progress():
    progress.record_quiz("01", 1.0)
    clock = FakeClock()
    session = DrillSession(seed=5, count=3, clock=clock)
    first, second, third = session.drills
    session.start()
    clock.now += 42
    assert session.answer(right(first), "the loss goes wrong here").startswith("✔ Right")
    session.next()
    clock.now += SECONDS + 1  # the clock ran out: a right answer counts half
    assert "late: half a point" in session.answer(right(second), "late, but the loss says it")
    session.next()
    assert session.answer(wrong(third), "a guess about the gradients").startswith("✘ Not quite")
    assert session.next() is None and session.current is None
    table = session.finish()
    assert "score: 1.5 of 3 points (50%)" in table and "0:42" in table
    data = progress.load()
    assert data["quizzes"]["01"]["best"] == 1.0  # other keys kept
    entry = data[KEY]["sessions"][-1]
    assert (entry["score"], entry["seed"], entry["count"], entry["source"]) == (0.5, 5, 3, "notebook")
    assert data[KEY]["best"] == 0.5
    assert "drills" not in data  # a timed answer is not a card answer


def test_finishing_twice_records_once_and_finish_without_record_writes_nothing():
    session = DrillSession(seed=2, count=1)
    session.start()
    session.answer("A", "the loss looks wrong")
    session.finish()
    session.finish()
    assert len(history()["sessions"]) == 1
    other = DrillSession(seed=2, count=1)
    other.start()
    other.answer("A", "the loss looks wrong")
    other.finish(record=False)
    assert len(history()["sessions"]) == 1


def test_the_history_keeps_the_best_score_and_accuracy_per_category():
    r = lambda i, ok: Result(f"losses.x{i}", "losses", "A", ok, 10.0, False)  # noqa: E731
    record_session([r(1, True), r(2, True)], seed=1)
    record_session([r(3, False), Result("data.y", "data", "B", True, 400.0, True)], seed=2,
                   source="terminal")
    hist = history()
    assert hist["best"] == 1.0 and [s["score"] for s in hist["sessions"]] == [1.0, 0.25]
    no_fix = {"fix_tried": 0, "fixed": 0}
    assert hist["categories"] == {"losses": {"right": 2, "answered": 3, "seconds": 30.0, **no_fix},
                                  "data": {"right": 1, "answered": 1, "seconds": 400.0, **no_fix}}
    text = drill_mode.history_text()
    assert "2 round(s); last 25% (terminal), best 100%" in text and "losses 2/3 in 10 s" in text
    rows = {item: (status, detail) for item, status, _, detail in progress.rows()}
    assert rows["  drills: data"] == ("100% diagnosed", "no fix tried; 400 s per drill")
    assert rows["  drills: losses"] == ("67% diagnosed", "no fix tried; 10 s per drill")


def test_a_history_recorded_before_times_were_kept_still_reads():
    old = {"best": 0.5, "categories": {"losses": {"right": 1, "answered": 2}},
           "sessions": [{"score": 0.5, "source": "notebook"}]}
    assert "losses 1/2" in drill_mode.history_text(old) and " s," not in drill_mode.history_text(old)
    import matplotlib.pyplot as plt

    plt.close(drill_mode.plot_history(old))


def test_an_empty_round_is_not_recorded_and_an_empty_history_says_how_to_start():
    with pytest.raises(ValueError):
        record_session([], seed=1)
    assert "course drill" in drill_mode.history_text()


def test_the_history_chart_draws_with_and_without_rounds():
    import matplotlib.pyplot as plt

    fig = drill_mode.plot_history()
    assert len(fig.axes) == 2
    plt.close(fig)
    record_session([Result("losses.x", "losses", "A", True, 1.0, False)], seed=1)
    fig = drill_mode.plot_history()
    assert len(fig.axes[0].lines) == 2
    plt.close(fig)


def test_the_reveal_comes_only_after_the_answer_and_moving_on_needs_an_answer():
    session = DrillSession(seed=7, count=2)
    session.start()
    with pytest.raises(RuntimeError, match="answer the drill first"):
        session.reveal()
    with pytest.raises(RuntimeError, match="before moving on"):
        session.next()
    session.answer("B", "the loss looks wrong")
    assert session.reveal().startswith("The fix:")


def test_the_drill_text_hides_the_title_that_would_name_the_bug():
    session = DrillSession(seed=11, count=1)
    drill = session.drills[0]
    text = session.start()
    assert drill.title not in text and drill.question.prompt in text
    assert drill.buggy_code.splitlines()[-1].strip() in text


# --- the widget -------------------------------------------------------------------------------------


def test_each_drill_gets_a_clock_that_fits_its_length():
    drills_by_length = sorted(drills.timed_pool(), key=lambda d: len(d.buggy_code.splitlines()))
    short, long = time_limit(drills_by_length[0]), time_limit(drills_by_length[-1])
    assert 90 <= short < long <= SECONDS and short % 15 == long % 15 == 0
    clock = FakeClock()
    session = DrillSession(seed=5, count=2, clock=clock)
    first = session.drills[0]
    session.start()
    clock.now += time_limit(first) - 1
    result_text = session.answer(right(first), "the loss says it")
    assert "late" not in result_text and session.results[0].limit == time_limit(first)
    fixed = DrillSession(seed=5, count=2, seconds=60)
    assert fixed.seconds == 60 and "1:00 each" in fixed.text()


def test_the_widget_has_a_clock_that_ticks_in_the_browser():
    import ipywidgets as w

    session = DrillSession(seed=3, count=2)
    session.widget()
    ui = session.controls
    assert isinstance(ui.clock, w.Play) and ui.clock.interval == 1000
    assert ui.clock.max == time_limit(session.drills[0]) == session.seconds
    linked = {(link.source, link.target) for link in ui.links}
    assert linked == {((ui.clock, "value"), (ui.bar, "value")),
                      ((ui.clock, "value"), (ui.counter, "value"))}
    assert all(isinstance(link, w.widget_link.Link) for link in ui.links)  # a link in JavaScript


def test_the_widget_serves_grades_and_records_a_round():
    session = DrillSession(seed=3, count=2)
    session.widget()
    ui = session.controls
    assert (ui.start.description, ui.next.description, ui.finish.description) == (START, NEXT, FINISH)
    assert ui.card_box.children == () and not ui.clock.playing
    ui.start.click()
    assert ui.clock.playing and ui.start.disabled and len(ui.card_box.children) == 2  # card, fix box
    for i, drill in enumerate(session.drills):
        card = ui.card.controls
        card.hypothesis.value = "the loss looks wrong"
        card.choices.index = drill.question.answer
        card.submit.click()
        assert not ui.clock.playing and card.submit.disabled and "Right" in card.feedback.value
        assert drill.id not in drills.answers()  # a timed answer is not a card answer
        if i == 0:
            assert not ui.next.disabled
            ui.next.click()
            assert ui.clock.playing and ui.clock.value == 0
            assert ui.clock.max == ui.bar.max == time_limit(session.drills[1])
    assert ui.next.disabled and not ui.finish.disabled
    ui.finish.click()
    assert history()["sessions"][-1]["score"] == 1.0
    assert ui.finish.disabled


def test_the_display_bundle_is_a_widget_with_short_stable_plain_text():
    session = DrillSession(seed=9, count=4)
    bundle = session._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == session.text() == repr(session)
    assert "4 drills" in session.text() and "seed 9" in session.text()
    for drill in session.drills:
        assert drill.title not in bundle["text/plain"]
