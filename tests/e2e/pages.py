"""Helpers that drive a JupyterLab page in Chromium: wait for the kernel, Run All, read back the
saved notebook, and poll widgets that the kernel redraws. Used by test_lessons.py."""

from __future__ import annotations

import base64

import nbformat
import pytest

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError
RUN_TIMEOUT_MS = 180_000
WAIT_MS = 20_000  # one kernel round trip; generous because the machine is shared

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
    for _ in range(180):
        if page.evaluate(KERNEL_READY):
            return
        dialog = page.locator(".jp-Dialog button.jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        page.wait_for_timeout(500)
    raise AssertionError("the notebook's kernel never became ready")


def run_all(page) -> None:
    """Run All Cells from the menu; retry if no cell starts (a menu click can be lost)."""
    for _ in range(3):
        page.locator("li.lm-MenuBar-item", has_text="Run").first.click()
        page.locator("li.lm-Menu-item", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(ANY_PROMPT_STARTED, timeout=15_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError("Run All Cells did not start any cell")


def open_and_run(page, url: str, name: str) -> None:
    """Open a lesson (outputs cleared), wait for its kernel, Run All from the menu, and wait
    until every cell has run; fail fast, with the first error output, if Run All halts early."""
    page.goto(url)
    # Widgets created before every extension (the widget manager among them) has started are
    # lost ("Loading widget..."): wait_for_kernel_ready waits for the app to be restored first.
    wait_for_kernel_ready(page)
    run_all(page)
    state = None
    for _ in range(2):  # 'stopped' is confirmed once: a state between two cells must not count
        state = page.wait_for_function(RUN_STATE, timeout=RUN_TIMEOUT_MS, polling=250).json_value()
        if state == "done":
            return
        page.wait_for_timeout(1000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    first = errors.first.text_content()[-400:] if errors.count() else "(no error output)"
    raise AssertionError(f"Run All ended early in {name} ({state}); first error output: {first}")


def save_and_read(page, path):
    """Save from the browser and read back what the learner would have on disk.

    The save command's promise settles once the server has answered, i.e. after the file is
    written: the server rewrites the file in place, so reading when its mtime first changes can
    catch it empty."""
    before = path.stat().st_mtime_ns
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    assert path.stat().st_mtime_ns != before, "saving from JupyterLab did not write the notebook"
    return nbformat.read(path, as_version=4)


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
