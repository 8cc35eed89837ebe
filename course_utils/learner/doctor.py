"""``course doctor``: one line per requirement, [OK] / [FAIL] / [INFO] (lesson 00).

FAIL means the course cannot work as intended here and makes the command exit non-zero.
MPS lines are INFO on machines without MPS: the course then emulates the MPS-only phenomena.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

OK, FAIL, INFO = "OK", "FAIL", "INFO"
WIDGETS_EXTENSION = Path("@jupyter-widgets") / "jupyterlab-manager" / "package.json"


@dataclass(frozen=True)
class Line:
    """One requirement's verdict."""

    status: str
    name: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.status}] {self.name}: {self.detail}"


def _major(version: str) -> int:
    return int(version.split(".")[0])


def _package(dist: str, label: str, min_major: int) -> Line:
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return Line(FAIL, label, f"not installed (pip install '{dist}>={min_major}')")
    if _major(version) < min_major:
        return Line(FAIL, label, f"{version} is too old; need >= {min_major}")
    return Line(OK, label, version)


def _test_tool(dist: str, label: str) -> Line:
    """A package only the course's tests need: INFO when absent (``bootstrap.py test`` adds it)."""
    try:
        return Line(OK, label, metadata.version(dist))
    except metadata.PackageNotFoundError:
        return Line(INFO, label, "not installed (only the tests need it: "
                                 "python3 course_utils/bootstrap.py test installs it)")


def check_python() -> Line:
    version = ".".join(map(str, sys.version_info[:3]))
    return Line(OK if sys.version_info >= (3, 10) else FAIL, "Python", f"{version} (need >= 3.10)")


def check_torch(facts=None) -> list[Line]:
    """torch and the MPS state of this machine (or of ``facts``, a ``device.probe()`` result)."""
    try:
        from course_utils.toolkit.device import diagnose
    except ImportError as err:
        return [Line(FAIL, "torch", f"cannot import: {err}")]
    report = diagnose(facts)
    p = report.probe
    usable = report.mps_state == "available" and p.mps_allocates is not False
    mps = OK if usable else INFO  # never FAIL: without MPS the course emulates what it would show
    return [
        Line(OK, "torch", p.torch_version),
        Line(mps, "MPS", f"{report.mps_state}: {report.advice}"),
        Line(INFO, "other accelerator", p.accelerator or "none (CPU)"),
        Line(INFO, "PYTORCH_ENABLE_MPS_FALLBACK", report.fallback_note),
    ]


def labextension_dirs() -> list[Path]:
    """Every folder JupyterLab searches for prebuilt extensions."""
    from jupyter_core.paths import jupyter_path

    return [Path(p) for p in jupyter_path("labextensions")]


def check_widgets_extension() -> Line:
    for folder in labextension_dirs():
        if (folder / WIDGETS_EXTENSION).exists():
            return Line(OK, "ipywidgets lab extension", "@jupyter-widgets/jupyterlab-manager found")
    return Line(FAIL, "ipywidgets lab extension",
                "not found: widgets will show as text. Run: pip install 'jupyterlab_widgets>=3'")


CHECKS: list[Callable[[], Line | list[Line]]] = [
    check_python,
    check_torch,
    lambda: _package("jupyterlab", "JupyterLab", 4),
    lambda: _package("ipywidgets", "ipywidgets", 8),
    check_widgets_extension,
    lambda: _package("matplotlib", "matplotlib", 3),
    lambda: _test_tool("nbval", "nbval"),
]


def run_checks() -> list[Line]:
    """Every check's lines, in order."""
    lines: list[Line] = []
    for check in CHECKS:
        result = check()
        lines.extend(result if isinstance(result, list) else [result])
    return lines


def main() -> int:
    """Print the report; 1 if anything FAILed."""
    lines = run_checks()
    for line in lines:
        print(line)
    failed = [line.name for line in lines if line.status == FAIL]
    print(f"\n{len(lines) - len(failed)} of {len(lines)} fine" +
          (f"; fix: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
