"""Finding the ``check("ID", answer)`` calls in a notebook cell, read without running it.

The one parser of those calls, for its three readers: the exercise generator (which id a stub
names, which cells call ``check``), the grader's runner (which expression a notebook passes as its
answer) and the grader's submission reader (which lesson a notebook belongs to). Standard library
only (``ast`` and ``re``): the runner uses it inside a submission's process, before the
submission's code runs.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

# A cell longer than this is scanned for ``check("ID"`` with a pattern, not parsed: reading a
# submission must stay cheap, whatever it holds.
MAX_PARSE_CHARS = 1_000_000
_MAGIC = ("%", "!")
_LITERAL_ID = re.compile(r"""\bcheck\(\s*(['"])([^'"\n]+)\1""")


@dataclass(frozen=True)
class CheckCall:
    """One call of ``check`` (or ``something.check``) in a cell."""

    exercise_id: str | None  # None when the id is not a string literal
    answer: str | None  # the answer expression's source; None when absent (or the cell did not parse)
    line: int  # 1-based, in the cell


def parse_cell(source: str) -> ast.Module | None:
    """The cell as Python, its IPython magic and shell lines (``%``, ``!``) blanked so that line
    numbers stay put; None when it does not parse (or is over ``MAX_PARSE_CHARS``)."""
    if len(source) > MAX_PARSE_CHARS:
        return None
    lines = ["" if line.lstrip().startswith(_MAGIC) else line for line in source.split("\n")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a SyntaxWarning for "\d" in a string
        try:
            return ast.parse("\n".join(lines))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _is_check(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "check"
            or isinstance(func, ast.Attribute) and func.attr == "check")


def _source(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return None


def _from_tree(tree: ast.AST) -> list[CheckCall]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_check(node.func)):
            continue
        named = {k.arg: k.value for k in node.keywords}
        ident = node.args[0] if node.args else named.get("exercise_id")
        answer = node.args[1] if len(node.args) > 1 else named.get("answer")
        literal = isinstance(ident, ast.Constant) and isinstance(ident.value, str)
        found.append((node.lineno, node.col_offset,
                      CheckCall(ident.value if literal else None, _source(answer), node.lineno)))
    return [call for *_, call in sorted(found, key=lambda f: f[:2])]


def _scanned(source: str) -> list[CheckCall]:
    """What a pattern can tell of a cell that does not parse: the literal ids and their lines."""
    return [CheckCall(m.group(2), None, source.count("\n", 0, m.start()) + 1)
            for m in _LITERAL_ID.finditer(source)]


def check_calls(cell: str | ast.AST) -> list[CheckCall]:
    """Every ``check(...)`` call of a cell (its source, or a tree the caller parsed), in source order.

    The id is the first argument or ``exercise_id=``, the answer the second or ``answer=``. A
    source that does not parse is scanned instead: its literal ids are found, answers are not."""
    if isinstance(cell, ast.AST):
        return _from_tree(cell)
    tree = parse_cell(cell)
    return _scanned(cell) if tree is None else _from_tree(tree)
