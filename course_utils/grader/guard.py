"""The in-process guard of a submission's process (``course grade``): an audit hook, for good.

Installed by ``runner`` before any of the submission's code runs. It refuses

- importing ``course_utils.bank`` (under any spelling the import system sees);
- opening anything inside the blocked folders (the bank, the course checkout), by any path that
  leads there: absolute or relative, through symbolic links or ``/proc/*/root``, or relative to a
  directory descriptor the process holds (``os.open(name, dir_fd=...)``), and opening a folder
  that *contains* a blocked one (a descriptor from which they could be reached);
- making hard or symbolic links (no notebook needs one; a link is a way around the path check),
  and renaming anything in or out of the blocked folders;
- the introspection that could reach the hook itself (``gc.get_objects`` and friends, replacing
  a function's ``__code__``).

The hook keeps its settings in a closure: from Python it can be neither removed nor edited.
Native code (ctypes) or a child process still gets around it; where ``course grade`` can, it runs
submissions in namespaces where the references do not exist at all (``isolation``, ``jail.py``).
"""

from __future__ import annotations

import os
import sys

FD_DIR = "/proc/self/fd"
INTROSPECTION = ("gc.get_objects", "gc.get_referrers", "gc.get_referents")


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _anchors() -> list[str]:
    """The folders a relative path may be resolved from: the current folder and every folder
    (or file) this process holds a descriptor on."""
    found = [os.getcwd()]
    try:
        names = os.listdir(FD_DIR)
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"{FD_DIR}/{name}")
        except OSError:
            continue
        if target.startswith(os.sep):
            found.append(target)
    return found


def install_guard(blocked_dirs: list[str], allowed_dirs: list[str] | tuple[str, ...] = ()) -> None:
    """Refuse, for the rest of this process, what the module docstring lists. ``allowed_dirs``
    are exceptions inside the blocked folders (the Python environment when it lives in the
    checkout; the submission's own folders)."""
    blocked = tuple(os.path.realpath(d).rstrip(os.sep) or os.sep for d in blocked_dirs)
    allowed = tuple(os.path.realpath(d).rstrip(os.sep) or os.sep for d in allowed_dirs)

    def refused(path: str) -> bool:
        real = os.path.realpath(path)
        if _inside(real, allowed):
            return False
        if _inside(real, blocked):
            return True
        prefix = real.rstrip(os.sep) + os.sep
        return any(b.startswith(prefix) for b in blocked)  # a folder holding a blocked one

    def check_path(raw) -> None:
        if not blocked or not isinstance(raw, str | bytes | os.PathLike):
            return
        path = os.fsdecode(raw)
        if os.path.isabs(path):
            candidates = [path]
        else:  # it may be relative to any directory descriptor: try them all
            candidates = [os.path.join(anchor, path) for anchor in _anchors()]
        for candidate in candidates:
            if refused(candidate):
                raise PermissionError(f"{os.path.realpath(candidate)} is not readable while grading")

    def hook(event: str, args: tuple) -> None:
        if event == "import":
            name = str(args[0])
            if name == "course_utils.bank" or name.startswith("course_utils.bank."):
                raise ImportError(f"{name} is not available while grading: the grader judges "
                                  "your function against the reference, not the reference itself")
        elif event == "open":
            check_path(args[0])
        elif event in ("os.link", "os.symlink"):
            raise PermissionError(f"{event} is not available while grading")
        elif event == "os.rename":
            check_path(args[0])
            check_path(args[1])
        elif event in INTROSPECTION or (event == "object.__setattr__" and args[1] == "__code__"):
            raise PermissionError(f"{event} is not available while grading")

    sys.addaudithook(hook)


def forget_checkout(blocked_dirs: list[str], allowed_dirs: list[str] | tuple[str, ...] = ()) -> None:
    """Take the checkout off the import path: ``sys.path`` entries inside a blocked folder (an
    editable install's source folder) and the meta-path finders an editable install adds."""
    blocked = tuple(os.path.realpath(d) for d in blocked_dirs)
    allowed = tuple(os.path.realpath(d) for d in allowed_dirs)

    def kept(entry: str) -> bool:
        real = os.path.realpath(entry or os.curdir)
        return _inside(real, allowed) or not _inside(real, blocked)

    sys.path[:] = [p for p in sys.path if not isinstance(p, str) or kept(p)]
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not str(getattr(f, "__module__", "")).startswith("__editable__")]
    sys.path_importer_cache.clear()
