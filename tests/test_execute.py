"""Questions about course_utils.author.execute: re-running lessons and storing their outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_notebook

from course_utils.author.execute import execute_all, execute_notebook

pytestmark = pytest.mark.slow  # every test here starts a kernel


@pytest.fixture(autouse=True)
def _isolated(isolated_jupyter):
    """Every test here starts a kernel: keep it in temporary folders."""


def write(path: Path, *cells: nbformat.NotebookNode, **metadata) -> Path:
    nbformat.write(new_notebook(cells=list(cells), metadata=metadata), path)
    return path


def code(source: str, cell_id: str, *tags: str) -> nbformat.NotebookNode:
    return new_code_cell(source, id=cell_id, metadata={"tags": list(tags)} if tags else {})


def test_are_outputs_stored_with_counts_1_to_n_and_is_a_rerun_a_no_op(tmp_path, capfd):
    path = write(tmp_path / "lesson.ipynb",
                 code("print('hello')", "a"),
                 code("raise ValueError('expected')", "b", "raises-exception"),
                 code("6 * 7", "c"),
                 widgets={"application/vnd.jupyter.widget-state+json": {"state": {}}})
    execute_notebook(path)
    nb = nbformat.read(path, as_version=4)
    assert [c.execution_count for c in nb.cells] == [1, 2, 3]
    assert nb.cells[0].outputs[0].text == "hello\n"
    assert nb.cells[1].outputs[0].ename == "ValueError"
    assert nb.cells[2].outputs[0].data["text/plain"] == "42"
    assert nb.cells[2].outputs[0].execution_count == 3
    assert all("execution" not in c.metadata for c in nb.cells)
    assert "widgets" not in nb.metadata
    assert execute_all([path]) == []
    assert "WARNING" not in capfd.readouterr().err  # e.g. the kernel's "TCP without encryption"


def test_does_execute_all_report_a_notebook_whose_outputs_changed(tmp_path):
    path = write(tmp_path / "lesson.ipynb", code("print('new')", "a"))
    assert execute_all([path]) == [path]


def test_does_an_untagged_error_stop_the_run_and_leave_the_file_alone(tmp_path):
    path = write(tmp_path / "lesson.ipynb", code("raise ValueError('not allowed')", "a"))
    before = path.read_bytes()
    with pytest.raises(CellExecutionError, match="not allowed"):
        execute_notebook(path)
    assert path.read_bytes() == before


def test_does_the_kernel_run_this_interpreter_despite_another_python3_kernelspec(
        tmp_path, monkeypatch):
    decoy = tmp_path / "decoy" / "kernels" / "python3"
    decoy.mkdir(parents=True)
    (decoy / "kernel.json").write_text(json.dumps({
        "argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (elsewhere)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "decoy"))  # searched before all others
    path = write(tmp_path / "lesson.ipynb", code("import sys\nprint(sys.executable)", "a"))
    execute_notebook(path)
    assert nbformat.read(path, as_version=4).cells[0].outputs[0].text == sys.executable + "\n"


def test_does_the_kernel_start_in_the_notebooks_folder(tmp_path):
    folder = tmp_path / "lessons"
    folder.mkdir()
    path = write(folder / "lesson.ipynb", code("import os\nprint(os.getcwd())", "a"))
    execute_notebook(path)
    printed = nbformat.read(path, as_version=4).cells[0].outputs[0].text.strip()
    assert Path(printed).resolve() == folder.resolve()


def test_a_second_run_rewrites_nothing_that_only_varies_and_everything_that_changed(tmp_path):
    """Timings, widget model ids, split prints and a plot's pixels vary from run to run: a rerun
    keeps the stored outputs. An output that really changed is stored anew."""
    (tmp_path / "value.txt").write_text("first")
    path = write(
        tmp_path / "lesson.ipynb",
        code("import sys, time\nt = time.perf_counter()\nprint('start'); sys.stdout.flush()\n"
             "time.sleep(0.01)\nprint(f'{time.perf_counter() - t:.6f} s elapsed')", "timing"),
        code("import ipywidgets\nipywidgets.IntSlider()", "widget"),
        code("import numpy as np, matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2))\n"
             "plt.imshow(np.random.rand(8, 8)); plt.show()", "plot"),
        code("print(open('value.txt').read())", "value"),
        code("import time\nprint(time.time_ns())", "clock", "nbval-ignore-output"))
    execute_notebook(path)
    first = path.read_bytes()
    stored = nbformat.read(path, as_version=4)
    view = stored.cells[1].outputs[0].data["application/vnd.jupyter.widget-view+json"]
    execute_notebook(path)
    assert path.read_bytes() == first
    (tmp_path / "value.txt").write_text("second")
    execute_notebook(path)
    again = nbformat.read(path, as_version=4)
    assert again.cells[3].outputs[0].text == "second\n"
    assert [c.outputs for c in again.cells[:3]] == [c.outputs for c in stored.cells[:3]]
    assert view["model_id"] == again.cells[1].outputs[0].data[
        "application/vnd.jupyter.widget-view+json"]["model_id"]
    execute_notebook(path, refresh=True)
    fresh = nbformat.read(path, as_version=4)
    assert fresh.cells[2].outputs != stored.cells[2].outputs, "refresh stores the new pixels"
