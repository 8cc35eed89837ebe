"""Lesson 02's two pictures: the memory models (discrete GPU vs Apple silicon) and the stacked
bars of training-step bills. matplotlib is imported inside the functions, so importing this
module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from course_utils.toolkit.memory.sizes import MiB
from course_utils.toolkit.plotstyle import DPI, SMALL


class Bill(Protocol):
    """What a stacked bar needs of a bill (``budget.Breakdown`` is one)."""

    label: str
    parts: tuple
    measured_peak: int
    names: list[str]
    estimate: int
    tolerance: float

COLORS = {"weights": "#4c72b0", "gradients": "#dd8452", "optimizer state": "#55a868",
          "activations": "#c44e52", "working space": "#e8a3a5", "batch": "#8172b3"}


def plot_breakdowns(breakdowns: Sequence[Bill], ax=None):
    """Stacked bars of estimated parts, one per breakdown, with the measured peak marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.2), dpi=DPI)
    xs = range(len(breakdowns))
    for name, color in COLORS.items():
        bottoms = [sum(p.bytes for p in b.parts[: b.names.index(name)]) / MiB for b in breakdowns]
        ax.bar(xs, [b[name] / MiB for b in breakdowns], bottom=bottoms, color=color, label=name,
               width=0.55)
    peaks = [b.measured_peak / MiB for b in breakdowns]
    errs = [b.estimate * b.tolerance / MiB for b in breakdowns]
    ax.errorbar(xs, [b.estimate / MiB for b in breakdowns], yerr=errs, fmt="none", ecolor="grey",
                capsize=6, label=f"estimate ±{breakdowns[0].tolerance:.0%}")
    ax.scatter(xs, peaks, marker="D", color="black", zorder=3, label="measured peak")
    ax.set_xticks(list(xs), [b.label for b in breakdowns])
    ax.set_ylabel("MiB")
    ax.legend(fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.figure.tight_layout()
    return ax


def draw_memory_models(ax=None):
    """Lesson 02's diagram: a discrete GPU's two memories vs Apple silicon's one shared pool."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3), dpi=DPI)

    def box(x, y, w, h, text, color, size=9):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="black"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)

    box(0.0, 0.45, 0.18, 0.3, "CPU", "#dbe9f6")
    box(0.0, 0.0, 0.18, 0.3, "system RAM", "#9ecae1")
    box(0.28, 0.45, 0.18, 0.3, "GPU", "#fde0c5")
    box(0.28, 0.0, 0.18, 0.3, "VRAM\n(its own)", "#fdae6b")
    for x in (0.09, 0.37):
        ax.add_patch(FancyArrowPatch((x, 0.45), (x, 0.32), arrowstyle="<->", mutation_scale=10))
    ax.add_patch(FancyArrowPatch((0.18, 0.14), (0.28, 0.14), arrowstyle="<->", mutation_scale=12))
    ax.text(0.23, 0.2, "PCIe", ha="center", fontsize=SMALL)
    ax.text(0.23, 0.88, 'discrete GPU: .to("cuda") copies\nacross to a second memory',
            ha="center", fontsize=9)
    box(0.58, 0.0, 0.42, 0.3, "one memory pool, shared by all", "#c7e9c0")
    for x, name in ((0.59, "CPU"), (0.74, "GPU"), (0.89, "macOS +\napps")):
        box(x, 0.45, 0.10, 0.3, name, "#e5f5e0", size=SMALL)
        ax.add_patch(FancyArrowPatch((x + 0.05, 0.45), (x + 0.05, 0.32), arrowstyle="<->",
                                     mutation_scale=10))
    ax.text(0.79, 0.88, 'Apple silicon: .to("mps") makes an mps\ntensor in the same pool',
            ha="center", fontsize=9)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.05, 1.05)
    ax.axis("off")
    return ax
