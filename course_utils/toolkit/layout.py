"""How a tensor sits in memory, and what its layout costs (lesson 05).

- ``describe(t)``: shape, strides, storage offset, contiguity, memory format, storage size, and
  whether ``t`` is a view (and of what). Returns a small ``Layout`` that prints readably.
- ``plot_storage(*tensors)``: each tensor's logical grid coloured by storage position, above the
  storage itself, so a transpose or a slice *looks* different.
- ``audit(obj)``: the non-contiguous parameters, buffers, gradients and optimizer-state tensors of
  an ``nn.Module`` or a ``torch.optim.Optimizer`` (lesson 06 uses it on the frozen encoder).

The interactive ``StrideExplorer`` lives in ``course_utils.learner.stride_explorer``; the paper's two
experiments, scaled down (R56 in references.md), in ``course_utils.labs.layout_paper``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from course_utils.toolkit.plotstyle import DPI, SMALL

# --- describe -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """What ``describe(t)`` reports about one tensor (lesson 05)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    contiguous: bool
    memory_format: str  # "contiguous", "channels_last", "contiguous and channels_last", "none"
    dtype: str
    storage_elements: int
    storage_bytes: int
    is_view: bool
    base_shape: tuple[int, ...] | None  # shape of the tensor this one is a view of

    def short(self) -> str:
        """One line: shape, strides, offset and contiguity."""
        state = "contiguous" if self.contiguous else "NON-contiguous"
        return f"shape {self.shape} stride {self.strides} offset {self.offset} {state}"

    def __str__(self) -> str:
        view = f"yes, of a tensor of shape {self.base_shape}" if self.is_view else "no"
        rows = [
            ("shape", self.shape), ("stride", self.strides), ("storage offset", self.offset),
            ("contiguous", self.contiguous), ("memory format", self.memory_format),
            ("storage", f"{self.storage_elements} elements, {self.storage_bytes} bytes ({self.dtype})"),
            ("view", view),
        ]
        return "\n".join(f"{key:<15} {value}" for key, value in rows)


def memory_format(t: torch.Tensor) -> str:
    """Which standard layouts ``t`` satisfies: 'contiguous', 'channels_last', both, or 'none'
    (lesson 05, section 5)."""
    names = ["contiguous"] if t.is_contiguous() else []
    formats = {4: ("channels_last", torch.channels_last),
               5: ("channels_last_3d", torch.channels_last_3d)}
    if t.dim() in formats:
        name, fmt = formats[t.dim()]
        if t.is_contiguous(memory_format=fmt):
            names.append(name)
    return " and ".join(names) or "none"


def describe(t: torch.Tensor) -> Layout:
    """Shape, strides, offset, contiguity, memory format, storage and view-ness of ``t`` (lesson 05).

    ``print(describe(t))`` shows one fact per line; ``describe(t).short()`` gives one line.
    """
    storage_bytes = t.untyped_storage().nbytes()
    base = t._base  # the tensor this one is a view of (None for a tensor that owns its storage)
    return Layout(
        shape=tuple(t.shape), strides=tuple(t.stride()), offset=t.storage_offset(),
        contiguous=t.is_contiguous(), memory_format=memory_format(t),
        dtype=str(t.dtype).removeprefix("torch."),
        storage_elements=storage_bytes // t.element_size(), storage_bytes=storage_bytes,
        is_view=base is not None, base_shape=tuple(base.shape) if base is not None else None,
    )


def storage_indices(t: torch.Tensor) -> torch.Tensor:
    """For every element of ``t``, its storage position: offset + sum(index * stride) (lesson 05)."""
    index = torch.zeros(t.shape, dtype=torch.long) + t.storage_offset()
    for dim, (size, stride) in enumerate(zip(t.shape, t.stride(), strict=True)):
        steps = torch.arange(size) * stride
        index += steps.view([size if d == dim else 1 for d in range(t.dim())])
    return index


def contiguous_run(t: torch.Tensor) -> int:
    """How many elements a copy of ``t`` reads in a row: its longest contiguous inner block
    (lesson 05, section 9)."""
    run = 1
    for size, stride in reversed(list(zip(t.shape, t.stride(), strict=True))):
        if size == 1:
            continue
        if stride != run:
            break
        run *= size
    return run


# --- plot_storage -------------------------------------------------------------------------------

MAX_DRAWN = 1024  # elements; larger tensors make unreadable pictures
MAX_LABELLED = 160  # cells with their storage index written in them


def _grid(t: torch.Tensor) -> torch.Tensor:
    """The storage indices as a 2-D grid: leading dimensions stacked as rows."""
    index = storage_indices(t)
    if t.dim() == 0:
        return index.view(1, 1)
    return index.reshape(-1, t.shape[-1]) if t.dim() > 1 else index.view(1, -1)


LABEL_GID = "storage-label"  # the gid of every number drawn in a cell
LABEL_FILL = 0.8  # a label may fill this much of its cell's width and height, the rest is margin
LABELLED_STORAGE = 32  # storage bars up to this many elements number their cells


def _label_cells(ax, grid: torch.Tensor, storage: int) -> None:
    if grid.numel() > MAX_LABELLED:
        return
    rows, cols = grid.shape
    for r in range(rows):
        for c in range(cols):
            value = int(grid[r, c])
            if value < 0:  # a storage cell the tensor never reads
                continue
            dark = value < 0.6 * max(storage - 1, 1)  # viridis is dark at the low end
            ax.text(c, r, str(value), ha="center", va="center", fontsize=SMALL,
                    color="white" if dark else "black", gid=LABEL_GID)


def _draw_grid(ax, t: torch.Tensor, storage: int, cmap) -> None:
    grid = _grid(t)
    ax.imshow(grid.numpy(), cmap=cmap, vmin=0, vmax=max(storage - 1, 1), aspect="equal")
    _label_cells(ax, grid, storage)
    if t.dim() >= 3:  # separate the blocks of the second-to-last dimension
        for row in range(t.shape[-2], grid.shape[0], t.shape[-2]):
            ax.axhline(row - 0.5, color="red", linewidth=1.5)
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_storage(ax, t: torch.Tensor, storage: int, cmap, rows: int = 1) -> None:
    """The storage as a bar of cells (``rows`` rows when it is numbered, else rows of 32);
    cells past the end of the storage are left out, cells the tensor never reads are blank."""
    import numpy as np
    from matplotlib.colors import Normalize

    labelled = storage <= LABELLED_STORAGE
    width = math.ceil(storage / rows) if labelled else min(max(storage, 1), 32)
    rows = max(math.ceil(storage / width), 1)
    used = torch.zeros(rows * width, dtype=torch.bool)
    used[storage_indices(t).flatten()] = True
    values = torch.arange(rows * width, dtype=torch.float32)
    values[~used] = float("nan")  # positions the tensor never reads stay blank
    rgba = cmap(Normalize(0, max(storage - 1, 1))(np.ma.masked_invalid(values.numpy())))
    rgba[storage:] = (1.0, 1.0, 1.0, 0.0)  # past the end of the storage: nothing
    ax.imshow(rgba.reshape(rows, width, 4), aspect="equal")
    if labelled:
        positions = torch.where(used, torch.arange(rows * width), -1).view(rows, width)
        _label_cells(ax, positions, storage)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"storage: {storage} elements, {int(used.sum())} read", fontsize=SMALL)


def _renderer(fig):
    """A renderer for ``fig``, its layout done (constrained layout runs at draw time)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    return fig.canvas.get_renderer()


def _best_rows(ax, storage: int) -> int:
    """The rows (1 to 4) that give a numbered storage bar the largest cells in ``ax``'s box."""
    box = ax.get_position(original=True)
    width, height = box.width * ax.figure.get_figwidth(), box.height * ax.figure.get_figheight()
    return max(range(1, 5), key=lambda r: (min(width / math.ceil(storage / r), height / r), -r))


def _fit_labels(fig) -> None:
    """Keep a cell's number only where every number of its picture fits its cell at ``SMALL``
    points with a margin (``LABEL_FILL``): no label overlaps another or leaves its cell."""
    renderer = _renderer(fig)
    for ax in fig.axes:
        labels = [text for text in ax.texts if text.get_gid() == LABEL_GID]
        if not labels or not ax.images:
            continue
        rows, cols = ax.images[0].get_array().shape[:2]
        cell_w, cell_h = ax.bbox.width / cols, ax.bbox.height / rows
        boxes = [text.get_window_extent(renderer) for text in labels]
        if max(b.width for b in boxes) > LABEL_FILL * cell_w or \
                max(b.height for b in boxes) > LABEL_FILL * cell_h:
            for text in labels:
                text.remove()


def _title(t: torch.Tensor) -> str:
    state = "contiguous" if t.is_contiguous() else "NOT contiguous"
    return f"shape {tuple(t.shape)}\nstride {tuple(t.stride())} offset {t.storage_offset()}\n{state}"


def _check_drawable(tensors: Sequence[torch.Tensor]) -> None:
    for t in tensors:
        if not 0 < t.numel() <= MAX_DRAWN:
            raise ValueError(f"tensor of {t.numel()} elements: draw 1 to at most {MAX_DRAWN}")


def draw_storage(fig, tensors: Sequence[torch.Tensor], titles: Sequence[str] | None = None) -> None:
    """Draw ``plot_storage``'s picture into an existing matplotlib Figure (lesson 05's explorer)."""
    import matplotlib

    _check_drawable(tensors)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#eeeeee")
    titles = list(titles) if titles is not None else [_title(t) for t in tensors]
    axes = fig.subplots(2, len(tensors), squeeze=False, gridspec_kw={"height_ratios": [3, 1]})
    storages = [describe(t).storage_elements for t in tensors]
    for col, (t, title, storage) in enumerate(zip(tensors, titles, storages, strict=True)):
        _draw_grid(axes[0, col], t, storage, cmap)
        axes[0, col].set_title(title, fontsize=SMALL)
        _draw_storage(axes[1, col], t, storage, cmap)
    _renderer(fig)  # lays the figure out: the storage bars' boxes are known from here on
    for col, (t, storage) in enumerate(zip(tensors, storages, strict=True)):
        rows = _best_rows(axes[1, col], storage) if storage <= LABELLED_STORAGE else 1
        if rows > 1:
            axes[1, col].clear()
            _draw_storage(axes[1, col], t, storage, cmap, rows)
    _fit_labels(fig)


def plot_storage(*tensors: torch.Tensor, titles: Sequence[str] | None = None, width: float = 3.0):
    """Each tensor's logical grid (top) coloured by storage position, above the storage (lesson 05).

    Numbers in the cells are storage positions. Rows of a 3-D or 4-D tensor are its leading
    dimensions stacked (red lines separate blocks); blank storage cells are never read.
    Returns the pyplot Figure; end the cell with ``plt.show()``.
    """
    import matplotlib.pyplot as plt

    _check_drawable(tensors)
    fig = plt.figure(figsize=(width * len(tensors), 3.6), dpi=DPI, layout="constrained")
    draw_storage(fig, tensors, titles)
    return fig


# --- audit --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditRow:
    """One non-contiguous tensor: where it lives (name, kind), its shape and strides."""

    name: str
    kind: str  # "parameter", "buffer", "grad" or "optimizer state"
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Audit:
    """``audit()``'s result: the non-contiguous tensors found, out of ``checked`` tensors.

    Iterate it for the rows, ``len()`` counts them (so an audit with no findings is falsy),
    ``print()`` it for a table.
    """

    rows: tuple[AuditRow, ...]
    checked: int

    def __iter__(self) -> Iterator[AuditRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def names(self) -> list[str]:
        """The names of the non-contiguous tensors, in audit order."""
        return [row.name for row in self.rows]

    def __str__(self) -> str:
        if not self.rows:
            return f"audit: all {self.checked} tensors are contiguous"
        width = max(len(row.name) for row in self.rows) + 2
        lines = [f"audit: {len(self.rows)} of {self.checked} tensors are NON-contiguous",
                 f"  {'name':<{width}}{'kind':<17}{'shape':<18}strides"]
        lines += [f"  {row.name:<{width}}{row.kind:<17}{str(row.shape):<18}{row.strides}"
                  for row in self.rows]
        return "\n".join(lines)


def _tensors_of_module(module: nn.Module) -> Iterator[tuple[str, str, torch.Tensor]]:
    for name, p in module.named_parameters():
        yield name, "parameter", p
        if p.grad is not None:
            yield f"{name}.grad", "grad", p.grad
    for name, b in module.named_buffers():
        yield name, "buffer", b


def _tensors_of_optimizer(opt: torch.optim.Optimizer,
                          names: nn.Module | None) -> Iterator[tuple[str, str, torch.Tensor]]:
    known = {id(p): n for n, p in names.named_parameters()} if names is not None else {}
    for g, group in enumerate(opt.param_groups):
        group_names = group.get("param_names", [None] * len(group["params"]))
        for i, (p, given) in enumerate(zip(group["params"], group_names, strict=True)):
            name = known.get(id(p)) or given or f"param_groups[{g}].params[{i}]"
            yield name, "parameter", p
            if p.grad is not None:
                yield f"{name}.grad", "grad", p.grad
            for key, value in opt.state.get(p, {}).items():
                if isinstance(value, torch.Tensor):
                    yield f"state[{name}].{key}", "optimizer state", value


def audit(obj: nn.Module | torch.optim.Optimizer, names: nn.Module | None = None) -> Audit:
    """List the non-contiguous tensors of a model or an optimizer (lessons 05 and 06).

    For an ``nn.Module``: its parameters, their ``.grad`` and its buffers. For an optimizer: its
    parameters, their ``.grad`` and every tensor in its state (Adam's ``exp_avg``,
    ``exp_avg_sq``). Parameters are named from ``names`` (the model) if given, else from
    ``param_names`` (an optimizer built from ``model.named_parameters()``), else by position.
    """
    if isinstance(obj, nn.Module):
        found = list(_tensors_of_module(obj))
    elif isinstance(obj, torch.optim.Optimizer):
        found = list(_tensors_of_optimizer(obj, names))
    else:
        raise TypeError(f"audit() takes an nn.Module or a torch.optim.Optimizer, "
                        f"not {type(obj).__name__}")
    rows = tuple(AuditRow(name, kind, tuple(t.shape), tuple(t.stride()))
                 for name, kind, t in found if not t.is_contiguous())
    return Audit(rows=rows, checked=len(found))

