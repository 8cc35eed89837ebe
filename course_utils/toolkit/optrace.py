"""See which ops leave the device, and count the backend switches and copies (lesson 04).

``trace(fn, *args)`` runs ``fn`` under a ``TorchDispatchMode`` and records every aten op: where its
tensors live, whether the target backend (MPS) has a kernel for it, and where it therefore runs.
On a Mac the kernel question goes to the dispatcher's registry (``has_mps_kernel``; a heuristic
of ours, untested on a Mac); elsewhere to the active ``emulate_fallback`` (see
``course_utils.toolkit.emulate.mps_fallback``), whose emulated device and copies the trace reports as such.

A *backend switch* is a change of where consecutive steps run (starting from where the inputs
live); a *copy* is one tensor crossing between host and device. A fallback costs one copy per
device input, one per result, one per argument it writes back, and two switches in mid-path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils.toolkit.emulate import mps_fallback as emulated
from course_utils.toolkit.emulate.mps_fallback import ALWAYS_FALLBACK, DEVICE, HOST, op_matches, tensors_in
from course_utils.toolkit.plotstyle import DPI, SMALL

# Device-generic kernels that serve every backend. (CompositeExplicitAutogradNonFunctional is left
# out: structured ops get one whose work lands on the backend's own .out kernel.)
COMPOSITE = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")
TRANSFERS = ("aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize")
SCALAR_READ = "aten::_local_scalar_dense"  # .item(): the host reads one value


def has_kernel(op: str, key: str = "MPS") -> bool:
    """Whether the dispatcher has a kernel for ``op`` under ``key`` or a device-generic composite."""
    try:
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(op, k) for k in (key, *COMPOSITE))
    except RuntimeError:  # no such operator
        return False


def has_mps_kernel(op: str) -> bool | None:
    """On a torch built with MPS: whether ``op`` runs natively on MPS. None where MPS is not built.

    The always-fallback ops are registered *as* the fallback, so the registry alone would say yes.
    """
    if not torch.backends.mps.is_built():
        return None
    return False if op_matches(op, ALWAYS_FALLBACK) else has_kernel(op, "MPS")


def count_switches(places: Sequence[str | None]) -> int:
    """How many times consecutive places differ ("cpu", "mps", ...); None entries are skipped."""
    known = [p for p in places if p is not None]
    return sum(a != b for a, b in zip(known, known[1:], strict=False))


@dataclass(frozen=True)
class Event:
    """One recorded step: an aten op, or a copy between host and device."""

    index: int
    op: str
    inputs: tuple[str, ...]  # where each tensor input lives ("mps", "cpu")
    outputs: tuple[str, ...]
    kernel: bool | None  # does the target backend have a kernel? None: not asked (host op, copy)
    runs_on: str
    kind: str = "compute"  # "compute", "fallback" or "copy"
    copies: int = 0
    nbytes: int = 0


class _Real:
    """Placement from real devices (no emulation active)."""

    def __init__(self, device: torch.device):
        self.name = device.type if device.type != "cpu" else "none"
        self.is_mps = device.type == "mps"

    def side(self, t: torch.Tensor) -> str:
        return HOST if t.device.type == "cpu" else DEVICE

    def input_sides(self, inputs: list[torch.Tensor]) -> list[str]:
        return [self.side(t) for t in inputs]

    def op_side(self, inputs: list[torch.Tensor]) -> str | None:
        return (DEVICE if any(self.side(t) == DEVICE for t in inputs) else HOST) if inputs else None

    def kernel(self, op: str) -> bool | None:
        return has_mps_kernel(op) if self.is_mps else None

    def label(self) -> str:
        return self.name if self.name != "none" else "none (cpu only, no emulation: all on the host)"


class _Emulated:
    """Placement and kernels from the active emulation."""

    def __init__(self, emulation: emulated.Emulation):
        self.emulation, self.name = emulation, emulation.name

    def side(self, t: torch.Tensor) -> str:
        return self.emulation.side(t)

    def input_sides(self, inputs: list[torch.Tensor]) -> list[str]:
        return self.emulation.input_sides(inputs)

    def op_side(self, inputs: list[torch.Tensor]) -> str:
        return self.emulation.op_side(inputs)

    def kernel(self, op: str) -> bool | None:
        real = has_mps_kernel(op) if not self.emulation.emulated_device else None
        return not self.emulation.falls_back(op) and real is not False

    def label(self) -> str:
        return f"{self.name} (emulated on cpu)" if self.emulation.emulated_device else self.name


class _Recorder(TorchDispatchMode):
    def __init__(self, where):
        super().__init__()
        self.where, self.events = where, []

    def name(self, side: str | None) -> str:
        return "cpu" if side == HOST else self.where.name

    def add(self, op: str, inputs, outputs, kernel, runs_on, kind="compute", copies=0, nbytes=0):
        self.events.append(Event(len(self.events), op, tuple(inputs), tuple(outputs), kernel,
                                 runs_on, kind, copies, nbytes))

    def transfer(self, op: str, src: str, dst: str, nbytes: int) -> None:
        self.add(op, [self.name(src)], [self.name(dst)], None, self.name(dst), "copy", 1, nbytes)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        op, ins = func.name(), tensors_in((args, kwargs))
        in_sides = self.where.input_sides(ins)
        side = self.where.op_side(ins)
        kernel = self.where.kernel(op) if side == DEVICE else None
        written = emulated._written(func, args, kwargs) if kernel is False else []
        out = func(*args, **kwargs)
        outs = tensors_in(out)
        out_sides = [self.where.side(t) for t in outs]
        side = side or (out_sides[0] if out_sides else HOST)
        names_in, names_out = [self.name(s) for s in in_sides], [self.name(s) for s in out_sides]
        if op == SCALAR_READ and side == DEVICE:
            self.add(op, names_in, ["cpu"], None, "cpu", "copy", 1, ins[0].element_size())
        elif op in TRANSFERS and len(set(in_sides + out_sides)) == 2:
            dst = out_sides[0] if out_sides else HOST
            src = ins[-1] if op == "aten::copy_" else ins[0]
            self.add(op, names_in, names_out, None, self.name(dst), "copy", 1, src.nbytes)
        elif kernel is False:
            moved = list({id(t): t for t, s in zip(ins, in_sides, strict=True) if s == DEVICE}.values())
            moved += [t for t in written if self.where.side(t) == DEVICE]  # written back
            moved += [t for t in outs if all(t is not w for w in written)]  # results sent back
            self.add(op, names_in, names_out, False, "cpu", "fallback", len(moved),
                     sum(t.nbytes for t in moved))
        else:
            self.add(op, names_in, names_out, kernel, self.name(side))
        return out


def _placement():
    emulation = emulated.active()
    if emulation is not None:
        return _Emulated(emulation)
    from course_utils.toolkit.device import pick_device

    return _Real(pick_device())


def trace(fn: Callable, *args, **kwargs) -> Trace:
    """Run ``fn(*args, **kwargs)`` and record every aten op and host<->device copy (lesson 04).

    Call it inside ``emulate_fallback()`` to trace against the emulated MPS device; on a Mac the
    real devices and the dispatcher's kernel registry are used.
    """
    where = _placement()
    recorder = _Recorder(where)
    start_sides = {where.side(t) for t in tensors_in((args, kwargs))}
    start = None if not start_sides else recorder.name(DEVICE if DEVICE in start_sides else HOST)
    listeners = where.emulation.listeners if isinstance(where, _Emulated) else []
    listeners.append(recorder.transfer)
    try:
        with recorder:
            output = fn(*args, **kwargs)
    finally:
        listeners.remove(recorder.transfer)
    return Trace(recorder.events, start, where.label(), output)


def _where(names: Sequence[str]) -> str:
    """("mps", "mps", "cpu") -> "mps×2 cpu"."""
    runs: list[list] = []
    for name in names:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    return " ".join(n if k == 1 else f"{n}×{k}" for n, k in runs) or "-"


def _n(count: int, noun: str) -> str:
    """1 copy, 2 copies; 1 backend switch, 4 backend switches."""
    plural = {"copy": "copies"}.get(noun, noun + ("es" if noun.endswith(("ch", "sh", "s")) else "s"))
    return f"{count} {noun if count == 1 else plural}"


def _mib(nbytes: int) -> str:
    """A byte count for people: 48 B, 12.0 KiB, 48.83 MiB."""
    if nbytes < 2**10:
        return f"{nbytes} B"
    return f"{nbytes / 2**10:.1f} KiB" if nbytes < 2**20 else f"{nbytes / 2**20:.2f} MiB"


@dataclass
class Trace:
    """What ``trace()`` saw: the events, where the inputs started, and fn's return value."""

    events: list[Event]
    start: str | None
    device: str
    output: Any = field(default=None, repr=False)

    @property
    def places(self) -> list[str]:
        """Where each step ran, in order."""
        return [e.runs_on for e in self.events]

    @property
    def switches(self) -> int:
        """Backend switches, counting from where the inputs live."""
        return count_switches([self.start, *self.places])

    @property
    def copies(self) -> int:
        return sum(e.copies for e in self.events)

    @property
    def copied_bytes(self) -> int:
        return sum(e.nbytes for e in self.events)

    @property
    def fallbacks(self) -> list[str]:
        """The ops that fell back, each once, in order of first appearance."""
        return list(dict.fromkeys(e.op for e in self.events if e.kind == "fallback"))

    def switch_points(self) -> list[int]:
        """Indexes of the steps that run somewhere else than the step (or the inputs) before them."""
        before, points = self.start, []
        for e in self.events:
            if before is not None and e.runs_on != before:
                points.append(e.index)
            before = e.runs_on
        return points

    def summary(self) -> str:
        falls = ", ".join(self.fallbacks) or "none"
        return (f"device: {self.device} | {_n(len(self.events), 'step')} | "
                f"{_n(self.switches, 'backend switch')} | {_n(self.copies, 'copy')} "
                f"({_mib(self.copied_bytes)}) | fallback: {falls}")

    def _rows(self) -> list[tuple[str, ...]]:
        rows, switches = [], set(self.switch_points())
        for e in self.events:
            switch = "⇄ " if e.index in switches else ""
            note = {"fallback": f"fallback: {e.copies} copies, {_mib(e.nbytes)}",
                    "copy": f"copy {e.inputs[0] if e.inputs else '?'}→{e.runs_on}, {_mib(e.nbytes)}"}
            kernel = {True: "yes", False: "NO", None: "-"}[e.kernel]
            rows.append((str(e.index), e.op, _where(e.inputs), _where(e.outputs), kernel, e.runs_on,
                         switch + note.get(e.kind, "")))
        return rows

    HEAD = ("#", "op", "inputs", "outputs", "MPS kernel", "runs on", "switch / note")

    def table(self) -> str:
        """The trace as a text table, one row per step; ⇄ marks a backend switch."""
        rows = [self.HEAD, *self._rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEAD) - 1)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
                 for r in rows]
        lines.insert(0, f"start: {self.start or '-'}")
        return "\n".join([self.summary(), *[ln.rstrip() for ln in lines]])

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        colors = {"fallback": "#fdd", "copy": "#ffe9c4"}
        head = "".join(f"<th>{escape(h)}</th>" for h in self.HEAD)
        body = "".join(
            f"<tr style='background:{colors.get(e.kind, 'none')}'>"
            + "".join(f"<td style='text-align:left'>{escape(c)}</td>" for c in row) + "</tr>"
            for e, row in zip(self.events, self._rows(), strict=True))
        return (f"<p><code>{escape(self.summary())}</code><br>start: {escape(self.start or '-')}</p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def timeline(self, ax=None, title: str | None = None):
        """A small strip: one cell per step, coloured by where it ran; red = fallback, orange = copy."""
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        if ax is None:
            fig, ax = plt.subplots(figsize=(6, 1.8), dpi=DPI)
            fig.subplots_adjust(left=0.03, right=0.97, top=0.8, bottom=0.5)
        colors = {"fallback": "tab:red", "copy": "tab:orange"}
        for e in self.events:
            on_host = "lightgray" if e.runs_on == "cpu" else "tab:blue"
            ax.barh(0, 1, left=e.index, color=colors.get(e.kind, on_host), edgecolor="white")
        for at in self.switch_points():
            ax.axvline(at, color="black", linewidth=1.5)
        ax.set_xlim(0, max(len(self.events), 1))
        ax.set_yticks([])
        ax.set_xlabel("step", fontsize=SMALL, labelpad=1)
        ax.tick_params(labelsize=SMALL)
        ax.set_title(title or f"{_n(self.switches, 'backend switch')}, {_n(self.copies, 'copy')}",
                     fontsize=9)
        legend = [Patch(color="tab:blue", label=f"device ({self.device.split()[0]})"),
                  Line2D([], [], color="black", label="switch"),
                  Patch(color="lightgray", label="host (cpu)"),
                  Patch(color="tab:red", label="fallback"), Patch(color="tab:orange", label="copy")]
        ax.legend(handles=legend, ncol=5, fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.55),
                  frameon=False)
        return ax.figure
