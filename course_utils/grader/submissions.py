"""Find the notebooks to grade and read each one safely (``course grade``, instructors).

Nothing here runs a submission's code, and nothing here can hang or read without bound:

- the class folders are walked without following links to folders, each learner's folder to a
  bounded depth and count of its own (``walk``; what was not searched is reported);
- every file named ``*.ipynb`` gets a row, named by the path the instructor gave (relative to the
  folder all of them share), never by where a link points;
- only regular files are read, opened without blocking (a FIFO is refused, not waited on), at most
  ``MAX_NOTEBOOK_BYTES`` of them, within ``READ_DEADLINE_S``;
- a symbolic link is followed only inside its class folder (a link to a classmate's notebook keeps
  its own row, noted as a link); a link out of the class folder, or into the course's
  ``solutions/``, ``tests/`` or package, is refused with a note;
- the notebook is read as data and validated; its code cells are handed to the submission's own
  process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.core.check_calls import check_calls
from course_utils.core.errors import CourseError
from course_utils.grader.text import name_text
from course_utils.grader.walk import MAX_DEPTH, MAX_ENTRIES, Skipped, walk  # noqa: F401 - re-exported
from course_utils.learner.workspace import parse_notebook

MAX_NOTEBOOK_BYTES = 20 * 2**20
READ_DEADLINE_S = 10.0
_LESSON_IN_NAME = re.compile(r"(?<!\d)(\d\d)_")
_LESSON_IN_ID = re.compile(r"(\d\d)\.")
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFDIR: "a folder"}


@dataclass
class Submission:
    """One notebook to grade: where it is, its lesson, its code cells, or why it cannot be read."""

    path: Path
    name: str
    lesson: str | None = None
    cells: list[str] = field(default_factory=list)
    malformed: str | None = None  # why the notebook could not be read (or was refused)
    note: str | None = None  # a problem that is not the notebook's content (e.g. no lesson)
    link: str | None = None  # "symbolic link to ...", when the path is one
    copy_of: str | None = None  # the course notebook whose code this one repeats exactly


@dataclass(frozen=True)
class Found:
    """A path to grade: as given (absolute, links not resolved), its row name, its class folder."""

    path: Path
    name: str
    root: Path


def _walk(root: Path, found: list[Path]) -> None:
    walk(root, found, learners=False)


def find(paths: list[str | Path], skipped: list[Skipped] | None = None) -> list[Found]:
    """Every notebook path in ``paths`` (files, or folders searched deeply), one per path; the
    folders not searched (``walk``'s limits, per learner's folder) go to ``skipped``.

    Names are relative to the deepest folder all of them share, so they do not depend on where
    the class was copied to (``text.name_text`` keeps distinct names distinct). Checkpoint, hidden
    and cache folders are skipped.
    """
    found: dict[str, Found] = {}
    for raw in paths:
        path = Path(os.path.abspath(raw))
        if path.is_dir():  # a folder the instructor names is walked, even through a link
            files: list[Path] = []
            walk(path, files, skipped)
            for nb in files:
                found.setdefault(str(nb), Found(nb, "", path))
        elif os.path.lexists(path):
            found.setdefault(str(path), Found(path, "", path.parent))
        else:
            raise CourseError(f"{raw}: no such file or folder")
    if not found:
        return []
    base = os.path.commonpath([str(f.path.parent) for f in found.values()])
    named = [Found(f.path, name_text(Path(os.path.relpath(f.path, base)).as_posix()), f.root)
             for f in found.values()]
    return sorted(named, key=lambda f: f.name)


def discover(paths: list[str | Path]) -> list[tuple[Path, str]]:
    """(path, display name) of every notebook in ``paths``; see ``find``."""
    return [(f.path, f.name) for f in find(paths)]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def course_folders() -> list[str]:
    """The course's own folders a link in a class may not lead into (solutions, tests, package)."""
    package = Path(__file__).resolve().parents[1]  # course_utils/grader/submissions.py
    root = package.parent
    return [str(p) for p in (root / "solutions", root / "tests", root / "exercises", package) if p.is_dir()]


def _refused_link(path: Path, root: Path) -> tuple[str | None, str]:
    """(why the link is refused or None, what it points to)."""
    target = os.path.realpath(path)
    real_root = os.path.realpath(root)
    shown = os.path.relpath(target, real_root) if _inside(target, real_root) else target
    if not _inside(target, real_root):
        return f"refused: a symbolic link out of the class folder (to {target})", shown
    for folder in course_folders():
        if _inside(target, folder) and not _inside(real_root, folder):
            return f"refused: a symbolic link into the course's {Path(folder).name}/ (to {target})", shown
    return None, shown


def read_capped(path: Path | str, cap: int | None = None, deadline_s: float = READ_DEADLINE_S,
                follow: bool = False) -> bytes:
    """The bytes of a regular file, never blocking, at most ``cap`` of them (default
    ``MAX_NOTEBOOK_BYTES``), within ``deadline_s``; the final link is followed only if ``follow``.

    Raises ValueError (with the reason) for anything else: not a regular file, too large, too slow.
    """
    cap = MAX_NOTEBOOK_BYTES if cap is None else cap
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "a special file")
            raise ValueError(f"not a regular file ({kind})")
        if info.st_size > cap:
            raise ValueError(f"too large ({info.st_size // 2**20} MB, {info.st_size} bytes)")
        chunks, size, end = [], 0, time.monotonic() + deadline_s
        while True:
            if time.monotonic() > end:
                raise ValueError(f"could not be read within {deadline_s:g} s")
            data = os.read(fd, min(1 << 20, cap + 1 - size))
            if not data:
                return b"".join(chunks)
            chunks.append(data)
            size += len(data)
            if size > cap:
                raise ValueError(f"too large (over {cap // 2**20} MB)")
    finally:
        os.close(fd)


MAX_CONTAINERS = 100_000  # JSON objects and arrays in one notebook (the course's largest: under 600)
MAX_NESTING = 200  # levels of JSON nesting
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*+"|[{}\[\]]')  # a string (no backtracking), or a bracket


class TooCostly(ValueError):
    """A notebook whose JSON would cost the grader too much to build (``check_shape``)."""


def check_shape(raw: bytes) -> None:
    """Refuse (TooCostly) a notebook whose JSON holds more than ``MAX_CONTAINERS`` objects and
    arrays or nests deeper than ``MAX_NESTING``, before any parser builds it: the validator needs
    about 600 bytes per object, so 6.5 million ``{}`` in 20 MB would take about 4 GB of the
    grader's memory (and minutes). The scan stops at the first limit passed."""
    count = depth = 0
    for match in _JSON_TOKEN.finditer(raw):
        token = match.group()
        if token in (b"{", b"["):
            count, depth = count + 1, depth + 1
            if count > MAX_CONTAINERS:
                raise TooCostly(f"too many JSON objects and arrays (over {MAX_CONTAINERS}): not read")
            if depth > MAX_NESTING:
                raise TooCostly(f"JSON nested deeper than {MAX_NESTING} levels: not read")
        elif token in (b"}", b"]"):
            depth -= 1


def parse(raw: bytes):
    """A validated notebook from bytes (``course check``'s reader: the same reasons, the same
    words), refused first if its shape would cost the grader too much (``check_shape``)."""
    check_shape(raw)
    return parse_notebook(raw)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def lesson_of(path: Path, nb=None) -> str | None:
    """The lesson a notebook belongs to: its file name (``NN_...``), its metadata or its checks.

    Metadata of the wrong type is ignored, never an error."""
    match = _LESSON_IN_NAME.search(path.name)
    if match:
        return match.group(1)
    if nb is None:
        return None
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    ours = meta.get("mps_detective") if isinstance(meta, dict) else None
    origin = ours.get("generated_from") if isinstance(ours, dict) else None
    match = _LESSON_IN_NAME.search(Path(origin).name) if isinstance(origin, str) else None
    if match:
        return match.group(1)
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        source = _text(cell.get("source")) if isinstance(cell, dict) else ""
        calls = check_calls(source) if cell.get("cell_type") == "code" else []
        lessons = [m.group(1) for c in calls if (m := _LESSON_IN_ID.match(c.exercise_id or ""))]
        if lessons:
            return lessons[0]
    return None


def code_cells(nb) -> list[str]:
    """The non-empty code cells' sources, in order."""
    return [c.source for c in nb.cells
            if c.get("cell_type") == "code" and isinstance(c.get("source"), str) and c.source.strip()]


def fingerprint(cells: list[str]) -> str:
    """The identity of a notebook's code: its non-empty code cells, trailing blanks ignored."""
    text = "\0".join(c.rstrip() for c in cells if c.strip())
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load(path: Path, name: str, lesson: str | None = None, root: Path | None = None) -> Submission:
    """Read one submission; every way it can be broken becomes ``malformed`` with the reason."""
    sub = Submission(path, name, lesson=lesson)
    try:
        _read_into(sub, path, root if root is not None else path.parent)
    except Exception as err:  # noqa: BLE001 - whatever the file is, it gets a row, never a crash
        sub.malformed = f"cannot be read ({type(err).__name__}: {str(err)[:200]})"
    sub.lesson = sub.lesson or lesson_of(path)
    if sub.lesson is None:
        sub.note = "cannot tell the lesson: name the file NN_*.ipynb or pass --lesson NN"
    return sub


def _read_into(sub: Submission, path: Path, root: Path) -> None:
    target: str | Path = path
    if path.is_symlink():
        why, shown = _refused_link(path, root)
        sub.link = f"symbolic link to {shown}"
        if why:
            sub.malformed = why
            return
        target = os.path.realpath(path)
    try:
        raw = read_capped(target)
    except ValueError as err:
        sub.malformed = str(err)
        return
    except OSError as err:
        sub.malformed = f"cannot be read ({err.strerror or type(err).__name__})"
        return
    try:
        nb = parse(raw)
    except TooCostly as err:
        sub.malformed = str(err)
        return
    except CourseError as err:
        sub.malformed = str(err)
        return
    except Exception as err:  # noqa: BLE001 - nbformat raises many kinds; all mean "malformed"
        sub.malformed = f"malformed notebook ({type(err).__name__}: {str(err)[:200]})"
        return
    sub.cells = code_cells(nb)
    sub.lesson = sub.lesson or lesson_of(path, nb)


def course_notebooks(skip_roots: list[Path]) -> dict[str, str]:
    """Code fingerprint -> "solutions/NAME" for the course's solved notebooks and test fixtures
    (those inside a class folder being graded are classmates, not references; a fixture that is
    an untouched exercise notebook is no one's solution)."""
    by_name = {Path(f).name: f for f in course_folders()}
    skip = [os.path.realpath(r) for r in skip_roots]
    unsolved = {p for p in _prints_in(by_name.get("exercises"), skip).values()}
    prints: dict[str, str] = {}
    for folder in (by_name.get("solutions"), by_name.get("tests")):
        for label, found in _prints_in(folder, skip).items():
            if found not in unsolved:
                prints.setdefault(found, label)
    return prints


def _prints_in(folder: str | None, skip: list[str]) -> dict[str, str]:
    if folder is None:
        return {}
    files: list[Path] = []
    _walk(Path(folder), files)
    found = {}
    for nb_path in files:
        real = os.path.realpath(nb_path)
        if not any(_inside(real, s) for s in skip):
            code = _course_print(real)
            if code:
                found[Path(os.path.relpath(nb_path, Path(folder).parent)).as_posix()] = code
    return found


_PRINTS: dict[tuple, str | None] = {}


def _course_print(path: str) -> str | None:
    """A course notebook's code fingerprint, read lightly (no validation; cached while the file
    is unchanged)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_mtime_ns, info.st_size)
    if key not in _PRINTS:
        cells = []
        try:
            for cell in json.loads(read_capped(path))["cells"]:
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else source
                if cell.get("cell_type") == "code" and isinstance(source, str) and source.strip():
                    cells.append(source)
        except Exception:  # noqa: BLE001, S110 - a broken course notebook is no reference
            pass
        _PRINTS[key] = fingerprint(cells) if cells else None
    return _PRINTS[key]


def flag_copies(subs: list[Submission], roots: list[Path]) -> None:
    """Mark each submission whose code is exactly a course notebook's (not the file itself)."""
    if not any(s.cells for s in subs):
        return
    prints = course_notebooks(roots)
    for sub in subs:
        if sub.cells and not sub.malformed:
            match = prints.get(fingerprint(sub.cells))
            if match:
                sub.copy_of = match
