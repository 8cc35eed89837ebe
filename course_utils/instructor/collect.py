"""``course collect``: the instructor copies each learner's exercise notebooks into a class folder,
ready for ``course grade`` (after a workshop on JupyterHub, see ``jupyter.hub``).

Each path given is a learner's home, or a folder of homes such as ``/home`` (each folder in it that
holds a workspace is a learner, named by the folder; ``--strip-prefix jupyter-`` drops TLJH's user
name prefix). A learner's workspace is ``HOME/mps-detective/workspace/`` (a hub learner) or
``HOME/workspace/`` (a checkout). Their ``NN_slug_exercises.ipynb`` files (``NN_slug.ipynb``
when made under the older name) land in ``CLASS/<learner>/``; a learner with none gets an empty
folder (``course grade --lms`` lists them with 0).

A collection is never overwritten or mixed into: the class folder must be new (or an empty
folder), else nothing is copied and the message names a fresh folder to use. Only regular files
are read, at most 20 MB each: every folder below a path given is opened without following links,
and a workspace or notebook that is a link, a FIFO or a device is skipped and reported.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError

MAX_BYTES = 20 * 2**20
NOTEBOOK = re.compile(r"\d\d_[^/\\]+\.ipynb")
WORKSPACES = (("mps-detective", "workspace"), ("workspace",))
_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(
    os, "O_CLOEXEC", 0)


@dataclass
class Collection:
    folder: Path
    learners: dict[str, list[str]] = field(default_factory=dict)  # learner -> notebooks copied
    skipped: list[str] = field(default_factory=list)  # what was left out, and why


def _open_dir(name: str, dir_fd: int | None = None) -> int | None:
    """A folder's descriptor, never through a link (None: not a plain folder, or unreadable)."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:
        return None


def _workspace(home_fd: int) -> int | None:
    """The descriptor of the workspace inside a home, if it has one."""
    for parts in WORKSPACES:
        fd: int | None = home_fd
        for part in parts:
            inner = _open_dir(part, dir_fd=fd)
            if fd != home_fd:
                os.close(fd)
            fd = inner
            if fd is None:
                break
        if fd is not None:
            return fd
    return None


def _read(name: str, dir_fd: int) -> bytes | str:
    """A notebook's bytes, or why it is not read."""
    try:
        fd = os.open(name, _FILE, dir_fd=dir_fd)
    except OSError as err:
        return "a link" if err.errno == errno.ELOOP else f"unreadable ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > MAX_BYTES:
            return f"over {MAX_BYTES // 2**20} MB"
        chunks, size = [], 0
        while size <= MAX_BYTES and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= MAX_BYTES else f"over {MAX_BYTES // 2**20} MB"
    finally:
        os.close(fd)


def _homes(raw: str) -> list[tuple[str, int]]:
    """(learner, open workspace) for a path given: a home, or a folder of homes."""
    top = os.open(raw, os.O_RDONLY | os.O_DIRECTORY)  # the path named may itself be a link
    try:
        found = _workspace(top)
        if found is not None:
            return [(Path(os.path.abspath(raw)).name, found)]
        homes = []
        for entry in sorted(os.scandir(top), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            home = _open_dir(entry.name, dir_fd=top)
            if home is not None:
                workspace = _workspace(home)
                os.close(home)
                if workspace is not None:
                    homes.append((entry.name, workspace))
        return homes
    finally:
        os.close(top)


def _new_folder(out: Path) -> None:
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        fresh = out.with_name(f"{out.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        raise CourseError(f"{out} already exists (a previous collection?): nothing was copied and it "
                          f"was left alone. Collect into a new folder, e.g. --out {fresh}")
    out.mkdir(parents=True, exist_ok=True)


def collect(paths: list[str], out: Path, strip_prefix: str = "") -> Collection:
    """Copy every learner's exercise notebooks under ``paths`` into ``out/<learner>/``."""
    for raw in paths:
        if not os.path.isdir(raw):
            raise CourseError(f"{raw}: not a folder (give learners' homes, or a folder of them)")
    _new_folder(out)
    done = Collection(out)
    sources: dict[str, str] = {}
    for raw in paths:
        for folder_name, workspace in _homes(raw):
            try:
                learner = folder_name.removeprefix(strip_prefix) if strip_prefix else folder_name
                clash = f"was already collected from {sources[learner]}" if learner in sources else ""
                if not learner or clash:
                    done.skipped.append(f"{raw}/{folder_name}: learner '{learner}' {clash or 'has no name'}")
                    continue
                sources[learner] = f"{raw}/{folder_name}"
                _copy_workspace(workspace, learner, out, done)
            finally:
                os.close(workspace)
    meta = {"collected_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "from": sources,
            "notebooks": done.learners, "skipped": done.skipped}
    (out / "collection.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return done


def _copy_workspace(workspace: int, learner: str, out: Path, done: Collection) -> None:
    target = out / learner
    target.mkdir()
    copied = done.learners.setdefault(learner, [])
    for entry in sorted(os.scandir(workspace), key=lambda e: e.name):
        if not NOTEBOOK.fullmatch(entry.name):
            continue
        data = _read(entry.name, workspace)
        if isinstance(data, str):
            done.skipped.append(f"{learner}/{entry.name}: {data}")
            continue
        with open(target / entry.name, "xb") as fh:
            fh.write(data)
        copied.append(entry.name)


def report(done: Collection) -> str:
    """What ``course collect`` prints."""
    lines = [f"{learner}: {', '.join(names) or 'no exercise notebooks'}"
             for learner, names in sorted(done.learners.items())]
    lines += [f"skipped {why}" for why in done.skipped]
    count = sum(map(len, done.learners.values()))
    lines.append(f"collected {count} notebook(s) of {len(done.learners)} learner(s) into {done.folder}")
    if done.learners:
        lines.append(f"next: course grade {done.folder} --out grades/gradebook.csv --lms grades/lms.csv")
    return "\n".join(lines)
