"""Did an answer change the arguments it was given, or the global state it ran in?

``core.exercise.run`` keeps the arguments a call was given (``Outcome.inputs``, a fresh copy of
the case's); a judge whose task says the inputs must not change compares them with the case's own
with ``changed_inputs`` (and ``train_mode_changed`` for train/eval). ``grad_mode_left_off`` is the
global state an answer may leave behind (``torch.set_grad_enabled(False)`` never undone): it says
so, and switches gradients back on so the next case starts clean. Both only see what happened in
this process: after ``course grade``'s trip from a submission there are no inputs to compare
(None: nothing to say).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from course_utils.core.exercise import Case, Outcome


def _tensor_change(before: torch.Tensor, after: Any) -> str | None:
    if not isinstance(after, torch.Tensor):
        return f"was replaced by a {type(after).__name__}"
    if after.shape != before.shape or after.stride() != before.stride():
        return (f"changed its shape or strides: {tuple(before.shape)} {tuple(before.stride())} -> "
                f"{tuple(after.shape)} {tuple(after.stride())}")
    if after.storage_offset() != before.storage_offset():
        return "changed its storage offset"
    if after.dtype != before.dtype:
        return f"changed its dtype to {after.dtype}"
    if after.device != before.device:
        return f"moved from {before.device} to {after.device}"
    if after.requires_grad != before.requires_grad:
        return f"changed requires_grad to {after.requires_grad}"
    if before.device.type == "meta":
        return None  # a meta tensor has no values to compare
    a, b = before.detach(), after.detach()
    same = a == b
    if a.dtype.is_floating_point or a.dtype.is_complex:
        same = same | (a.isnan() & b.isnan())
    if not bool(same.all()):
        return f"changed its values at {int((~same).sum())} of {a.numel()} positions"
    return None


def _module_change(before: nn.Module, after: Any) -> str | None:
    if not isinstance(after, nn.Module):
        return f"was replaced by a {type(after).__name__}"
    for kind, old, new in (("parameter", before.named_parameters(), after.named_parameters()),
                           ("buffer", before.named_buffers(), after.named_buffers())):
        old, new = dict(old), dict(new)
        if set(old) != set(new):
            return f"gained or lost {kind}s: {sorted(set(old) ^ set(new))}"
        for name, t in old.items():
            problem = _tensor_change(t, new[name])
            if problem:
                return f"{kind} '{name}' {problem}"
    return None


def difference(before: Any, after: Any) -> str | None:
    """How ``after`` differs from ``before``: tensors (values, layout, requires_grad), modules
    (their parameters and buffers; not their train/eval mode), lists, tuples and dicts of them.
    Other objects are not compared."""
    if isinstance(before, torch.Tensor):
        return _tensor_change(before, after)
    if isinstance(before, nn.Module):
        return _module_change(before, after)
    if isinstance(before, list | tuple):
        if not isinstance(after, list | tuple) or len(after) != len(before):
            return "changed its length"
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            problem = difference(b, a)
            if problem:
                return f"[{i}] {problem}"
        return None
    if isinstance(before, dict):
        if not isinstance(after, dict) or set(after) != set(before):
            return "changed its keys"
        for key, b in before.items():
            problem = difference(b, after[key])
            if problem:
                return f"[{key!r}] {problem}"
    return None


def changed_inputs(case: Case, outcome: Outcome, names: Sequence[str],
                   skip: Sequence[int] = ()) -> str | None:
    """Which argument the call changed and how (``names`` names the positional arguments; those
    at positions in ``skip`` may change), or None. None too when ``outcome`` has no inputs."""
    if outcome.inputs is None:
        return None
    args, _ = outcome.inputs
    for i, (before, after) in enumerate(zip(case.args, args, strict=False)):
        if i in skip:
            continue
        problem = difference(before, after)
        if problem:
            name = names[i] if i < len(names) else f"argument {i + 1}"
            return f"your function changed its input `{name}`: {problem}; leave the inputs as they are"
    return None


def _modes(module: nn.Module) -> dict[str, bool]:
    return {name or "the model": m.training for name, m in module.named_modules()}


def train_mode_changed(case: Case, outcome: Outcome, names: Sequence[str]) -> str | None:
    """Which module argument the call switched between training and eval mode (the model, or a
    module inside it), or None; None too when ``outcome`` has no inputs. ``difference`` leaves
    train/eval out: a training function may legitimately switch it; this is for one that may not."""
    if outcome.inputs is None:
        return None
    args, _ = outcome.inputs
    for i, (before, after) in enumerate(zip(case.args, args, strict=False)):
        if not (isinstance(before, nn.Module) and isinstance(after, nn.Module)):
            continue
        was, now = _modes(before), _modes(after)
        for where, training in was.items():
            if now.get(where, training) != training:
                name = names[i] if i < len(names) else f"argument {i + 1}"
                what = f"`{name}`" if where == "the model" else f"`{name}.{where}`"
                mode = "training" if now[where] else "eval"
                return (f"your function switched {what} to {mode} mode and left it there; leave "
                        "the model as it was given")
    return None


def grad_mode_left_off() -> str | None:
    """Whether the answer left gradients switched off for everything after it; switches them
    back on (so the next case, and the learner's kernel, start clean)."""
    if torch.is_grad_enabled():
        return None
    torch.set_grad_enabled(True)
    return ("gradients were left switched off for everything after your function "
            "(torch.set_grad_enabled(False) never undone): use `with torch.no_grad():`, which restores them")
