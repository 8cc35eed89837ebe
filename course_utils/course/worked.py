"""Lesson 07's worked drills: after a card is answered, the drill measured both ways and its fix
as a highlighted diff (``worked(n)``); at the end, one compact table of them (``taught_table()``).
``n`` numbers the drills lesson 07 works through, as ``card(n)`` does, so no cell names a bug."""

from __future__ import annotations

import html
import textwrap

from course_utils.course.code_diff import FixDiff, code_only, diff_html
from course_utils.drills import Drill, taught


def _taught(number: int) -> Drill:
    drills = taught()
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(drills):
        raise ValueError(f"worked example number must be 1-{len(drills)}, got {number!r}")
    return drills[number - 1]


class Worked:
    """One taught drill: its heading, the measured symptom before and after the fix (``run``
    False: the lesson measured it another way), and the fix as a diff."""

    def __init__(self, drill: Drill, run: bool = True):
        self.drill = drill
        self.measured = (drill.symptom(), drill.fix_check()) if run else None
        self.diff = FixDiff(drill)

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

    def __repr__(self) -> str:
        return "\n".join([*self.lines(), "", repr(self.diff)])

    def _repr_html_(self) -> str:
        head = html.escape("\n".join(self.lines()))
        return (f"<pre style='white-space: pre-wrap; overflow-wrap: break-word'>{head}</pre>"
                f"{diff_html(self.diff.lines)}")


def _labelled(label: str, text: str) -> str:
    return f"{label:<10}" + textwrap.indent(text, " " * 10).lstrip()


def worked(number: int, run: bool = True) -> Worked:
    """Worked example ``number`` (the drill of ``card(number)``): measured, then the fix as a diff."""
    return Worked(_taught(number), run)


def taught_table() -> str:
    """One entry per drill lesson 07 works through: card number, category and title, then what
    to measure (its first hint) and the first line its fix adds (comments and imports left out)."""
    out = []
    for number, drill in enumerate(taught(), 1):
        diff = FixDiff(drill, context=0).lines[2:]
        added = [code_only(ln[1:]).strip() for ln in diff if ln.startswith("+")]
        added = [ln for ln in added if ln and not ln.startswith(("import ", "from "))]
        out += [f"{number:>2}  {drill.category:<12} {drill.title}",
                f"    measure: {drill.hints[0]}",
                f"    fix:     {added[0] if added else '(lines removed)'}"]
    return "\n".join(out)
