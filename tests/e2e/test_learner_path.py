"""The learner's own path, in a real browser, on a lab started exactly as the README says: the
bootstrap command from a shell whose PATH lacks the course's environment, with a fresh HOME, progress
folder and workspace (the setup stamp is current, so it installs nothing).

One walk through that lab proves: the URL ``--no-browser`` prints opens lesson 00; lesson 00's own
last link makes the copy of lesson 01 and opens it; ``!course progress`` runs in a cell; ``course
start 02`` runs in a JupyterLab terminal and prints what it copied; a printed report's <pre> has the
course's page CSS (wraps at word boundaries); and after the server restarts, a saved lesson whose
widgets have lost their kernel says to run the cell again.
"""

from __future__ import annotations

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
NOTEBOOK = "window.jupyterapp.shell.currentWidget"


def plain_path() -> str:
    """This PATH without the course's environment: a shell where nothing was activated."""
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != TOOLS.resolve())


class ReadmeLab:
    """``python3 course_utils/bootstrap.py lab --no-browser ...`` in a subprocess: its printed URL,
    its output so far, and a restart."""

    def __init__(self, python3: str, env: dict, port: int):
        self.python3, self.env, self.port = python3, env, port
        self.server, self.lines = None, []

    def start(self) -> str:
        """Start the lab; return the URL it prints for the learner to open."""
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


@pytest.fixture
def readme_lab(tmp_path):
    """The README's lab, or a skip saying why it cannot be started here without installing."""
    from tests.hub_session import free_port

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
