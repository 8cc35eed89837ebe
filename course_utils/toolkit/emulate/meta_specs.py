"""What an emulated launch knows before its kernel runs (lesson 03's ``AsyncDevice``). *Emulated*.

A launch must return at once with outputs of the right shape, strides and dtype, to be filled in
when the kernel runs on the device's worker. ``output_specs`` asks the op's meta kernel for them
(once per argument signature: ``signature`` is the cache key), ``launch_results`` builds what the
launch returns (mutated arguments as themselves, new outputs as empty ``placeholder`` tensors), and
``out_variant`` finds the op's ``out=`` overload, so a kernel can write straight into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class OutputSpec:
    """An output's shape, strides and dtype, as the op's meta kernel computed them."""

    shape: tuple
    stride: tuple
    dtype: torch.dtype


def to_meta(t: torch.Tensor) -> torch.Tensor:
    """An empty tensor on the meta device with ``t``'s shape, strides and dtype."""
    return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="meta")


def placeholder(spec: OutputSpec) -> torch.Tensor:
    """An empty CPU tensor shaped as ``spec``: a launch's output before its kernel fills it."""
    return torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device="cpu")


def specs_of(meta: Any) -> Any:
    """A meta kernel's outputs as ``OutputSpec`` (nested tuples and lists kept; other values as is)."""
    if isinstance(meta, torch.Tensor):
        return OutputSpec(tuple(meta.shape), meta.stride(), meta.dtype)
    if isinstance(meta, (tuple, list)):
        return type(meta)(specs_of(m) for m in meta)
    return meta


_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout,
          torch.memory_format)


def signature(value: Any) -> Any:
    """A hashable key for an op's arguments: tensors by shape, strides and dtype."""
    if isinstance(value, torch.Tensor):
        return (value.shape, value.stride(), value.dtype)
    if isinstance(value, (tuple, list)):
        return tuple(signature(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, signature(v)) for k, v in value.items())
    if isinstance(value, _PLAIN):
        return (type(value), value)
    raise TypeError("not cacheable")


_OUT_VARIANTS: dict = {}


def out_variant(func) -> tuple | None:
    """The op's ``out=`` overload and its output argument names, to write straight into holders."""
    if func in _OUT_VARIANTS:
        return _OUT_VARIANTS[func]
    found = None
    if all(str(r.type) == "Tensor" for r in func._schema.returns):
        wanted = [(a.name, str(a.type)) for a in func._schema.arguments]
        for name in func.overloadpacket.overloads():
            schema = getattr(func.overloadpacket, name)._schema
            outs = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
            rest = [(a.name, str(a.type)) for a in schema.arguments if a.name not in outs]
            if outs and rest == wanted and len(outs) == len(func._schema.returns):
                found = (getattr(func.overloadpacket, name), outs)
                break
    _OUT_VARIANTS[func] = found
    return found


def flat(value: Any) -> list:
    """``value`` as a list: a tuple or list of outputs, or one output."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def meta_tree(value: Any) -> Any:
    """Tensors (in nested tuples and lists) replaced by meta tensors of the same layout."""
    if isinstance(value, torch.Tensor):
        return to_meta(value)
    if isinstance(value, (list, tuple)):
        return type(value)(meta_tree(v) for v in value)
    return value


def meta_kwargs(kwargs: dict) -> dict:
    """Keyword arguments for the meta kernel: tensors as meta tensors, no device, no pinned memory."""
    out = {k: meta_tree(v) for k, v in kwargs.items()}
    if out.get("device") is not None:
        out["device"] = "meta"
    if out.get("pin_memory"):
        out["pin_memory"] = False
    return out


def output_specs(func, args: tuple, kwargs: dict, cache: dict) -> Any:
    """Output specs from the op's meta kernel, once per argument signature (None: no meta kernel,
    a data-dependent shape, or an error; the caller then runs the op for real)."""
    try:
        key = (func, signature(args), signature(kwargs))
    except TypeError:
        key = None
    if key is not None and key in cache:
        return cache[key]
    try:
        specs = specs_of(func(*meta_tree(args), **meta_kwargs(kwargs)))
    except Exception:  # noqa: BLE001 - the caller runs the op for real, raising real errors
        return None
    if key is not None:
        cache[key] = specs
    return specs


def launch_results(func, args: tuple, kwargs: dict, specs: Any) -> tuple[Any, list, list]:
    """What the launch returns now: mutated arguments as themselves, new outputs as placeholders
    (``holders``, filled by the kernel from the op's outputs at ``positions``)."""
    schema = func._schema
    outputs = flat(specs)
    holders, positions = [], []
    values = {a.name: (args[i] if i < len(args) else kwargs.get(a.name))
              for i, a in enumerate(schema.arguments)}
    out = []
    for i, spec in enumerate(outputs):
        ret = schema.returns[i] if schema.is_mutable and i < len(schema.returns) else None
        owner = None if ret is None or ret.alias_info is None else next(
            (a.name for a in schema.arguments if a.alias_info is not None
             and a.alias_info.before_set == ret.alias_info.before_set), None)
        if owner is not None:
            out.append(values[owner])
        elif isinstance(spec, OutputSpec):
            holders.append(placeholder(spec))
            positions.append(i)
            out.append(holders[-1])
        else:
            out.append(spec)
    if not isinstance(specs, (tuple, list)):
        return out[0], holders, positions
    return (tuple(out) if isinstance(specs, tuple) else out), holders, positions
