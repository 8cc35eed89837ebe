"""Re-execute lesson notebooks and store their outputs, so a second run changes nothing.

Each notebook runs top to bottom in a fresh kernel started with *this* interpreter. A cell
tagged ``raises-exception`` may fail (nbclient honours the tag); any other error stops the run.
Timings and widget state are dropped, execution counts are renumbered 1..n, adjacent prints are
merged and widget model ids numbered from the notebook's name, and a cell whose source and outputs
are the same as before up to what varies between runs (what ``tests/nbval_sanitize.cfg`` masks for
nbval: timings, measured ratios, addresses; the pixels of a figure of the same size) keeps its
stored outputs. So a second run in a row rewrites nothing, and a diff shows only real changes
(``refresh=True`` stores every new output). ``course run-notebooks`` calls ``execute_all``.
"""

from __future__ import annotations

import configparser
import copy
import os
import re
import uuid
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode
from tqdm.auto import tqdm
from traitlets import default

from course_utils.author.authoring import drop_volatile_metadata, strip_outputs, write_notebook
from course_utils.core.errors import course_root

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


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


def _merge_adjacent_streams(cell: NotebookNode) -> None:
    """One stream output per run of prints: how the kernel split them varies from run to run."""
    merged: list = []
    for output in cell.outputs:
        last = merged[-1] if merged else None
        if (output.output_type == "stream" and last is not None and last.output_type == "stream"
                and last.name == output.name):
            last.text += output.text
        else:
            merged.append(output)
    cell.outputs = merged


def _number_widgets(nb: NotebookNode, stem: str) -> None:
    """Replace each widget view's random model id by one derived from the notebook and position."""
    for index, cell in enumerate(nb.cells):
        for number, output in enumerate(cell.get("outputs", [])):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view and "model_id" in view:
                view["model_id"] = uuid.uuid5(uuid.NAMESPACE_URL, f"{stem}/{index}/{number}").hex


def volatile_rules(root: Path | None = None) -> list[tuple[re.Pattern, str]]:
    """The regexes nbval masks before comparing outputs (``tests/nbval_sanitize.cfg``), if any."""
    path = (root or course_root()) / "tests" / "nbval_sanitize.cfg"
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def _image_size(png_base64: str) -> str:
    """A PNG's width and height from its header (the pixels of a measured plot vary)."""
    import base64

    header = base64.b64decode(png_base64[:44])
    return f"PNG {int.from_bytes(header[16:20], 'big')}x{int.from_bytes(header[20:24], 'big')}"


def _comparable(cell: NotebookNode, rules) -> tuple:
    """A cell's source and outputs with what varies between runs masked."""
    def mask(value):
        text = "".join(value) if isinstance(value, list) else str(value)
        for pattern, replacement in rules:
            text = pattern.sub(replacement, text)
        return text

    outputs = []
    for output in cell.get("outputs", []):
        data = {key: (_image_size(value) if key == "image/png" else
                      "" if key == WIDGET_VIEW else mask(value))
                for key, value in output.get("data", {}).items()}
        outputs.append((output.output_type, output.get("name"), mask(output.get("text", "")),
                        sorted(data.items())))
    return cell.source, outputs


def _varies(cell: NotebookNode) -> bool:
    """A cell whose whole output nbval ignores (its text truly varies: timings, ports, clocks)."""
    return "nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])


def _keep_unchanged(old: NotebookNode, new: NotebookNode, rules) -> None:
    """Cells whose source and outputs equal the stored ones up to ``rules`` keep the stored outputs
    (a cell tagged ``nbval-ignore-output`` needs only the same source and the same kinds of output)."""
    stored = {cell.get("id", index): cell for index, cell in enumerate(old.cells)}
    for index, cell in enumerate(new.cells):
        before = stored.get(cell.get("id", index))
        if cell.cell_type != "code" or before is None or not before.get("outputs"):
            continue
        if _varies(cell) and before.source == cell.source:
            same = ([o.output_type for o in before.outputs] == [o.output_type for o in cell.outputs])
        else:
            same = _comparable(before, rules) == _comparable(cell, rules)
        if same:
            cell.outputs = before.outputs


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


def execute_notebook(path: Path, timeout: int = 300, kernel_name: str = "python3",
                     refresh: bool = False) -> None:
    """Run the notebook at ``path`` in a fresh kernel and store its outputs in place.

    ``kernel_name="python3"`` always means this interpreter (``sys.executable``). Raises
    ``nbclient.exceptions.CellExecutionError`` when a cell not tagged ``raises-exception`` fails;
    the file is then left as it was. It is rewritten only if its bytes change; unless
    ``refresh``, a cell whose outputs differ only in what varies between runs keeps its old ones.
    """
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiets the debugger warning
    nb = nbformat.read(path, as_version=4)
    old = copy.deepcopy(nb)
    strip_outputs(nb)  # a cell that does not run keeps nothing stale
    client(nb, path, timeout, kernel_name).execute()
    for cell in [*nb.cells, *old.cells]:
        if cell.cell_type == "code":
            _merge_adjacent_streams(cell)
    if not refresh:
        _keep_unchanged(old, nb, volatile_rules())
    _number_widgets(nb, path.stem)
    _renumber(nb)
    drop_volatile_metadata(nb)
    write_notebook(nb, path)


def execute_all(paths: list[Path], timeout: int = 300, refresh: bool = False) -> list[Path]:
    """Execute each notebook in turn (stopping at the first failure); return those that changed."""
    changed: list[Path] = []
    for path in tqdm(paths, desc="executing", unit="notebook"):
        before = path.read_bytes()
        execute_notebook(path, timeout=timeout, refresh=refresh)
        if path.read_bytes() != before:
            changed.append(path)
    return changed
