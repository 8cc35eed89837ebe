"""A differential test for layout bugs: every op, every layout, every variant, against the CPU (lesson 06).

``sweep(ops, layouts=..., variants=..., device=...)`` runs each op on the device with its tensors in
each layout (contiguous, transposed, stepped slice, narrowed with an offset, expanded, permuted 3-D,
``channels_last``) and each variant (out-of-place, in-place, ``out=``), and compares the result
with the same op on contiguous copies on the CPU, the oracle. The reference runs with every
dispatcher mode switched off, as a CPU run on a Mac is untouched by an MPS bug.

A layout applies to every tensor argument that can take it, the output of ``out=`` included;
written-to tensors are never expanded (PyTorch refuses that), so "expanded" expands the inputs only.
Each check ends ``ok``, ``mismatch``, ``unchanged`` (the output kept its old values: the signature
of the addcmul_ bug), ``error`` (the op or the set-up copy failed) or ``n/a``. Tolerances are 1e-5
(1e-4 for reductions and matmuls) on the CPU, ten times that on an accelerator, whose kernels may
round differently; the bugs this hunts are off by whole units.

The ops and layouts it runs are in ``difftest_inputs`` (``OpSpec``, ``SPECS``, ``lay_out``); their
public names are importable from here too.

Under ``mps_inplace_bug()`` the default sweep flags exactly ``addcmul_`` and ``addcdiv_`` on
non-contiguous outputs; on a healthy machine, nothing; on a real Mac, it hunts real bugs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import _disable_current_modes

from course_utils.toolkit.difftest_inputs import (
    BASE_SHAPE,
    DEFAULT_OPS,
    LAYOUT_RANK,
    LAYOUTS,
    SPECS,
    OpSpec,
    draw_values,
    inplace_ops,
    lay_out,
    spec_for,
)
from course_utils.toolkit.plotstyle import DPI, SMALL

__all__ = ["BASE_SHAPE", "DEFAULT_OPS", "LAYOUTS", "LAYOUT_RANK", "PROBLEMS", "SPECS", "VARIANTS", "Check",
           "OpSpec", "SweepResult", "check_one", "inplace_ops", "lay_out", "spec_for", "sweep"]

VARIANTS = ("out-of-place", "in-place", "out=")
PROBLEMS = ("mismatch", "unchanged", "error")

# --- one check ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One op, variant and layout: how it ended and how far from the CPU reference."""

    op: str
    variant: str
    layout: str
    status: str  # ok, mismatch, unchanged, error, n/a
    max_abs_diff: float = 0.0
    detail: str = ""

    @property
    def name(self) -> str:
        """The op as called: ``addcmul``, ``addcmul_`` (in-place) or ``addcmul(out=)``."""
        return {"in-place": f"{self.op}_", "out=": f"{self.op}(out=)"}.get(self.variant, self.op)


def _compare(got: torch.Tensor, ref: torch.Tensor, before: torch.Tensor | None, tol: float):
    got = got.detach().cpu()
    if got.shape != ref.shape:
        return "mismatch", float("inf"), f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    if torch.allclose(got, ref, rtol=tol, atol=tol, equal_nan=True):
        return "ok", 0.0, ""
    diff = (got - ref).abs().nan_to_num(nan=float("inf")).max().item()
    if before is not None and torch.equal(got, before):
        return "unchanged", diff, "the output kept its old values"
    return "mismatch", diff, ""


_OUT_SUPPORT: dict[str, bool] = {}


def _supports_out(spec: OpSpec, values: list[torch.Tensor]) -> bool:
    if spec.name not in _OUT_SUPPORT:
        try:
            with _disable_current_modes():
                ref = spec.call(*values)
                spec.call(*values, out=torch.empty_like(ref))
            _OUT_SUPPORT[spec.name] = True
        except (TypeError, RuntimeError):
            _OUT_SUPPORT[spec.name] = False
    return _OUT_SUPPORT[spec.name]


def check_one(spec: OpSpec, variant: str, layout: str, device, dtype=torch.float32,
              seed: int = 0) -> Check:
    """Run ``spec`` once in ``variant`` with tensors in ``layout`` on ``device``; compare with the CPU."""
    shapes = spec.arg_shapes(LAYOUT_RANK[layout])
    if shapes is None or (variant == "in-place" and not spec.has_inplace()):
        return Check(spec.name, variant, layout, "n/a")
    gen = torch.Generator().manual_seed(seed)
    values = draw_values(spec, shapes, layout, gen, dtype)
    if variant == "in-place":
        if tuple(shapes[0]) != _result_shape(spec, values):
            return Check(spec.name, variant, layout, "n/a")  # the result cannot be written into self
        if layout == "expanded":  # self is written, so not expanded: give it rows of its own
            fresh = torch.randn(shapes[0], generator=gen, dtype=dtype)
            values[0] = fresh.abs() + 0.5 if 0 in spec.positive else fresh
    if variant == "out=" and not _supports_out(spec, values):
        return Check(spec.name, variant, layout, "n/a")
    with _disable_current_modes():
        ref = spec.call(*[v.clone() for v in values])
    try:
        written = 0 if variant == "in-place" else None
        args = [lay_out(v, layout, device, written=(i == written)) for i, v in enumerate(values)]
        if any(not torch.equal(a.cpu(), v) for a, v in zip(args, values, strict=True)):
            return Check(spec.name, variant, layout, "error", float("inf"),
                         "copying the inputs into this layout on the device gave wrong values")
        if variant == "out-of-place":
            got, before = spec.call(*args), None
        elif variant == "in-place":
            before = args[0].detach().cpu().clone()
            spec.call_inplace(*args)
            got = args[0]
        else:
            start = torch.full(ref.shape, -7.0, dtype=dtype)  # a value no op here returns
            got = lay_out(start, layout, device, written=True)
            before = start
            spec.call(*args, out=got)
    except Exception as err:  # noqa: BLE001 - an op failing on a layout is a finding, not a crash
        return Check(spec.name, variant, layout, "error", float("inf"), f"{type(err).__name__}: {err}"[:120])
    tol = spec.tol if torch.device(device).type == "cpu" else 10 * spec.tol  # GPU kernels round differently
    status, diff, detail = _compare(got, ref, before, tol)
    return Check(spec.name, variant, layout, status, diff, detail)


def _result_shape(spec: OpSpec, values: list[torch.Tensor]) -> tuple[int, ...]:
    with _disable_current_modes():
        return tuple(spec.call(*values).shape)


# --- the sweep ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    """``sweep()``'s answer: every check; ``print()`` shows the problems, ``heatmap()`` draws them."""

    checks: tuple[Check, ...]
    device: str
    seconds: float
    layouts: tuple[str, ...]

    @property
    def problems(self) -> list[Check]:
        """The checks that ended mismatch, unchanged or error."""
        return [c for c in self.checks if c.status in PROBLEMS]

    def flagged(self) -> list[str]:
        """The op names (as called: ``addcmul_``) with at least one problem, sorted."""
        return sorted({c.name for c in self.problems})

    def flagged_layouts(self, name: str) -> list[str]:
        """The layouts on which ``name`` (e.g. ``addcmul_``) had a problem, in sweep order."""
        bad = {c.layout for c in self.problems if c.name == name}
        return [layout for layout in self.layouts if layout in bad]

    def counts(self) -> dict[str, int]:
        """How many checks ended in each status."""
        out: dict[str, int] = {}
        for c in self.checks:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def summary(self) -> str:
        """One line: device, checks run, problems found (no timing: it varies)."""
        run = sum(1 for c in self.checks if c.status != "n/a")
        return (f"difftest on {self.device}: {run} checks run, {len(self.problems)} problems"
                + (f" in {', '.join(self.flagged())}" if self.problems else ""))

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.problems:
            lines.append(f"  {'op':<16}{'layout':<15}{'status':<11}max abs diff")
            lines += [f"  {c.name:<16}{c.layout:<15}{c.status:<11}{c.max_abs_diff:.3g}"
                      for c in self.problems]
        return "\n".join(lines)

    def grid(self, names: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
        """(row names, statuses per layout): the heatmap's data; default rows = every op as called."""
        rows = list(names) if names is not None else sorted({c.name for c in self.checks})
        cell = {(c.name, c.layout): c.status for c in self.checks}
        return rows, [[cell.get((r, layout), "n/a") for layout in self.layouts] for r in rows]

    def heatmap(self, names: Sequence[str] | None = None):
        """A figure: one row per op as called, one column per layout, coloured by status (lesson 06).
        Default rows: the in-place ops, where layout bugs of this kind live. End the cell with plt.show()."""
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap

        if names is None:
            names = sorted({c.name for c in self.checks if c.variant == "in-place" and c.status != "n/a"})
        rows, statuses = self.grid(names)
        order = ["n/a", "ok", "mismatch", "unchanged", "error"]
        codes = [[order.index(s) for s in row] for row in statuses]
        colours = ListedColormap(["#eeeeee", "#9fd39f", "#f0a030", "#d62728", "#7f3fbf"])
        fig, ax = plt.subplots(figsize=(6.4, 0.27 * len(rows) + 1.5), dpi=DPI, layout="constrained")
        ax.imshow(codes, cmap=colours, vmin=0, vmax=len(order) - 1, aspect="auto")
        ax.set_xticks(range(len(self.layouts)), self.layouts, rotation=30, ha="right", fontsize=SMALL)
        ax.set_yticks(range(len(rows)), rows, fontsize=SMALL)
        ax.set_title(self.summary(), fontsize=SMALL)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours(i)) for i in range(len(order))]
        ax.legend(handles, order, fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1))
        return fig


def sweep(ops: Iterable[str | OpSpec] = DEFAULT_OPS, layouts: Sequence[str] = LAYOUTS,
          variants: Sequence[str] = VARIANTS, device: torch.device | str | None = None,
          dtype: torch.dtype = torch.float32, seed: int = 0) -> SweepResult:
    """Compare every op x layout x variant on ``device`` with contiguous CPU runs (lesson 06).

    ``ops``: names from ``SPECS`` ("addcmul" or "addcmul_" alike) or ``OpSpec`` objects; the
    default covers pointwise, reduction and matmul ops used in training. ``device`` defaults to
    ``pick_device()``. Inputs are drawn from ``seed``, so a sweep is repeatable.
    """
    if device is None:
        from course_utils.toolkit.device import pick_device

        device = pick_device()
    unknown = [x for x in (*layouts, *variants) if x not in LAYOUTS + VARIANTS]
    if unknown:
        raise ValueError(f"unknown layouts/variants {unknown}; layouts: {LAYOUTS}, variants: {VARIANTS}")
    start, threads = time.perf_counter(), torch.get_num_threads()
    torch.set_num_threads(1)  # tensors of a few dozen elements: a thread pool only adds waiting
    try:
        checks = tuple(check_one(spec_for(op), variant, layout, device, dtype, seed)
                       for op in ops for variant in variants for layout in layouts)
    finally:
        torch.set_num_threads(threads)
    return SweepResult(checks, torch.device(device).type, time.perf_counter() - start, tuple(layouts))
