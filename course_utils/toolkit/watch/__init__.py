"""``course watch``: find the silent bug in an unmodified training script.

    course watch train.py --epochs 3          # or: python -m course_utils.toolkit.watch train.py
    with watch(): train()                     # in a notebook

The watcher attaches through PyTorch's global hooks (module registration and forward hooks,
optimizer step hooks, a wrapped ``torch.autograd.backward``, and a function and a dispatch mode on a
few sampled steps), so nothing in the training code changes. Each finding says what happened,
where (the user's file:line), why it matters and the fix; it prints once, as it appears, and again
in the report at exit (``--json``, ``--html`` for sharing).

The parts: ``watcher`` (the hooks and the schedule), ``cost_budget`` (the watcher's own share of
the run), ``models`` (models, coverage, modes), ``params`` (per-step numbers: gradients, updates,
learning rate, loss), ``ops`` and ``deep`` (op level: broadcasting, NaN, syncs, copies, fallbacks,
memory), ``loss_checks`` and ``copies`` (what the loss receives, copies of a model), ``findings``
(kinds, the user's line), ``render`` (console, JSON, HTML), ``command`` (the command).
"""

from __future__ import annotations

from contextlib import contextmanager

from course_utils.toolkit.watch.findings import KINDS, Finding
from course_utils.toolkit.watch.watcher import Watcher

__all__ = ["KINDS", "Finding", "Watcher", "main", "watch"]


@contextmanager
def watch(*, verbose: bool = True, deep_every: int | None = None, **options):
    """Watch the training code run inside the block; yields the ``Watcher`` (its ``findings``)."""
    watcher = Watcher(verbose=verbose, deep_every=deep_every, **options)
    with watcher:
        yield watcher


def main(argv: list[str] | None = None) -> int:
    """``course watch script.py [args...]``."""
    from course_utils.toolkit.watch.command import main as cli_main

    return cli_main(argv)
