"""What a submission's process may see of the course, and how it is kept from the rest.

``course grade`` runs every submission against a *copy* of ``course_utils`` that has no ``bank/``
(made once per run, in the run's own temporary folder), with its working folder as the current
folder and nothing of the course checkout on ``sys.path``. On top of that, one of two modes:

- ``namespaces`` (Linux with user namespaces, the default where it works): the submission runs in
  bubblewrap's jail (``bwrap.py``) where ``bwrap`` is installed, else in ``jail.py``'s, each used
  only if its probe sees the promised view: everything read-only but the work folder; the course
  checkout, the class folders, the gradebook's folder and every grading run's folders empty;
  ``/proc`` showing only its own processes; no network; no capability. Nothing it does in Python,
  native code or a child process can reach the references or another run, or signal the grader.
- ``guards`` (macOS; Linux without user namespaces; ``--isolation guards``): only the in-process
  audit hook (``guard.py``) refuses to import the bank or open anything in the checkout, the
  gradebook files or the grading runs' folder. Native code or a child process gets around it
  (docs/security.md says so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.grader import bwrap

JAIL = Path(__file__).with_name("jail.py")
MODES = ("auto", "namespaces", "guards")


def package_dir() -> Path:
    """The ``course_utils`` folder (this file is ``course_utils/grader/isolation.py``)."""
    return Path(__file__).resolve().parents[1]


def checkout() -> Path | None:
    """The course checkout the package lives in (a folder with notebooks/ or solutions/), if any."""
    root = package_dir().parent
    return root if (root / "notebooks").is_dir() or (root / "solutions").is_dir() else None


def python_dirs() -> list[str]:
    """Where the interpreter and its packages live: a submission's process must read these."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(os.path.realpath(p) for p in found)


def references() -> list[str]:
    """Folders a submission may not read: the bank, and the whole checkout (solutions, tests and
    their fixtures, notebooks, git history...) when the package lives in one."""
    found = [package_dir() / "bank"]
    root = checkout()
    if root is not None:
        found.append(root)
    beside = Path(sys.prefix).resolve().parent  # a checkout the environment lives in (another copy)
    if (beside / "solutions").is_dir() and (beside / "course_utils" / "bank").is_dir():
        found.append(beside)
    return sorted({str(p) for p in found})


def copy_package(run_dir: Path) -> Path:
    """``course_utils`` without ``bank/`` (and without caches) under ``run_dir``; returns the folder
    to put on the submission's ``sys.path``."""
    target = run_dir / "course"
    shutil.copytree(package_dir(), target / "course_utils", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.rmtree(target / "course_utils" / "bank", ignore_errors=True)
    return target


def _one_entry(folder: str, keep: list[str]) -> str | None:
    """A path in ``folder`` that the jail must hide (not on the way to a kept folder)."""
    try:
        names = sorted(os.listdir(folder))[:200]
    except OSError:
        return None
    for name in names:
        path = os.path.join(folder, name)
        if not any(k == path or k.startswith(path + os.sep) for k in keep):
            return path
    return None


_PROBED: dict[tuple[str, ...], str | None] = {}


def probe(hidden: list[str], timeout: float = 20.0) -> str | None:
    """None when ``jail.py`` works on this machine (a jailed Python runs under the jail's init and
    cannot see what the hidden folders hold), else why not (one line). Asked once per process."""
    key = tuple(hidden)
    if key not in _PROBED:
        _PROBED[key] = _probe(hidden, timeout)
    return _PROBED[key]


def _probe(hidden: list[str], timeout: float) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"namespaces need Linux (this is {sys.platform})"
    gone = _gone(hidden)
    try:
        done = subprocess.run([sys.executable, "-E", "-s", str(JAIL), "--probe", *hidden, "--", *gone],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"the namespace probe failed ({type(err).__name__})"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return (why[-1][:200] if why else f"the namespace probe exited {done.returncode}")
    return None


@dataclass
class Isolation:
    """How this run's submissions are isolated, and what each one may see."""

    mode: str  # "namespaces" or "guards"
    reason: str = ""  # why "guards" when namespaces were wanted
    hide: list[str] = field(default_factory=list)  # covered in namespaces mode
    blocked: list[str] = field(default_factory=list)  # refused by the in-process guard
    allowed: list[str] = field(default_factory=list)  # exceptions inside ``blocked``
    tool: str = ""  # "bwrap" or "jail" in namespaces mode

    def describe(self) -> str:
        if self.mode == "namespaces":
            by = "bubblewrap" if self.tool == "bwrap" else "the built-in jail"
            return (f"namespaces by {by} (everything read-only but the work folder; course checkout, "
                    "class folders, gradebook folder and other gradings hidden; own /proc, no network)")
        return f"in-process guards only ({self.reason})" if self.reason else "in-process guards only"

    def jail_spec(self, keep: list[str], writable: list[str]) -> dict:
        return {"hide": self.hide, "keep": python_dirs() + keep, "writable": writable,
                "no_network": True, "read_only": True}

    def wrap(self, spec_path: Path, command: list[str], keep: list[str], workdir: str) -> list[str]:
        """``command`` as it is started: in bubblewrap's or ``jail.py``'s jail, or as it is."""
        if self.mode != "namespaces":
            return command
        if self.tool == "bwrap":
            return bwrap.command(self.hide, python_dirs() + keep, [workdir], workdir, command)
        spec_path.write_text(json.dumps(self.jail_spec(keep=[*keep, workdir], writable=[workdir])),
                             encoding="utf-8")
        return [sys.executable, "-E", "-s", str(JAIL), str(spec_path), "--", *command]


def private_folders(paths: list[str] | tuple[str, ...]) -> list[str]:
    """The folders holding ``paths`` (the gradebook's files): hidden from submissions, since the
    gradebook is rewritten while they run."""
    return sorted({os.path.dirname(os.path.realpath(p)) for p in paths})


def choose(mode: str, class_roots: list[str], run_dir: Path,
           private: list[str] | tuple[str, ...] = ()) -> Isolation:
    """The isolation for a run: ``auto`` takes bubblewrap where it holds, else ``jail.py`` where
    namespaces work, else guards. ``private``: the files the run writes while submissions run."""
    if mode not in MODES:
        raise ValueError(f"isolation must be one of {', '.join(MODES)}")
    refs = references()
    others = os.path.dirname(str(run_dir))  # every grading run's folder, this one's included
    hide = sorted({*refs, *(os.path.realpath(r) for r in class_roots), str(run_dir), others,
                   *private_folders(private)})
    shown = [f for f in private_folders(private) if f not in bwrap.SYSTEM]  # never "/" or "/usr"
    iso = Isolation("guards", hide=hide, blocked=[*refs, *private, *shown, others],
                    allowed=python_dirs() + [str(run_dir)])
    if mode == "guards" or os.environ.get("MPS_DETECTIVE_ISOLATION") == "guards":
        iso.reason = "asked for"
        return iso
    existing = [r for r in hide if os.path.isdir(r) and r not in (str(run_dir), others)]
    why_bwrap = bwrap.probe(existing, _gone(existing), python_dirs(), str(run_dir))
    why = why_bwrap and probe(existing)  # the same all run long
    if why_bwrap is None or why is None:
        iso.mode, iso.tool = "namespaces", "bwrap" if why_bwrap is None else "jail"
    elif mode == "namespaces":
        from course_utils.core.errors import CourseError

        raise CourseError(f"--isolation namespaces: not available here: {why_bwrap}; {why}")
    else:
        iso.reason = f"namespaces unavailable: {why_bwrap}; {why}"
    return iso


def _gone(hidden: list[str]) -> list[str]:
    return [p for p in (_one_entry(h, python_dirs()) for h in hidden) if p]
