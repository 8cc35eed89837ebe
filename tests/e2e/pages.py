"""Helpers that drive a JupyterLab page in Chromium: wait for the kernel, Run All, read back the
saved notebook, and poll widgets that the kernel redraws. Used by test_lessons.py."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import nbformat
import pytest

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError
# Deadlines, not expectations: every wait below ends as soon as the state it waits for holds, so
# these only matter when something is truly stuck. They are generous because CI machines are busy.
RUN_TIMEOUT_MS = 600_000  # a whole lesson's Run All (the browser tests' pytest timeout is 900 s)
WAIT_MS = 60_000  # one kernel round trip or one redraw

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
ANY_PROMPT_STARTED = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
    .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""
# Where a Run All stands, read from the notebook's model and its kernel, never from a pause:
#   'done'     every code cell (in the order of the .ipynb on disk: ``cells``) has an execution
#              count, or raised the error its tags expect; and the kernel is idle. The kernel runs
#              its queue in order, so when the last cell has its count nothing is queued any more.
#   'error'    a cell not tagged to raise shows an error and the kernel is idle: the kernel has
#              dropped the rest of the queue, and the lesson fails whatever happens next.
#   'dead'     the kernel died or is restarting.
#   false      anything else: still running (keep waiting).
# The prompts cannot tell: after an *expected* error JupyterLab clears the "[*]" of every queued
# cell although the kernel goes on running them (stop_on_error is off for a cell tagged
# raises-exception), and the kernel reports "idle" for a moment between two cells.
RUN_STATE = """(cells) => {
    const nb = window.jupyterapp.shell.currentWidget;
    const kernel = nb && nb.sessionContext && nb.sessionContext.session
        && nb.sessionContext.session.kernel;
    if (!kernel) return false;
    if (['dead', 'restarting', 'autorestarting'].includes(kernel.status))
        return {state: 'dead', detail: `the kernel is ${kernel.status}`};
    const code = nb.content.widgets.filter(c => c.model.type === 'code');
    if (code.length !== cells.length) return false;  // not the notebook on disk (yet)
    const notRun = [], unexpected = [];
    code.forEach((cell, i) => {
        const errors = cell.model.outputs.toJSON().filter(o => o.output_type === 'error');
        if (errors.length && !cells[i].raises)
            unexpected.push(`cell ${cells[i].index}: ${errors[0].ename}: ${errors[0].evalue}`);
        const ran = cell.model.executionCount !== null || (cells[i].raises && errors.length > 0);
        if (!ran && !cells[i].empty) notRun.push(cells[i].index);
    });
    const idle = kernel.status === 'idle';
    if (idle && notRun.length === 0) return {state: 'done', detail: ''};
    if (idle && unexpected.length)
        return {state: 'error', detail: `${unexpected[0].slice(0, 400)}; cells never run: ${notRun}`};
    return false;
}"""
# The same reading, for a message when the run timeout passes.
RUN_PROGRESS = """() => {
    const nb = window.jupyterapp.shell.currentWidget;
    const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
    const code = nb.content.widgets.filter(c => c.model.type === 'code');
    const counted = code.filter(c => c.model.executionCount !== null).length;
    return `${counted} of ${code.length} code cells have an execution count; kernel `
        + (kernel ? kernel.status : 'none');
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
# With JupyterLab 4's default windowing, off-screen cells are skipped or laid out late, so one
# scroll can land short (the e2e settings turn windowing off; this works either way). Scroll
# until the element sits in the viewport and its text has been rendered.
IN_VIEW_AND_RENDERED = """el => {
    el.scrollIntoView({block: 'start'});
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.top < window.innerHeight && el.innerText.trim() !== '';
}"""


def wait_for_kernel_ready(page) -> None:
    """Wait until the notebook is loaded and its kernel connected and idle (accepting a
    kernel dialog if one appears)."""
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
    page.evaluate("() => window.jupyterapp.restored")  # the widget manager has started too
    deadline = time.monotonic() + WAIT_MS / 1000 * 3
    while time.monotonic() < deadline:
        if page.evaluate(KERNEL_READY):
            return
        dialog = page.locator(".jp-Dialog button.jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        page.wait_for_timeout(250)
    raise AssertionError(f"the notebook's kernel was not ready after {WAIT_MS * 3 / 1000:.0f} s")


def run_all(page) -> None:
    """Run All Cells from the menu; click again only if no cell has started after a whole
    ``WAIT_MS`` (a menu click can be lost; a slow page is not a lost click)."""
    for _ in range(3):
        page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
        page.locator("li.lm-Menu-item", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(ANY_PROMPT_STARTED, timeout=WAIT_MS)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError("Run All Cells did not start any cell")


def code_cells(path: Path) -> list[dict]:
    """The code cells of the notebook on disk, in order: their index among all cells, whether
    their tags expect an error (``raises-exception``) and whether they are empty (never run)."""
    nb = nbformat.read(path, as_version=4)
    return [{"index": i, "raises": "raises-exception" in cell.metadata.get("tags", []),
             "empty": not cell.source.strip()}
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]


def wait_until_run(page, path: Path) -> None:
    """Wait until Run All is done (``RUN_STATE``): every code cell of ``path`` has run or raised
    its expected error and the kernel is idle. Fail at once with the first unexpected error when
    one halted the run, or with the progress so far if the run is stuck for ``RUN_TIMEOUT_MS``."""
    try:
        result = page.wait_for_function(RUN_STATE, arg=code_cells(path), timeout=RUN_TIMEOUT_MS,
                                        polling=250).json_value()
    except PlaywrightTimeout:
        raise AssertionError(f"Run All of {path.name} not done after {RUN_TIMEOUT_MS / 1000:.0f} s: "
                             f"{page.evaluate(RUN_PROGRESS)}") from None
    if result["state"] != "done":
        raise AssertionError(f"Run All of {path.name} failed ({result['state']}): {result['detail']}")


def open_and_run(page, url: str, path: Path) -> float:
    """Open a lesson (outputs cleared), wait for its kernel, Run All from the menu, and wait
    until every cell has run (``wait_until_run``, against the cells and tags of ``path``).
    Returns the seconds from Run All to the last cell done (the learner's wait)."""
    page.goto(url)
    # Widgets created before every extension (the widget manager among them) has started are
    # lost ("Loading widget..."): wait_for_kernel_ready waits for the app to be restored first.
    wait_for_kernel_ready(page)
    started = time.monotonic()
    run_all(page)
    wait_until_run(page, path)
    return time.monotonic() - started


def save_and_read(page, path):
    """Save from the browser and read back what the learner would have on disk.

    The save command's promise settles once the server has answered, i.e. after the file is
    written: the server rewrites the file in place, so reading when its mtime first changes can
    catch it empty."""
    before = path.stat().st_mtime_ns
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    assert path.stat().st_mtime_ns != before, "saving from JupyterLab did not write the notebook"
    return nbformat.read(path, as_version=4)


def poll(page, probe, what: str, timeout_ms: float = WAIT_MS):
    """Call ``probe()`` every 100 ms until it returns something truthy; return that. The
    deadline only ends a stuck wait.

    Every probe re-finds its element through a locator: ipywidgets may re-create an element
    (radio buttons, a redrawn image), which would leave a held element handle stale."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not so after {timeout_ms / 1000:.0f} s: {what}")
        page.wait_for_timeout(100)


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


def drill_widget(page):
    """Lesson 08's timed-round widget: the outermost widget box that holds the Start drill button."""
    from course_utils.learner.drilling.mode import START

    return page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator(f"button:has-text('{START}')")).first
