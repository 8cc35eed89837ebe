"""Find the notebooks to grade and read each one safely (``course grade``, instructors).

Nothing here runs a submission's code: the notebook is read as data (size-capped, validated by
``learner.read_notebook``) and its code cells are handed to the submission's own process.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError
from course_utils.course.workspace import read_notebook

MAX_NOTEBOOK_BYTES = 20 * 2**20
_LESSON_IN_NAME = re.compile(r"(?<!\d)(\d\d)_")
_LESSON_IN_CHECK = re.compile(r"""check\(\s*["'](\d\d)\.""")


@dataclass
class Submission:
    """One notebook to grade: where it is, its lesson, its code cells, or why it cannot be read."""

    path: Path
    name: str
    lesson: str | None = None
    cells: list[str] = field(default_factory=list)
    malformed: str | None = None  # why the notebook could not be read
    note: str | None = None  # a problem that is not the notebook's content (e.g. no lesson)


def discover(paths: list[str | Path]) -> list[tuple[Path, str]]:
    """(path, display name) of every notebook in ``paths`` (files, or folders searched deeply).

    Display names are relative to the deepest folder all notebooks share, so they do not depend
    on where the class was copied to. Checkpoint folders and hidden folders are skipped.
    """
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for nb in sorted(path.rglob("*.ipynb")):
                parts = nb.relative_to(path).parts
                if not any(p.startswith(".") or p == "__pycache__" for p in parts[:-1]):
                    found.setdefault(nb.resolve(), None)
        elif path.exists():
            found.setdefault(path.resolve(), None)
        else:
            raise CourseError(f"{path}: no such file or folder")
    files = list(found)
    if not files:
        return []
    base = Path(os.path.commonpath([f.parent for f in files]))
    return sorted(((f, f.relative_to(base).as_posix()) for f in files), key=lambda x: x[1])


def lesson_of(path: Path, nb=None) -> str | None:
    """The lesson a notebook belongs to: its file name (``NN_...``), its metadata or its checks."""
    match = _LESSON_IN_NAME.search(path.name)
    if match:
        return match.group(1)
    if nb is None:
        return None
    origin = str(nb.metadata.get("mps_detective", {}).get("generated_from", ""))
    match = _LESSON_IN_NAME.search(Path(origin).name)
    if match:
        return match.group(1)
    for cell in nb.cells:
        match = _LESSON_IN_CHECK.search(cell.source) if cell.cell_type == "code" else None
        if match:
            return match.group(1)
    return None


def _why(err: CourseError, path: Path) -> str:
    text = str(err)
    prefix = f"{path}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def load(path: Path, name: str, lesson: str | None = None) -> Submission:
    """Read one submission; a broken file becomes ``malformed`` with the reason, never an error."""
    sub = Submission(path, name, lesson=lesson)
    try:
        size = path.stat().st_size
    except OSError as err:
        sub.malformed = f"cannot be read ({err.strerror})"
        return sub
    if size > MAX_NOTEBOOK_BYTES:
        sub.malformed = f"too large ({size // 2**20} MB)"
    else:
        try:
            nb = read_notebook(path)
        except CourseError as err:
            sub.malformed = _why(err, path)
        except Exception as err:  # noqa: BLE001 - nbformat raises many kinds; all mean "malformed"
            sub.malformed = f"malformed notebook ({type(err).__name__}: {str(err)[:200]})"
        else:
            sub.cells = [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip()]
            sub.lesson = sub.lesson or lesson_of(path, nb)
    sub.lesson = sub.lesson or lesson_of(path)
    if sub.lesson is None:
        sub.note = "cannot tell the lesson: name the file NN_*.ipynb or pass --lesson NN"
    return sub
