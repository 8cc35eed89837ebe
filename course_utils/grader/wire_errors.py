"""Exceptions over ``wire``'s format (``course grade``): sent as type name, class hierarchy and
message; rebuilt as a stand-in of the closest class the grading process already knows (a builtin,
or a torch exception already imported), so a judge's ``isinstance(err, RuntimeError)`` holds.
"""

from __future__ import annotations

import builtins
import sys
from functools import lru_cache
from typing import Any

MAX_TEXT = 2000


class WireError(ValueError):
    """The submission's result could not be decoded (corrupt, too deep or too large)."""


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_name(name: object, fallback: str) -> str:
    name = str(name)
    return name if name.isidentifier() and len(name) <= 80 else fallback


def _mro_names(kind: type) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in kind.__mro__]


def encode_error(err: BaseException) -> dict:
    """An exception as type name, class hierarchy and message."""
    try:
        message = str(err)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable message>"
    return {"type": type(err).__name__, "mro": _mro_names(type(err)), "message": _clip(message)}


def _known_class(qualified: str) -> type | None:
    """A class the grading process already has: a builtin, or one in an imported torch module."""
    module, _, name = qualified.rpartition(".")
    if module == "builtins":
        found = getattr(builtins, name, None)
    elif module.split(".")[0] == "torch" and module in sys.modules and name.isidentifier():
        found = getattr(sys.modules[module], name, None)
    else:
        return None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


@lru_cache(maxsize=256)
def _stand_in_class(name: str, base: type) -> type:
    return type(name, (base,), {"__module__": "submission", "__str__": lambda self: self.args[0]})


def decode_error(obj: Any) -> BaseException:
    """A stand-in exception: the submission's type name, the nearest known base, the message."""
    if not isinstance(obj, dict):
        raise WireError("bad exception")
    name = _safe_name(obj.get("type"), "SubmissionError")
    message = _clip(str(obj.get("message", "")))
    mro = obj.get("mro") if isinstance(obj.get("mro"), list) else []
    for qualified in [str(q) for q in mro[:64]]:
        base = _known_class(qualified)
        if base is None:
            continue
        try:
            return _stand_in_class(name, base)(message)
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs 5 arguments: try the next
            continue
    return _stand_in_class(name, Exception)(message)
