"""What ``course watch`` reports: the kinds of finding (why each matters, the usual fix), one
``Finding``, the user's line (``user_site``) and the log that prints each finding once.

A finding names *what* happened, *where* (the first frame outside torch, ``course_utils`` and the
standard library: the user's own line), *why* it matters and *the fix*. Its severity is ``bug``
(training silently goes wrong), ``perf`` (it trains, slowly: syncs, copies, fallbacks) or ``info``
(worth knowing, not an alarm: an update below float resolution, a bias feeding a norm layer).
"""

from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import types
from dataclasses import asdict, dataclass, field
from typing import TextIO

import torch

from course_utils.toolkit.emulate import labelled
from course_utils.toolkit.watch.kinds import KINDS

# --- where: the user's line --------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """A line of the user's code."""

    path: str
    line: int
    function: str = "?"
    code: str = ""

    @property
    def file(self) -> str:
        return os.path.basename(self.path) if self.path else "?"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN = Site("", 0)


def _holds_installs(folder: str) -> bool:
    """A folder on the path that pip installed into (``pip install --target``, a folder put on
    PYTHONPATH): it holds a ``*.dist-info`` or ``*.egg-info``. The working folder never counts."""
    if not folder or os.path.abspath(folder) == os.getcwd():
        return False
    try:
        return any(n.endswith((".dist-info", ".egg-info")) for n in os.listdir(folder))
    except OSError:
        return False


def _installed_dirs() -> tuple[str, ...]:
    """Where installed packages live (site-packages, and folders on the path that pip installed
    into): a library's code there is not the user's to fix."""
    found = set(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    try:
        found.update(site.getsitepackages())
        found.add(site.getusersitepackages())
    except AttributeError:  # an embedded or virtualenv-patched site module
        pass
    found.update(d for d in sys.path if _holds_installs(d))
    return tuple(os.path.abspath(d) + os.sep for d in sorted(found) if d)


def _internal_prefixes() -> tuple[str, ...]:
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(os.path.dirname(here))  # course_utils/
    return (
        os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
        package + os.sep,
        os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep,
        *_installed_dirs(),
    )


_LIBRARY_PARTS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


_PREFIXES = _internal_prefixes()
_INTERNAL: dict[str, bool] = {}  # file name -> is it torch / course_utils / stdlib / a library
# Keyed by file name, not code object: a string keeps its hash, a code object hashes its whole
# bytecode at each lookup (half a microsecond for torch's Module._call_impl, per frame walked).


def _is_internal(code) -> bool:
    name = code.co_filename
    hit = _INTERNAL.get(name)
    if hit is None:
        path = os.path.abspath(name)
        hit = (name.startswith(("<frozen", "<string>")) or path.startswith(_PREFIXES)
               or any(part in path for part in _LIBRARY_PARTS))
        _INTERNAL[name] = hit
    return hit


def user_frame(skip: int = 1):
    """The innermost calling frame outside torch, course_utils, the standard library and installed
    libraries (site-packages: torchvision's transforms, a trainer library) (or None)."""
    frame = sys._getframe(skip)
    known = _INTERNAL  # the walk runs on every model call: a lookup per frame, a call only when new
    while frame is not None:
        name = frame.f_code.co_filename
        hit = known.get(name)
        if hit is None:
            hit = _is_internal(frame.f_code)
        if not hit:
            return frame
        frame = frame.f_back
    return None


_SITES: dict[tuple, Site] = {}


def site_of_frame(frame) -> Site:
    if frame is None:
        return UNKNOWN
    code = frame.f_code
    key = (code.co_filename, frame.f_lineno, code.co_name)
    site = _SITES.get(key)
    if site is None:
        path = code.co_filename
        site = Site(
            path, frame.f_lineno, frame.f_code.co_name, linecache.getline(path, frame.f_lineno).strip()
        )
        if len(_SITES) > 65536:
            _SITES.clear()
        _SITES[key] = site
    return site


def user_site(skip: int = 1) -> Site:
    """The user's line: the innermost calling frame outside torch, course_utils and the stdlib."""
    return site_of_frame(user_frame(skip + 1))


_TRAMPOLINES: dict[tuple, object] = {}


def call_as_user(func, args: tuple, kwargs: dict, frame):
    """``func(*args, **kwargs)`` called from a one-line function that carries the user's file,
    line and globals, so the warnings it raises (C++ ones point at their direct caller) show where
    they would without the watcher, and once per line as usual."""
    if frame is None:
        return func(*args, **kwargs)
    g = frame.f_globals
    key = (frame.f_code.co_filename, frame.f_lineno, id(g))
    call = _TRAMPOLINES.get(key)
    if call is None:
        source = "\n" * (frame.f_lineno - 1) + "def _call(f, a, k): return f(*a, **k)\n"
        module = compile(source, frame.f_code.co_filename, "exec")
        code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        call = _TRAMPOLINES[key] = types.FunctionType(code, g)
        if len(_TRAMPOLINES) > 4096:
            _TRAMPOLINES.clear()
    return call(func, args, kwargs)


# --- one finding -------------------------------------------------------------------------------


@dataclass
class Finding:
    """One problem: its kind, what happened, where (the user's line), at which step, why, the fix."""

    kind: str
    what: str
    where: Site = UNKNOWN
    step: int = 0
    subject: str = ""  # what it is about (a parameter, a line): one finding per (kind, subject)
    why: str = ""
    fix: str = ""
    severity: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        title, severity, why, fix = KINDS.get(self.kind, KINDS["note"])
        self.severity = self.severity or severity
        self.why = self.why or why
        self.fix = self.fix or fix
        self.extra.setdefault("title", title)

    @property
    def alarm(self) -> bool:
        """A bug or a performance problem (info findings are not alarms)."""
        return self.severity != "info"

    def text(self) -> str:
        where = f" at {self.where}" if self.where.line else ""
        lines = [f"[{self.severity}] {self.kind.upper()}{where} (step {self.step})"]
        if self.where.code:
            lines.append(f"    {self.where.code}")
        lines.append(f"  what: {self.what}")
        lines += [f"  {label}{text}" for label, text in (("why:  ", self.why), ("fix:  ", self.fix)) if text]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["where"] = {
            "file": self.where.file,
            "path": self.where.path,
            "line": self.where.line,
            "function": self.where.function,
            "code": self.where.code,
        }
        return out


class FindingLog:
    """The findings so far, each (kind, subject) once; prints each as it appears."""

    def __init__(self, stream: TextIO | None = None, verbose: bool = True, prefix: str = "course watch"):
        self.findings: list[Finding] = []
        self._keys: set[tuple[str, str]] = set()
        self.stream, self.verbose, self.prefix = stream, verbose, prefix

    def add(self, finding: Finding) -> Finding | None:
        key = (finding.kind, finding.subject or str(finding.where))
        if key in self._keys:
            return None
        self._keys.add(key)
        finding.what = labelled(finding.what)  # seen while an emulation was on: say so
        self.findings.append(finding)
        if self.verbose:
            stream = self.stream or sys.stderr
            print(f"{self.prefix}: {finding.text()}", file=stream, flush=True)
        return finding

    def has(self, kind: str, subject: str | None = None) -> bool:
        return any(f.kind == kind and (subject is None or f.subject == subject) for f in self.findings)

    def alarms(self) -> list[Finding]:
        return [f for f in self.findings if f.alarm]


_PLUMBING = tuple(
    os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), name)
    for name in (
        "overrides.py",
        "_tensor.py",
        "functional.py",
        os.path.join("nn", "functional.py"),
        os.path.join("utils", "_python_dispatch.py"),
    )
)


_PASS: dict[str, bool] = {}  # file name -> is it course_utils or one of torch's API wrappers


def called_from_user(skip: int = 1) -> bool:
    """Whether the torch call being handled was made by the user's code itself (not by torch's own
    code, such as a DataLoader's collate): the first frame past course_utils and torch's wrappers."""
    frame = sys._getframe(skip)
    while frame is not None:
        code = frame.f_code
        passed = _PASS.get(code.co_filename)
        if passed is None:
            name = os.path.abspath(code.co_filename)
            passed = _PASS[code.co_filename] = name.startswith(_PREFIXES[1]) or name.startswith(_PLUMBING)
        if not passed:
            return not _is_internal(code)
        frame = frame.f_back
    return False
