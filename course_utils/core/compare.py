"""Compare an expected value with a learner's, and say *how* they differ.

Used by ``check()`` (lesson 00). Tensors report shape, dtype and max abs difference; containers
are compared item by item so the message points at the first differing element.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import torch

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # in default reprs: <Foo object at 0x7f...>


def describe_value(value: Any) -> str:
    """A short, address-free description of a value for failure messages."""
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device.type})"
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    text = _ADDRESS.sub("", repr(value))
    return text if len(text) <= 120 else text[:117] + "..."


def _tensors(expected: torch.Tensor, got: Any, atol: float, rtol: float) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)} != expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != expected {expected.dtype}"
    a, b = expected.detach().cpu(), got.detach().cpu()
    if a.numel() == 0:
        return None
    if a.dtype.is_floating_point or a.dtype.is_complex:
        if torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True):
            return None
        diff = (a.double() - b.double()).abs()
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
        return f"values differ: max abs diff {diff.max().item():.3g} (atol={atol}, rtol={rtol})"
    if torch.equal(a, b):
        return None
    wrong = (a != b).sum().item()
    return f"values differ at {wrong} of {a.numel()} positions"


def _numbers(expected: float, got: Any, atol: float, rtol: float) -> str | None:
    """An expected int needs an integer (a Python or numpy integer; not a bool, a float or a
    tensor), exactly equal; an expected float takes an int or a float within tolerance."""
    if isinstance(expected, int) and not isinstance(expected, bool):
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return f"expected an integer, got {type(got).__name__} {describe_value(got)}"
        return None if int(got) == expected else f"{got} != expected {expected}"
    if isinstance(got, bool) or not isinstance(got, int | float):
        return f"expected a number, got {type(got).__name__}"
    if math.isclose(got, expected, rel_tol=rtol, abs_tol=atol):
        return None
    return f"{got!r} != expected {expected!r} (abs diff {abs(got - expected):.3g})"


def _sequences(expected, got, atol, rtol) -> str | None:
    if type(got) is not type(expected):
        return f"expected a {type(expected).__name__}, got {type(got).__name__}"
    if len(got) != len(expected):
        return f"length {len(got)} != expected {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        problem = mismatch(e, g, atol, rtol)
        if problem:
            return f"item [{i}]: {problem}"
    return None


def _dicts(expected: dict, got: Any, atol, rtol) -> str | None:
    if not isinstance(got, dict):
        return f"expected a dict, got {type(got).__name__}"
    if set(got) != set(expected):
        missing, extra = set(expected) - set(got), set(got) - set(expected)
        return f"keys differ (missing {sorted(map(str, missing))}, extra {sorted(map(str, extra))})"
    for key in expected:
        problem = mismatch(expected[key], got[key], atol, rtol)
        if problem:
            return f"key {key!r}: {problem}"
    return None


def mismatch(expected: Any, got: Any, atol: float = 1e-6, rtol: float = 1e-5) -> str | None:
    """None when ``got`` matches ``expected``; otherwise one line saying how it differs."""
    if isinstance(expected, torch.Tensor):
        return _tensors(expected, got, atol, rtol)
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return None if (type(got) is type(expected) and got == expected) else (
            f"{describe_value(got)} != expected {describe_value(expected)}")
    if isinstance(expected, int | float):
        return _numbers(expected, got, atol, rtol)
    if isinstance(expected, tuple | list):
        return _sequences(expected, got, atol, rtol)
    if isinstance(expected, dict):
        return _dicts(expected, got, atol, rtol)
    if isinstance(expected, torch.device | torch.dtype):
        return None if got == expected else f"{got!r} != expected {expected!r}"
    return None if got == expected else f"{describe_value(got)} != expected {describe_value(expected)}"
