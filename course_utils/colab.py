"""Install the course into a Python that already has its own torch (Google Colab), keeping that torch.

    !git clone --depth 1 <the course's repository URL> mps-detective
    %cd mps-detective
    !python3 course_utils/bootstrap.py colab

A Colab notebook runs in the runtime's own Python, whose torch (a CUDA build) came with the runtime.
``bootstrap.py lab`` would make a virtual environment with torch 2.13.0 instead; here the course goes
into the running Python with ``pip install -e .`` under one constraint, ``torch==<the installed
version>``, so pip can add what is missing but cannot replace that torch. A torch outside the range
pyproject.toml declares is refused before pip runs (pip would have replaced it), with a message. After
the install the torch version is read again; a changed one is an error. ``--dry-run`` asks pip what it
would install (``pip install --dry-run --report``) and installs nothing.

Standard library only, like bootstrap.py: it runs before the course is installed.
"""

from __future__ import annotations

import argparse
import json
import operator
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
       "!=": operator.ne}


def say(message: str) -> None:
    print(f"[colab] {message}", flush=True)


def declared_range(pyproject: Path = ROOT / "pyproject.toml") -> list[tuple[str, str]]:
    """pyproject.toml's torch requirement as (operator, version) pairs, e.g. [(">=", "2.13"), ...]."""
    spec = re.search(r'"torch\s*([<>=!][^";]*)', pyproject.read_text())
    if spec is None:
        raise LookupError("pyproject.toml declares no torch range")
    return [(m.group(1), m.group(2)) for m in re.finditer(r"(>=|<=|==|!=|>|<)\s*([\w.]+)", spec.group(1))]


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version (``2.14.1+cu126`` -> (2, 14, 1); ``2.15.0.dev2026`` -> (2, 15, 0))."""
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    if numbers is None:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(n) for n in numbers.group(0).split("."))


def admitted(version: str, spec: list[tuple[str, str]]) -> bool:
    """Whether ``version`` lies in the range (release numbers compared, padded with zeros; a
    pre-release of an excluded upper bound, 2.15.0.dev..., stays outside ``<2.15``)."""
    have = release(version)
    for op, bound in spec:
        want = release(bound)
        width = max(len(have), len(want))
        if not OPS[op](have + (0,) * (width - len(have)), want + (0,) * (width - len(want))):
            return False
    return True


def installed_torch(python: str) -> str | None:
    """The torch version installed for ``python`` (read from its metadata, torch not imported)."""
    code = ("import importlib.metadata as m\ntry:\n    print(m.version('torch'))\n"
            "except m.PackageNotFoundError:\n    pass")
    found = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()
    return found or None


def install_command(python: str, constraints: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """pip's command line: the course, editable, with the installed torch held by ``constraints``."""
    return [python, "-m", "pip", "install", "--quiet", "-c", str(constraints), *extra, "-e", str(ROOT)]


def would_install(report: Path) -> list[tuple[str, str]]:
    """(name, version) of each package in a ``pip install --report`` file."""
    items = json.loads(report.read_text()).get("install", [])
    return [(i["metadata"]["name"], i["metadata"]["version"]) for i in items]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap.py colab", description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the Python to install into (default: this one)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what pip would install; install nothing")
    parser.add_argument("--pip-args", default="", help="more pip arguments, e.g. '--no-index'")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="where the constraint goes")
    options = parser.parse_args(argv)
    have, spec = installed_torch(options.python), declared_range()
    wanted = ",".join(op + v for op, v in spec)
    if have is None:
        say(f"no torch in {options.python}: use `python3 course_utils/bootstrap.py lab` "
            "(its own environment)")
        return 1
    if not admitted(have, spec):
        say(f"this runtime's torch {have} is outside the course's range torch{wanted}: nothing installed "
            "(installing would replace it). Use `python3 course_utils/bootstrap.py lab` instead.")
        return 1
    options.work.mkdir(parents=True, exist_ok=True)
    constraints = options.work / "colab-constraints.txt"
    constraints.write_text(f"torch=={have}\n")
    report = options.work / "colab-report.json"
    extra = (*options.pip_args.split(), *(("--dry-run", "--report", str(report)) if options.dry_run else ()))
    say(f"installing the course into {options.python}, keeping its torch {have}")
    if subprocess.call(install_command(options.python, constraints, extra), cwd=ROOT):
        say("pip install failed (see above); the runtime's torch is unchanged")
        return 1
    if options.dry_run:
        planned = would_install(report)
        say("pip would install: " + ", ".join(f"{n} {v}" for n, v in planned))
        return 1 if any(n.lower() == "torch" for n, _ in planned) else 0
    after = installed_torch(options.python)
    if after != have:
        say(f"torch changed from {have} to {after}: this should not happen; please report it")
        return 1
    say(f"done: torch {have} kept. In a notebook: `from course_utils import check, hint`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
