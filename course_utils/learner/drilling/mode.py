"""Timed drill mode (lesson 08): drills lesson 07 did not show, in a seeded order and form, each
on a clock that fits its length.

``DrillSession(seed=8, count=5)`` picks drills from ``course_utils.drills`` (all categories, or
one) in an order fixed by the seed. Displayed in a notebook it is a widget: *Start drill* shows the
first drill's code and starts its clock that counts in the browser (an ipywidgets ``Play``
linked in JavaScript to a progress bar and a seconds counter, so it ticks while the kernel is busy);
the lesson 07 spot-the-bug card takes a hypothesis, then the diagnosis; *Submit* grades it and stops
the clock, *Reveal* shows the fix; *Next drill* serves the next one; *Finish round* scores the round
and records it. From code: ``start()``, ``answer(choice, hypothesis)``, ``reveal()``, ``next()``,
``finish()``. The terminal version is ``course drill`` (``course_utils.learner.drilling.terminal``).

Scoring: a right answer within the time is 1 point, a right answer after the clock ran out ½, a wrong
one 0. A timed answer is not a card answer (lesson 07's key "drills" counts only cards). Finished
rounds are kept in the progress file under their own key, "drill_sessions" (nothing at all with
``record=False``); ``history()``, ``history_text()`` and ``plot_history()`` read them back.
``drills=[ids]`` serves the given drills (as declared) instead of a seeded draw; ``adaptive=True``
draws from the learner's missed drills and weakest categories (``drill_plan``), with reasons.

This module is the entry point and holds the round itself; the rules (choosing drills, points, the
score table) are in ``drill_scoring``, the history in ``drill_history``, the widget in
``drill_widget``. Their public names are importable from here too.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace

from course_utils.core.glyphs import glyph
from course_utils.drills import Drill, get
from course_utils.drills.hypothesis_gate import hypothesis_problem
from course_utils.learner.drilling import fix_entry as fixit
from course_utils.learner.drilling.history import (
    KEY,
    MAX_SESSIONS,
    history,
    history_text,
    plot_history,
    record_session,
)
from course_utils.learner.drilling.plan import plan
from course_utils.learner.drilling.scoring import (
    LETTERS,
    SECONDS,
    Result,
    category_name,
    clock_text,
    drills_text,
    letter_index,
    pick,
    score_table,
    time_limit,
)
from course_utils.learner.drilling.widget import FINISH, NEXT, START, build_widget

__all__ = ["FINISH", "KEY", "LETTERS", "MAX_SESSIONS", "NEXT", "SECONDS", "START", "DrillSession", "Result",
           "category_name", "clock_text", "history", "history_text", "pick", "plot_history",
           "record_session", "score_table"]


class DrillSession:
    """A round of timed drills (lesson 08): seeded order, a clock per drill, scored and recorded."""

    def __init__(self, seed: int | None = None, category: str | None = None, count: int | None = 5,
                 seconds: int | None = None, source: str = "notebook",
                 clock: Callable[[], float] = time.monotonic, drills: Sequence[str] | None = None,
                 record: bool = True, adaptive: bool = False):
        self.seed = secrets.randbelow(10_000) if seed is None else seed
        self.category = category_name(category)
        self.reasons: dict[str, str] = {}  # adaptive: why each drill was chosen
        if drills:
            self.drills = [get(i) for i in drills]
        elif adaptive and self.category is None:
            chosen = plan(count or 5, self.seed)
            self.drills, self.reasons = [d for d, _ in chosen], {d.id: why for d, why in chosen}
        else:
            self.drills = pick(self.seed, self.category, count)
        self.fixed_seconds, self.source, self.clock, self.record = seconds, source, clock, record
        self.index = 0
        self.results: list[Result] = []
        self.recorded: dict | None = None
        self.controls: SimpleNamespace | None = None
        self._started_at: float | None = None
        self._fixes: dict[int, bool] = {}  # drill index -> a fix-it edit was accepted
        self.edits: dict[int, str] = {}  # drill index -> the learner's last fix-it edit

    # --- state ------------------------------------------------------------------------------------
    @property
    def seconds(self) -> int:
        """The current drill's clock (the last drill's once the round is over): its length's
        estimate (``time_limit``), or the ``seconds`` the session was given for every drill."""
        drill = self.current or self.drills[-1]
        return self.fixed_seconds or time_limit(drill)

    @property
    def current(self) -> Drill | None:
        """The drill being served (None once the round is over)."""
        return self.drills[self.index] if self.index < len(self.drills) else None

    @property
    def answered(self) -> bool:
        """Whether the current drill has been answered."""
        return len(self.results) > self.index

    @property
    def score(self) -> float:
        """Points so far over drills answered (0 before any answer)."""
        return sum(r.points for r in self.results) / len(self.results) if self.results else 0.0

    def elapsed(self) -> float:
        """Seconds on the current drill's clock (0 before it starts)."""
        return 0.0 if self._started_at is None else self.clock() - self._started_at

    # --- the round, from code -------------------------------------------------------------------------
    def start(self) -> str:
        """Start the current drill's clock; return the drill as text (code, question, choices)."""
        drill = self._need_current()
        if self._started_at is None:
            self._started_at = self.clock()
        return self.card_text(drill)

    def card_text(self, drill: Drill) -> str:
        """A drill without its title (the title would give the bug away): code, question, choices."""
        q = drill.question
        n = self.drills.index(drill) + 1
        why = [f"chosen: {self.reasons[drill.id]}"] if drill.id in self.reasons else []
        code = ["    " + ln for ln in drill.buggy_code.rstrip("\n").splitlines()]
        lines = [f"Drill {n} of {len(self.drills)} · {drill.category} · {clock_text(self.seconds)} "
                 "on the clock", *why, "", *code, "", f"Q: {q.prompt}"]
        lines += [f"  {LETTERS[i]}) {choice}" for i, choice in enumerate(q.choices)]
        return "\n".join(lines)

    def answer(self, choice: int | str, hypothesis: str) -> str:
        """Grade the current drill's answer (a letter or an index) given a written hypothesis."""
        problem = hypothesis_problem(self._need_current().buggy_code, hypothesis)
        if problem:
            raise ValueError(problem)
        result = self._grade(letter_index(self._need_current(), choice), hypothesis)
        return self._feedback(result)

    def fix(self, code: str) -> str:
        """Fix-it mode: judge ``code``, an edit of the current drill's buggy code (before or after
        the letter; a fix accepted before any letter answers the drill, as a right diagnosis).
        The verdict's text; the drill's result keeps whether a fix was accepted (an edit refused
        before it ran, being empty or not Python, is not counted). The last edit of each drill is
        kept in ``edits``, so a refused edit is never lost."""
        drill = self.current if self.current is not None and not self.answered else self._last()
        index = self.drills.index(drill)
        self.edits[index] = code
        verdict = fixit.judge(drill, code)
        if not verdict.ran:
            return verdict.text()
        self._fixes[index] = self._fixes.get(index, False) or verdict.passed
        if index < len(self.results):
            self.results[index] = dataclasses.replace(self.results[index], fixed=self._fixes[index])
        elif verdict.passed:
            self._grade(drill.question.answer, "", choice="fix")
        return verdict.text()

    def _last(self) -> Drill:
        if not self.results:
            raise RuntimeError("start the round first")
        return self.drills[len(self.results) - 1]

    def reveal(self) -> str:
        """The current (or last) drill's fix and explanation; only after it was answered."""
        from course_utils.learner.bugcard import BugCard

        drill = self.drills[min(self.index, len(self.drills) - 1)]
        if len(self.results) <= self.drills.index(drill):
            raise RuntimeError("answer the drill first: the reveal comes after your diagnosis")
        return BugCard(drill).reveal()

    def next(self) -> str | None:
        """Move to the next drill and start its clock; its text, or None when the round is over."""
        if not self.answered:
            raise RuntimeError("answer the current drill before moving on")
        self.index += 1
        self._started_at = None
        return self.start() if self.current is not None else None

    def finish(self, record: bool | None = None) -> str:
        """End the round: record it in the history (once; never for a session made with
        ``record=False``) and return the score table."""
        record = self.record if record is None else record and self.record
        if record and self.results and self.recorded is None:
            self.recorded = record_session(self.results, self.seed, self.category, self.source)
        return self.table()

    def table(self) -> str:
        return score_table(self.results)

    def _need_current(self) -> Drill:
        drill = self.current
        if drill is None:
            raise RuntimeError("the round is over: call finish()")
        if self.answered:
            raise RuntimeError("this drill is answered: call next()")
        return drill

    def _grade(self, index: int, hypothesis: str, choice: str | None = None) -> Result:
        drill = self._need_current()
        if self._started_at is None:
            self._started_at = self.clock()
        seconds = self.elapsed()
        right = index == drill.question.answer
        result = Result(drill.id, drill.category, choice or LETTERS[index], right, round(seconds, 1),
                        seconds > self.seconds, self.seconds, self._fixes.get(self.index))
        self.results.append(result)
        return result

    def _feedback(self, r: Result) -> str:
        q = self.drills[len(self.results) - 1].question
        took = f"{clock_text(r.seconds)} of {clock_text(r.limit)}"
        if r.late and r.right:
            took += ", late: half a point"
        if r.right:
            return f"{glyph('right')} Right: {r.choice}) {q.choices[q.answer]} ({took})"
        return (f"{glyph('wrong')} Not quite: you chose {r.choice}; the answer is {LETTERS[q.answer]}) "
                f"{q.choices[q.answer]} ({took})")

    # --- display ----------------------------------------------------------------------------------------
    def text(self) -> str:
        """The round as plain text (what a terminal or nbval sees)."""
        where = f"category {self.category}" if self.category else (
            "chosen from your history" if self.reasons else "all categories")
        return (f"Timed drills: {drills_text(len(self.drills))} ({where}, seed {self.seed}), "
                f"{self.clocks_text()}. Press '{START}' in the widget; from code: "
                "start(), answer('B', 'your hypothesis'), reveal(), next(), finish().")

    def clocks_text(self) -> str:
        """'1:45 to 3:15 on the clock, by length' (or 'm:ss each' when every clock is the same)."""
        limits = sorted({self.fixed_seconds or time_limit(d) for d in self.drills})
        if len(limits) == 1:
            return f"{clock_text(limits[0])} each"
        return f"{clock_text(limits[0])} to {clock_text(limits[-1])} on the clock, by length"

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.learner.widgets import bundle

        return bundle(self.widget(), self.text(), **kwargs)

    def widget(self):
        """The round as ipywidgets; the controls stay reachable as ``self.controls``."""
        return build_widget(self)
