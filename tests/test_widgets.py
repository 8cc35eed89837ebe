"""The widgets' shared pieces: the style that fits them to a laptop, wrapping rows, and the
predict-then-run prompt (recorded in progress, never blocking Run All)."""

import json

import pytest

from course_utils.learner.reveal import Predict
from course_utils.learner.widgets import FIT_CLASS, STYLE, bundle, fitted, row


@pytest.fixture
def progress_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MPS_DETECTIVE_HOME", str(tmp_path))
    return tmp_path / "progress.json"


def test_a_displayed_widget_carries_the_style_that_wraps_at_word_boundaries():
    import ipywidgets as w

    inner = w.Button(description="apply")
    box = fitted(inner)
    style, shown = box.children
    assert shown is inner and FIT_CLASS in box._dom_classes
    assert style.value == STYLE and "word-break: normal" in STYLE and "break-all" not in STYLE
    assert "min-width: max-content" in STYLE and "flex-wrap: wrap" in STYLE


def test_the_bundle_shows_the_fitted_box_with_a_stable_text():
    import ipywidgets as w

    data = bundle(w.Button(description="go"), "a button")
    assert data["text/plain"] == "a button"
    from ipywidgets.widgets.widget import _instances

    model = _instances[data["application/vnd.jupyter.widget-view+json"]["model_id"]]
    assert FIT_CLASS in model._dom_classes


def test_a_row_wraps_its_children():
    import ipywidgets as w

    assert row([w.Button(), w.Button()]).layout.flex_flow == "row wrap"


def test_predict_records_the_locked_choice_and_whether_it_was_right(progress_home):
    prompt = Predict("05.view_of_T", "Does t.T.view(-1) work?", ["yes", "no: an error"], answer=1)
    box = prompt.widget()
    choices, lock = box.children[1], box.children[2].children[0]
    assert lock.disabled  # nothing to lock in before a choice
    choices.value = "yes"
    assert not lock.disabled
    lock.click()
    assert choices.disabled and lock.disabled and "Locked in: yes" in box.children[2].children[1].value
    saved = json.loads(progress_home.read_text())["predictions"]["05.view_of_T"]
    assert saved == {"attempts": 1, "choice": "yes", "right": False}


def test_predict_shows_a_stable_summary_and_refuses_an_answer_out_of_range():
    prompt = Predict("k", "Which?", ["a", "b"], answer=0)
    assert prompt.summary() == "Predict: Which? A) a; B) b. Pick one, then run the next cell."
    assert prompt._repr_mimebundle_()["text/plain"] == prompt.summary()
    with pytest.raises(ValueError, match="not one of the 2 choices"):
        Predict("k", "Which?", ["a", "b"], answer=2)


def test_the_stride_explorer_wraps_its_rows_and_keeps_its_pictures_aspect():
    from course_utils.learner.stride_explorer import StrideExplorer

    explorer = StrideExplorer((3, 4))
    left, picture = explorer.widget.children
    assert explorer.widget.layout.flex_flow == "row wrap"  # the picture goes below when narrow
    assert left.children[1].layout.flex_flow == "row wrap"  # op, args, apply
    assert picture.layout.height == "auto" and picture.layout.max_width == "100%"


def test_the_learner_cannot_stop_or_reset_the_drill_clock():
    from course_utils.learner.drilling.mode import DrillSession

    session = DrillSession(seed=5, count=1)
    session.widget()
    clock = session.controls.clock
    assert clock.disabled and clock.layout.display == "none"  # no Play, pause or stop buttons shown
