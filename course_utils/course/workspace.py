"""The learner's side of the command line: ``course start NN`` and ``course check PATH``.

A learner works on a copy in ``workspace/`` (git-ignored) so that regenerating exercises or
pulling the course never touches their work; ``--force`` keeps a timestamped backup first.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import course_utils
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


def read_notebook(path: Path):
    """Read and validate a notebook, turning each way it can be broken into one clear message."""
    import nbformat

    if not path.exists():
        raise CourseError(f"{path}: no such file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CourseError(f"{path}: not a notebook (not valid JSON: {err})") from None
    if not isinstance(raw, dict) or "cells" not in raw:
        raise CourseError(f"{path}: JSON but not a notebook (no 'cells')")
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(nb)
    except nbformat.ValidationError as err:
        raise CourseError(f"{path}: malformed notebook ({err.message})") from None
    return nb


@dataclass(frozen=True)
class Result:
    """One exercise's outcome in a checked notebook."""

    exercise_id: str
    result: str  # pass, fail, unsolved, not checked
    detail: str = ""


def _expected_ids(path: Path) -> list[str]:
    from course_utils import bank

    return [ex.id for ex in bank.for_lesson(path.name[:2])]


def check_notebook(path: Path, timeout: int = 300) -> list[Result]:
    """Run a learner's notebook in a fresh kernel (their file is not modified) and collect checks."""
    from course_utils.course.execute import client

    nb = read_notebook(path)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "checks.jsonl"
        os.environ[course_utils.course.checking.CHECK_LOG_ENV] = str(log)
        try:
            client(nb, path, timeout, allow_errors=True).execute()
        finally:
            os.environ.pop(course_utils.course.checking.CHECK_LOG_ENV, None)
        entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    last = {e["id"]: e for e in entries}  # the last check() of each exercise counts
    ids = list(dict.fromkeys([*_expected_ids(path), *last]))
    return [Result(i, last[i]["result"], last[i]["detail"]) if i in last else
            Result(i, "not checked") for i in ids]
