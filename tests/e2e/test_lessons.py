"""Every lesson, in a real JupyterLab in a real browser: runs, shows no unexpected error, renders
its plots and widgets, and its widgets respond. Lessons are discovered from notebooks/."""

from __future__ import annotations

import json
import time

import nbformat
import pytest

from tests.e2e.conftest import ARTIFACTS, ROOT

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
RUN_TIMEOUT_MS = 180_000


KERNEL_IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
# The notebook is loaded and its kernel connected and idle. The toolbar's execution indicator
# alone reads "idle" while the notebook is still loading and before any kernel exists; Run All
# pressed then races the automatic kernel start (two kernels start, one is shut down at once).
KERNEL_READY = """() => {
    const nb = window.jupyterapp.shell.currentWidget;
    const session = nb && nb.context && nb.context.isReady && nb.sessionContext
        && nb.sessionContext.session;
    const kernel = session && session.kernel;
    return !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
}"""
NOTHING_RUNNING = """() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
    const idle = document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
    return idle !== null && !prompts.some(p => p.textContent.includes('*'));
}"""
ANY_PROMPT_STARTED = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
    .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""


def wait_for_kernel_ready(page) -> None:
    """Wait until the notebook is loaded and its kernel connected and idle (accepting a
    kernel dialog if one appears)."""
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
    page.evaluate("() => window.jupyterapp.restored")  # the widget manager has started too
    for _ in range(180):
        if page.evaluate(KERNEL_READY):
            return
        dialog = page.locator(".jp-Dialog button.jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        page.wait_for_timeout(500)
    raise AssertionError("the notebook's kernel never became ready")


def run_all(page) -> None:
    """Run All Cells from the menu; retry once if no cell starts (a menu click can be lost)."""
    for _ in range(3):
        page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
        page.locator("li.lm-Menu-item", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(ANY_PROMPT_STARTED, timeout=15_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError("Run All Cells did not start any cell")


def run_all_and_wait(page) -> None:
    """Wait for the kernel, Run All from the menu, then wait until every cell has run."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # Widgets created before every extension (the widget manager among them) has started are
    # lost ("Loading widget..."): wait_for_kernel_ready waits for the app to be restored first.
    wait_for_kernel_ready(page)
    run_all(page)
    # Done = the kernel idle and no cell queued or running, twice 1 s apart. A cell that stopped
    # the run early is then reported by the checks on the saved notebook, not as a timeout.
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        page.wait_for_function(NOTHING_RUNNING, timeout=RUN_TIMEOUT_MS)
        page.wait_for_timeout(1000)
        if page.evaluate(NOTHING_RUNNING):
            return
    raise AssertionError("the notebook was still running after the time limit")


def saved_notebook(page, lab, name: str):
    """Save from the browser and read back what the learner would have on disk."""
    path = lab.root / name
    before = path.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and path.stat().st_mtime_ns == before:
        time.sleep(0.2)
    return nbformat.read(path, as_version=4)


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


def count_png_outputs(nb) -> int:
    return sum("image/png" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", []))


def answer_quiz(page) -> str:
    """Pick the first choice of every question, press Submit, return the feedback text."""
    quiz = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator("button:has-text('Submit')")).last
    for group in quiz.locator(".widget-radio-box").all():
        group.locator("input[type=radio]").first.check()
    quiz.locator("button:has-text('Submit')").click()
    feedback = quiz.locator(".widget-output")
    feedback.locator("text=Score:").wait_for(timeout=10_000)
    return feedback.inner_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", LESSONS)
def test_lesson_runs_in_jupyterlab_with_plots_and_widgets_working(page, lab, name):
    page.goto(lab.notebook_url(name))
    run_all_and_wait(page)
    nb = saved_notebook(page, lab, name)
    assert unexpected_errors(nb) == []
    assert cells_not_run(nb) == [], "cells that never ran (the run stopped early)"
    images = page.locator(".jp-RenderedImage img")
    assert images.count() == count_png_outputs(nb)
    for img in images.all():
        assert img.evaluate("i => i.complete && i.naturalWidth > 0"), "a plot did not render"
    widget_outputs = sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})
                         for c in nb.cells for out in c.get("outputs", []))
    assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() >= widget_outputs
    assert "Score:" in answer_quiz(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name.removesuffix('.ipynb')}.png"), full_page=False)
    json.dumps(nb)  # the saved notebook is valid JSON end to end


@pytest.mark.slow
def test_check_shows_its_pass_line_in_lesson_00(page, lab):
    page.goto(lab.notebook_url("00_start_here.ipynb"))
    run_all_and_wait(page)
    page.locator(".jp-OutputArea-output:has-text('✔ 00.count_params passed')").wait_for(timeout=10_000)
    failure = page.locator(".jp-OutputArea-output:has-text('CheckFailed: 00.count_params')")
    assert failure.count() == 1 and "Traceback" not in failure.inner_text()
