"""The first op that made a NaN or an Inf (``course watch``), found without checking every op.

In a deep window every aten op with floating outputs leaves an entry on a *trail*: the op, the
user's line, its tensor inputs and outputs (kept until the phase ends). At the end of each phase
one check looks at the phase's result: the loss when backward starts (the forward), the gradients
when the optimizer step starts (the backward), the parameters after it (the step). Only when that
result is not finite is the trail scanned, in order, for the first op whose outputs are not finite
although its inputs are. Ops given a non-finite scalar (``masked_fill(mask, -inf)``) make
non-finite values on purpose and are skipped; NaNs already in an op's inputs (the data, parameters
a previous step broke) are reported as such. Gradients that overflow while an enabled GradScaler
is alive are a note: the scaler skips that step and lowers its scale, as designed.
"""

from __future__ import annotations

import math

import torch

from course_utils.toolkit.watch.findings import Finding, Site

LIMIT = 50_000  # entries kept per phase (a long evaluation loop inside a window stops recording)


def _finite(t: torch.Tensor) -> bool:
    if not t.is_floating_point() or not t.numel():
        return True
    total = t.detach().float().sum()  # one reduction; inf + -inf or NaN anywhere leaves it non-finite
    return math.isfinite(float(total)) or bool(torch.isfinite(t).all())


class NanTrail:
    """The ops of the current phase, and the scan that names the first one that went non-finite."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.entries: list[tuple] = []
        self.node_site: dict[int, tuple] = {}  # id(grad_fn) -> (grad_fn, site): the forward line
        self.done = False

    def add(self, func, args: tuple, kwargs: dict, inputs: list, floats: list, frame) -> None:
        if self.done or len(self.entries) >= LIMIT:
            return
        on_purpose = any(isinstance(v, float) and not math.isfinite(v) for v in (*args, *kwargs.values()))
        node = torch._C._current_autograd_node()
        where = (
            (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name) if frame is not None else None
        )
        self.entries.append((func, where, inputs, floats, on_purpose, node))

    def clear(self) -> None:
        self.entries.clear()

    def end_phase(self, phase: str, results: list) -> None:
        """The phase ended with ``results``: if they are not finite, name the op that started it."""
        entries, self.entries = self.entries, []
        if self.done or not entries or all(_finite(t) for t in results if isinstance(t, torch.Tensor)):
            return
        for func, where, inputs, floats, on_purpose, node in entries:
            if all(_finite(t) for t in floats):
                continue
            if on_purpose:
                continue
            site = Site(*where) if where else Site("", 0)
            if node is not None:
                known = self.node_site.get(id(node))
                site = known[1] if known is not None else site
            op = func.name().replace("aten::", "")
            if any(not _finite(t) for t in inputs):
                self.watcher.nan_origin(
                    f"{op} in the {phase}, whose inputs were already non-finite "
                    "(the data, or parameters an earlier step broke)",
                    site,
                )
                return
            kind = "NaN" if any(bool(torch.isnan(t).any()) for t in floats) else "Inf"
            what = f"aten::{op} produced {kind} from finite inputs in the {phase}"
            what += f" (in {node.name()}, the backward of this line)" if node is not None else ""
            if phase == "backward" and _scaling_gradients():
                what += ("; an enabled GradScaler skips this step and lowers its scale, by design: a "
                         "problem only if its scale keeps falling")
                self.watcher.log.add(Finding("note", what, _with_code(site), self.watcher.step + 1,
                                             subject="scaled gradients overflow"))
                return
            self.done = True
            self.watcher.log.add(
                Finding("non-finite", what, _with_code(site), self.watcher.step + 1, subject="first op")
            )
            return


def _scaling_gradients() -> bool:
    """Whether an enabled GradScaler is alive (found by gc: called only when gradients overflow)."""
    import gc

    from torch.amp.grad_scaler import GradScaler

    return any(isinstance(o, GradScaler) and o.is_enabled() for o in gc.get_objects())


def _with_code(site: Site) -> Site:
    import linecache

    if site.code or not site.path:
        return site
    return Site(site.path, site.line, site.function, linecache.getline(site.path, site.line).strip())
