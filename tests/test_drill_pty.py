"""`course drill` as a learner meets it: in a real pseudo-terminal, with $EDITOR set, a fix-it drill
answered by editing the code. A degenerate edit is refused with its reason, the next `f` reopens
the editor on that edit (nothing lost), the declared fix is accepted through the sandbox, the
round's table scores the fix, and `course progress` then shows the diagnosis and fix scores per
category and the next round's choice with why. Ctrl-C typed in the terminal while an endless edit
is judged ends every process of the judge before the round goes on."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from course_utils.drills import fix_mutants
from course_utils.drills.fixit import judge_edit, reference
from course_utils.learner.drilling.fix_entry import has_fixit
from course_utils.learner.drilling.scoring import pick
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
DEADLINE_S = 240  # ends a stuck terminal only; every wait below is for text to appear

# $EDITOR for the test: each call logs the file it was opened on and writes the next planned edit.
EDITOR = """import json, pathlib, sys
state = pathlib.Path(sys.argv[1]); target = pathlib.Path(sys.argv[2])
plan = json.loads(state.read_text())
plan["opened"].append(target.read_text())
target.write_text(plan["edits"].pop(0))
state.write_text(json.dumps(plan))
"""


def _take_terminal() -> None:
    """In the command's process: its pseudo-terminal becomes its controlling terminal, so a Ctrl-C
    typed there reaches its foreground process group as a learner's does. Ctrl-C starts out with
    its default action, as in a learner's shell, even where the test run itself was started with
    SIGINT ignored (a background job of a script inherits it ignored)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Terminal:
    """A command in a pseudo-terminal: type into it, wait until it has printed some text."""

    def __init__(self, cmd: list[str], env: dict):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
                                     start_new_session=True, preexec_fn=_take_terminal)
        os.close(slave)
        self.master, self.text, self.seen = master, "", 0

    def _read(self, wait: float) -> bool:
        """Read what is there (waiting up to ``wait`` s for some); False once the terminal closed."""
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the command ended and closed the terminal
            return False
        self.text += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)

    def expect(self, text: str) -> str:
        """Wait until ``text`` appears after what the last expect saw; return the output up to it."""
        deadline = time.monotonic() + DEADLINE_S
        while text not in self.text[self.seen:]:
            if not self._read(0.5) or time.monotonic() > deadline:
                raise AssertionError(f"never printed {text!r}; the terminal shows:\n{self.text[-3000:]}")
        end = self.text.index(text, self.seen) + len(text)
        out, self.seen = self.text[self.seen:end], end
        return out

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def ctrl_c(self) -> None:
        """Type Ctrl-C: the terminal sends SIGINT to its foreground process group."""
        os.write(self.master, b"\x03")

    def finish(self) -> str:
        """Wait for the command to end; everything it printed after the last expect."""
        deadline = time.monotonic() + DEADLINE_S
        while self._read(0.5):
            assert time.monotonic() < deadline, self.text[-3000:]
        assert self.proc.wait(timeout=DEADLINE_S) == 0, self.text[-3000:]
        os.close(self.master)
        return self.text[self.seen:]


def fixit_round() -> tuple[str, int]:
    """A category and a seed whose one-drill round serves a fix-it drill."""
    for seed in range(100):
        drill = pick(seed, "gradients", 1)[0]
        if has_fixit(drill):
            return drill, seed
    raise AssertionError("no seed serves a gradients drill with fix-it mode")


def test_a_fix_it_drill_in_a_real_terminal_then_course_progress_shows_both_scores(tmp_path):
    drill, seed = fixit_round()
    names = [k for k, (moved, grad) in reference(drill)[1].items() if moved or grad]
    hidden = dict(fix_mutants.mutants(drill, names))["the buggy code with its error hidden in try/except"]
    reason = judge_edit(drill, hidden).problems[0]
    state = tmp_path / "editor.json"
    state.write_text(json.dumps({"opened": [], "edits": [hidden, drill.fixed_code]}))
    (tmp_path / "editor.py").write_text(EDITOR)
    env = {**os.environ, "MPS_DETECTIVE_HOME": str(tmp_path / "progress"), "TERM": "xterm",
           "EDITOR": f"{sys.executable} {tmp_path / 'editor.py'} {state}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("VISUAL", None)
    course = [sys.executable, "-m", "course_utils.cli"]

    term = Terminal([*course, "drill", "--category", "gradients", "--seed", str(seed), "--count", "1"], env)
    term.expect("hypothesis (what is wrong, and what would you measure?)> ")
    term.send("the gradient never reaches the weights, so they do not move")
    assert "f = fix the code" in term.expect(")> ")
    term.send("f")
    refused = term.expect(")> ")
    assert "judging your edit in a separate process" in refused
    assert "fix not accepted:" in refused and reason in refused, refused
    term.send("f")
    accepted = term.expect("fix accepted: the symptom is gone and the code still does its job")
    assert "judging your edit" in accepted
    end = term.finish()
    assert "The fix:" in end and "fix accepted" in end  # the reveal, then the table's row
    assert "per category: gradients 1/1 (fixes 1/1)" in end, end
    opened = json.loads(state.read_text())["opened"]
    assert opened == [drill.buggy_code, hidden]  # the second f reopened the refused edit

    progress = Terminal([*course, "progress"], env)
    shown = progress.finish()
    row = next(line for line in shown.splitlines() if "drills: gradients" in line)
    assert "100% diagnosed" in row and "fixes 1/1" in row, shown
    plan = shown[shown.index("next round (course drill, or lesson 08's widget), and why:"):]
    choices = [line for line in plan.splitlines()[1:] if line.strip()]
    assert len(choices) == 5 and all(" drill" in c and ": " in c for c in choices), plan
    assert all("a category you have not tried yet" in c or "weakest" in c or "new to you" in c
               for c in choices), plan


def descendants(pid: int) -> dict[int, str]:
    """{pid: command line} of every process below ``pid``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{entry}/stat").read()
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = {}, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found[child] = open(f"/proc/{child}/cmdline").read().replace("\0", " ")
        except OSError:
            continue
        todo += children.get(child, [])
    return found


def alive(pid: int) -> bool:
    try:
        return "zombie" not in open(f"/proc/{pid}/status").read()
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the edit's processes in /proc (Linux)")
def test_ctrl_c_while_an_endless_edit_is_judged_stops_it_and_keeps_the_round_going(tmp_path):
    drill, seed = fixit_round()
    endless = "while True:  # runs before the buggy code can raise\n    pass\n" + drill.buggy_code
    state = tmp_path / "editor.json"
    state.write_text(json.dumps({"opened": [], "edits": [endless, drill.buggy_code]}))
    (tmp_path / "editor.py").write_text(EDITOR)
    env = {**os.environ, "MPS_DETECTIVE_HOME": str(tmp_path / "progress"), "TERM": "xterm",
           "EDITOR": f"{sys.executable} {tmp_path / 'editor.py'} {state}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("VISUAL", None)
    term = Terminal([sys.executable, "-m", "course_utils.cli", "drill", "--category", "gradients",
                     "--seed", str(seed), "--count", "1"], env)
    term.expect("hypothesis (what is wrong, and what would you measure?)> ")
    term.send("the gradient never reaches the weights, so they do not move")
    term.expect(")> ")
    term.send("f")
    term.expect("judging your edit in a separate process")
    deadline = time.monotonic() + DEADLINE_S
    judging: dict[int, str] = {}
    while not any("drill_fix_runner" in cmd for cmd in judging.values()):
        assert time.monotonic() < deadline, f"no edit process started: {judging}"
        time.sleep(0.1)
        judging = descendants(term.proc.pid)
    term.ctrl_c()
    assert "judging stopped (Ctrl-C): the edit was not counted" in term.expect(")> ")
    # by the time the round goes on, the edit and its supervisor are gone, and nothing else runs
    assert not [pid for pid in judging if alive(pid)], f"outlived the Ctrl-C: {judging}"
    assert not descendants(term.proc.pid), descendants(term.proc.pid)
    term.send("f")  # the editor opens on the interrupted edit: nothing lost
    assert "the edit changes nothing the code does" in term.expect(")> ")
    term.send("q")
    assert "nothing recorded" in term.finish()
    assert json.loads(state.read_text())["opened"] == [drill.buggy_code, endless]
