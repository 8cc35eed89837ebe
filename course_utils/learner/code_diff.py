"""A drill's fix as a diff against its buggy code (lesson 07): plain text for terminals and nbval,
highlighted HTML (pygments, inline styles, so it needs no stylesheet) for JupyterLab."""

from __future__ import annotations

import difflib

from course_utils.drills import Drill

CONTEXT = 2  # unchanged lines shown around each change


def code_only(line: str) -> str:
    """One line of Python without its comment (a ``#`` inside a string stays)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote and line[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip()
    return line.rstrip()


def diff_lines(before: str, after: str, context: int = CONTEXT) -> list[str]:
    """The unified diff of two sources, headed ``buggy`` / ``fixed``; [] when they are equal.
    Lines that differ only by a trailing comment count as unchanged (the buggy code a learner
    reads has its comments removed; the fixed code keeps the ones that explain the fix)."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, [code_only(x) for x in old], [code_only(x) for x in new],
                                      autojunk=False)
    out = []
    for group in matcher.get_grouped_opcodes(context):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in new[b1:b2]]
                continue
            out += ["-" + line for line in old[a1:a2]] + ["+" + line for line in new[b1:b2]]
    return ["--- buggy", "+++ fixed", *out] if out else []


DIFF_CLASS = "mpsd-diff"
# Each line of a diff keeps its +/- marker on screen: the lines never wrap (a wrapped trailing
# comment would start a visual line with no marker); a line wider than the output scrolls
# sideways inside the diff's own box instead. ``contain: inline-size`` keeps its long lines from
# widening the widget around it (a flex item grows to its content's width otherwise). Inline
# styles, so no stylesheet is needed.
DIFF_STYLE = ("white-space: pre; word-break: normal; overflow-wrap: normal; overflow-x: auto; "
              "contain: inline-size; max-width: 100%; box-sizing: border-box; line-height: 1.3")


def diff_html(lines: list[str]) -> str:
    """``lines`` (a unified diff) highlighted as HTML; long lines scroll, never wrap."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer

    body = highlight("\n".join(lines) + "\n", DiffLexer(), HtmlFormatter(noclasses=True, nowrap=True))
    return f"<pre class='{DIFF_CLASS}' style='{DIFF_STYLE}'>{body}</pre>"


class FixDiff:
    """The fix of ``drill`` as a diff; displays as highlighted HTML, prints as text."""

    def __init__(self, drill: Drill, context: int = CONTEXT):
        self.drill = drill
        self.lines = diff_lines(drill.buggy_code, drill.fixed_code, context)

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def _repr_html_(self) -> str:
        return diff_html(self.lines)
