"""Every lesson, in a real JupyterLab in a real browser: it runs, shows no unexpected error,
renders its plots and widgets, and its widgets respond. Lessons are discovered from notebooks/.

Each lesson runs once (``run_lesson``): the general test of a lesson and its widget tests share
that page. Widgets clicked here: lesson 00's ``check()`` pass line, lesson 05's stride explorer
(redraws its strides and picture for an op; undo and reset bring the first picture back), lesson
07's spot-the-bug card (gated on a hypothesis, grades a choice, runs the buggy code, reveals the
fix, opens the worked answer below it; no diff line wraps at either width), lesson 05's practice
link (opens the learner's copy of the exercises at that exercise) and lesson 08's drill clock
(counts in the browser even while the kernel is busy). After its Run All each lesson is also
measured at 1280x800 and 900x900 (``viewports``): its widgets fit and no word
is split; screenshots and each lesson's Run All time are kept in build/screenshots/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_utils.learner.drilling.mode import START
from tests.e2e.conftest import ARTIFACTS, ROOT, SCREENSHOTS
from tests.e2e.pages import WAIT_MS, bring_into_view, drill_widget, picture, poll
from tests.e2e.viewports import check_viewports, diff_problems

expect = pytest.importorskip("playwright.sync_api").expect
expect.set_options(timeout=WAIT_MS)  # not its 5 s default: a deadline, not a guess about speed
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
# Every wait here is for a state, with a deadline that only a stuck page reaches; a busy machine
# makes a lesson's Run All slow, so a browser test may take longer than the suite's default 300 s.
pytestmark = pytest.mark.timeout(900)


def cells_not_run(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() and not c.execution_count]


def unexpected_errors(nb) -> list[str]:
    found = []
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        for out in cell.get("outputs", []):
            if out.output_type == "error" and "raises-exception" not in tags:
                found.append(f"cell {i}: {out.ename}: {out.evalue[:200]}")
    return found


def count_outputs(nb, mime: str) -> int:
    return sum(mime in out.get("data", {}) for c in nb.cells for out in c.get("outputs", []))


def answer_quiz(page) -> str:
    """Pick the first choice of every question, press Submit, return the feedback text; then ask
    for another form and wait until other questions are shown."""
    quiz = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator("button:has-text('Submit')")).last
    for group in quiz.locator(".widget-radio-box").all():
        group.locator("input[type=radio]").first.check()
    quiz.locator("button:has-text('Submit')").click()
    feedback = quiz.locator(".widget-output")
    feedback.locator("text=Score:").wait_for(timeout=WAIT_MS)
    text = feedback.inner_text()
    before = quiz.locator(".widget-html").all_inner_texts()
    quiz.locator("button:has-text('Another form')").click()
    poll(page, lambda: quiz.locator(".widget-html").all_inner_texts() not in ([], before),
         "Another form did not show other questions")
    return text


@pytest.mark.slow
@pytest.mark.parametrize("name", LESSONS)
def test_lesson_runs_in_jupyterlab_with_plots_and_widgets_working(run_lesson, name):
    run = run_lesson(name)
    page, nb = run.page, run.saved
    assert unexpected_errors(nb) == []
    assert cells_not_run(nb) == [], "cells that never ran (the run stopped early)"
    # Outputs render (and images decode, widgets draw) after the run is done: wait for each.
    images = page.locator(".jp-RenderedImage img")
    expect(images).to_have_count(count_outputs(nb, "image/png"), timeout=WAIT_MS)
    for img in images.all():
        poll(page, lambda img=img: img.evaluate("i => i.complete && i.naturalWidth > 0"),
             "a plot did not render")
    widgets = count_outputs(nb, "application/vnd.jupyter.widget-view+json")
    poll(page, lambda: page.locator(".jp-OutputArea-output .jupyter-widgets").count() >= widgets,
         f"fewer than {widgets} widgets rendered")
    assert "Score:" in answer_quiz(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name.removesuffix('.ipynb')}.png"), full_page=False)
    json.dumps(nb)  # the saved notebook is valid JSON end to end
    record_run_time(name, run.seconds)
    try:
        problems = check_viewports(page, name, SCREENSHOTS)
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})  # the widget tests' size
    assert problems == {size: [] for size in problems}, f"widgets that do not fit: {problems}"


def record_run_time(name: str, seconds: float) -> None:
    """Keep each lesson's browser Run All time beside the screenshots (run_all_seconds.json)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / "run_all_seconds.json"
    times = json.loads(path.read_text()) if path.exists() else {}
    times[name] = round(seconds, 1)
    path.write_text(json.dumps(times, indent=1, sort_keys=True))


@pytest.mark.slow
@pytest.mark.lesson("00_start_here.ipynb")
def test_check_shows_its_pass_line_and_a_failure_without_a_traceback(run_lesson):
    page = run_lesson("00_start_here.ipynb").page
    page.locator(".jp-OutputArea-output:has-text('✔ 00.count_params passed')").wait_for(timeout=WAIT_MS)
    failure = page.locator(".jp-OutputArea-output:has-text('CheckFailed: 00.count_params')")
    expect(failure).to_have_count(1, timeout=WAIT_MS)
    assert "Traceback" not in failure.inner_text()


@pytest.mark.slow
@pytest.mark.lesson("05_non_contiguous_tensors.ipynb")
def test_stride_explorer_redraws_for_an_op_and_undo_and_reset_restore_it(run_lesson):
    page = run_lesson("05_non_contiguous_tensors.ipynb").page
    explorer = page.locator(".jp-OutputArea-output .stride-explorer").first
    bring_into_view(explorer)
    info = explorer.locator(".stride-explorer-info")
    code = explorer.locator(".stride-explorer-code")
    img = explorer.locator("img.stride-explorer-picture")
    op, args = explorer.get_by_label("op", exact=True), explorer.get_by_label("args", exact=True)
    apply = explorer.get_by_role("button", name="apply", exact=True)

    info_before, code_before = info.text_content(), code.text_content()
    assert "(3, 4)" in info_before and "(4, 1)" in info_before, info_before  # shape, strides
    png_before = picture(img)
    assert png_before.startswith(b"\x89PNG"), "the explorer's picture is not a PNG"

    # Choosing an op makes the kernel fill in that op's default args: the dropdown is live.
    op.select_option("permute")
    expect(args).to_have_value("1, 0", timeout=WAIT_MS)
    apply.click()
    expect(code).to_contain_text("t.permute(1, 0)", timeout=WAIT_MS)
    expect(info).to_contain_text("(1, 4)", timeout=WAIT_MS)  # the transposed strides
    info_after = info.text_content()
    assert info_after != info_before and "False" in info_after, info_after  # not contiguous
    png_after = picture(img, lambda png: png != png_before, "the picture did not change on apply")
    assert png_after.startswith(b"\x89PNG")

    explorer.get_by_role("button", name="undo", exact=True).click()
    expect(info).to_have_text(info_before, timeout=WAIT_MS)
    expect(code).to_have_text(code_before, timeout=WAIT_MS)
    picture(img, lambda png: png == png_before, "undo did not bring the first picture back")

    # Two ops, then reset: back to the starting tensor.
    expect(args).to_have_value("1, 0", timeout=WAIT_MS)  # still permute, its default again
    apply.click()
    expect(code).to_contain_text("t.permute(1, 0)", timeout=WAIT_MS)
    op.select_option("slice with step")
    expect(args).to_have_value("1, 2", timeout=WAIT_MS)
    apply.click()
    expect(code).to_contain_text("::2]", timeout=WAIT_MS)
    picture(img, lambda png: png not in (png_before, png_after), "no new picture for two ops")
    explorer.get_by_role("button", name="reset", exact=True).click()
    expect(info).to_have_text(info_before, timeout=WAIT_MS)
    expect(code).to_have_text(code_before, timeout=WAIT_MS)
    picture(img, lambda png: png == png_before, "reset did not bring the first picture back")


@pytest.mark.slow
@pytest.mark.lesson("07_training_bugs.ipynb")
def test_bug_card_gates_on_a_hypothesis_grades_runs_and_reveals_the_fix(run_lesson):
    from course_utils.core.questions import plain
    from course_utils.learner.bugcard import LETTERS  # imports torch: only when the test runs
    from course_utils.learner.bugcard import card as bug_card
    from course_utils.learner.code_diff import FixDiff
    from course_utils.learner.worked import SHOW

    page = run_lesson("07_training_bugs.ipynb").page
    card = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.get_by_role("button", name="Reveal", exact=True)).first
    bring_into_view(card)
    assert "Spot the bug" in card.inner_text()
    expected = bug_card(1).drill  # the lesson's first card, by number
    assert expected.title not in card.inner_text()  # the title would name the bug: after the answer
    right = expected.question.answer
    choice = card.locator(".widget-radio-box input[type=radio]").nth(right)
    submit = card.get_by_role("button", name="Submit", exact=True)
    reveal = card.get_by_role("button", name="Reveal", exact=True)
    for locked in (choice, submit, reveal):  # nothing to click before a hypothesis
        expect(locked).to_be_disabled()

    card.get_by_label("Hypothesis", exact=True).fill("nothing zeroes .grad, so gradients add up")
    expect(choice).to_be_enabled(timeout=WAIT_MS)  # the kernel unlocked the choices
    choice.check()
    expect(submit).to_be_enabled(timeout=WAIT_MS)
    submit.click()
    expect(card.locator(".widget-html", has_text="Right:")).to_contain_text(
        f"✔ Right: {LETTERS[right]})", timeout=WAIT_MS)
    expect(card.locator("code", has_text=expected.id)).to_be_visible(timeout=WAIT_MS)

    card.get_by_role("button", name="Run the buggy code", exact=True).click()
    expect(card.locator(".widget-output")).to_contain_text("symptom:", timeout=WAIT_MS)

    expect(reveal).to_be_enabled(timeout=WAIT_MS)
    reveal.click()
    fix = card.locator(".widget-html", has_text="The fix:")
    fix.wait_for(timeout=WAIT_MS)
    shown = " ".join(fix.text_content().split())
    diff = repr(FixDiff(expected))  # the fix as a diff against the code the card showed
    assert "+" in diff and "optimizer.zero_grad()" in diff
    for part in (diff, f"Why: {plain(expected.why)}"):
        assert " ".join(part.split()) in shown, f"{part!r} is not in the revealed text"
    # the worked answer under the card opened when the card was submitted; the widest worked
    # answer (card 4: 95 characters) opens with its button; no diff line wraps at any width
    gated = page.locator(".jp-OutputArea-output .mpsd-gated")
    worked = gated.first
    expect(worked).to_contain_text(expected.title, timeout=WAIT_MS)
    expect(worked.locator("pre.mpsd-diff")).to_contain_text("+++ fixed", timeout=WAIT_MS)
    widest = gated.nth(next(i for i, text in enumerate(gated.all_inner_texts())
                            if "answer card 4 above" in text))  # by position: its note goes
    bring_into_view(widest)
    widest.get_by_role("button", name=SHOW, exact=True).click()
    expect(widest.locator("pre.mpsd-diff")).to_contain_text("+++ fixed", timeout=WAIT_MS)
    try:
        wrapped, overflowed = diff_problems(page)
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})  # the widget tests' size
    assert wrapped == {size: [] for size in wrapped}, f"diff lines that wrap: {wrapped}"
    assert overflowed, "no diff was wider than its box: the check met no line that could wrap"


@pytest.mark.slow
@pytest.mark.lesson("05_non_contiguous_tensors.ipynb")
def test_a_practice_link_opens_the_learners_copy_of_the_exercises_at_that_exercise(run_lesson, lesson_runs):
    name = "05_non_contiguous_tensors.ipynb"
    page = run_lesson(name).page
    link = page.locator(".jp-OutputArea-output a", has_text="05.view_or_copy").first
    bring_into_view(link)
    link.click()
    # JupyterLab opens the learner's copy (made by the lesson's cell) in a new tab.
    shown = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) h2", has_text="05.view_or_copy")
    expect(shown).to_be_visible(timeout=WAIT_MS)
    copy = name.replace(".ipynb", "_exercises.ipynb")  # its own name: the lesson's tab is another
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path") == f"workspace/{copy}"
    assert (lesson_runs.lab.root / "workspace" / copy).exists()
    # JupyterLab 4.6 applies a link's fragment before a notebook it has just opened is laid out,
    # so the first click lands at the top of the copy; once the copy is open, a click on the link
    # reveals it at the exercise's heading.
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)
    link.click()
    in_view = "h => { const r = h.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; }"
    poll(page, lambda: shown.evaluate(in_view), "the link did not reveal the exercise's heading")
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)


# --- lesson 08's drill clock --------------------------------------------------------------------

HELD = "# held busy by the browser test until it writes this file:"
# Whether the cell added by hold_kernel is running, from its model: its execute request has no
# reply yet. (Not the kernel's status: it reads "idle" after each widget message it handles.)
HELD_RUNNING = """(mark) => {
    const nb = window.jupyterapp.shell.currentWidget;
    const held = nb.content.widgets.filter(c => c.model.sharedModel.getSource().includes(mark));
    return held.length === 1 && held[0].model.executionState === 'running';
}"""
# The drill clock is an ipywidgets Play: its button shows a pause icon while it plays.
CLOCK_PLAYING = ".widget-play i.fa-pause"


def seconds_shown(widget) -> int:
    return int(widget.locator(".widget-text:has(label:text-is('seconds')) input").input_value())


def bar_width(widget) -> float:
    """The drill clock's bar ("time used"; a fix box has a judging bar of its own), in percent."""
    clock_bar = widget.locator(".widget-hprogress:has(label:text-is('time used')) .progress-bar")
    style = clock_bar.get_attribute("style") or ""
    width = [part for part in style.split(";") if part.strip().startswith("width")]
    return float(width[0].split(":")[1].strip().rstrip("%")) if width else 0.0


def wait_for_count(widget, at_least: int) -> int:
    """Wait until the clock shows ``at_least`` seconds; the deadline only ends a stuck clock."""
    return poll(widget.page, lambda: (value := seconds_shown(widget)) >= at_least and value,
                f"the clock never reached {at_least} s (shows {seconds_shown(widget)})")


def kernel_held(page) -> bool:
    """Whether the cell added by hold_kernel is running, so the kernel is busy."""
    return page.evaluate(HELD_RUNNING, HELD)


def hold_kernel(page, release: Path) -> None:
    """Add a cell at the end that keeps the kernel busy until ``release`` exists, and run it
    (the notebook is not saved again); return once it is running."""
    source = f"import pathlib, time\n{HELD} {str(release)!r}\n" \
             f"while not pathlib.Path({str(release)!r}).exists():\n    time.sleep(0.05)\n"
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    page.evaluate("(source) => window.jupyterapp.shell.currentWidget.content.activeCell"
                  ".model.sharedModel.setSource(source)", source)
    # not awaited: the command's promise resolves only when the cell has finished
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    poll(page, lambda: kernel_held(page), "the cell holding the kernel never started")


@pytest.mark.slow
@pytest.mark.lesson("08_interview_drills.ipynb")
def test_the_drill_clock_counts_in_the_browser_even_while_the_kernel_is_busy(run_lesson, tmp_path):
    page = run_lesson("08_interview_drills.ipynb").page
    widget = drill_widget(page)
    widget.scroll_into_view_if_needed()
    assert seconds_shown(widget) == 0 and bar_width(widget) == 0.0
    expect(widget.locator(CLOCK_PLAYING)).to_have_count(0)

    widget.locator(f"button:has-text('{START}')").click()
    widget.locator(".widget-textarea textarea").first.wait_for(timeout=WAIT_MS)  # the card's hypothesis box
    code = widget.locator(".widget-html pre").first
    poll(page, lambda: "torch" in code.inner_text(), "the drill's buggy code never showed")
    first = wait_for_count(widget, 1)

    # The kernel is held busy (by a state: a file not written yet, not by a sleep of some length)
    # while the clock has to count two more seconds.
    release = tmp_path / "release"
    try:
        hold_kernel(page, release)
        before = seconds_shown(widget)
        after = wait_for_count(widget, before + 2)
        assert kernel_held(page), "the kernel should still be busy with the held cell"
        assert after > first and bar_width(widget) > 0.0
    finally:
        release.touch()
    poll(page, lambda: not kernel_held(page), "the held cell never finished after its release")

    widget.locator(".widget-textarea textarea").first.fill("softmax applied twice; the loss has a floor")
    widget.locator(".widget-radio-box input[type=radio]").first.check()
    expect(widget.locator(CLOCK_PLAYING)).to_have_count(1)
    widget.locator("button:has-text('Submit')").click()
    widget.locator(":text-matches('Right|Not quite')").first.wait_for(timeout=WAIT_MS)
    # Stopped is a state of the clock (its Play widget paused), not a pause long enough to see it.
    expect(widget.locator(CLOCK_PLAYING), "submitting the answer stops the clock").to_have_count(
        0, timeout=WAIT_MS)
