"""What ``find_sync_points`` reports (lesson 03): each sync point's kind and the user's line.

``user_location()`` is the innermost calling frame outside torch, the standard library and the
sync-point tool itself (this package, ``timing`` and ``emulate``);
in a notebook its file is "cell". ``SyncReport`` lists the points in order and groups them by
kind and line.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any

import torch

# --- where: the user's line --------------------------------------------------------------------

@dataclass(frozen=True)
class Location:
    """A line of the user's code: file (basename, or "cell" in a notebook), line, function, text."""

    file: str
    line: int
    function: str
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


def _internal_dirs() -> tuple[str, ...]:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # toolkit/
    own = ("syncs", "timing.py")
    return (os.path.dirname(torch.__file__) + os.sep, sysconfig.get_paths()["stdlib"] + os.sep,
            os.path.join(here, "emulate") + os.sep, *(os.path.join(here, name) for name in own))


_INTERNAL = _internal_dirs()
_CELL = re.compile(r"ipykernel_\d+|<ipython-input-")


def _short(path: str) -> str:
    return "cell" if _CELL.search(path) else os.path.basename(path)


def user_location() -> Location:
    """The innermost calling frame outside torch, the standard library and this tool."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename) if not frame.f_code.co_filename.startswith(
            "<") else frame.f_code.co_filename
        if not path.startswith(_INTERNAL) and not path.startswith("<frozen"):
            code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).split("  #")[0].strip()
            return Location(_short(path), frame.f_lineno, frame.f_code.co_name, code)
        frame = frame.f_back
    return Location("?", 0, "?")


# --- the report --------------------------------------------------------------------------------

@dataclass(frozen=True)
class SyncPoint:
    """One time the host had to wait: what caused it and where."""

    kind: str
    where: Location


@dataclass(frozen=True)
class SyncGroup:
    """Sync points of one kind at one line, with how many times they happened."""

    kind: str
    where: Location
    count: int


@dataclass
class SyncReport:
    """What ``find_sync_points`` saw: every sync point in order, the ops launched, fn's result."""

    points: list[SyncPoint] = field(default_factory=list)
    ops: int = 0
    result: Any = None
    note: str = ""  # how device tensors were chosen, when not from the arguments

    def __len__(self) -> int:
        return len(self.points)

    def groups(self) -> list[SyncGroup]:
        """Sync points grouped by (kind, line), in order of first appearance."""
        counts: dict[tuple[str, Location], int] = {}
        for p in self.points:
            counts[(p.kind, p.where)] = counts.get((p.kind, p.where), 0) + 1
        return [SyncGroup(kind, where, n) for (kind, where), n in counts.items()]

    def by_line(self) -> dict[int, int]:
        """{line number: syncs there}, all kinds together."""
        out: dict[int, int] = {}
        for p in self.points:
            out[p.where.line] = out.get(p.where.line, 0) + 1
        return out

    def count(self, kind: str | None = None) -> int:
        """How many sync points (of one kind, or all)."""
        return sum(kind is None or p.kind == kind for p in self.points)

    def __str__(self) -> str:
        groups = self.groups()
        note = f"\n{self.note}" if self.note else ""
        if not groups:
            return f"no sync points ({self.ops} device ops launched){note}"
        head = (f"{len(self.points)} sync points at {len(groups)} places "
                f"({self.ops} device ops launched)")
        rows = [f"{'count':>5}  {'kind':<20} {'where':<32} code"]
        for g in groups:
            rows.append(f"{g.count:>5}  {g.kind:<20} {str(g.where):<32} {g.where.code}")
        return "\n".join([head, *rows]) + note
