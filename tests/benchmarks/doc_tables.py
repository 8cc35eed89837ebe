"""Benchmark tables in docs/ are written by the benchmarks, never by hand.

A benchmark calls :func:`publish` with its rows: the rows go to ``docs/figures/NAME.json`` and the
table rendered from them replaces the block between the page's two markers::

    <!-- table NAME: written by `COMMAND`; do not edit -->
    ...
    <!-- end table NAME -->

``tests/test_docs.py`` renders every stored JSON again and fails when a page's table differs, so a
table typed over by hand, or figures edited without their table, cannot land.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"


def begin_marker(name: str) -> re.Pattern:
    return re.compile(rf"<!-- table {re.escape(name)}: written by `([^`]+)`; do not edit -->\n")


def end_marker(name: str) -> str:
    return f"<!-- end table {name} -->"


def table_in(page: Path, name: str) -> str:
    """The text of table ``name`` in ``page`` (between its markers)."""
    text = page.read_text()
    start = begin_marker(name).search(text)
    end = text.find(end_marker(name))
    if start is None or end < start.end():
        raise LookupError(f"{page.name} has no table {name!r} between its markers")
    return text[start.end():end].strip("\n")


def machine(load: float | None = None) -> str:
    """The machine a figure was measured on, in words (``load``: the runs' own, recorded at their end;
    default: the load average now, as the runs start)."""
    when = "at the end of the runs" if load is not None else "at the start"
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {load:.1f} {when}")


def publish(name: str, page: str, rows: list, markdown: str, load: float | None = None) -> Path:
    """Store ``rows`` as docs/figures/NAME.json and put ``markdown`` between the page's markers
    (``load``: see ``machine``)."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    record = {"rows": rows, "measured": datetime.date.today().isoformat(), "machine": machine(load)}
    (FIGURES / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    path = DOCS / page
    text = path.read_text()
    start = begin_marker(name).search(text)
    end = text.find(end_marker(name))
    if start is None or end < start.end():
        raise LookupError(f"docs/{page} has no table {name!r} between its markers")
    path.write_text(text[:start.end()] + markdown.strip("\n") + "\n" + text[end:])
    return path


def stored_rows(name: str) -> dict:
    """The stored record of table ``name``: its rows, when and where they were measured."""
    return json.loads((FIGURES / f"{name}.json").read_text())
