"""What the ``course watch`` tests share: run a loop under a watcher that looks at every step op by
op, the alarms it raised, the line a marker comment names, a small model."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

from course_utils.toolkit.watch import watch


def watched(train, steps: int = 12, **options) -> dict:
    """Run ``train(steps)`` under a watcher that looks at every step op by op; {kind: finding}."""
    torch.manual_seed(0)
    with watch(verbose=False, **{"deep_every": 1, **options}) as w:
        train(steps)
    return {f.kind: f for f in w.findings}


def alarms(found: dict) -> set[str]:
    return {kind for kind, f in found.items() if f.alarm}


def mlp(d_in=4, out=1, norm=False):
    layers = [nn.Linear(d_in, 16)] + ([nn.BatchNorm1d(16)] if norm else []) + [nn.ReLU(), nn.Linear(16, out)]
    return nn.Sequential(*layers)


def line_of(marker: str) -> int:
    """The line of the calling test file that ends with the comment ``# marker``."""
    caller = Path(sys._getframe(1).f_code.co_filename)
    lines = caller.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))
