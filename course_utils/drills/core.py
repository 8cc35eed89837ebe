"""What a drill is: buggy code that runs, the measurement that shows its symptom, and the fix.

Lesson 07 teaches with these drills; lesson 08 times them. A drill's ``buggy_code`` and
``fixed_code`` are complete, runnable sources: ``symptom()`` executes the buggy one in a fresh
namespace and hands the namespace to the drill's ``measure`` function, which returns a
``Symptom``. ``fix_check()`` does the same with the fixed code; a drill is well made when the
buggy run shows the bug and the fixed run does not (tests/test_drills.py proves it for every drill).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
import textwrap
import tokenize
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from course_utils.core.questions import Question


@dataclass(frozen=True)
class CodeRun:
    """What executing a drill's code left behind: its namespace, the error it raised (if any),
    and the warnings it emitted (recorded, never printed)."""

    namespace: dict
    error: BaseException | None = None
    warnings: tuple[str, ...] = ()
    source: str = ""
    aliases: Mapping[str, str] = field(default_factory=dict)  # a variant's renames: old -> new

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) of the code that ran, without its comment."""
        lines = self.source.splitlines()
        return lines[number - 1].split("#")[0].strip() if 0 < number <= len(lines) else "?"

    def __getitem__(self, name: str) -> Any:
        return self.namespace[self.aliases.get(name, name)]

    def get(self, name: str, default: Any = None) -> Any:
        return self.namespace.get(self.aliases.get(name, name), default)

    @property
    def error_text(self) -> str:
        """``Type: message`` of the error, first line only ('' when the code ran through)."""
        if self.error is None:
            return ""
        lines = str(self.error).strip().splitlines()
        return f"{type(self.error).__name__}: {lines[0]}" if lines else type(self.error).__name__


@dataclass(frozen=True)
class Symptom:
    """The result of running a drill's code (lesson 07).

    ``summary`` is one or two short, deterministic lines; ``buggy`` says whether the run shows
    the bug; ``values`` holds the numbers behind the summary; ``error`` the error text when the
    symptom is an exception; ``plot`` (optional) draws the symptom on a matplotlib Axes.
    """

    summary: str
    buggy: bool
    values: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    plot: Callable[[Any], None] | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.summary

    def figure(self, figsize: tuple[float, float] = (6, 3)):
        """A small matplotlib figure of the symptom, or None when the drill has no plot."""
        if self.plot is None:
            return None
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=figsize, dpi=100)
        self.plot(ax)
        fig.tight_layout()
        return fig


Runner = Callable[[str, str], CodeRun]


@dataclass(frozen=True)
class Variant:
    """The same bug on another surface: ``names`` renames identifiers (whole names, never an
    attribute after a dot) and ``edits`` replaces exact text (shapes, model, statement order,
    task), both in the buggy and the fixed code. Each edit must occur in at least one of them.
    The drill's ``measure`` still reads the original names: the run maps them (``aliases``)."""

    label: str
    names: Mapping[str, str] = field(default_factory=dict)
    edits: tuple[tuple[str, str], ...] = ()

    def apply(self, source: str) -> str:
        """``source`` with the edits made (those that occur in it), then the renames."""
        for old, new in self.edits:
            source = source.replace(old, new)
        return rename(source, self.names)

    def check_applies(self, *sources: str) -> None:
        """Raise ValueError for an edit found in none of ``sources`` (a typo would go unnoticed)."""
        for old, _ in self.edits:
            if not any(old in s for s in sources):
                raise ValueError(f"variant {self.label!r}: edit {old!r} matches no code")


def rename(source: str, names: Mapping[str, str]) -> str:
    """``source`` with every NAME token in ``names`` replaced, except attributes (after a dot)."""
    if not names:
        return source
    lines = source.splitlines(keepends=True)
    hits, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in names and previous != ".":
            hits.append(tok)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = tok.string
    for tok in reversed(hits):
        row, col = tok.start[0] - 1, tok.start[1]
        lines[row] = lines[row][:col] + names[tok.string] + lines[row][col + len(tok.string):]
    return "".join(lines)


def _aliased(runner: Runner, names: Mapping[str, str]) -> Runner:
    def run(source: str, name: str) -> CodeRun:
        return dataclasses.replace(runner(source, name), aliases=dict(names))
    return run


def run_code(code: str, name: str = "drill") -> CodeRun:
    """Execute ``code`` in a fresh namespace; keep the error and the warnings instead of raising."""
    namespace: dict = {"__name__": f"drill_{name.replace('.', '_')}"}
    compiled = compile(code, f"<drill {name}>", "exec")
    with warnings.catch_warnings(record=True) as caught, one_thread():
        warnings.simplefilter("always")
        try:
            exec(compiled, namespace)  # noqa: S102 - drills are the course's own code
            error = None
        except Exception as err:  # noqa: BLE001 - the error is the symptom being measured
            error = err
    return CodeRun(namespace, error, tuple(str(w.message) for w in caught), code)


@contextlib.contextmanager
def one_thread():
    """Run torch on one CPU thread for the block: a drill's tensors are tiny, and on a busy
    machine a thread pool's threads only wait for each other (measured: 68 s instead of 0.3 s
    for two drills' forms beside a full test run)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def quiet_fds(*fds: int):
    """Silence C-level output on file descriptors ``fds`` (default 1 and 2) for a moment: the
    profiler's native library prints timestamped lines there, which no notebook should store."""
    fds = fds or (1, 2)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(fd) for fd in fds]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
        yield
    finally:
        for fd, copy in zip(fds, saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


def shuffled_question(drill_id: str, prompt: str, right: str, wrong: tuple[str, ...],
                      why: str) -> Question:
    """A Question whose choices are ``right`` + ``wrong`` in an order fixed by the drill's id:
    stable between runs, but the right answer is not always in the same position."""
    return Question(prompt, (right, *wrong), 0, why).shuffled(f"drill:{drill_id}")


@dataclass(frozen=True)
class Drill:
    """One spot-the-bug drill, declared once (lesson 07; lesson 08's timed drills reuse it).

    ``id`` is "<category>.<name>"; ``question`` is a ``course_utils.learner.quiz.Question`` (prompt,
    choices in display order, ``answer`` index, ``why``); ``exercise`` names the graded fix in
    ``course_utils.bank.lesson07`` when there is one; ``source`` cites where the facts come from.
    """

    id: str
    category: str
    title: str
    buggy_code: str
    fixed_code: str
    measure: Callable[[CodeRun], Symptom] = field(repr=False)
    question: Question = field(repr=False)
    hints: tuple[str, ...] = ()
    explanation: str = ""
    source: str = ""
    exercise: str | None = None
    runner: Runner = field(default=run_code, repr=False, compare=False)
    emulated: str = ""  # what a CPU run stands in for, when anything ("" = nothing emulated)
    variants: tuple[Variant, ...] = field(default=(), repr=False, compare=False)
    variant_index: int = 0  # 0: the code as declared; k: variants[k - 1] applied
    # fix-it mode (``fixit.py``): other correct fixes, as (old, new) edits of the declared buggy
    # code, and a check of the job beyond the symptom: job(edited run, fixed run) -> problem or None
    other_fixes: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    job: Callable[[CodeRun, CodeRun], str | None] | None = field(default=None, repr=False, compare=False)
    # names of the buggy code a correct fix may compute otherwise (a mask stored the other way round)
    intermediates: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        # A comment in the code a learner must read could name the bug: the buggy version shows
        # none (and runs as shown, so line numbers agree); the fixed version may explain the fix.
        object.__setattr__(self, "buggy_code", without_comments(self.buggy_code))
        if _statements(self.fixed_code) == _statements(self.buggy_code):
            raise ValueError(f"drill {self.id}: the fixed code is the buggy code (a FIXED = "
                             "BUGGY.replace(old, new) whose `old` matched nothing?)")

    @property
    def forms(self) -> int:
        """How many surfaces the drill has: the declared code plus its variants."""
        return 1 + len(self.variants)

    def variant(self, k: int) -> Drill:
        """Form ``k`` of the drill (0 = as declared): same id, question and measure; the code of
        ``variants[k - 1]``. A ValueError for a k the drill lacks or an edit that matches nothing."""
        if not 0 <= k < self.forms:
            raise ValueError(f"drill {self.id} has forms 0-{self.forms - 1}, not {k}")
        if self.variant_index:
            raise ValueError(f"drill {self.id} is already variant {self.variant_index}")
        if k == 0:
            return self
        v = self.variants[k - 1]
        v.check_applies(self.buggy_code, self.fixed_code)
        return dataclasses.replace(self, buggy_code=v.apply(self.buggy_code),
                                   fixed_code=v.apply(self.fixed_code),
                                   runner=_aliased(self.runner, v.names), variant_index=k)

    def other_fix_codes(self) -> list[str]:
        """The declared buggy code with each of ``other_fixes`` made (form 0 only)."""
        out = []
        for old, new in self.other_fixes:
            if old not in self.buggy_code:
                raise ValueError(f"{self.id}: other fix {old!r} matches no line of the buggy code")
            out.append(self.buggy_code.replace(old, new))
        return out

    def symptom(self) -> Symptom:
        """Run the buggy code and measure what it did."""
        return self.measure(self.runner(self.buggy_code, self.id))

    def fix_check(self) -> Symptom:
        """Run the fixed code through the same measurement; ``.buggy`` is False when it works."""
        return self.measure(self.runner(self.fixed_code, self.id + ".fixed"))

    @property
    def why(self) -> str:
        """The explanation with its source, as the card shows it after the reveal."""
        return f"{self.explanation} (source: {self.source})" if self.source else self.explanation

    def report(self, code: bool = True) -> str:
        """Run both versions and describe them: title, buggy code, symptom, result after the fix."""
        lines = [f"■ {self.id} · {self.title}"]
        if code:
            lines.append(textwrap.indent(self.buggy_code.strip("\n"), "  │ "))
        lines.append(_labelled("symptom:", str(self.symptom())))
        lines.append(_labelled("fixed:", str(self.fix_check())))
        if self.emulated:
            lines.append(_labelled("emulated:", self.emulated))
        return "\n".join(lines)


def _statements(source: str) -> list[str]:
    """The code's non-blank lines without comments or trailing spaces (what a fix must change)."""
    return [line.rstrip() for line in without_comments(source).splitlines() if line.strip()]


def without_comments(source: str) -> str:
    """``source`` with every comment removed: a line that held only a comment goes, a comment after
    code is cut with the spaces before it; ``#`` inside strings stays."""
    lines = source.splitlines(keepends=True)
    cuts = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            cuts[tok.start[0] - 1] = tok.start[1]
    out = []
    for number, line in enumerate(lines):
        if number not in cuts:
            out.append(line)
        elif line[:cuts[number]].strip():
            out.append(line[:cuts[number]].rstrip() + "\n")
    return "".join(out)


def _labelled(label: str, text: str) -> str:
    pad = " " * 12
    body = textwrap.indent(text, pad).lstrip()
    return f"  {label:<10}{body}"


def code(source: str) -> str:
    """Dedent a drill's source and strip the blank first line a triple-quoted string has."""
    return textwrap.dedent(source).strip("\n") + "\n"


def fmt(x: float, digits: int = 3) -> str:
    """A number rounded to ``digits`` significant figures, stable for printed summaries."""
    if x != x:  # NaN
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"
