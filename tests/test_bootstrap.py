"""Is setup idempotent, does the launch command serve JupyterLab with lesson 00, and does the test
command's ``--busy N`` stop its CPU hogs whatever happens?"""

import contextlib
import os
import secrets
import signal
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
        deadline = time.monotonic() + 180  # ends when the server answers; only a stuck one waits
        while time.monotonic() < deadline and _get(f"{base}/api/status?token={token}") != 200:
            assert server.poll() is None, f"the server exited with {server.returncode}"
            time.sleep(0.5)
        assert _get(f"{base}/api/contents/notebooks/00_start_here.ipynb?content=0&token={token}") == 200
        assert _get(f"{base}/lab/tree/notebooks/00_start_here.ipynb?token={token}") == 200
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


# --- the test command's --busy N: CPU hogs beside the suite, always stopped --------------------

def running(pid: int) -> bool:
    """Whether a process exists and is not a zombie (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")


@pytest.fixture
def hogs_seen(monkeypatch) -> list:
    """The hogs that bootstrap.test starts (it runs no real stage, installs and writes nothing)."""
    seen: list = []
    real = bootstrap.cpu_hogs

    @contextlib.contextmanager
    def spy(n):
        with real(n) as hogs:
            seen.extend(hogs)
            yield hogs

    monkeypatch.setattr(bootstrap, "cpu_hogs", spy)
    monkeypatch.setattr(bootstrap, "ensure_chromium", lambda: None)
    monkeypatch.setattr(bootstrap, "ensure_proxy", lambda: None)
    monkeypatch.setattr(bootstrap, "scratch_env", dict)
    return seen


def test_busy_hogs_run_through_every_stage_and_are_gone_after_a_failing_one(monkeypatch, hogs_seen):
    alive_during = []

    def stage(program, *args, env=None):
        alive_during.append([hog.poll() is None for hog in hogs_seen])
        return 1 if "pytest" in str(program) else 0  # the test stages fail

    monkeypatch.setattr(bootstrap, "run", stage)
    assert bootstrap.test(busy=2) == 1
    assert len(hogs_seen) == 2
    assert alive_during == [[True, True]] * len(bootstrap.TEST_STAGES)
    assert all(hog.returncode is not None for hog in hogs_seen), "a hog outlived the test command"
    assert not any(running(hog.pid) for hog in hogs_seen)


def test_busy_hogs_are_gone_after_ctrl_c_in_a_stage(monkeypatch, hogs_seen):
    def stage(program, *args, env=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(bootstrap, "run", stage)
    with pytest.raises(KeyboardInterrupt):
        bootstrap.test(busy=2)
    assert len(hogs_seen) == 2 and all(hog.returncode is not None for hog in hogs_seen)


def test_without_busy_no_hog_starts(monkeypatch, hogs_seen):
    monkeypatch.setattr(bootstrap, "run", lambda program, *args, env=None: 0)
    assert bootstrap.test() == 0 and hogs_seen == []


def test_busy_is_read_before_setup_and_must_not_be_negative(monkeypatch):
    calls = []
    monkeypatch.setattr(bootstrap, "setup", lambda *args, **kwargs: calls.append("setup"))
    monkeypatch.setattr(bootstrap, "test", lambda busy=0: calls.append(busy) or 0)
    assert bootstrap.main(["test", "--busy", "3"]) == 0 and calls == ["setup", 3]
    assert bootstrap.main(["test"]) == 0 and calls[-1] == 0
    calls.clear()
    for wrong in (["--busy", "-1"], ["--busy", "two"], ["--bussy", "2"]):
        with pytest.raises(SystemExit) as exit_:
            bootstrap.main(["test", *wrong])
        assert exit_.value.code == 2
    assert calls == [], "a wrong option must stop before setup"


BUSY_CHILD = f"""
import contextlib, sys, time
sys.path.insert(0, {str(ROOT)!r})
from course_utils import bootstrap

real = bootstrap.cpu_hogs

@contextlib.contextmanager
def announce(n):
    with real(n) as hogs:
        print(" ".join(str(hog.pid) for hog in hogs), flush=True)
        yield hogs

bootstrap.cpu_hogs = announce
bootstrap.say = lambda message: None  # stdout: only the hogs' pids
bootstrap.ensure_chromium = lambda: None
bootstrap.ensure_proxy = lambda: None
bootstrap.scratch_env = dict
bootstrap.run = lambda *cmd, env=None: time.sleep(600)  # a stage that runs until it is stopped
sys.exit(bootstrap.test(busy=2))
"""


@needs_proc
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_busy_hogs_are_gone_when_the_test_command_is_terminated_or_killed(how):
    """SIGTERM: the command stops its hogs itself. SIGKILL: each hog sees its parent gone and ends."""
    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        pids = [int(pid) for pid in child.stdout.readline().split()]  # the hogs are running
        assert len(pids) == 2 and all(running(pid) for pid in pids)
        child.send_signal(how)
        assert child.wait(timeout=120) == (128 + how if how == signal.SIGTERM else -how)
        deadline = time.monotonic() + 120  # only a hog that never notices reaches it
        while any(running(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(running(pid) for pid in pids), "a CPU hog outlived the test command"
    finally:
        child.kill()
        child.wait()
        for pid in pids:
            with contextlib.suppress(OSError):
                if running(pid):
                    os.kill(pid, signal.SIGKILL)


FONT_CACHE_PROBE = ("import logging; logging.basicConfig(level=logging.INFO); "
                    "import matplotlib.font_manager")


def builds_font_cache(env: dict) -> bool:
    """Does a fresh process with ``env`` build matplotlib's font cache (what the first plot of a
    cold machine does, with a notice on stderr when it takes over 5 s)?"""
    probe = subprocess.run([sys.executable, "-c", FONT_CACHE_PROBE], env=env, capture_output=True,
                           text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    return "generated new fontManager" in probe.stderr


def test_the_test_commands_scratch_home_has_matplotlibs_font_cache_before_any_lesson_runs(
        monkeypatch, tmp_path):
    monkeypatch.setattr(bootstrap, "SCRATCH", tmp_path / "scratch")
    cold = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "cold")}
    assert builds_font_cache(cold)  # the probe sees a cold cache
    env = bootstrap.scratch_env()
    assert env["MPLCONFIGDIR"].startswith(str(tmp_path))
    assert not builds_font_cache(env)
