"""Walk a class folder for notebooks, each learner's folder within its own budget (``course grade``).

A class folder holds one folder per learner (or notebooks directly). The walk never follows a
link to a folder; it looks at most ``MAX_ENTRIES`` directory entries in the class folder's own
listing and in each learner's folder, and goes at most ``MAX_DEPTH`` levels down. One learner's
uploaded virtual environment can thus never use up a classmate's budget, and every part the walk
did not look at is named (``Skipped``): the gradebook lists it, so no row goes missing unsaid.
Checkpoint, cache and other hidden folders are left out on purpose and not listed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 32  # folder levels below a class folder
MAX_ENTRIES = 200_000  # directory entries looked at per learner's folder (and in the class folder)


@dataclass(frozen=True)
class Skipped:
    """A folder the walk did not (fully) search, and why."""

    path: Path
    why: str


def _listing(folder: Path) -> list[os.DirEntry] | str:
    try:
        return sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as err:
        return f"could not be listed ({err.strerror or type(err).__name__})"


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _searched(name: str) -> bool:
    return not (name.startswith(".") or name == "__pycache__")


def walk(root: Path, found: list[Path], skipped: list[Skipped] | None = None,
         learners: bool = True) -> None:
    """Append every ``*.ipynb`` under ``root`` to ``found``; each folder not searched (an entry
    or depth limit, a listing that failed) to ``skipped``. With ``learners``, each folder directly
    in ``root`` is walked with a budget of its own."""
    skipped = [] if skipped is None else skipped
    if not learners:
        _walk_one(root, 0, found, skipped)
        return
    entries = _listing(root)
    if isinstance(entries, str):
        skipped.append(Skipped(root, entries))
        return
    for index, entry in enumerate(entries):
        if index >= MAX_ENTRIES:
            skipped.append(Skipped(root, f"only its first {MAX_ENTRIES} entries were looked at"))
            return
        if _is_dir(entry):
            if _searched(entry.name):
                _walk_one(Path(entry.path), 1, found, skipped)
        elif entry.name.endswith(".ipynb"):
            found.append(Path(entry.path))


def _walk_one(top: Path, depth: int, found: list[Path], skipped: list[Skipped]) -> None:
    """One learner's folder: at most ``MAX_ENTRIES`` entries, ``MAX_DEPTH`` levels."""
    todo, seen = [(top, depth)], 0
    while todo:
        folder, level = todo.pop()
        entries = _listing(folder)
        if isinstance(entries, str):
            skipped.append(Skipped(folder, entries))
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                skipped.append(Skipped(top, f"its search stopped after {MAX_ENTRIES} entries "
                                            f"(in {folder.relative_to(top).as_posix() or '.'})"))
                return
            if _is_dir(entry):
                if not _searched(entry.name):
                    continue
                if level < MAX_DEPTH:
                    todo.append((Path(entry.path), level + 1))
                else:
                    skipped.append(Skipped(Path(entry.path), f"deeper than {MAX_DEPTH} folder levels"))
            elif entry.name.endswith(".ipynb"):
                found.append(Path(entry.path))
