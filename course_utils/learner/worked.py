"""Lesson 07's worked drills: after a card is answered, the drill measured both ways and its fix
as a highlighted diff (``worked(n)``); at the end, one compact table of them (``taught_table()``).
``n`` numbers the drills lesson 07 works through, as ``card(n)`` does, so no cell names a bug.

Nothing here shows an answer before the learner has tried: until card ``n`` is answered in this
kernel, ``worked(n)`` shows a note and a *Show the worked answer* button, and it opens by itself
when the card is submitted (the table waits for every card, or its own button). Run All therefore
prints no fix under an unanswered card. From code, ``.text()`` gives the answer on purpose.
"""

from __future__ import annotations

import html
import textwrap
from abc import ABC, abstractmethod
from collections.abc import Callable

from course_utils.drills import Drill, taught
from course_utils.learner.bugcard import answered_here, when_answered
from course_utils.learner.code_diff import FixDiff, code_only, diff_html

SHOW = "Show the worked answer"


def _taught(number: int) -> Drill:
    drills = taught()
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(drills):
        raise ValueError(f"worked example number must be 1-{len(drills)}, got {number!r}")
    return drills[number - 1]


class Gated(ABC):
    """An answer held back until ``drill_ids`` were all answered on their cards in this kernel
    (or the learner presses the button). ``text()`` / ``html()`` give the answer itself."""

    button = SHOW

    def __init__(self, drill_ids: list[str], waiting: str):
        self.drill_ids, self.waiting = drill_ids, waiting

    @abstractmethod
    def text(self) -> str:
        """The answer as text."""

    def html(self) -> str:
        """The answer as HTML (the text in a wrapping <pre> unless a subclass does better)."""
        return (f"<pre style='white-space: pre-wrap; overflow-wrap: break-word'>"
                f"{html.escape(self.text())}</pre>")

    def open(self) -> bool:
        """Whether every card this answer belongs to was answered in this kernel."""
        return all(answered_here(drill_id) for drill_id in self.drill_ids)

    def note(self) -> str:
        """What stands in for the answer until it opens (its text/plain, for nbval and terminals)."""
        return f"{self.waiting}, or when you press '{self.button}'. From code: .text()."

    def __repr__(self) -> str:
        return self.text() if self.open() else self.note()

    def widget(self):
        """The note and the button; the answer replaces them when pressed or when the cards are
        answered."""
        import ipywidgets as w

        from course_utils.learner.widgets import row

        note = w.HTML(f"<i>{html.escape(self.waiting)}.</i>")
        press = w.Button(description=self.button, layout={"width": "max-content"})
        answer = w.HTML()

        def reveal(_=None) -> None:
            if not answer.value:
                answer.value = self.html()
            note.layout.display = press.layout.display = "none"

        press.on_click(reveal)
        for drill_id in self.drill_ids:
            when_answered(drill_id, self._when_all(reveal))
        box = w.VBox([row([note, press]), answer])
        box.add_class("mpsd-gated")
        self.controls = (note, press, answer)
        return box

    def _when_all(self, reveal: Callable[[], None]) -> Callable[[], None]:
        return lambda: reveal() if self.open() else None

    def _repr_mimebundle_(self, **kwargs):
        if self.open():
            return {"text/plain": self.text(), "text/html": self.html()}
        from course_utils.learner.widgets import bundle

        return bundle(self.widget(), self.note(), **kwargs)


class Worked(Gated):
    """One taught drill: its heading, the measured symptom before and after the fix (``run``
    False: the lesson measured it another way), and the fix as a diff. Measured when shown."""

    def __init__(self, drill: Drill, run: bool = True, number: int | None = None):
        card = f"card {number}" if number else "its card"
        super().__init__([drill.id], f"The worked answer opens here once you answer {card} above "
                                     "(a hypothesis, then a choice)")
        self.drill, self.run = drill, run
        self._measured = None
        self.diff = FixDiff(drill)

    @property
    def measured(self):
        """The symptom of the buggy code and of the fixed code (None when not ``run``)."""
        if self.run and self._measured is None:
            self._measured = (self.drill.symptom(), self.drill.fix_check())
        return self._measured

    def lines(self) -> list[str]:
        """The heading and the measurements, as text lines."""
        d = self.drill
        out = [f"{d.id} · {d.title}"]
        if self.measured:
            bug, fix = self.measured
            out += [_labelled("buggy:", bug.summary), _labelled("fixed:", fix.summary)]
        if d.emulated:
            out.append(_labelled("emulated:", d.emulated))
        return out

    def text(self) -> str:
        """The worked answer as text: heading, measurements, the fix as a diff."""
        return "\n".join([*self.lines(), "", repr(self.diff)])

    def html(self) -> str:
        """The worked answer as HTML, the diff highlighted."""
        head = html.escape("\n".join(self.lines()))
        return (f"<pre style='white-space: pre-wrap; overflow-wrap: break-word'>{head}</pre>"
                f"{diff_html(self.diff.lines)}")


def _labelled(label: str, text: str) -> str:
    return f"{label:<10}" + textwrap.indent(text, " " * 10).lstrip()


def worked(number: int, run: bool = True) -> Worked:
    """Worked example ``number`` (the drill of ``card(number)``): measured, then the fix as a
    diff, shown once that card is answered (see ``Gated``)."""
    return Worked(_taught(number), run, number)


class TaughtTable(Gated):
    """``taught_table()``: one entry per taught drill, opened once every card is answered."""

    button = "Show the table"

    def __init__(self):
        super().__init__([d.id for d in taught()], "The table of fixes opens here once you have "
                                                  "answered every card of this lesson")

    def text(self) -> str:
        """Card number, category and title, then what to measure (its first hint) and the first
        line its fix adds (comments and imports left out)."""
        from course_utils.core.questions import plain

        out = []
        for number, drill in enumerate(taught(), 1):
            diff = FixDiff(drill, context=0).lines[2:]
            added = [code_only(ln[1:]).strip() for ln in diff if ln.startswith("+")]
            added = [ln for ln in added if ln and not ln.startswith(("import ", "from "))]
            out += [f"{number:>2}  {drill.category:<12} {drill.title}",
                    f"    measure: {plain(drill.hints[0])}",
                    f"    fix:     {added[0] if added else '(lines removed)'}"]
        return "\n".join(out)


def taught_table() -> TaughtTable:
    """The drills lesson 07 works through, at a glance (see ``TaughtTable``); display it as a
    cell's last expression."""
    return TaughtTable()
