"""A workshop on a real JupyterHub: the hub runs `course hub-config`'s configuration on
loopback with configurable-http-proxy from npm, SimpleLocalProcessSpawner and the
DummyAuthenticator (tests/hub_session.py). Three learners log in, their servers start through the
REST API, each runs `!course start 01` in a cell, edits their copy, runs a check() in their own
kernel and `course progress` in a JupyterLab terminal; then the instructor collects and grades, and
each learner's progress holds only their own check.

Needs jupyterhub (the dev extra) and configurable-http-proxy (the README's test command installs
it into build/node/ with npm); skipped, saying why, without them.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.hub_session import Hub, Kernel, find_proxy, run_in_terminal, session_pids

pytest.importorskip("jupyterhub", reason="jupyterhub is not installed (it is in the dev extra: "
                    "python3 course_utils/bootstrap.py test installs it)")
pytest.importorskip("websocket", reason="websocket-client (a jupyter_server dependency) is missing")
PROXY = find_proxy()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROXY is None, reason="configurable-http-proxy not found: the README's test "
                       "command installs it (npm install --prefix build/node configurable-http-proxy@5); "
                       "without npm this test cannot run"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cleans up through /proc (Linux)"),
]

SETUP = "import math\nimport torch\nfrom course_utils import check\n"
# What each learner writes in their copy of lesson 01, and whether its check passes.
WORK = {
    "alice": ("batch_bytes", "def batch_bytes(shape, dtype):\n    return math.prod(shape) * dtype.itemsize\n",
              True),
    "bob": ("choose_device", "def choose_device(mps_built, mps_available, cuda_available, prefer):\n"
            "    usable = {'cpu': True, 'mps': mps_built and mps_available, 'cuda': cuda_available}\n"
            "    if prefer is not None and usable[prefer]:\n        return prefer\n"
            "    return next(k for k in ('mps', 'cuda', 'cpu') if usable[k])\n", True),
    "carol": ("batch_bytes", "def batch_bytes(shape, dtype):\n    return math.prod(shape)\n", False),
}
NOTEBOOK = "workspace/01_mps_setup_exercises.ipynb"


def course(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_utils.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def save_answer(kernel: Kernel, name: str, source: str) -> None:
    """Put the answer into the learner's copy through the Contents API, as JupyterLab saves it."""
    url = f"{kernel.base}/contents/{NOTEBOOK}"
    model = kernel.http.get(url, params={"content": 1}, timeout=60).json()
    cells = [c for c in model["content"]["cells"] if c["cell_type"] == "code"
             and "".join(c["source"]).startswith(f"def {name}(")]
    assert len(cells) == 1, f"one cell defines {name} in the exercise notebook"
    cells[0]["source"] = source
    saved = kernel.http.put(url, json={"type": "notebook", "format": "json",
                                       "content": model["content"]}, timeout=60)
    assert saved.status_code == 200, saved.text


def learner_session(hub: Hub, name: str) -> dict:
    """Everything one learner does in their own server; returns what the test checks."""
    token = hub.user_token(name)
    kernel = Kernel(hub, name, token)
    try:
        where = kernel.execute("import os, sys\nprint(sys.prefix)\nprint(os.environ['MPS_DETECTIVE_HOME'])")
        started = kernel.execute("!course start 01")  # `course` in a cell, as lesson 00 says
        exercise, answer, _ = WORK[name]
        save_answer(kernel, exercise, answer)
        checked = kernel.execute(f"{SETUP}{answer}\ncheck('01.{exercise}', {exercise})")
        seen = kernel.execute("from course_utils.core import progress\n"
                              "print(sorted(progress.load()['exercises']))")
        page = kernel.http.get(f"{hub.url}/user/{name}/lab", timeout=60).text
        terminal = run_in_terminal(hub, name, token, "course progress")
        return {"token": token, "where": where, "started": started, "checked": checked,
                "seen": seen, "widgets": "@jupyter-widgets/jupyterlab-manager" in page,
                "terminal": terminal}
    finally:
        kernel.close()


@pytest.fixture
def hub(tmp_path):
    running = Hub(tmp_path / "hub", PROXY)
    try:
        running.start()
        yield running
    finally:
        running.stop()  # the hub stops its servers and proxy; what remains is ended by pid
    assert session_pids(running.session) == [], "a process of the hub session outlived it"


def test_a_class_on_jupyterhub_logs_in_checks_collects_and_grades(hub, tmp_path):
    for name in WORK:
        hub.login(name)  # the login form, as a browser
    for name in WORK:
        hub.start_server(name)  # the REST API, as an instructor's script
    for name in WORK:
        assert hub.wait_ready(name)["ready"]
    with ThreadPoolExecutor(len(WORK)) as pool:
        done = dict(zip(WORK, pool.map(lambda n: learner_session(hub, n), WORK), strict=True))

    for name, (exercise, _, passes) in WORK.items():
        got, home = done[name], hub.homes / name / "mps-detective"
        prefix, progress_home = got["where"]["stdout"].split()
        assert Path(prefix).resolve() == Path(sys.prefix).resolve(), "the kernel is the course's Python"
        assert Path(progress_home) == home / "progress"
        assert "your exercises:" in got["started"]["stdout"] and (home / NOTEBOOK).is_file()
        assert (home / "notebooks" / "00_start_here.ipynb").is_file(), "the lessons, their own copy"
        assert got["widgets"], "JupyterLab in the learner's server has the ipywidgets extension"
        # `course` in the learner's JupyterLab terminal (a login shell would have reset PATH).
        assert f"progress file: {home / 'progress' / 'progress.json'}" in got["terminal"], got["terminal"]
        assert got["checked"]["status"] == ("ok" if passes else "error"), got["checked"]
        assert (f"01.{exercise} passed" in got["checked"]["stdout"]) is passes
        # Each learner sees only their own progress, in their own MPS_DETECTIVE_HOME.
        assert got["seen"]["stdout"].strip() == repr([f"01.{exercise}"])
        on_disk = json.loads((home / "progress" / "progress.json").read_text())["exercises"]
        assert {k: v["passed"] for k, v in on_disk.items()} == {f"01.{exercise}": passes}
    # A learner's token does not open another learner's server.
    denied = requests.get(f"{hub.url}/user/bob/api/kernels", timeout=60,
                                        headers={"Authorization": f"token {done['alice']['token']}"})
    assert denied.status_code in (403, 404), denied.status_code

    # The instructor: collect (never over a previous collection), grade, LMS CSV.
    collected = course("collect", str(hub.homes), "--out", str(tmp_path / "class"), cwd=tmp_path)
    assert collected.returncode == 0, collected.stderr
    for name in WORK:
        assert (tmp_path / "class" / name / "01_mps_setup_exercises.ipynb").is_file()
    again = course("collect", str(hub.homes), "--out", str(tmp_path / "class"), cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    graded = course("grade", str(tmp_path / "class"), "--out", str(tmp_path / "grades" / "book.csv"),
                    "--lms", str(tmp_path / "grades" / "lms.csv"), "--jobs", "2", "--timeout", "120",
                    "--feedback", str(tmp_path / "feedback"), cwd=tmp_path)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    with open(tmp_path / "grades" / "lms.csv", newline="") as fh:
        rows = {r["learner"]: r for r in csv.DictReader(fh)}
    assert set(rows) == set(WORK)
    for name, (_, _, passes) in WORK.items():
        assert (rows[name]["total"], rows[name]["possible"]) == (str(int(passes)), "4"), rows[name]
    assert rows["alice"]["percent"] == "25.0" and rows["carol"]["percent"] == "0.0"
    assert os.path.exists(tmp_path / "grades" / "book.csv")

    # Feedback: released into each learner's workspace, opened by their own server; another
    # learner's token opens none of it, and no server serves a path outside its learner's folder.
    released = course("feedback", "release", str(tmp_path / "feedback"), str(hub.homes), cwd=tmp_path)
    assert released.returncode == 0, released.stdout + released.stderr
    for name, (exercise, _, passes) in WORK.items():
        folder = hub.homes / name / "mps-detective" / "workspace" / "feedback"
        pages = sorted(folder.glob("feedback-*.html"))
        assert len(pages) == 1, f"{name}: one page released"
        own = {"Authorization": f"token {done[name]['token']}"}
        url = f"{hub.url}/user/{name}/files/workspace/feedback/{pages[0].name}"
        opened = requests.get(url, headers=own, timeout=60)
        assert opened.status_code == 200 and f"Feedback for {name}" in opened.text, opened.status_code
        assert (f"01.{exercise}: <span class='pass'>" in opened.text) is passes
        other = next(n for n in WORK if n != name)
        theirs = {"Authorization": f"token {done[other]['token']}"}
        refused = requests.get(url, headers=theirs, timeout=60, allow_redirects=False)
        assert refused.status_code in (302, 403, 404), (name, other, refused.status_code)
        outside = requests.get(f"{hub.url}/user/{other}/api/contents/%2E%2E/{name}/mps-detective/"
                               f"workspace/feedback/{pages[0].name}", headers=theirs, timeout=60)
        assert outside.status_code in (400, 403, 404), (name, other, outside.status_code)
