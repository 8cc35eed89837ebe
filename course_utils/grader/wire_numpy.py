"""The parts of ``wire``'s format beyond tensors and builtins (``course grade``): numpy scalars and
arrays of plain numbers, and each submodule's train/eval flag.

A numpy value travels as dtype, shape and bytes and comes back as the same numpy type (an
``np.int64`` stays one, as ``check()`` sees it in the learner's kernel); an object, structured or
string array stays opaque (no pickle, no code). ``wire`` passes in its own helpers (the error to
raise, the tensor-memory budget, the module-path walker), so this module depends on nothing of it.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

NUMPY_KINDS = "biufc"  # bool, signed and unsigned integers, floats, complex: plain bytes
MAX_ITEMSIZE = 16
MAX_MODULES = 10_000


def encode(value: Any, numpy: Any, opaque: Callable[[Any], dict], max_bytes: int) -> dict:
    """A numpy scalar or array of plain numbers as dtype, shape and bytes (else ``opaque``)."""
    array = numpy.asarray(value)
    if (array.dtype.kind not in NUMPY_KINDS or array.dtype.itemsize > MAX_ITEMSIZE
            or array.nbytes > max_bytes):
        return opaque(value)
    data = base64.b64encode(numpy.ascontiguousarray(array).tobytes()).decode("ascii")
    return {"t": "numpy", "scalar": isinstance(value, numpy.generic), "dtype": array.dtype.str,
            "shape": list(array.shape), "b64": data}


def decode(obj: dict, take: Callable[[int], None], ints: Callable, error: type, max_elements: int) -> Any:
    """A numpy scalar or array of plain numbers (never an object array: no code, no pickle)."""
    import numpy

    try:
        dtype = numpy.dtype(str(obj.get("dtype"))[:16])
    except TypeError as err:
        raise error("unknown numpy dtype") from err
    if dtype.kind not in NUMPY_KINDS or dtype.itemsize > MAX_ITEMSIZE or dtype.fields is not None:
        raise error(f"unsupported numpy dtype {dtype.str!r}")
    shape = ints(obj.get("shape"), "shape")
    count = math.prod(shape)
    if count > max_elements:
        raise error("array has too many elements")
    take(count * dtype.itemsize)
    raw = base64.b64decode(str(obj.get("b64", "")), validate=True)
    if len(raw) != count * dtype.itemsize:
        raise error("array data does not match its shape")
    array = numpy.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if obj.get("scalar") is True:
        if shape:
            raise error("a numpy scalar with a shape")
        return array[()]
    return array


def set_modes(root: Any, modes: Any, owner: Callable, error: type) -> None:
    """Each submodule's train/eval flag as the submission's module had it (``owner`` makes the
    stand-in submodules on the way)."""
    if not isinstance(modes, list) or len(modes) > MAX_MODULES:
        raise error("bad module modes")
    for item in modes:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and type(item[1]) is bool):
            raise error("bad module modes")
        node = owner(root, f"{item[0]}.x")[0] if item[0] else root
        node.training = item[1]
