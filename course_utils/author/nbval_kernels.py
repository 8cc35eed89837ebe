"""A pytest plugin that lets nbval survive a kernel dying as it starts (loaded by pyproject's addopts).

nbval starts one kernel per notebook with the kernel's stderr sent to /dev/null. A kernel that
exits before answering (most often a port taken by another process between jupyter_client choosing
it and the kernel binding it, which parallel test workers make possible) then fails every cell of
that notebook with "Kernel died before replying to kernel_info" and no cause. With this plugin the
kernel's stderr goes to a temporary file; a kernel that dies at start is replaced by a fresh one
(new ports) up to ``ATTEMPTS`` times, each retry is reported as a warning naming the cause, and the
last failure carries the tail of the kernel's stderr. A kernel that starts but never answers is not
retried: that is a timeout, and nbval reports it as one.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from typing import IO

ATTEMPTS = 3
DIED = "Kernel died"


class KernelStartWarning(UserWarning):
    """A notebook's kernel died as it started and another was started in its place."""


def _tail(log: IO[bytes], chars: int = 1500) -> str:
    log.seek(0)
    text = log.read().decode(errors="replace").strip()
    return text[-chars:] if text else "(the kernel wrote nothing to stderr)"


def with_retries(start: Callable, attempts: int = ATTEMPTS) -> Callable:
    """Wrap nbval's ``start_new_kernel`` so a kernel that dies at start is replaced."""

    def start_new_kernel(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            log = tempfile.TemporaryFile()
            try:
                return start(*args, **{**kwargs, "stderr": log})
            except RuntimeError as err:
                if DIED not in str(err):
                    raise
                cause = _tail(log)
                if attempt == attempts:
                    raise RuntimeError(f"{err} ({attempts} attempts); its stderr ended with:\n"
                                       f"{cause}") from err
                warnings.warn(f"a notebook kernel died as it started (attempt {attempt} of {attempts}); "
                              f"starting another. Its stderr ended with:\n{cause}", KernelStartWarning,
                              stacklevel=2)

    start_new_kernel.__wrapped__ = start
    return start_new_kernel


def pytest_configure(config) -> None:
    """Install the retrying start into nbval, when nbval is there and not already patched."""
    try:
        from nbval import kernel
    except ImportError:
        return
    if not hasattr(kernel.start_new_kernel, "__wrapped__"):
        kernel.start_new_kernel = with_retries(kernel.start_new_kernel)
