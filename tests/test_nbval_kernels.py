"""The nbval plugin replaces a kernel that dies at start and reports why."""

from __future__ import annotations

import pytest

from course_utils.author import nbval_kernels
from course_utils.author.nbval_kernels import KernelStartWarning, with_retries


def dying_start(deaths: int, message: str = "Kernel died before replying to kernel_info"):
    """A stand-in for nbval's start_new_kernel whose first ``deaths`` kernels die."""
    calls = []

    def start(startup_timeout=60, kernel_name="python", **kwargs):
        calls.append(kwargs)
        kwargs["stderr"].write(f"zmq.error.ZMQError: Address already in use (try {len(calls)})".encode())
        kwargs["stderr"].flush()
        if len(calls) <= deaths:
            raise RuntimeError(message)
        return "km", "kc"

    return start, calls


def test_a_kernel_that_dies_once_is_replaced_and_the_cause_is_warned():
    start, calls = dying_start(deaths=1)
    with pytest.warns(KernelStartWarning, match=r"(?s)attempt 1 of 3.*Address already in use \(try 1\)"):
        assert with_retries(start)(kernel_name="python3", cwd="/tmp") == ("km", "kc")
    assert len(calls) == 2
    assert all(call["cwd"] == "/tmp" for call in calls)
    assert calls[0]["stderr"] is not calls[1]["stderr"]  # a fresh log per attempt


def test_the_last_death_is_raised_with_the_kernels_stderr():
    start, calls = dying_start(deaths=3)
    with pytest.warns(KernelStartWarning), pytest.raises(RuntimeError, match=r"(?s)3 attempts.*\(try 3\)"):
        with_retries(start)()
    assert len(calls) == 3


def test_other_failures_are_not_retried():
    start, calls = dying_start(deaths=5, message="Kernel didn't respond in 60 seconds")
    with pytest.raises(RuntimeError, match="didn't respond"):
        with_retries(start)()
    assert len(calls) == 1


def test_the_plugin_is_installed_into_nbval_in_this_run():
    from nbval import kernel

    assert kernel.start_new_kernel.__wrapped__ is not None
    assert "nbval_kernels" in kernel.start_new_kernel.__module__
    nbval_kernels.pytest_configure(None)  # a second configure does not wrap twice
    assert not hasattr(kernel.start_new_kernel.__wrapped__, "__wrapped__")
