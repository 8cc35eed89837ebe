"""Lesson 08 in a real JupyterLab: the drill widget's five-minute clock visibly counts in the
browser, keeps counting while the kernel is busy, and stops when the answer is submitted."""

from __future__ import annotations

import time

import pytest

from course_utils.drill_mode import START
from tests.e2e.test_lessons import KERNEL_IDLE, run_all_and_wait

LESSON = "08_interview_drills.ipynb"
EVERY_CELL_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
    const idle = document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
    return idle !== null && prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""
SLEEP_PROMPT = """() => [...document.querySelectorAll('.jp-CodeCell')]
    .filter(c => c.querySelector('.jp-InputArea-editor').textContent.includes('time.sleep('))
    .map(c => c.querySelector('.jp-InputPrompt').textContent).join('')"""


def run_every_cell(page) -> None:
    """Run All, and again if a cell was left unrun: the first notebook opened in a fresh server can
    have its kernel replaced while it starts, which stops Run All early."""
    run_all_and_wait(page)
    for _ in range(2):
        if page.evaluate(EVERY_CELL_RAN):
            return
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_function(EVERY_CELL_RAN, timeout=180_000, polling=1000)
    assert page.evaluate(EVERY_CELL_RAN), "some cells never ran"


def drill_widget(page):
    """The outermost widget box that holds the Start drill button."""
    return page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator(f"button:has-text('{START}')")).first


def seconds_shown(widget) -> int:
    return int(widget.locator(".widget-text:has(label:text-is('seconds')) input").input_value())


def bar_width(widget) -> float:
    style = widget.locator(".widget-hprogress .progress-bar").get_attribute("style") or ""
    width = [part for part in style.split(";") if part.strip().startswith("width")]
    return float(width[0].split(":")[1].strip().rstrip("%")) if width else 0.0


def wait_for_count(widget, at_least: int, seconds: float = 15) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = seconds_shown(widget)
        if value >= at_least:
            return value
        time.sleep(0.2)
    raise AssertionError(f"the clock never reached {at_least} s (shows {seconds_shown(widget)})")


def kernel_sleeping(page) -> bool:
    """Whether the cell added by keep_kernel_busy is still running."""
    return "*" in page.evaluate(SLEEP_PROMPT)


def keep_kernel_busy(page, seconds: int) -> None:
    """Add a cell below the active one that sleeps, and run it (the notebook is not saved)."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-edit-mode')")
    page.keyboard.type(f"import time; time.sleep({seconds})")
    # not awaited: the command's promise resolves only when the cell has finished
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    page.wait_for_function(f"() => ({SLEEP_PROMPT})().includes('*')", timeout=10_000, polling=100)


@pytest.mark.slow
def test_the_drill_clock_counts_in_the_browser_even_while_the_kernel_is_busy(page, lab):
    page.goto(lab.notebook_url(LESSON))
    run_every_cell(page)
    widget = drill_widget(page)
    widget.scroll_into_view_if_needed()
    assert seconds_shown(widget) == 0 and bar_width(widget) == 0.0

    widget.locator(f"button:has-text('{START}')").click()
    widget.locator(".widget-textarea textarea").wait_for(timeout=10_000)  # the card's hypothesis box
    assert "torch" in widget.locator(".widget-html pre").first.inner_text()  # the buggy code shows
    first = wait_for_count(widget, 1)

    keep_kernel_busy(page, 8)
    before = seconds_shown(widget)
    page.wait_for_timeout(3000)
    after = seconds_shown(widget)
    assert kernel_sleeping(page), "the kernel should still be busy with the sleeping cell"
    assert after - before >= 2, f"the clock went from {before} to {after} in 3 s of a busy kernel"
    assert after > first and bar_width(widget) > 0.0

    page.locator(KERNEL_IDLE).wait_for(timeout=30_000)
    widget.locator(".widget-textarea textarea").fill("softmax applied twice; the loss has a floor")
    widget.locator(".widget-radio-box input[type=radio]").first.check()
    widget.locator("button:has-text('Submit')").click()
    widget.locator(":text-matches('Right|Not quite')").first.wait_for(timeout=10_000)
    stopped = seconds_shown(widget)
    page.wait_for_timeout(2500)
    assert seconds_shown(widget) - stopped <= 1, "submitting the answer stops the clock"
