"""Remove a submission's work folder whatever it left there (``course grade``, standard library).

``shutil.rmtree`` recurses (a 3,000-deep folder chain raises RecursionError) and works by path
(a chain deeper than PATH_MAX cannot even be named). ``remove_tree`` walks depth first without
recursion, by names relative to one open directory descriptor at a time (down by name, back up
through ``..``; links are never followed), so any depth costs one descriptor and a list of names;
a folder the submission made unreadable (``chmod 000``) is made readable first. It runs after
every process of the submission is gone. It never raises; it returns what it could not remove.
"""

from __future__ import annotations

import contextlib
import os
import stat

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folder(name: str, parent: int) -> int:
    with contextlib.suppress(OSError):
        os.chmod(name, stat.S_IRWXU, dir_fd=parent, follow_symlinks=False)
    return os.open(name, FOLDER, dir_fd=parent)


def _subfolders(fd: int) -> list[str]:
    """Unlink the files in the folder open as ``fd``; return its sub-folders' names."""
    with os.scandir(fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for child, is_dir in names:
        if not is_dir:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(child, dir_fd=fd)
    return [child for child, is_dir in names if is_dir]


def remove_tree(path: str | os.PathLike) -> list[str]:
    """Remove ``path`` (a folder, a file or a link) and everything in it; never raises. Returns
    the problems met (empty when all is gone)."""
    path = os.fspath(path)
    parent, name = os.path.split(os.path.abspath(path))
    try:
        top = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        return [] if isinstance(err, FileNotFoundError) else [f"{path}: {err.strerror}"]
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=top)
            return []
        _remove(top, name)
    except OSError as err:
        return [f"{path}: {err.strerror or type(err).__name__}"]
    finally:
        os.close(top)
    return []


def _remove(top: int, name: str) -> None:
    """Depth first, one descriptor held at a time: down by name, back up through ``..``."""
    fd = _open_folder(name, top)
    trail = [(name, _subfolders(fd))]  # each level: its name, the sub-folders still to remove
    try:
        while trail:
            here, pending = trail[-1]
            if pending:
                child = pending.pop()
                down = _open_folder(child, fd)
                os.close(fd)
                fd = down
                trail.append((child, _subfolders(fd)))
                continue
            trail.pop()
            up = os.open("..", FOLDER & ~os.O_NOFOLLOW, dir_fd=fd) if trail else None
            os.close(fd)
            fd = up if up is not None else -1
            os.rmdir(here, dir_fd=fd if trail else top)
    finally:
        if fd >= 0:
            os.close(fd)
