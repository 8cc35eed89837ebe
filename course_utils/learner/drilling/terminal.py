"""``course drill``: lesson 08's timed drills in a terminal, for practice outside Jupyter.

The same drills and order as the notebook's drill mode (``learner.drilling.mode``): for each drill
it prints the buggy code and the question with lettered choices, reads a hypothesis and then an
answer from stdin (``?`` runs the buggy code and prints its measured symptom, ``f`` on a fix-it
drill takes an edit of the code, in $VISUAL or $EDITOR or pasted and ended by a line "." (a second
``f`` starts from the last edit), ``q`` ends the round),
says right or wrong with the time taken, and reveals the fix. At the end it prints the score table
and records the round in the same history as the notebook ("drill_sessions" in the progress file).

It is interactive: when stdin is not a terminal it stops with a clear message, unless ``--stdin``
says that answers come from a pipe on purpose (one line per prompt; tests feed a whole round so).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from course_utils.core.errors import CourseError
from course_utils.drills.hypothesis_gate import hypothesis_problem
from course_utils.learner.drilling.fix_entry import TIME_LIMIT_S, edit_problem, has_fixit
from course_utils.learner.drilling.mode import LETTERS, DrillSession, clock_text, history_text
from course_utils.learner.drilling.scoring import drills_text

NO_TTY = ("stdin is not a terminal, and the drills are interactive. Run it in a terminal, or pass "
          "--stdin to read the answers from a pipe: one line per prompt, a hypothesis then a letter "
          "for each drill, e.g.  printf 'softmax twice\\nB\\n' | course drill --count 1 --stdin")


class _Quit(Exception):
    """The learner typed q, or the input ended."""


def _ask(prompt: str, stdin: TextIO, out: TextIO) -> str:
    out.write(prompt)
    out.flush()
    line = stdin.readline()
    if not line:
        out.write("\n")
        raise _Quit("input ended")
    text = line.strip()
    if not stdin.isatty():
        out.write(text + "\n")  # echo piped answers, so the transcript reads like a session
    if text.lower() in ("q", "quit"):
        raise _Quit("quit")
    return text


def _hypothesis(code: str, stdin: TextIO, out: TextIO) -> str:
    while True:
        text = _ask("hypothesis (what is wrong, and what would you measure?)> ", stdin, out)
        problem = hypothesis_problem(code, text)
        if problem is None:
            return text
        out.write(f"  {problem}\n")


def _edited(code: str, stdin: TextIO, out: TextIO) -> str:
    """The learner's edit of ``code`` (the drill's code, or their last edit of it): in $VISUAL or
    $EDITOR on a terminal, else pasted lines ending with '.'."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if stdin.isatty() and editor:
        with tempfile.NamedTemporaryFile("w+", suffix=".py", delete=False) as f:
            f.write(code)
        try:
            out.write(f"  editing in {editor}: save and quit to have the edit judged\n")
            out.flush()
            subprocess.run([*shlex.split(editor), f.name], check=False)
            return Path(f.name).read_text(encoding="utf-8")
        finally:
            os.unlink(f.name)
    hint = " (set EDITOR to edit it in your editor instead)" if stdin.isatty() else ""
    out.write(f"  paste the whole edited code, then a line with a single '.'{hint}:\n")
    out.flush()
    lines = []
    while True:
        line = stdin.readline()
        if not line:
            raise _Quit("input ended")
        if line.rstrip("\r\n") == ".":
            return "".join(lines)
        lines.append(line)


def _fix(session: DrillSession, stdin: TextIO, out: TextIO) -> None:
    """Take an edit of the current drill's code (starting from the last one) and print the verdict."""
    drill = session.current
    last = session.edits.get(session.index, "")
    edit = _edited(last if last.strip() else drill.buggy_code, stdin, out)
    if edit_problem(drill, edit) is None:
        out.write(f"  judging your edit in a separate process (stopped after {TIME_LIMIT_S:g} s)...\n")
        out.flush()
    try:
        text = session.fix(edit)
    except KeyboardInterrupt:
        text = "judging stopped (Ctrl-C): the edit was not counted; f tries again from it"
    out.write(textwrap.indent(text, "  ") + "\n")


def _choice(session: DrillSession, stdin: TextIO, out: TextIO) -> str | None:
    """A letter, or None when an accepted fix-it edit answered the drill."""
    drill = session.current
    letters = LETTERS[:len(drill.question.choices)]
    can_fix = has_fixit(drill)
    fix = ", f = fix the code" if can_fix else ""
    while True:
        left = session.seconds - session.elapsed()
        clock = f"{clock_text(left)} left" if left > 0 else "time is up: a right answer counts half"
        text = _ask(f"answer [{letters[0]}-{letters[-1]}, ? = run the buggy code{fix}, q = quit] "
                    f"({clock})> ", stdin, out)
        if text == "?":
            out.write(f"  symptom (measured): {drill.symptom()}\n")
        elif text.lower() == "f" and can_fix:
            _fix(session, stdin, out)
            if session.answered:
                return None
        elif len(text) == 1 and text.upper() in letters:
            return text.upper()
        else:
            out.write(f"  answer with one letter {letters[0]}-{letters[-1]}, ?{' , f' if can_fix else ''} "
                      "or q.\n")


def play(session: DrillSession, stdin: TextIO, out: TextIO) -> None:
    """Serve the session's drills one by one until the round ends, the input ends or q."""
    where = ("category " + session.category if session.category else
             "chosen from your history" if session.reasons else "all categories")
    out.write(f"Timed drills: {drills_text(len(session.drills))} "
              f"({where}, seed {session.seed}"
              f"{'' if session.reasons else f'; repeat this round with --seed {session.seed}'}), "
              f"{session.clocks_text()}.\nWrite a hypothesis first, then answer with a "
              "letter. ? runs the buggy code and shows its symptom; f (on a fix-it drill) takes your "
              "edit of the code; q ends the round.\n")
    text: str | None = session.start()
    try:
        while text is not None:
            out.write("\n" + text + "\n")
            hypothesis = _hypothesis(session.current.buggy_code, stdin, out)
            choice = _choice(session, stdin, out)
            if choice is not None:
                out.write(session.answer(choice, hypothesis) + "\n")
            out.write("\n" + session.reveal() + "\n")
            text = session.next()
    except (_Quit, KeyboardInterrupt) as err:
        why = str(err) or "Ctrl-C"
        out.write(f"\nround ended ({why}) after {len(session.results)} of {len(session.drills)} drills\n")


def play_round(category: str | None = None, count: int | None = 5, seed: int | None = None,
               allow_pipe: bool = False, stdin: TextIO | None = None, out: TextIO | None = None,
               clock: Callable[[], float] = time.monotonic, adaptive: bool = False) -> int:
    """``course drill``: a round in the terminal; prints the score table and records the round."""
    stdin, out = stdin or sys.stdin, out or sys.stdout
    if not allow_pipe and not stdin.isatty():
        raise CourseError(NO_TTY)
    try:
        session = DrillSession(seed, category, count, source="terminal", clock=clock, adaptive=adaptive)
    except ValueError as err:
        raise CourseError(str(err)) from None
    play(session, stdin, out)
    if not session.results:
        out.write("no drill answered: nothing recorded\n")
        return 0
    out.write("\n" + session.finish() + "\n\n" + history_text() + "\n")
    return 0
