"""Generate the learner notebooks (exercises/) from the author's notebooks (solutions/).

A solution notebook holds complete answers between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` lines (nbgrader's markers). ``make_exercise`` runs a copy through small
one-job steps, in order: check the markers, replace each block with a stub that raises, tag
the cells that will then raise (so ``pytest --nbval-lax exercises/`` passes on the unsolved
notebook), strip outputs and volatile metadata, and mark the copy as generated.
``build`` does that for a folder; ``course build-exercises`` calls it, and CI runs it with
``check=True`` to prove exercises/ is current.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from course_utils.core.check_calls import check_calls, parse_cell
from course_utils.learner.workspace import strip_outputs  # noqa: F401 - used here, re-exported

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
RAISES_TAG = "raises-exception"  # nbval and nbclient let a cell with this tag fail
BANNER_ID = "exercise-banner"
_EXERCISE_COMMENT = re.compile(r"^\s*#\s*exercise:\s*(\S+)\s*$", re.MULTILINE)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class AuthoringError(ValueError):
    """A solution notebook's markers are malformed; the message names the file and the cell."""

    def __init__(self, notebook: str, cell: int, problem: str):
        self.notebook, self.cell, self.problem = notebook, cell, problem
        super().__init__(f"{notebook}, cell {cell}: {problem}")


class _MarkerProblem(Exception):
    """Raised inside one cell; the caller adds the file and cell index."""


# --- reading cells ------------------------------------------------------------------------------

def _lines(source: str) -> list[str]:
    return source.split("\n")


def _is_marker(line: str) -> bool:
    return line.strip() in (BEGIN, END)


def _names_loaded(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _names_bound(tree: ast.Module | None) -> set[str]:
    """Names a cell binds at module level: defs, classes, assignment and loop targets, imports."""
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body) if tree else []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        if not isinstance(node, _SCOPES):  # names bound inside a function are not module names
            todo.extend(ast.iter_child_nodes(node))
    return names


def _stub_runs_with_cell(tree: ast.Module | None, source: str, stub_lines: list[int]) -> bool:
    """Whether a stub sits outside every function body, so running the cell raises."""
    if tree is None:  # unparsable: trust indentation
        return any(not _lines(source)[n][:1].isspace() for n in stub_lines)
    bodies = [range(node.lineno, node.end_lineno + 1) for node in ast.walk(tree)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(all(n + 1 not in body for body in bodies) for n in stub_lines)


def _exercise_id(cells: list[NotebookNode], index: int, stem: str) -> str:
    """The id a stub names: the cell's ``# exercise:`` comment, the next check() call, the stem."""
    own = _EXERCISE_COMMENT.search(cells[index].source)
    if own:
        return own.group(1)
    for cell in cells[index + 1:]:
        calls = check_calls(cell.source) if cell.cell_type == "code" else []
        named = [call.exercise_id for call in calls if call.exercise_id]
        if named:
            return named[0]
    return stem


def _stub(indent: str, exercise_id: str) -> str:
    # json.dumps gives a double-quoted literal that is also valid Python
    return f"{indent}raise NotImplementedError({json.dumps(exercise_id + ': your code here')})"


def _replace_blocks(source: str, exercise_id: str) -> tuple[str, list[int]]:
    """Replace each solution block with a stub; return the source and the stubs' line indices."""
    out: list[str] = []
    stubs: list[int] = []
    open_at: int | None = None  # 1-based line of the BEGIN marker of the open block
    for number, line in enumerate(_lines(source), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if open_at is not None:
                raise _MarkerProblem(f"nested '{BEGIN}' at line {number} "
                                     f"(the block opened at line {open_at} is still open)")
            open_at = number
            stubs.append(len(out))
            out.append(_stub(line[: len(line) - len(line.lstrip())], exercise_id))
        elif marker == END:
            if open_at is None:
                raise _MarkerProblem(f"'{END}' at line {number} has no '{BEGIN}' before it")
            open_at = None
        elif open_at is None:
            out.append(line)
    if open_at is not None:
        raise _MarkerProblem(f"'{BEGIN}' at line {open_at} is never closed by '{END}'")
    return "\n".join(out), stubs


def _add_tag(cell: NotebookNode, tag: str) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)


# --- pipeline steps (each mutates the copy it is given) -----------------------------------------

def _ensure_cell_ids(nb: NotebookNode) -> None:
    """Upgrade to nbformat 4.5 with deterministic ids (nbformat's own upgrade picks random ones)."""
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            cell["id"] = f"cell-{index}"


def _reject_markers_outside_code(nb: NotebookNode, source_name: str) -> None:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" and any(_is_marker(line) for line in _lines(cell.source)):
            raise AuthoringError(source_name, index, f"solution marker in a {cell.cell_type} "
                                 "cell; solution blocks belong in code cells")


def _replace_solutions(nb: NotebookNode, source_name: str) -> dict[int, list[int]]:
    """Stub out every solution block; return {cell index: stub line indices}."""
    stem = Path(source_name).stem
    stubs: dict[int, list[int]] = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not any(_is_marker(ln) for ln in _lines(cell.source)):
            continue
        try:
            cell.source, stubs[index] = _replace_blocks(
                cell.source, _exercise_id(nb.cells, index, stem))
        except _MarkerProblem as problem:
            raise AuthoringError(source_name, index, str(problem)) from None
    return stubs


def _tag_cells_that_raise(nb: NotebookNode, solution: NotebookNode,
                          stubs: dict[int, list[int]]) -> None:
    """Tag cells that raise once answers are stubs: stubbed cells whose stub runs at module level,
    check() calls from the first stubbed cell on, and later cells that load a name bound by a
    stubbed cell (or, in turn, by a cell tagged here). Unparsable cells are left alone."""
    if not stubs:
        return
    tainted: set[str] = set()  # module names that may be missing or raise when used
    for index in range(min(stubs), len(nb.cells)):
        cell = nb.cells[index]
        if cell.cell_type != "code":
            continue
        tree = parse_cell(cell.source)
        raises = index in stubs and _stub_runs_with_cell(tree, cell.source, stubs[index])
        if tree is not None:
            raises = raises or bool(check_calls(tree)) or bool(_names_loaded(tree) & tainted)
        if raises:
            _add_tag(cell, RAISES_TAG)
        if index in stubs:
            tainted |= _names_bound(parse_cell(solution.cells[index].source))
        elif raises:
            tainted |= _names_bound(tree)


def drop_volatile_metadata(nb: NotebookNode) -> None:
    """Remove widget state and per-cell timings, which change on every run."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def _banner(source_name: str) -> str:
    lesson = Path(source_name).name[:2]
    return (f"> **Exercise notebook.** Generated from `{source_name}` by `course build-exercises`; "
            f"work on your own copy made with `course start {lesson}` so nothing you write is "
            "overwritten.")


def _mark_generated(nb: NotebookNode, source_name: str) -> None:
    nb.metadata["mps_detective"] = {"generated_from": source_name, "do_not_edit": True}
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(_banner(source_name), id=BANNER_ID))


# --- public API ---------------------------------------------------------------------------------

def make_exercise(nb: NotebookNode, source_name: str) -> NotebookNode:
    """Return the exercise version of solution notebook ``nb`` (which is left unchanged).

    ``source_name`` (e.g. ``"solutions/01_mps_setup.ipynb"``) is recorded in the result and named
    in every ``AuthoringError``; cell indices in errors count from 0 in the solution notebook.
    """
    out = copy.deepcopy(nb)
    _ensure_cell_ids(out)
    _reject_markers_outside_code(out, source_name)
    stubs = _replace_solutions(out, source_name)
    _tag_cells_that_raise(out, nb, stubs)
    strip_outputs(out)
    drop_volatile_metadata(out)
    _mark_generated(out, source_name)
    nbformat.validate(out)
    return out


def notebook_bytes(nb: NotebookNode) -> bytes:
    """What ``nbformat.write`` puts in a file; keys are sorted, so equal notebooks, equal bytes."""
    buffer = io.StringIO()
    nbformat.write(nb, buffer)
    return buffer.getvalue().encode("utf-8")


def _holds(path: Path, data: bytes) -> bool:
    return path.is_file() and path.read_bytes() == data


def write_notebook(nb: NotebookNode, path: Path) -> bool:
    """Write ``nb`` to ``path`` unless the file holds exactly those bytes; True if it wrote."""
    data = notebook_bytes(nb)
    if _holds(path, data):
        return False
    path.write_bytes(data)
    return True


def build(solutions_dir: Path, exercises_dir: Path, check: bool = False) -> list[Path]:
    """Regenerate ``exercises_dir`` from ``solutions_dir``; return the exercise paths changed.

    Each ``solutions_dir/*.ipynb`` gives the exercise of the same name. An exercise with no
    solution is stale: it is deleted, and listed. With ``check=True`` nothing is written or
    deleted; the list says what would change (empty means exercises/ is current).
    """
    if not solutions_dir.is_dir():  # an empty glob would otherwise delete every exercise
        raise FileNotFoundError(f"no solutions folder at {solutions_dir}")
    sources = sorted(solutions_dir.glob("*.ipynb"))
    changed: list[Path] = []
    for source in sources:
        target = exercises_dir / source.name
        exercise = make_exercise(nbformat.read(source, as_version=4),
                                 f"{solutions_dir.name}/{source.name}")
        data = notebook_bytes(exercise)
        if not _holds(target, data):
            changed.append(target)
            if not check:
                exercises_dir.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    expected = {exercises_dir / source.name for source in sources}
    for orphan in sorted(set(exercises_dir.glob("*.ipynb")) - expected):
        changed.append(orphan)
        if not check:
            orphan.unlink()
    return changed
