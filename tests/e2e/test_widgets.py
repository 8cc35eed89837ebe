"""The course's interactive widgets, clicked in a real JupyterLab: each one renders and its kernel
side answers. Lesson 05's stride explorer redraws its strides and picture for an op and undo/reset
bring the first picture back; lesson 07's spot-the-bug card gates the choices on a hypothesis,
grades a choice, runs the buggy code and reveals the fix with its why. (Lesson 00's ``check()``
pass line is tested in test_lessons.py.)"""

from __future__ import annotations

import base64

import pytest

from tests.e2e.test_lessons import RUN_TIMEOUT_MS, run_all, wait_for_kernel_ready

expect = pytest.importorskip("playwright.sync_api").expect
WAIT_MS = 20_000  # one kernel round trip; generous because the machine is shared

# After Run All: 'done' when every code cell has its number; 'stopped' when nothing is queued
# any more but some cell never ran (an error halted Run All), so a broken lesson fails in
# seconds, not at the run timeout.
RUN_STATE = """() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
        .map(p => p.textContent);
    if (prompts.length === 0) return false;
    if (prompts.every(t => /\\[\\d+\\]/.test(t))) return 'done';
    const nb = window.jupyterapp.shell.currentWidget;
    const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
    if (kernel && kernel.status === 'dead') return 'kernel died';
    if (!prompts.some(t => t.includes('*')) && kernel && kernel.status === 'idle') return 'stopped';
    return false;
}"""

# The <img>'s PNG bytes (base64), read from its blob: URL once it has loaded; false until then.
# A redraw swaps the blob URL and revokes the old one, hence the catch.
IMAGE_BYTES = """async (img) => {
    if (!img.complete || img.naturalWidth === 0 || !img.src) return false;
    try {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let text = '';
        for (let i = 0; i < bytes.length; i += 8192)
            text += String.fromCharCode(...bytes.subarray(i, i + 8192));
        return btoa(text);
    } catch (e) { return false; }
}"""


def open_and_run(page, lab, name: str) -> None:
    """Open a lesson (outputs cleared), wait for its kernel, Run All from the menu, and wait
    until every cell has run; fail fast if Run All halts early."""
    page.goto(lab.notebook_url(name))
    wait_for_kernel_ready(page)
    run_all(page)
    for _ in range(2):  # 'stopped' is confirmed once: a state between two cells must not count
        state = page.wait_for_function(RUN_STATE, timeout=RUN_TIMEOUT_MS, polling=250).json_value()
        if state == "done":
            return
        page.wait_for_timeout(1000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    first = errors.first.text_content()[-400:] if errors.count() else "(no error output)"
    raise AssertionError(f"Run All ended early in {name} ({state}); first error output: {first}")


# With JupyterLab 4's default windowing, off-screen cells are skipped or laid out late, so one
# scroll can land short (the e2e settings may turn windowing off; this works either way). Scroll
# until the element sits in the viewport and its text has been rendered.
IN_VIEW_AND_RENDERED = """el => {
    el.scrollIntoView({block: 'start'});
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.top < window.innerHeight && el.innerText.trim() !== '';
}"""


def poll(page, probe, what: str):
    """Call ``probe()`` every 100 ms until it returns something truthy; return that.

    Every probe re-finds its element through a locator: ipywidgets may re-create an element
    (radio buttons, a redrawn image), which would leave a held element handle stale."""
    deadline_ms = WAIT_MS
    while deadline_ms > 0:
        value = probe()
        if value:
            return value
        page.wait_for_timeout(100)
        deadline_ms -= 100
    raise AssertionError(f"timed out after {WAIT_MS / 1000:.0f} s: {what}")


def bring_into_view(locator) -> None:
    """Scroll a widget's output into the viewport; fail if it never renders."""
    locator.wait_for(state="attached", timeout=WAIT_MS)
    poll(locator.page, lambda: locator.evaluate(IN_VIEW_AND_RENDERED),
         "the widget never rendered in view")


def picture(img, until=lambda png: True, what: str = "the picture never loaded") -> bytes:
    """The PNG bytes an <img> shows, once loaded and ``until(bytes)`` holds."""
    def probe():
        data = img.evaluate(IMAGE_BYTES)
        png = base64.b64decode(data) if data else b""
        return png if png and until(png) else None

    return poll(img.page, probe, what)


@pytest.mark.slow
def test_stride_explorer_redraws_for_an_op_and_undo_and_reset_restore_it(page, lab):
    open_and_run(page, lab, "05_non_contiguous_tensors.ipynb")
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
def test_bug_card_gates_on_a_hypothesis_grades_runs_and_reveals_the_fix(page, lab):
    from course_utils.bugcard import LETTERS  # imports torch: only when the test runs
    from course_utils.bugcard import card as bug_card

    open_and_run(page, lab, "07_training_bugs.ipynb")
    card = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.get_by_role("button", name="Reveal", exact=True)).first
    bring_into_view(card)
    assert "Spot the bug" in card.inner_text()
    expected = bug_card(card.locator("code").first.text_content()).drill  # the title names it
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

    card.get_by_role("button", name="Run the buggy code", exact=True).click()
    expect(card.locator(".widget-output")).to_contain_text("symptom:", timeout=WAIT_MS)

    expect(reveal).to_be_enabled(timeout=WAIT_MS)
    reveal.click()
    fix = card.locator(".widget-html", has_text="The fix:")
    fix.wait_for(timeout=WAIT_MS)
    shown = " ".join(fix.text_content().split())
    for part in (expected.fixed_code, f"Why: {expected.why}"):
        assert " ".join(part.split()) in shown, f"{part!r} is not in the revealed text"
