"""The registry of ``course watch``'s kinds of finding is the list the docs show, every kind has a
valid severity and a fix, and every kind is exercised: a unit test names it, or a benchmark pair's
bug declares it."""

from __future__ import annotations

from pathlib import Path

import pytest

from course_utils.toolkit.watch.kinds import KINDS, SEVERITIES, kinds_table

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_list_of_kinds_is_the_registry():
    text = (ROOT / "docs" / "watch.md").read_text()
    start = text.index("<!-- kinds table: written by")
    block = text[text.index("\n", start) + 1:text.index("<!-- end kinds table -->")]
    assert block.strip() == kinds_table(), "rerun: python -m course_utils.toolkit.watch.kinds"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_is_well_formed_and_exercised(name):
    kind = KINDS[name]
    assert kind.severity in SEVERITIES and kind.title
    if name == "note":
        return
    assert kind.why and kind.fix, f"{name}: say why it matters and how to fix it"
    tests = "".join(p.read_text() for p in (ROOT / "tests").glob("test_watch*.py"))
    bugs = "".join(p.read_text() for p in (ROOT / "tests/benchmarks/watch_scripts").glob("*_bug.py"))
    declared = {k.strip() for line in bugs.splitlines() if line.startswith("expect:")
                for k in line.split(":", 1)[1].split(",")}
    assert f'"{name}"' in tests or name in declared, f"no test or benchmark pair exercises {name!r}"
