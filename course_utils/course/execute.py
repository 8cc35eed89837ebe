"""Re-execute lesson notebooks and store their outputs, so a second run changes nothing.

Each notebook runs top to bottom in a fresh kernel started with *this* interpreter. A cell
tagged ``raises-exception`` may fail (nbclient honours the tag); any other error stops the run.
Timings and widget state are dropped and execution counts are renumbered 1..n, so the file is
rewritten only when an output really changed. ``course execute`` calls ``execute_all``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode
from tqdm.auto import tqdm
from traitlets import default

from course_utils.course.authoring import drop_volatile_metadata, strip_outputs, write_notebook


class ThisInterpreterKernelManager(AsyncKernelManager):
    """Starts the ``python3`` kernel with ``sys.executable``, whatever kernelspecs are installed.

    A user-level ``python3`` kernelspec can point at another Python (a conda base, an old venv).
    With no kernel folders to search, jupyter_client falls back to ipykernel's built-in spec,
    whose command is ``[sys.executable, "-m", "ipykernel_launcher", ...]``.
    """

    @default("kernel_spec_manager")
    def _kernel_spec_manager_default(self) -> KernelSpecManager:
        return KernelSpecManager(kernel_dirs=[], ensure_native_kernel=True)


# The kernel's own start-up notes (e.g. "running over TCP without encryption": it listens on
# localhost only) are not the notebook's output; its errors still show.
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]


def _renumber(nb: NotebookNode) -> None:
    """Number the executed code cells 1..n in order (and their ``execute_result`` outputs)."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.execution_count is None:
            continue
        count += 1
        cell.execution_count = count
        for output in cell.outputs:
            if output.output_type == "execute_result":
                output.execution_count = count


def client(nb: NotebookNode, path: Path, timeout: int, kernel_name: str = NATIVE_KERNEL_NAME,
           allow_errors: bool = False) -> NotebookClient:
    """An nbclient for ``nb`` run from its folder; "python3" means this interpreter."""
    native = {"kernel_manager_class": ThisInterpreterKernelManager, "extra_arguments": QUIET_KERNEL}
    return NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        record_timing=False,
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
        **(native if kernel_name == NATIVE_KERNEL_NAME else {}),
    )


def execute_notebook(path: Path, timeout: int = 300, kernel_name: str = "python3") -> None:
    """Run the notebook at ``path`` in a fresh kernel and store its outputs in place.

    ``kernel_name="python3"`` always means this interpreter (``sys.executable``). Raises
    ``nbclient.exceptions.CellExecutionError`` when a cell not tagged ``raises-exception`` fails;
    the file is then left as it was. It is rewritten only if its bytes change.
    """
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiets the debugger warning
    nb = nbformat.read(path, as_version=4)
    strip_outputs(nb)  # a cell that does not run keeps nothing stale
    client(nb, path, timeout, kernel_name).execute()
    _renumber(nb)
    drop_volatile_metadata(nb)
    write_notebook(nb, path)


def execute_all(paths: list[Path], timeout: int = 300) -> list[Path]:
    """Execute each notebook in turn (stopping at the first failure); return those that changed."""
    changed: list[Path] = []
    for path in tqdm(paths, desc="executing", unit="notebook"):
        before = path.read_bytes()
        execute_notebook(path, timeout=timeout)
        if path.read_bytes() != before:
            changed.append(path)
    return changed
