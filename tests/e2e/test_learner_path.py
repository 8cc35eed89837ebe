"""The learner's own path, in a real browser, on a lab started exactly as the README says: the
bootstrap command from a shell whose PATH lacks the course's environment, with a fresh HOME, progress
folder and workspace (the setup stamp is current, so it installs nothing).

One walk through that lab proves: the URL ``--no-browser`` prints opens lesson 00; lesson 00's own
last link makes the copy of lesson 01 and opens it; ``!course progress`` runs in a cell; ``course
start 02`` runs in a JupyterLab terminal and prints what it copied; a printed report's <pre> has the
course's page CSS (wraps at word boundaries); and after the server restarts, a saved lesson whose
widgets have lost their kernel says to run the cell again. The same lab (and learner) then takes
lesson 08's copy through a timed round to a fix-it drill: an edit that hides the error is refused
with the judge's reason and stays in the editor, the drill's fix is accepted, and the round's
summary scores the fix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from tests.e2e.conftest import ARTIFACTS, ROOT
from tests.e2e.pages import WAIT_MS, poll, wait_for_kernel_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOOLS = Path(sys.executable).parent  # the course's environment, where `course` is
LESSON_00 = "lessons/00_start_here.ipynb"
LESSON_08 = "lessons/08_interview_drills.ipynb"
NOTEBOOK = "window.jupyterapp.shell.currentWidget"
OPEN_PATH = """() => { const nb = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return nb && nb.context ? nb.context.path : null; }"""  # the open document's path, once there


def plain_path() -> str:
    """This PATH without the course's environment: a shell where nothing was activated."""
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != TOOLS.resolve())


class ReadmeLab:
    """``python3 course_utils/bootstrap.py lab --no-browser ...`` in a subprocess: its printed URL,
    its output so far, and a restart."""

    def __init__(self, python3: str, env: dict, port: int):
        self.python3, self.env, self.port = python3, env, port
        self.server, self.lines, self.url = None, [], ""

    def start(self) -> str:
        """Start the lab (unless it runs already); return the URL it prints for the learner to open."""
        if self.server is not None and self.server.poll() is None:
            return self.url
        self.lines = []
        self.server = subprocess.Popen(
            [self.python3, "course_utils/bootstrap.py", "lab", "--no-browser", f"--port={self.port}",
             "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
             "--LabApp.expose_app_in_browser=True"],  # lets the test read JupyterLab's state
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        threading.Thread(target=self._read, args=(self.server.stdout,), daemon=True).start()
        pattern = re.compile(rf"http://127\.0\.0\.1:{self.port}/\S*\?token=\w+")
        deadline = time.monotonic() + 240  # ends a stuck start only
        while time.monotonic() < deadline:
            found = next((m.group() for line in list(self.lines) if (m := pattern.search(line))), None)
            if found:
                self.url = found
                return found
            assert self.server.poll() is None, "the lab exited:\n" + "".join(self.lines)
            time.sleep(0.2)
        raise AssertionError("the lab printed no URL:\n" + "".join(self.lines))

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)

    def stop(self) -> None:
        if self.server is None or self.server.poll() is not None:
            return
        os.killpg(self.server.pid, signal.SIGTERM)
        try:
            self.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.server.pid, signal.SIGKILL)
            self.server.wait(timeout=30)


@pytest.fixture(scope="module")
def readme_lab(tmp_path_factory):
    """The README's lab, or a skip saying why it cannot be started here without installing; one
    lab (and one learner's HOME) for the tests of this file."""
    from tests.hub_session import free_port

    tmp_path = tmp_path_factory.mktemp("readme-lab")
    path = plain_path()
    python3 = shutil.which("python3", path=path)
    if python3 is None:
        pytest.skip("no python3 on PATH outside the course's environment")
    if shutil.which("course", path=path):
        pytest.skip("a `course` command is on PATH outside the course's environment")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))
           and k not in ("IPYTHONDIR", "MPLCONFIGDIR", "MPLBACKEND", "PYTHONHOME")}
    env.update(PATH=path, HOME=str(tmp_path / "home"), MPS_DETECTIVE_HOME=str(tmp_path / "progress"),
               MPS_DETECTIVE_WORKSPACE=str(tmp_path / "workspace"), MPS_DETECTIVE_DEVICE="cpu",
               # this checkout's course, whichever checkout the environment was installed from
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.setdefault("MPS_DETECTIVE_VENV", str(TOOLS.parent))
    (tmp_path / "home").mkdir()
    current = subprocess.run(
        [python3, "-c", "import sys; sys.path.insert(0, 'course_utils'); import bootstrap as b; "
         "print(b.read_stamp()[0] == b.inputs_hash() and b.venv_bin('course').exists())"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    if current.stdout.strip() != "True":
        pytest.skip("the setup stamp is not current for this python3: the lab would install first "
                    f"({current.stdout.strip()} {current.stderr.strip()[-200:]})")
    lab = ReadmeLab(python3, env, free_port())
    yield lab, tmp_path
    lab.stop()


def run_cell(page, index: int) -> None:
    """Run cell ``index`` of the open notebook (as Shift+Enter on it) and wait until it ran."""
    poll(page, lambda: page.evaluate(f"(i) => {NOTEBOOK}.content.widgets.length > i", index),
         f"the notebook never showed cell {index}")  # its cells arrive after the kernel is ready
    page.evaluate(f"""async (i) => {{ const nb = {NOTEBOOK}.content; nb.activeCellIndex = i;
        await window.jupyterapp.commands.execute('notebook:run-cell'); }}""", index)
    poll(page, lambda: page.evaluate(f"""(i) => {{ const c = {NOTEBOOK}.content.widgets[i].model;
        return c.executionCount !== null && {NOTEBOOK}.sessionContext.session.kernel.status === 'idle';
        }}""", index), f"cell {index} did not run")


def terminal_text(page) -> str:
    """What the current JupyterLab terminal shows (its xterm.js buffer)."""
    return page.evaluate(f"""() => {{ const b = {NOTEBOOK}.content._term.buffer.active; const rows = [];
        for (let i = 0; i < b.length; i++) rows.push(b.getLine(i).translateToString(true));
        return rows.join('\\n'); }}""")


def test_the_readme_lab_takes_a_learner_from_lesson_00_onwards_with_course_working_everywhere(
        readme_lab, browser):
    lab, tmp_path = readme_lab
    url = lab.start()
    assert "nothing to install" in "".join(lab.lines), "the lab installed something"
    assert f"/lab/tree/{LESSON_00}?" in url, url
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        # The printed URL opens the learner's copy of lesson 00.
        page.goto(url)
        wait_for_kernel_ready(page)
        assert page.evaluate(f"() => {NOTEBOOK}.context.path") == LESSON_00
        copy = tmp_path / "workspace" / LESSON_00
        sources = [c.source for c in nbformat.read(copy, as_version=4).cells]
        quiz = next(i for i, s in enumerate(sources) if s.startswith("from course_utils.learner.quiz"))
        last = len(sources) - 1
        assert 'next_lesson("01")' in sources[last], "lesson 00 ends with its link to lesson 01"

        # `!course progress` in a cell (below the lesson's last cell), on the lab's own PATH.
        run_cell(page, quiz)
        run_cell(page, last)
        page.evaluate(f"""async () => {{ const app = window.jupyterapp;
            await app.commands.execute('notebook:insert-cell-below');
            {NOTEBOOK}.content.activeCell.model.sharedModel.setSource('!course progress'); }}""")
        run_cell(page, last + 1)
        printed = page.locator(".jp-Cell").nth(last + 1).locator(".jp-OutputArea-output pre")
        assert f"progress file: {tmp_path / 'progress' / 'progress.json'}" in printed.text_content()
        # The course's page CSS reached the browser: a printed report wraps at word boundaries.
        style = printed.evaluate("p => [getComputedStyle(p).wordBreak, getComputedStyle(p).overflowWrap]")
        assert style == ["normal", "anywhere"], style
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        poll(page, lambda: "widget-view+json" in copy.read_text(), "lesson 00 was not saved")

        # Lesson 00's own link makes lesson 01's copy and opens it.
        page.locator(".jp-OutputArea-output a", has_text="open lesson 01").click()
        poll(page, lambda: page.evaluate(f"() => {NOTEBOOK}.context.path") == "lessons/01_mps_setup.ipynb",
             "the link did not open lesson 01")
        assert (tmp_path / "workspace" / "01_mps_setup_exercises.ipynb").is_file()

        # `course start 02` in a JupyterLab terminal (its shell keeps the lab's PATH).
        page.evaluate("() => window.jupyterapp.commands.execute('terminal:create-new')")
        poll(page, lambda: page.evaluate(f"() => !!({NOTEBOOK}.content && {NOTEBOOK}.content._term)"),
             "no terminal opened")
        poll(page, lambda: terminal_text(page).strip(), "the terminal never showed its prompt")
        page.locator(".jp-Terminal").last.click()
        page.keyboard.type("course start 02\n")
        shown = poll(page, lambda: (t := terminal_text(page)) and "Open them in JupyterLab" in t and t,
                     "course start 02 printed nothing in the terminal")
        unwrapped = shown.replace("\n", "")  # the terminal wraps long lines at its width
        assert "your lesson:" in unwrapped and "02_unified_memory.ipynb (new)" in unwrapped, shown
        assert (tmp_path / "workspace" / "lessons" / "02_unified_memory.ipynb").is_file()

        # The server restarts; the saved lesson 00's widgets have no kernel state any more.
        lab.stop()
        page.goto(lab.start())
        wait_for_kernel_ready(page)
        gone = page.locator(".jp-OutputArea-output.jupyter-widgets", has_text="model not found").first
        gone.wait_for()
        after = gone.evaluate("e => getComputedStyle(e, '::after').content")
        assert "Run this cell again" in after, after
    except BaseException:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "FAILED-learner-path.png"))
        raise
    finally:
        context.close()


def drill_history(tmp_path: Path) -> dict:
    """The timed rounds in the lab learner's progress file (none yet: an empty history)."""
    saved = tmp_path / "progress" / "progress.json"
    data = json.loads(saved.read_text()) if saved.exists() else {}
    return data.get("drill_sessions") or {"sessions": []}


def test_lesson_08s_round_takes_a_fix_refuses_a_degenerate_one_with_its_reason_and_scores_the_fix(
        readme_lab, browser):
    """Lesson 08's copy in the README's lab: the timed round reaches a fix-it drill; an edit that
    hides the error is refused with the judge's reason in the page and stays in the editor; the
    drill's declared fix is accepted; the round's summary scores the fix; the editor is monospace
    and does not wrap code."""
    from course_utils.drills import fix_mutants
    from course_utils.drills.fixit import has_fixit, judge_edit, reference
    from course_utils.learner.drilling.plan import plan
    from course_utils.learner.drilling.widget import FINISH, NEXT, RUN_FIX, VERDICT_CLASS
    from tests.e2e.pages import drill_widget

    lab, tmp_path = readme_lab
    url = lab.start()
    course = Path(lab.env["MPS_DETECTIVE_VENV"]) / "bin" / "course"
    started = subprocess.run([str(course), "start", "08"], cwd=ROOT, env=lab.env, capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    copy = tmp_path / "workspace" / LESSON_08
    cell, source = next((i, c.source) for i, c in enumerate(nbformat.read(copy, as_version=4).cells)
                        if "DrillSession(seed=" in c.source and "adaptive=True" in c.source)
    served = plan(5, int(re.search(r"seed=(\d+)", source).group(1)), hist=drill_history(tmp_path))
    first_fix = next((i for i, (d, _) in enumerate(served) if has_fixit(d)), None)
    assert first_fix is not None, "a fresh round should hold a drill that can be fixed"
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        # ?reset: only lesson 08, not the tabs the lab restores from the learner's earlier visit
        page.goto(re.sub(r"/lab/tree/\S*\?", f"/lab/tree/{LESSON_08}?reset&", url))
        poll(page, lambda: page.evaluate(OPEN_PATH) == LESSON_08, "lesson 08 did not open")
        wait_for_kernel_ready(page)
        run_cell(page, cell)
        widget = drill_widget(page)
        widget.locator("button:has-text('Start drill')").click()
        hypothesis = widget.locator(".widget-textarea textarea").first
        for _ in range(first_fix):  # the drills before it, answered with a letter
            poll(page, hypothesis.is_enabled, "the next card never came")
            hypothesis.fill("the loss and the gradients look wrong")
            widget.locator(".widget-radio-box input[type=radio]").first.check()
            widget.locator("button:has-text('Submit')").click()
            poll(page, widget.locator(f"button:has-text('{NEXT}')").is_enabled, "Next never enabled")
            widget.locator(f"button:has-text('{NEXT}')").click()
        run_fix = widget.locator(f"button:has-text('{RUN_FIX}')")
        run_fix.wait_for()
        drill = served[first_fix][0]
        editor = widget.locator(".mpsd-code textarea")
        assert editor.input_value() == drill.buggy_code, "the fix box should hold the drill's code"
        style = editor.evaluate("e => { const s = getComputedStyle(e); "
                                "return [s.fontFamily, s.whiteSpace, s.overflowWrap]; }")
        assert "monospace" in style[0] and style[1:] == ["pre", "normal"], style

        names = [k for k, (moved, grad) in reference(drill)[1].items() if moved or grad]
        hidden = dict(fix_mutants.mutants(drill, names))["the buggy code with its error hidden in try/except"]
        reason = judge_edit(drill, hidden).problems[0]
        verdict = widget.locator(f".{VERDICT_CLASS}")
        editor.fill(hidden)
        run_fix.click()
        poll(page, lambda: "fix not accepted" in verdict.inner_text(), "the degenerate edit got no verdict")
        assert reason in verdict.inner_text(), (reason, verdict.inner_text())
        assert editor.input_value() == hidden, "the refused edit left the editor"

        editor.fill(drill.fixed_code)
        run_fix.click()
        poll(page, lambda: "fix accepted" in verdict.inner_text(), "the declared fix got no verdict")
        poll(page, lambda: "Fixed in" in widget.inner_text(), "the accepted fix did not close the drill")
        widget.locator(f"button:has-text('{FINISH}')").click()
        summary = poll(page, lambda: "score:" in (t := widget.inner_text()) and t, "no summary")
        assert f"{drill.category} 1/1 (fixes 1/1)" in summary, summary
    except BaseException:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "FAILED-fix-it-path.png"))
        raise
    finally:
        context.close()
