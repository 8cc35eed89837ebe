"""Counts the documents state (exercises per lesson, drills, forms, the timed pool) are the counts
the code has: a change to the bank or the drills that makes a sentence false fails here, naming it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_utils import bank, drills

ROOT = Path(__file__).resolve().parents[1]
WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten".split())}


def number(word: str) -> int:
    return int(word) if word.isdigit() else WORDS[word.lower()]


def markdown_of(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


NOTEBOOKS = sorted([*(ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"),
                    *(ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_notebooks_count_of_graded_exercises_is_its_lessons(path):
    lesson = path.name[:2]
    for said in re.findall(r"\b(\w+) graded exercises", markdown_of(path), re.I):
        if said.lower() in WORDS or said.isdigit():
            assert number(said) == len(bank.for_lesson(lesson)), (
                f"{path.name} says {said} graded exercises; lesson {lesson} has "
                f"{len(bank.for_lesson(lesson))} in the bank")


def test_the_learners_page_counts_the_drills_their_forms_and_the_timed_pool():
    text = (ROOT / "docs" / "learners.md").read_text()
    everything = drills.all_drills()
    stated = {
        "drills": (r"(\d+) classic training bugs", len(everything)),
        "forms": (r"(\d+) forms, each proved", sum(d.forms for d in everything)),
        "timed pool": (r"serve only the other (\d+)", len(drills.timed_pool())),
        "fix-it drills": (r"(\d+) drills of the timed pool \(those listed in",
                          sum(bool(d.other_fixes) for d in drills.timed_pool())),
    }
    for what, (pattern, actual) in stated.items():
        found = re.search(pattern, text)
        assert found, f"docs/learners.md no longer states the number of {what} ({pattern!r})"
        assert int(found.group(1)) == actual, f"docs/learners.md: {what} {found.group(1)}, code {actual}"
