"""Fix-it mode: is an edit judged by behaviour, so that every correct fix passes and no degenerate
edit does, in the sandbox, the widget and the terminal, with the fix scored apart?"""

from __future__ import annotations

import io

import pytest

from course_utils import drills
from course_utils.drills import fix_mutants
from course_utils.drills.fixit import judge_edit
from course_utils.learner.drilling import fix_entry as drill_fixit
from course_utils.learner.drilling.history import history, history_text
from course_utils.learner.drilling.mode import DrillSession
from course_utils.learner.drilling.terminal import play

FIXIT = [d for d in drills.all_drills() if d.other_fixes]
KINDS = ("delete the loop", "delete every .backward()", "a constant", "detach the loss",
         "requires_grad_(False)", "early return", "torch.no_grad() around the work", "try/except")


@pytest.fixture
def in_process(monkeypatch):
    """The judge without the sandbox (the sandbox has its own test)."""
    monkeypatch.setattr(drill_fixit, "_JUDGE", [judge_edit])


def test_at_least_six_drills_have_fix_it_mode_most_of_them_in_the_timed_pool():
    pool = {d.id for d in drills.timed_pool()}
    assert len(FIXIT) >= 6 and sum(d.id in pool for d in FIXIT) >= 5


@pytest.mark.parametrize("drill", FIXIT, ids=lambda d: d.id)
def test_every_fix_is_accepted_and_every_degenerate_edit_rejected(drill):
    rows = fix_mutants.score(drill)
    wrong = [(kind, label, why) for kind, label, ok, why in rows if ok != (kind != "degenerate")]
    assert not wrong, wrong
    kinds = [kind for kind, *_ in rows]
    assert kinds.count("declared fix") == 1 and kinds.count("other fix") >= 1
    assert kinds.count("degenerate") >= 4
    labels = " ".join(label for _, label, _, _ in rows)
    assert "try/except" in labels and ("requires_grad_(False)" in labels or "a constant" in labels)


@pytest.mark.parametrize("drill", FIXIT, ids=lambda d: d.id)
def test_every_form_of_a_fix_it_drill_accepts_its_fixed_code_and_rejects_its_buggy_code(drill):
    """A round serves any form: each form's job check and reference must read its own names."""
    for k in range(1, drill.forms):
        form = drill.variant(k)
        fixed, buggy = judge_edit(form, form.fixed_code), judge_edit(form, form.buggy_code)
        assert fixed.passed, (k, fixed.problems)
        assert not buggy.passed, k


def test_the_mutants_cover_every_class_of_degenerate_edit_over_the_fix_it_drills():
    from course_utils.drills.fixit import reference

    labels = set()
    for drill in FIXIT:
        names = [k for k, (m, g) in reference(drill)[1].items() if m or g]
        labels |= {label for label, _ in fix_mutants.mutants(drill, names)}
    text = " ".join(labels)
    assert all(kind in text for kind in KINDS), [k for k in KINDS if k not in text]


def test_an_edit_that_hides_the_error_or_breaks_the_code_is_not_a_fix():
    drill = drills.get("gradients.inplace_breaks_autograd")
    hidden = drill.buggy_code.replace("h.sum().backward()",
                                      "try:\n    h.sum().backward()\nexcept RuntimeError:\n    pass")
    verdict = judge_edit(drill, hidden)
    assert not verdict.passed and "gradient" in " ".join(verdict.problems)
    assert "does not compile" in judge_edit(drill, "h = (").problems[0]
    assert judge_edit(drill, drill.buggy_code.replace("h += x", "h = h + x")).passed


def test_the_sandboxed_judge_accepts_a_fix_and_survives_an_edit_that_kills_its_process():
    from course_utils.grader.drill_fix import judge_in_sandbox

    drill = drills.get("numerics.zero_norm_division").variant(1)
    assert judge_in_sandbox(drill, drill.fixed_code).passed
    crashed = judge_in_sandbox(drill, "import os\nos._exit(3)\n")
    assert not crashed.passed and "not judged" in crashed.problems[0]


def test_a_fix_answers_the_drill_and_is_scored_apart_from_the_diagnosis(in_process):
    session = DrillSession(drills=["numerics.zero_norm_division", "losses.squeeze_batch_of_one"])
    session.start()
    first = session.current
    assert "not accepted" in session.fix(first.buggy_code.replace(
        "unit = x / x.norm(dim=-1, keepdim=True)", "unit = torch.zeros_like(x)"))
    assert not session.answered
    assert session.fix(first.fixed_code).startswith("fix accepted") and session.answered
    first_result = session.results[0]
    assert (first_result.choice, first_result.right, first_result.fixed) == ("fix", True, True)
    second = session.next() and session.current
    wrong = (second.question.answer + 1) % 4
    session.answer(wrong, "the loss fails at the shape of the last batch")
    assert session.results[1].fixed is None
    session.fix(second.fixed_code)
    assert session.results[1].fixed is True and not session.results[1].right
    table = session.finish()
    assert "fix accepted" in table and "losses 0/1 (fixes 1/1)" in table
    cats = history()["categories"]
    assert cats["losses"]["fixed"] == 1 and cats["numerics"]["fix_tried"] == 1
    assert "fixes 1/1" in history_text()
    with pytest.raises(ValueError, match="no fix-it mode"):
        drill_fixit.judge(drills.get("data.no_shuffle"), "")


def test_the_widget_takes_a_fix_and_closes_the_drill_with_it(in_process):
    session = DrillSession(drills=["losses.squeeze_batch_of_one"])
    session.widget()
    ui = session.controls
    ui.start.click()
    ui.fix.editor.value = session.current.fixed_code
    ui.fix.run.click()
    assert "fix accepted" in ui.fix.verdict.value and session.answered
    assert not ui.clock.playing and not ui.finish.disabled and "Fixed" in ui.status.value


def test_the_terminal_takes_a_pasted_fix_with_f(in_process):
    session = DrillSession(drills=["numerics.zero_norm_division"])
    code = session.drills[0].fixed_code
    piped = io.StringIO(f"the norm of row 2 is zero\nf\n{code}.\n")
    out = io.StringIO()
    play(session, piped, out)
    text = out.getvalue()
    assert "f = fix the code" in text and "fix accepted" in text
    assert session.results[0].fixed is True and session.results[0].choice == "fix"


def test_each_drills_own_dodges_are_in_its_mutant_table_and_name_fix_it_drills():
    from course_utils.drills.fixit_cases import DODGES

    ids = {d.id for d in FIXIT}
    assert set(DODGES) <= ids, set(DODGES) - ids
    for drill_id, dodges in DODGES.items():
        labels = {label for label, _ in fix_mutants.mutants(drills.get(drill_id), [], [])}
        assert {label for label, _, _ in dodges} <= labels
