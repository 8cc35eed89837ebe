"""Faithful CPU emulations of effects only an Apple GPU shows, each labelled *emulated*.

Each emulation acts at the layer where the real effect happens (PyTorch's dispatcher, or a device
queue), so unmodified code is affected as on an affected Mac. One submodule per effect:
asynchronous execution (lesson 03: ``async_queue``, with ``meta_specs`` for what a launch computes
before its kernel runs), CPU fallback (lesson 04: ``mps_fallback``), the in-place bug on
non-contiguous outputs (lesson 06: ``inplace``).
"""

from __future__ import annotations

import importlib
import sys

# Names re-exported lazily, so `import course_utils.toolkit.emulate` stays cheap (lesson 06's module loads
# on first use): `from course_utils.toolkit.emulate import mps_inplace_bug, known_bug_status`.
_LAZY = {"mps_inplace_bug": "inplace", "mps_random_bug": "inplace", "known_bug_status": "inplace"}


def active_label() -> str:
    """Empty when no emulation is on; otherwise the words a result produced under one must carry,
    e.g. ``"emulated: mps_inplace_bug()"``. Only emulations already imported can be on."""
    names = []
    for module, what in (("inplace", "mps_inplace_bug()"), ("mps_fallback", "emulate_fallback()")):
        loaded = sys.modules.get(f"course_utils.toolkit.emulate.{module}")
        if loaded is not None and loaded.active() is not None:
            names.append(what)
    return f"emulated: {', '.join(names)}" if names else ""


def labelled(message: str) -> str:
    """``message``, with the active emulation named when one is on and the message does not say so."""
    label = active_label()
    return f"{message} ({label})" if label and "emulated" not in message.lower() else message


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"course_utils.toolkit.emulate.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'course_utils.toolkit.emulate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
