"""Do the notebooks follow the course's rules (headers, nbval coverage, clean learner copies)?"""

import nbformat
import pytest

from tests.conftest import ROOT

IGNORE = ("nbval-ignore-output", "nbval-skip")
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GRADED = sorted((ROOT / "solutions").glob("*.ipynb"))


def code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_at_least_85_percent_of_code_cells_have_their_outputs_compared():
    cells = [c for p in LESSONS + GRADED for c in code_cells(p)]
    ignored = [c for c in cells if set(c.metadata.get("tags", [])) & set(IGNORE)
               or any(m in c.source for m in ("NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP"))]
    assert cells and len(ignored) / len(cells) <= 0.15


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_opens_with_what_you_learn_prerequisites_time_and_runs_on(path):
    first = nbformat.read(path, as_version=4).cells[0].source
    for words in ("What you will learn", "Prerequisites", "Time:", "Runs on:"):
        assert words in first, f"{path.name}: header lacks {words!r}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_prints_versions_and_device_and_ends_with_a_quiz_then_the_next_lesson(path):
    cells = code_cells(path)
    assert "summary()" in cells[0].source
    last = path.name[:2] == LESSONS[-1].name[:2]
    quiz_at = -1 if last else -2
    assert "quiz(" in cells[quiz_at].source
    if not last:
        assert f'next_lesson("{int(path.name[:2]) + 1:02d}")' in cells[-1].source, "the link onward"


@pytest.mark.parametrize("path", LESSONS + GRADED, ids=lambda p: p.name)
def test_stored_outputs_are_small_and_ran(path):
    assert path.stat().st_size < 1_000_000
    cells = code_cells(path)
    assert all(c.execution_count for c in cells if c.source.strip()), "re-run course run-notebooks"


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("*.ipynb")), ids=lambda p: p.name)
def test_learner_copies_carry_no_outputs(path):
    assert all(not c.outputs and c.execution_count is None for c in code_cells(path))
