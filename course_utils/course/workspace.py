"""The learner's workspace: ``course start NN`` copies a lesson's exercises there (``course check``
lives in ``course_utils.grader.learner_check``).

A learner works on a copy in ``workspace/`` (git-ignored) so that regenerating exercises or
pulling the course never touches their work; ``--force`` keeps a timestamped backup first.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

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


def start(lesson: str, force: bool = False, root: Path | None = None) -> Path:
    """Copy exercise notebook NN into workspace/; never overwrite without a backup."""
    root = root or course_root()
    source = lesson_notebook(root / "exercises", lesson)
    workspace = root / "workspace"
    target = workspace / source.name
    if target.exists() and not force:
        raise CourseError(f"{target} already exists and holds your work; it was left alone. "
                          "Open it, or use --force to start over (a backup is kept first).")
    workspace.mkdir(exist_ok=True)
    if target.exists():
        backups = workspace / "backups"
        backups.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = backups / f"{target.stem}.{stamp}.ipynb"
        shutil.copy2(target, backup)
        print(f"kept your previous copy as {backup}")
    shutil.copyfile(source, target)
    return target


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
