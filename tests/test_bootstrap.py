"""Is setup idempotent, and does the launch command serve JupyterLab with lesson 00?"""

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from course_utils import bootstrap
from tests.conftest import ROOT


def test_the_stamp_changes_when_the_constraints_change(monkeypatch, tmp_path):
    before = bootstrap.inputs_hash()
    copy = tmp_path / "constraints.txt"
    copy.write_text(bootstrap.CONSTRAINTS.read_text() + "\nextra==1\n")
    monkeypatch.setattr(bootstrap, "CONSTRAINTS", copy)
    assert bootstrap.inputs_hash() != before


@pytest.fixture
def installs(monkeypatch, tmp_path) -> list:
    """A virtual environment that exists (its stamp in tmp_path); what setup would pip install."""
    venv = tmp_path / "venv"
    monkeypatch.setattr(bootstrap, "VENV", venv)
    for name in ("python", "course"):
        bootstrap.venv_bin(name).parent.mkdir(parents=True, exist_ok=True)
        bootstrap.venv_bin(name).touch()
    monkeypatch.setattr(bootstrap, "STAMP", venv / ".mps-detective-stamp")
    calls: list = []
    monkeypatch.setattr(bootstrap, "pip", lambda *args: calls.append(args))
    monkeypatch.setattr(bootstrap, "run", lambda *cmd, env=None: pytest.fail(f"ran {cmd}"))
    return calls


def course(extras: str = "") -> tuple:
    return ("-e", f"{bootstrap.ROOT}[{extras}]" if extras else str(bootstrap.ROOT))


def test_setup_installs_the_runtime_only_and_test_adds_the_extra_once(installs):
    bootstrap.setup()
    assert installs == [("torch==2.13.0",), course()]
    assert bootstrap.read_stamp() == (bootstrap.inputs_hash(), frozenset())
    bootstrap.setup()  # lab again: nothing
    bootstrap.setup(extras=("dev",))  # test after lab: the extra only, torch untouched
    assert installs[2:] == [course("dev")]
    assert bootstrap.read_stamp() == (bootstrap.inputs_hash(), frozenset({"dev"}))
    bootstrap.setup(extras=("dev",))
    bootstrap.setup()  # lab after test: the extra stays, nothing to do
    assert len(installs) == 3


def test_changed_inputs_reinstall_everything_that_was_there(installs):
    bootstrap.write_stamp("an old hash", frozenset({"dev"}))
    bootstrap.setup()
    assert installs == [("torch==2.13.0",), course("dev")]


def test_a_stamp_from_before_the_extras_counts_as_a_full_install(installs):
    bootstrap.STAMP.write_text(bootstrap.inputs_hash())  # what older setups wrote: the hash only
    assert bootstrap.read_stamp() == (bootstrap.inputs_hash(), frozenset({"dev"}))
    bootstrap.setup(extras=("dev",))
    assert installs == []


def test_lab_sets_up_the_runtime_and_test_the_extra(monkeypatch):
    asked = []
    monkeypatch.setattr(bootstrap, "setup", lambda extras=(): asked.append(extras))
    monkeypatch.setattr(bootstrap, "lab", lambda extra: 0)
    monkeypatch.setattr(bootstrap, "test", lambda busy=0: 0)
    for command in (["lab"], ["setup"], ["test"]):
        assert bootstrap.main(command) == 0
    assert asked == [(), (), ("dev",)]


@pytest.mark.slow
def test_a_second_setup_installs_nothing():
    stamped, extras = bootstrap.read_stamp()
    if stamped != bootstrap.inputs_hash():
        pytest.skip("the course's .venv is not set up here (run the README's setup command)")
    done = subprocess.run([sys.executable, str(ROOT / "course_utils" / "bootstrap.py"), "setup"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "nothing to install" in done.stdout and "installing" not in done.stdout


def test_an_unknown_subcommand_prints_usage_and_exits_2(capsys):
    assert bootstrap.main(["launch"]) == 2
    assert "bootstrap.py lab" in capsys.readouterr().out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return 0


@pytest.mark.slow
def test_course_lab_serves_jupyterlab_with_lesson_00(tmp_path):
    port, token = _free_port(), secrets.token_hex(8)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    server = subprocess.Popen(
        [sys.executable, "-m", "course_utils.cli", "lab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _get(f"{base}/api/status?token={token}") != 200:
            time.sleep(0.5)
        assert _get(f"{base}/api/contents/notebooks/00_start_here.ipynb?content=0&token={token}") == 200
        assert _get(f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}") == 200
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
