"""The learner's workspace: ``course start NN`` copies a lesson's exercises there, and
``start_lesson`` the lesson itself with its outputs cleared (``course check`` lives in
``course_utils.grader.learner_check``).

A learner works on copies in ``workspace/`` (git-ignored; ``$MPS_DETECTIVE_WORKSPACE`` moves it):
the exercises as ``workspace/NN_slug_exercises.ipynb``, the lessons as
``workspace/lessons/NN_slug.ipynb`` (two names, so JupyterLab's tabs tell them apart; an exercise
copy made under the older name ``workspace/NN_slug.ipynb`` is kept and used as it is).
Regenerating exercises or pulling the course never touches them, running a lesson there leaves
``notebooks/`` (stored outputs, for reading on GitHub and for nbval) clean, and the lesson's
predictions are not spoiled by stored answers. ``--force`` keeps a timestamped backup first.
``practice(exercise_id)`` is a lesson's link to the matching exercise in the learner's copy, and
``next_lesson(NN)`` a lesson's last link: it makes the copy of lesson NN and opens it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import quote

from course_utils.core.errors import CourseError, course_root


def lesson_notebook(folder: Path, lesson: str) -> Path:
    """``folder/NN_*.ipynb`` for a lesson number, with a clear error listing what exists."""
    number = lesson.zfill(2) if lesson.isdigit() else lesson
    found = sorted(folder.glob(f"{number}_*.ipynb"))
    if not found:
        have = sorted({p.name[:2] for p in folder.glob("[0-9][0-9]_*.ipynb")})
        raise CourseError(f"no lesson '{lesson}' in {folder.name}/; lessons there: "
                          f"{', '.join(have) or 'none'}")
    return found[0]


def strip_outputs(nb) -> None:
    """Clear every code cell's outputs and execution count."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def workspace_dir(root: Path | None = None) -> Path:
    """The learner's workspace: ``$MPS_DETECTIVE_WORKSPACE``, else ``workspace/`` in the course."""
    explicit = os.environ.get("MPS_DETECTIVE_WORKSPACE")
    return Path(explicit) if explicit else (root or course_root()) / "workspace"


def _back_up(target: Path, workspace: Path, kind: str = "") -> Path:
    backups = workspace / "backups"
    backups.mkdir(parents=True, exist_ok=True)
    backup = backups / f"{target.stem}{kind}.{time.strftime('%Y%m%d-%H%M%S')}.ipynb"
    shutil.copy2(target, backup)
    print(f"kept your previous copy as {backup}")
    return backup


EXERCISES_SUFFIX = "_exercises"


def exercise_copy(source: Path, workspace: Path) -> Path:
    """Where the learner's copy of exercise notebook ``source`` lives: ``NN_slug_exercises.ipynb``,
    or ``NN_slug.ipynb`` where a copy made under that older name exists (it holds their work)."""
    older = workspace / source.name
    current = workspace / f"{source.stem}{EXERCISES_SUFFIX}{source.suffix}"
    return older if older.exists() and not current.exists() else current


def start(lesson: str, force: bool = False, root: Path | None = None) -> Path:
    """Copy exercise notebook NN into workspace/; never overwrite without a backup."""
    root = root or course_root()
    source = lesson_notebook(root / "exercises", lesson)
    workspace = workspace_dir(root)
    target = exercise_copy(source, workspace)
    if target.exists() and not force:
        raise CourseError(f"{target} already exists and holds your work; it was left alone. "
                          "Open it, or use --force to start over (a backup is kept first).")
    workspace.mkdir(parents=True, exist_ok=True)
    if target.exists():
        _back_up(target, workspace)
    shutil.copyfile(source, target)
    return target


def start_lesson(lesson: str, force: bool = False, root: Path | None = None) -> list[Path]:
    """The learner's copies of lesson NN: the lesson with its outputs cleared (in
    workspace/lessons/, beside references.md) and its exercise notebook where it has one. A copy
    that exists is kept as it is (it holds the learner's work) unless ``force``, which keeps a
    backup first. Returns the lesson copy, then the exercise copy."""

    root = root or course_root()
    source = lesson_notebook(root / "notebooks", lesson)
    lessons = workspace_dir(root) / "lessons"
    target = lessons / source.name
    lessons.mkdir(parents=True, exist_ok=True)
    if target.exists() and force:
        _back_up(target, workspace_dir(root), kind=".lesson")
    if force or not target.exists():
        nb = read_notebook(source)
        strip_outputs(nb)
        nb.metadata.pop("widgets", None)
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if (root / "notebooks" / "references.md").exists():  # the lessons link to it; not learner's work
        shutil.copyfile(root / "notebooks" / "references.md", lessons / "references.md")
    copies = [target]
    exercise = exercise_copy(source, workspace_dir(root))
    if list((root / "exercises").glob(source.name)) and (force or not exercise.exists()):
        start(lesson, force=force, root=root)
    if exercise.exists():
        copies.append(exercise)
    return copies


def _headings(nb) -> dict[str, str]:
    """Exercise id -> the URL fragment that makes JupyterLab scroll to the markdown cell whose
    heading names it (``cell-id=...``: a heading's own id would hold characters such as '·'
    that a link percent-encodes and JupyterLab then no longer matches)."""
    found = {}
    for cell in nb.cells:
        first = cell.source.splitlines()[0] if cell.source else ""
        named = re.search(r"`(\d\d\.\w+)`", first)
        if cell.cell_type == "markdown" and first.startswith("#") and named and cell.get("id"):
            found.setdefault(named.group(1), f"cell-id={cell.id}")
    return found


class Practice:
    """A link from a lesson to the matching exercise in the learner's copy of the exercise
    notebook (``practice``); JupyterLab opens it in a new tab, at the exercise's heading."""

    def __init__(self, exercise_id: str, target: Path, anchor: str | None):
        self.exercise_id, self.target, self.anchor = exercise_id, target, anchor

    def href(self) -> str:
        """The copy's path relative to the running notebook's folder, with the heading anchor."""
        relative = Path(os.path.relpath(self.target, Path.cwd())).as_posix()
        return quote(relative) + (f"#{quote(self.anchor, safe='=')}" if self.anchor else "")

    def __repr__(self) -> str:
        return f"Practice {self.exercise_id}: your copy is workspace/{self.target.name}"

    def _repr_html_(self) -> str:
        return (f"<b>Practice:</b> <a href='{html.escape(self.href())}' target='_blank'>"
                f"open <code>{html.escape(self.exercise_id)}</code> in your copy of "
                f"{html.escape(self.target.name)}</a> (your copy is kept; nothing overwrites it)")


class PracticeList:
    """Links to every exercise of a lesson (``practice_links``), one line each."""

    def __init__(self, links: list[Practice]):
        self.links = links

    def __repr__(self) -> str:
        return "\n".join(repr(link) for link in self.links)

    def _repr_html_(self) -> str:
        return "<br>".join(link._repr_html_() for link in self.links)


class NextLesson(Practice):
    """A lesson's last link: the learner's copy of the next lesson (``next_lesson``), opened in a
    new JupyterLab tab."""

    def __init__(self, title: str, target: Path):
        super().__init__(title, target, None)

    def __repr__(self) -> str:
        return f"Next: lesson {self.exercise_id}. Your copy is workspace/lessons/{self.target.name}"

    def _repr_html_(self) -> str:
        return (f"<b>Next:</b> <a href='{html.escape(self.href())}' target='_blank'>open lesson "
                f"{html.escape(self.exercise_id)}</a> (your own copy, made now; nothing overwrites it)")


def next_lesson(lesson: str, root: Path | None = None) -> NextLesson:
    """Make the learner's copies of lesson NN as ``course start NN`` does (kept where they exist)
    and return a link that opens the lesson's copy: the last cell of the lesson before it."""
    target = start_lesson(lesson, root=root)[0]
    first = read_notebook(target).cells[0].source.splitlines()[0]
    return NextLesson(first.lstrip("# ").strip(), target)


def _exercise_copy(lesson: str, root: Path) -> tuple[Path, dict[str, str]]:
    """The learner's copy of lesson NN's exercise notebook (made on first use, never
    overwritten) and the anchors of its exercises."""
    source = lesson_notebook(root / "exercises", lesson)
    target = exercise_copy(source, workspace_dir(root))
    if not target.exists():
        start(lesson, root=root)
    return target, _headings(read_notebook(source))


def practice(exercise_id: str, root: Path | None = None) -> Practice:
    """The learner's copy of the exercise notebook that holds ``exercise_id`` ("05.strides"),
    made on first use and never overwritten, and a link that opens it at that exercise."""
    target, anchors = _exercise_copy(exercise_id.split(".")[0], root or course_root())
    if exercise_id not in anchors:
        raise CourseError(f"no exercise '{exercise_id}' in exercises/{target.name}")
    return Practice(exercise_id, target, anchors[exercise_id])


def practice_links(lesson: str, root: Path | None = None) -> PracticeList:
    """A link to each exercise of lesson NN in the learner's copy (a lesson's Practice section)."""
    target, anchors = _exercise_copy(lesson, root or course_root())
    return PracticeList([Practice(ex_id, target, anchor) for ex_id, anchor in anchors.items()])


def parse_notebook(raw: bytes):
    """A validated notebook from bytes; CourseError with one clear reason for each way it is
    broken (``course check`` and ``course grade`` use the same words)."""
    import nbformat

    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CourseError(f"not a notebook (not valid JSON: {str(err)[:200]})") from None
    if not isinstance(data, dict) or "cells" not in data:
        raise CourseError("JSON but not a notebook (no 'cells')")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except nbformat.ValidationError as err:
        raise CourseError(f"malformed notebook ({str(err.message)[:300]})") from None
    return nb


def read_notebook(path: Path):
    """Read and validate a notebook, turning each way it can be broken into one clear message."""
    if not path.exists():
        raise CourseError(f"{path}: no such file")
    try:
        return parse_notebook(path.read_bytes())
    except CourseError as err:
        raise CourseError(f"{path}: {err}") from None
