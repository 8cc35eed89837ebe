"""Questions about course_utils.author.authoring: turning solutions/ into exercises/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course_utils.author.authoring import (
    BANNER_ID,
    AuthoringError,
    build,
    make_exercise,
    notebook_bytes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "authoring"
SOURCE = "solutions/01_demo.ipynb"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
RAISES = "raises-exception"


def md(source: str) -> nbformat.NotebookNode:
    return new_markdown_cell(source)


def notebook(*cells: str | nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A solution notebook: plain strings become code cells; ids are c0, c1, ..."""
    nodes = [new_code_cell(c) if isinstance(c, str) else c for c in cells]
    for index, node in enumerate(nodes):
        node["id"] = f"c{index}"
    return new_notebook(cells=nodes, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


def exercise_cells(*cells: str | nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The exercise's cells without the banner, so index i is solution cell i."""
    return make_exercise(notebook(*cells), SOURCE).cells[1:]


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return cell.metadata.get("tags", [])


def block(*body: str, indent: str = "") -> str:
    return "\n".join([indent + BEGIN, *(indent + line for line in body), indent + END])


# --- stubs ----------------------------------------------------------------------------------------

def test_does_the_stub_replace_the_block_at_the_begin_lines_indentation():
    cells = exercise_cells("def double(x):\n" + block("y = 2 * x", "return y", indent="    "),
                           'check("01.double", double)')
    assert cells[0].source == (
        'def double(x):\n    raise NotImplementedError("01.double: your code here")')


def test_is_code_around_the_blocks_kept_and_every_block_stubbed():
    cells = exercise_cells("a = 1\n" + block("b = 2") + "\nc = 3\n" + block("d = 4") + "\ne = 5")
    stub = 'raise NotImplementedError("01_demo: your code here")'
    assert cells[0].source == f"a = 1\n{stub}\nc = 3\n{stub}\ne = 5"


def test_is_the_exercise_id_taken_from_the_cells_exercise_comment():
    cells = exercise_cells("# exercise: 01.batch_bytes\n" + block("n = 1"), 'check("01.other", f)')
    assert '"01.batch_bytes: your code here"' in cells[0].source
    assert "# exercise: 01.batch_bytes" in cells[0].source


def test_is_the_exercise_id_taken_from_the_next_check_call_not_an_earlier_one():
    cells = exercise_cells('check("01.before", f)', block("n = 1"), md('check("01.md", f)'),
                           "x = 1", "check('01.after', g)")
    assert '"01.after: your code here"' in cells[1].source


def test_does_the_exercise_id_fall_back_to_the_notebook_stem():
    assert '"01_demo: your code here"' in exercise_cells(block("n = 1"))[0].source


# --- errors ---------------------------------------------------------------------------------------

def error_for(*cells: str | nbformat.NotebookNode) -> AuthoringError:
    with pytest.raises(AuthoringError) as caught:
        make_exercise(notebook(*cells), SOURCE)
    return caught.value


def test_is_an_error_raised_when_there_is_no_end_marker():
    error = error_for("x = 1", "y = 2", f"{BEGIN}\nz = 3")
    assert str(error).startswith("solutions/01_demo.ipynb, cell 2:")
    assert "never closed" in str(error)


def test_is_an_error_raised_for_a_nested_begin_marker():
    error = error_for(f"{BEGIN}\n    {BEGIN}\n{END}\n{END}")
    assert str(error).startswith("solutions/01_demo.ipynb, cell 0:")
    assert "nested" in str(error)


def test_is_an_error_raised_for_an_end_marker_without_a_begin():
    error = error_for(block("x = 1"), f"y = 2\n{END}")
    assert (error.notebook, error.cell) == (SOURCE, 1)
    assert "has no" in str(error)


def test_is_an_error_raised_for_a_marker_in_a_markdown_cell():
    error = error_for("x = 1", md(f"Answer:\n{BEGIN}\n42\n{END}"))
    assert str(error).startswith("solutions/01_demo.ipynb, cell 1:")
    assert "markdown" in str(error)


# --- outputs and metadata -------------------------------------------------------------------------

def test_are_outputs_and_execution_counts_stripped():
    nb = notebook("print(1)", "2")
    nb.cells[0].outputs = [new_output("stream", name="stdout", text="1\n")]
    nb.cells[1].outputs = [new_output("execute_result", data={"text/plain": "2"},
                                      execution_count=2)]
    nb.cells[0].execution_count, nb.cells[1].execution_count = 1, 2
    cells = make_exercise(nb, SOURCE).cells[1:]
    assert [(c.outputs, c.execution_count) for c in cells] == [([], None), ([], None)]


def test_is_volatile_metadata_dropped_and_the_kernelspec_kept():
    nb = notebook("x = 1")
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells[0].metadata["execution"] = {"iopub.status.busy": "2024-01-01T00:00:00Z"}
    exercise = make_exercise(nb, SOURCE)
    assert "widgets" not in exercise.metadata
    assert "execution" not in exercise.cells[1].metadata
    assert exercise.metadata.kernelspec.name == "python3"
    assert exercise.metadata.language_info == {"name": "python"}


def test_is_the_solution_notebook_left_unchanged():
    nb = notebook(block("x = 1"), "print(x)")
    before = notebook_bytes(nb)
    make_exercise(nb, SOURCE)
    assert notebook_bytes(nb) == before


def test_does_the_exercise_open_with_the_banner_and_name_its_source():
    exercise = make_exercise(notebook("x = 1"), SOURCE)
    banner = exercise.cells[0]
    assert (banner.cell_type, banner.id) == ("markdown", BANNER_ID)
    assert "`solutions/01_demo.ipynb`" in banner.source and "`course start 01`" in banner.source
    assert exercise.metadata.mps_detective == {"generated_from": SOURCE, "do_not_edit": True}
    nbformat.validate(exercise)


def test_are_cell_ids_kept_and_missing_ones_made_deterministically():
    nb = notebook("x = 1", "y = 2")
    nb.nbformat_minor = 4
    del nb.cells[1]["id"]
    exercise = make_exercise(nb, SOURCE)
    assert [c.id for c in exercise.cells] == [BANNER_ID, "c0", "cell-1"]
    assert exercise.nbformat_minor == 5


# --- tags -----------------------------------------------------------------------------------------

def test_is_a_cell_whose_stub_runs_at_module_level_tagged():
    cells = exercise_cells(block("x = 1"), "if True:\n" + block("y = 2", indent="    "))
    assert tags(cells[0]) == [RAISES] and tags(cells[1]) == [RAISES]


def test_is_a_cell_whose_stub_is_inside_a_function_left_untagged():
    assert tags(exercise_cells("def f():\n" + block("return 1", indent="    "))[0]) == []


def test_are_check_cells_tagged_only_from_the_first_solution_cell_on():
    cells = exercise_cells("check('01.warmup', print)", "def f():\n" + block("pass", indent="  "),
                           "check('01.f', f)", "course_utils.check('01.g', len)")
    assert [tags(c) for c in cells] == [[], [], [RAISES], [RAISES]]


def test_are_later_cells_that_use_a_solution_name_tagged():
    cells = exercise_cells(block("table = [1, 2]"), "print(table)", "def f():\n    return table")
    assert [tags(c) for c in cells] == [[RAISES], [RAISES], [RAISES]]


def test_are_cells_that_use_a_name_from_a_tagged_cell_tagged_in_turn():
    cells = exercise_cells("def f():\n" + block("return 1", indent="    "), "total = f() + 1",
                           "print(total)")
    assert [tags(c) for c in cells] == [[], [RAISES], [RAISES]]


def test_are_unrelated_cells_and_earlier_cells_left_untagged():
    cells = exercise_cells("import math", block("x = math.pi"), "label = 'ok'\nprint(label)",
                           "print(math.e)")
    assert [tags(c) for c in cells] == [[], [RAISES], [], []]


def test_are_existing_tags_kept_without_duplicates():
    nb = notebook(block("x = 1"), "print(x)")
    nb.cells[0].metadata["tags"] = ["keep-me"]
    nb.cells[1].metadata["tags"] = [RAISES]
    cells = make_exercise(nb, SOURCE).cells[1:]
    assert [tags(c) for c in cells] == [["keep-me", RAISES], [RAISES]]


def test_is_a_cell_with_ipython_magics_still_tagged():
    cells = exercise_cells(block("x = 1"), "%%time\nprint(x)", "!ls\n%time y = 2\nprint(x)")
    assert [tags(c) for c in cells] == [[RAISES], [RAISES], [RAISES]]


def test_is_an_unparsable_cell_left_untagged():
    cells = exercise_cells(block("x = 1"), "files = !ls\nprint(x)")
    assert tags(cells[1]) == []


# --- build ----------------------------------------------------------------------------------------

@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A solutions/ folder holding the fixture notebook, and an exercises/ beside it."""
    solutions = tmp_path / "solutions"
    shutil.copytree(FIXTURES / "solutions", solutions)
    return solutions, tmp_path / "exercises"


def test_is_the_committed_fixture_exercise_what_build_makes():
    assert build(FIXTURES / "solutions", FIXTURES / "exercises", check=True) == []


def test_does_check_mode_report_a_missing_exercise_and_write_nothing(folders):
    solutions, exercises = folders
    assert build(solutions, exercises, check=True) == [exercises / "01_demo.ipynb"]
    assert not exercises.exists()


def test_does_check_mode_report_a_stale_exercise_and_leave_it(folders):
    solutions, exercises = folders
    build(solutions, exercises)
    stale = (exercises / "01_demo.ipynb").read_bytes().replace(b"01.double", b"01.old")
    (exercises / "01_demo.ipynb").write_bytes(stale)
    assert build(solutions, exercises, check=True) == [exercises / "01_demo.ipynb"]
    assert (exercises / "01_demo.ipynb").read_bytes() == stale


def test_is_a_second_build_a_no_op(folders):
    solutions, exercises = folders
    assert build(solutions, exercises) == [exercises / "01_demo.ipynb"]
    written = (exercises / "01_demo.ipynb").stat().st_mtime_ns
    assert build(solutions, exercises) == []
    assert (exercises / "01_demo.ipynb").stat().st_mtime_ns == written


def test_is_an_orphan_exercise_reported_in_check_mode_and_kept(folders):
    solutions, exercises = folders
    build(solutions, exercises)
    orphan = exercises / "02_gone.ipynb"
    shutil.copy(exercises / "01_demo.ipynb", orphan)
    assert build(solutions, exercises, check=True) == [orphan]
    assert orphan.exists()


def test_is_an_orphan_exercise_removed_by_build(folders):
    solutions, exercises = folders
    build(solutions, exercises)
    orphan = exercises / "02_gone.ipynb"
    shutil.copy(exercises / "01_demo.ipynb", orphan)
    assert build(solutions, exercises) == [orphan]
    assert not orphan.exists()


def test_are_the_bytes_the_same_on_every_build(folders, tmp_path):
    solutions, exercises = folders
    build(solutions, exercises)
    build(solutions, tmp_path / "again")
    first, second = exercises / "01_demo.ipynb", tmp_path / "again" / "01_demo.ipynb"
    assert first.read_bytes() == second.read_bytes()


def test_does_build_refuse_a_missing_solutions_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        build(tmp_path / "nope", tmp_path / "exercises")


# --- the unsolved notebook under nbval ------------------------------------------------------------


@pytest.mark.slow
def test_does_the_unsolved_exercise_pass_nbval_lax(folders, isolated_jupyter):
    solutions, exercises = folders
    build(solutions, exercises)
    notebook_path = exercises / "01_demo.ipynb"
    n_code = sum(c.cell_type == "code" for c in nbformat.read(notebook_path, as_version=4).cells)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--nbval-lax", "--nbval-current-env", str(notebook_path)],
        cwd=exercises, capture_output=True, text=True, timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{n_code} passed" in run.stdout  # every code cell ran: nothing was skipped
