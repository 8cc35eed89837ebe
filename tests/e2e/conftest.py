"""A JupyterLab server and a headless Chromium for the browser tests (tests/e2e).

The server runs from this interpreter on a free loopback port, in a scratch folder holding copies
of the lessons with their outputs cleared; its config, data, settings and workspaces live in that
folder too, so nothing is written under $HOME. Chromium is Debian's (/usr/bin/chromium): where it
or Playwright is missing, the tests are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course_utils.author.authoring import strip_outputs
from course_utils.jupyter.hub import course_environment

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("MPS_DETECTIVE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
SCREENSHOTS = ROOT / "build" / "screenshots"  # each lesson's widgets at laptop sizes (git-ignored)
WARMUP = "_warmup.ipynb"
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"autoStartDefaultKernel": True,
                                                                   "windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_lessons_without_outputs(target: Path) -> None:
    target.mkdir(parents=True)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        strip_outputs(nb)
        nbformat.write(nb, target / path.name)


def _write_warmup(folder: Path) -> None:
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]),
                   folder / WARMUP)


def _write_settings(folder: Path) -> None:
    for name, values in SETTINGS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _wait_until_up(url: str, server: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"JupyterLab did not answer {url} within {seconds} s")


class Lab:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    def __init__(self, url: str, token: str, root: Path):
        self.url, self.token, self.root = url, token, root

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


@pytest.fixture(scope="session")
def lab(tmp_path_factory) -> Lab:
    """Start JupyterLab for the session and stop its whole process group at the end."""
    home = tmp_path_factory.mktemp("lab")
    served = home / "course"
    _copy_lessons_without_outputs(served)
    _write_warmup(served)
    _write_settings(home / "settings")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "IPYTHONDIR": str(home / "ipython"),
           "MPLCONFIGDIR": str(home / "mpl"), "MPS_DETECTIVE_HOME": str(home / "progress"),
           "MPS_DETECTIVE_WORKSPACE": str(served / "workspace"),  # practice links open there
           "MPS_DETECTIVE_DEVICE": "cpu"}
    env.pop("MPLBACKEND", None)
    course_environment(env)  # the course's server settings, as course lab has them (the page's CSS)
    port, token = _free_port(), secrets.token_hex(12)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={served}", "--ServerApp.port_retries=0",
           "--LabApp.expose_app_in_browser=True"]  # lets tests wait for the app to be restored
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "wb")  # noqa: SIM115 - closed after the server stops
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(f"{url}/api/status?token={token}", server)
        yield Lab(url, token, served)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium driven by Playwright (no browser download)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: the README's test command installs Debian's "
                    "chromium when it can (apt-get as root)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    with playwright_api.sync_playwright() as p:
        # Playwright gives each launch a fresh temporary profile (the --user-data-dir).
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's outcome so the page fixture can keep a screenshot of a failure."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def warm_lab(browser, lab) -> Lab:
    """Open and run a one-cell notebook first: on a fresh server the first notebook's kernel can
    be replaced while it starts, which would stop a lesson's Run All early. Done when its cell has
    run on a connected kernel that is idle again (a state, not a pause)."""
    from tests.e2e.pages import WAIT_MS, open_and_run

    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)  # Playwright's 30 s default is a guess about speed
    open_and_run(context.new_page(), lab.notebook_url(WARMUP), lab.root / WARMUP)
    context.close()
    return lab


class LessonRun:
    """A lesson opened in its own browser context and run top to bottom, and the notebook it saved."""

    def __init__(self, name: str, context, page, saved):
        self.name, self.context, self.page, self.saved = name, context, page, saved
        self.seconds = None  # Run All, from the menu click to the last cell done


class LessonRuns:
    """Runs each lesson once and lends the page to every test of that lesson, one lesson open at a
    time: the tests are ordered by lesson (``pytest_collection_modifyitems``), so the general checks
    and the widget tests of a lesson share one Run All instead of paying for it again."""

    def __init__(self, browser, lab: Lab):
        self.browser, self.lab, self.current = browser, lab, None

    def get(self, name: str) -> LessonRun:
        from tests.e2e.pages import WAIT_MS, open_and_run, save_and_read

        if self.current is not None and self.current.name == name:
            return self.current
        self.close()
        context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(WAIT_MS)  # Playwright's 30 s default is a guess about speed
        page = context.new_page()
        self.current = LessonRun(name, context, page, None)  # a failure below still gets a screenshot
        self.current.seconds = open_and_run(page, self.lab.notebook_url(name), self.lab.root / name)
        self.current.saved = save_and_read(page, self.lab.root / name)
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.context.close()
            self.current = None


@pytest.fixture(scope="session")
def lesson_runs(browser, warm_lab):
    runs = LessonRuns(browser, warm_lab)
    yield runs
    runs.close()


@pytest.fixture
def run_lesson(lesson_runs, request):
    """``run_lesson(name)``: the page of that lesson after Run All (shared by its tests); a failed
    test leaves a screenshot of it in test-artifacts/e2e."""
    yield lesson_runs.get
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed and lesson_runs.current is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = "".join(ch if ch.isalnum() else "_" for ch in request.node.name)
        lesson_runs.current.page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"))


def lesson_of(item) -> str | None:
    """The lesson a browser test uses: its ``name`` parameter or its ``lesson`` marker."""
    if HERE not in item.path.parents:
        return None  # hooks in a conftest see the whole session's items
    marker = item.get_closest_marker("lesson")
    if marker is not None:
        return marker.args[0]
    params = getattr(item, "callspec", None)
    return params.params.get("name") if params is not None else None


def pytest_collection_modifyitems(items) -> None:
    """Put each lesson's browser tests next to each other (its general test first), so a lesson
    runs once; every other test keeps its place."""
    slots = [i for i, item in enumerate(items) if lesson_of(item) is not None]
    ordered = sorted((items[i] for i in slots),
                     key=lambda item: (lesson_of(item), item.get_closest_marker("lesson") is not None))
    for slot, item in zip(slots, ordered, strict=True):
        items[slot] = item


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "lesson(name): the lesson notebook a browser test runs")
