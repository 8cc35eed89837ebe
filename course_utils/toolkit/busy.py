"""Progress for the lessons' long cells: a bar while a person watches, nothing in stored outputs.

``steps(iterable, what)`` wraps a loop in ``tqdm.auto`` (a widget in JupyterLab, a text line in a
terminal) and ``working(what)`` shows the seconds spent in one long call. Both stay silent when
nobody watches: a notebook run by nbclient (``course run-notebooks``) or nbval sends its cells
with ``allow_stdin`` off, while JupyterLab turns it on (other front ends, VS Code and Colab among
them, are untested here); outside a kernel, a bar shows only on a terminal. So stored outputs
never hold a progress bar.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


def interactive() -> bool:
    """Whether a person is watching this cell or script (see the module's note)."""
    try:
        from IPython import get_ipython
    except ImportError:
        shell = None
    else:
        shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        return bool(getattr(kernel, "_allow_stdin", False))
    return sys.stderr.isatty()


def steps(iterable: Iterable[T], what: str, total: int | None = None) -> Iterable[T]:
    """``iterable`` with a progress bar labelled ``what`` when a person watches, else unchanged."""
    if not interactive():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=what, total=total, leave=True)


@contextmanager
def working(what: str, every: float = 0.5) -> Iterator[None]:
    """Show ``what`` and the seconds spent, refreshed every ``every`` s, while the block runs."""
    if not interactive():
        yield
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=what, bar_format="{desc}: {elapsed} so far", leave=True)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every):
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        bar.close()
