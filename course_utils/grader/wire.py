"""Return values and exceptions from a graded submission, as tagged JSON (``course grade``).

The submission's process *encodes* what its functions returned; the grading process *decodes*
it. No unpickler ever touches the submission's bytes: the format is plain JSON in which every
non-scalar is an object ``{"t": tag, ...}``, and decoding builds only tensors, numbers, strings,
containers, ``torch.dtype``/``torch.device`` and inert stand-ins. Anything else a submission
returns (an ``nn.Module``, a numpy array, an object of its own class) arrives as an ``Opaque``
stand-in: it shows the submission's ``repr`` and equals nothing, so it can only fail a case.

An exception arrives as its type name, its class hierarchy (``module.qualname`` each) and its
message; ``decode_error`` rebuilds a stand-in of the closest class the grader already knows
(a builtin, or a torch exception already imported), so judges that ask ``isinstance(err,
RuntimeError)`` keep working.
"""

from __future__ import annotations

import base64
import math
import sys
from functools import lru_cache
from typing import Any

import torch

from course_utils.grader import wire_numpy
from course_utils.grader.wire_errors import MAX_TEXT, WireError, _clip, _safe_name, decode_error, encode_error  # noqa: F401 - the wire's API

MAX_DEPTH = 64
MAX_TENSOR_BYTES = 64 * 2**20  # tensor memory one decoded value may take in the grading process
MAX_ELEMENTS = 2**26  # elements of one tensor (an expanded view costs no memory but costs time)


class Opaque:
    """A value the wire format does not carry: shows the submission's repr, equals nothing."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__


@lru_cache(maxsize=256)
def _opaque_class(type_name: str) -> type:
    return type(type_name, (Opaque,), {"__module__": "submission"})


# --- encoding (in the submission's process) -----------------------------------------------------


def _repr(value: Any) -> str:
    try:
        return _clip(repr(value), 200)
    except BaseException:  # noqa: BLE001 - a hostile __repr__ must not lose the other results
        return f"<unprintable {type(value).__name__}>"


def _opaque(value: Any) -> dict:
    return {"t": "opaque", "type": type(value).__name__, "repr": _repr(value)}


def _tensor(t: torch.Tensor) -> dict:
    if t.layout != torch.strided or t.is_quantized:
        return _opaque(t)
    flags = {"requires_grad": t.requires_grad, "parameter": isinstance(t, torch.nn.Parameter)}
    t = t.detach()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    out = {"t": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
           "stride": list(t.stride()), "offset": t.storage_offset(), "device": t.device.type, **flags}
    span = _span(out["shape"], out["stride"])
    if t.device.type != "meta" and span:
        flat = torch.as_strided(t, (span,), (1,), t.storage_offset()).cpu().contiguous()
        out["data"] = base64.b64encode(flat.view(torch.uint8).numpy().tobytes()).decode("ascii")
    return out


def _span(shape: list[int], stride: list[int]) -> int:
    """Storage elements from the first to the last element a strided view reaches."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON-ready, tagged form of ``value`` (base-class methods only: no overrides run)."""
    if depth > MAX_DEPTH:
        return {"t": "opaque", "type": type(value).__name__, "repr": "<nested too deeply>"}
    if value is None or type(value) is bool:
        return value
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):  # np.float64 is a float, np.bool_ is not
        return wire_numpy.encode(value, numpy, _opaque, MAX_TENSOR_BYTES)
    if isinstance(value, int):
        number = int.__int__(value)
        return number if abs(number) < 2**63 else {"t": "int", "hex": hex(number)}
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if type(value) is complex:
        return {"t": "complex", "re": value.real, "im": value.imag}
    if type(value) is bytes:
        return {"t": "bytes", "b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, torch.dtype):
        return {"t": "dtype", "name": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"t": "device", "name": str(value)}
    if type(value) is torch.Size:
        return {"t": "size", "v": [int(n) for n in value]}
    if numpy is not None and isinstance(value, numpy.ndarray):
        return wire_numpy.encode(value, numpy, _opaque, MAX_TENSOR_BYTES)
    kind = next((k for k in (list, tuple, set, frozenset, dict) if isinstance(value, k)), None)
    if kind is not None:
        items = sorted(value, key=repr) if kind in (set, frozenset) else kind.__iter__(value)
        out = {"t": kind.__name__, "v": [encode(v, depth + 1) for v in items]} if kind is not dict else {
            "t": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]}
        if type(value) is not kind:  # a namedtuple, an OrderedDict: a stand-in subclass of its base
            out["class"] = type(value).__name__
        return out
    if isinstance(value, torch.nn.Module):
        return _module(value)
    return _opaque(value)


def _module(module: torch.nn.Module) -> dict:
    """A module as data: class name, training flag, parameters and buffers (no code)."""
    try:
        params = [[n, _tensor(p)] for n, p in module.named_parameters()]
        buffers = [[n, _tensor(b)] for n, b in module.named_buffers() if b is not None]
        modes = [[n, bool(m.training)] for n, m in module.named_modules()][:10_000]
    except BaseException:  # noqa: BLE001 - a hostile module: send what it looks like only
        return _opaque(module)
    return {"t": "module", "type": type(module).__name__, "training": bool(module.training),
            "params": params, "buffers": buffers, "modes": modes}


# --- decoding (in the grading process) ----------------------------------------------------------

DTYPES = {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


def _ints(values: Any, what: str) -> list[int]:
    if not isinstance(values, list) or len(values) > 64 or not all(
            type(v) is int and 0 <= v < 2**40 for v in values):
        raise WireError(f"bad tensor {what}")
    return values


class _Budget:
    """Bytes of tensor memory one decoded value may still allocate in the grading process."""

    def __init__(self, limit: int = MAX_TENSOR_BYTES):
        self.left = limit

    def take(self, nbytes: int) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise WireError(f"tensors larger than {MAX_TENSOR_BYTES // 2**20} MB")


def _decode_tensor(obj: dict, budget: _Budget) -> torch.Tensor:
    dtype = DTYPES.get(obj.get("dtype"))
    if dtype is None:
        raise WireError(f"unknown dtype {obj.get('dtype')!r}")
    shape, stride = _ints(obj.get("shape"), "shape"), _ints(obj.get("stride"), "stride")
    offset = obj.get("offset", 0)
    if len(shape) != len(stride) or type(offset) is not int or offset < 0:
        raise WireError("bad tensor layout")
    if math.prod(shape) > MAX_ELEMENTS:
        raise WireError("tensor has too many elements")
    span = _span(shape, stride)
    if obj.get("device") == "meta":
        t = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    elif span == 0:
        t = torch.empty_strided(shape, stride, dtype=dtype)
    else:
        budget.take((offset + span) * dtype.itemsize)
        raw = base64.b64decode(str(obj.get("data", "")), validate=True)
        if len(raw) != span * dtype.itemsize:
            raise WireError("tensor data does not match its shape")
        storage = torch.empty(offset + span, dtype=dtype)
        storage[offset:] = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype)
        t = storage.as_strided(shape, stride, offset)
    if obj.get("parameter") is True:
        return torch.nn.Parameter(t, requires_grad=obj.get("requires_grad") is True)
    if obj.get("requires_grad") is True and (dtype.is_floating_point or dtype.is_complex):
        t.requires_grad_(True)
    return t


CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset, "dict": dict}


@lru_cache(maxsize=256)
def _subclass(name: str, base: type) -> type:
    return type(name, (base,), {"__module__": "submission"})


def _container(tag: str, obj: dict) -> type:
    """The builtin container, or a stand-in subclass named as the submission's (a namedtuple is
    still not a plain tuple; its fields are not carried)."""
    base = CONTAINERS[tag]
    return base if "class" not in obj else _subclass(_safe_name(obj["class"], base.__name__), base)


def _decode_tagged(obj: dict, depth: int, budget: _Budget) -> Any:
    tag, items = obj.get("t"), obj.get("v")
    if tag in ("list", "tuple", "set", "frozenset"):
        if not isinstance(items, list):
            raise WireError(f"bad {tag}")
        values = [decode(v, depth + 1, budget) for v in items]
        return _container(tag, obj)(values)
    if tag == "dict":
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise WireError("bad dict")
        return _container(tag, obj)((decode(k, depth + 1, budget), decode(v, depth + 1, budget))
                                    for k, v in items)
    if tag == "tensor":
        return _decode_tensor(obj, budget)
    if tag == "dtype":
        if obj.get("name") not in DTYPES:
            raise WireError("unknown dtype")
        return DTYPES[obj["name"]]
    if tag == "device":
        return torch.device(str(obj.get("name")))
    if tag == "size":
        return torch.Size(_ints(items, "size"))
    if tag == "int":
        text = str(obj.get("hex"))
        if len(text) > 4000:
            raise WireError("integer too large")
        return int(text, 16)
    if tag == "complex":
        return complex(float(obj.get("re")), float(obj.get("im")))
    if tag == "bytes":
        return base64.b64decode(str(obj.get("b64", "")), validate=True)
    if tag == "module":
        return _decode_module(obj, budget)
    if tag == "numpy":
        return wire_numpy.decode(obj, budget.take, _ints, WireError, MAX_ELEMENTS)
    if tag == "opaque":
        return _opaque_class(_safe_name(obj.get("type"), "object"))(_clip(str(obj.get("repr")), 200))
    raise WireError(f"unknown tag {tag!r}")


def _owner(root: torch.nn.Module, dotted: str) -> tuple[torch.nn.Module, str]:
    if len(dotted) > 1000 or dotted.count(".") > MAX_DEPTH:
        raise WireError("module nested too deeply")
    *path, leaf = dotted.split(".")
    node = root
    for part in path:
        if not part.isidentifier() and not part.isdigit():
            raise WireError(f"bad module path {dotted!r}")
        if part not in node._modules:
            node.add_module(part, torch.nn.Module())
        node = node._modules[part]
    if not leaf.isidentifier():
        raise WireError(f"bad parameter name {dotted!r}")
    return node, leaf


def _decode_module(obj: dict, budget: _Budget) -> torch.nn.Module:
    """A stand-in module holding the submission's parameters and buffers (it cannot run)."""
    root = _opaque_module_class(_safe_name(obj.get("type"), "Module"))()
    for key, register in (("params", "register_parameter"), ("buffers", "register_buffer")):
        items = obj.get(key)
        if not isinstance(items, list) or len(items) > 10_000:
            raise WireError(f"bad module {key}")
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise WireError(f"bad module {key}")
            tensor = _decode_tensor(item[1], budget)
            owner, leaf = _owner(root, item[0])
            if register == "register_parameter" and not isinstance(tensor, torch.nn.Parameter):
                tensor = torch.nn.Parameter(tensor, requires_grad=tensor.requires_grad)
            getattr(owner, register)(leaf, tensor)
    root.train(obj.get("training") is True)
    if "modes" in obj:
        wire_numpy.set_modes(root, obj["modes"], _owner, WireError)
    return root


@lru_cache(maxsize=64)
def _opaque_module_class(type_name: str) -> type:
    return type(type_name, (torch.nn.Module,), {"__module__": "submission"})


def decode(obj: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """Rebuild a value from ``encode``'s form; raises WireError on anything malformed or too big."""
    budget = budget or _Budget()
    if depth > MAX_DEPTH + 1:
        raise WireError("nested too deeply")
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if isinstance(obj, dict):
        try:
            return _decode_tagged(obj, depth, budget)
        except WireError:
            raise
        except RecursionError:
            raise WireError("nested too deeply") from None
        except Exception as err:  # noqa: BLE001 - any failure on hostile data means "unreadable"
            raise WireError(f"bad {obj.get('t')!r}: {type(err).__name__}") from None
    raise WireError(f"unexpected {type(obj).__name__}")
