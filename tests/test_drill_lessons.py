"""Do the lessons' rounds keep their word: no timed round serves a drill a lesson shows solved,
lesson 08's worked round is told from the drills it runs, progress counts only the learner's own
answers, the header states the clocks the drills get, and the history chart counts whole rounds?"""

from __future__ import annotations

import json
import re

from course_utils import drills
from course_utils.core import progress
from course_utils.core.glyphs import ENV, glyph
from course_utils.learner.drilling.mode import DrillSession, plot_history, record_session
from course_utils.learner.drilling.scoring import Result, clock_text, pick, time_limit
from tests.conftest import ROOT

LESSON_08 = ROOT / "notebooks" / "08_interview_drills.ipynb"


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _text(cell) -> str:
    outs = []
    for out in cell.get("outputs", []):
        outs.append("".join(out.get("text", "")))
        outs += ["".join(v) for v in out.get("data", {}).values() if isinstance(v, (str, list))]
    return "".join(cell["source"]) + "\n" + "\n".join(outs)


def test_no_drill_a_lesson_names_is_ever_served_by_a_round():
    """Every drill id a lesson's cells or stored outputs name is one the lessons solve, and no
    round of 200 seeds (nor the timed pool) contains one."""
    named = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = "\n".join(_text(c) for c in _cells(path))
        named |= {i for i in drills.ids() if i in text}
    assert named and named <= drills.shown_solved(), named - drills.shown_solved()
    pool = {d.id for d in drills.timed_pool()}
    served = {d.id for seed in range(200) for d in pick(seed, count=5)}
    assert not (named | drills.shown_solved()) & (pool | served)
    assert "losses.softmax_wrong_dim" not in {d.id for d in pick(2026, count=5)}


def test_lesson_08s_worked_round_is_told_from_the_drills_it_runs():
    cells = _cells(LESSON_08)
    start = next(i for i, c in enumerate(cells) if "DrillSession(drills=" in "".join(c["source"]))
    ids = re.findall(r'"([a-z]+\.[a-z_0-9]+)"', "".join(cells[start]["source"]))
    served = [drills.get(i) for i in ids]
    assert len(served) == 2 and set(ids) <= drills.shown_solved()
    worked = "\n".join(_text(c) for c in cells[start:start + 5])
    for drill in served:
        assert drill.question.prompt in worked and drill.symptom().summary in worked, drill.id
    words = "\n".join("".join(c["source"]) for c in cells[start - 1:start + 5]
                      if c["cell_type"] == "markdown")
    others = [d for d in drills.all_drills() if d not in served]
    for drill in others:  # no other drill's id, title or measured numbers in the prose
        assert drill.id not in words and drill.title not in words, drill.id
    assert "record=False" in words


def test_a_round_made_with_record_false_and_a_timed_answer_leave_no_card_answer():
    session = DrillSession(drills=["losses.softmax_wrong_dim"], record=False)
    session.start()
    session.answer("A", "the probabilities do not sum to one over the vocabulary")
    session.finish()
    data = progress.load()
    assert "drills" not in data and "drill_sessions" not in data
    counted = DrillSession(seed=3, count=1)
    counted.start()
    counted.answer("A", "the loss looks wrong")
    counted.finish()
    data = progress.load()
    assert "drills" not in data and len(data["drill_sessions"]["sessions"]) == 1
    rows = {r[0] for r in progress.rows()}
    assert "drill rounds" in rows and "drill cards" not in rows


def test_the_widget_header_states_every_clock_the_round_uses():
    session = DrillSession(seed=2026, count=5)
    box = session.widget()
    title = box.children[0].value
    limits = sorted({time_limit(d) for d in session.drills})
    assert session.clocks_text() in title and "each" not in title
    assert clock_text(limits[0]) in title and clock_text(limits[-1]) in title


def test_a_history_of_one_round_has_an_axis_of_whole_rounds():
    record_session([Result("losses.x", "losses", "A", True, 10.0, False)], seed=1)
    fig = plot_history()
    left = fig.axes[0]
    ticks = [t for t in left.get_xticks() if left.get_xlim()[0] <= t <= left.get_xlim()[1]]
    assert ticks == [1.0]


def test_every_glyph_has_a_text_fallback_the_learner_can_choose(monkeypatch):
    import importlib

    from course_utils.toolkit import timing

    assert glyph("timer") == "⏱" and timing.fmt_time(0.5).startswith("⏱")
    monkeypatch.setenv(ENV, "1")
    assert (glyph("timer"), glyph("right"), glyph("wrong")) == ("time", "[right]", "[wrong]")
    reloaded = importlib.reload(timing)
    try:
        assert reloaded.fmt_time(0.5) == "time 500 ms"
        assert str(reloaded.Timing(0.5, 0.001, 3, "t")).startswith("t: time median 500 ms")
    finally:
        monkeypatch.delenv(ENV)
        importlib.reload(timing)
