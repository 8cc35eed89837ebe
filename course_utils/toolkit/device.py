"""Where the course runs: the one place a device is chosen (lesson 01).

``diagnose()`` reports the three MPS states (torch not built with MPS, built but unavailable,
available), versions, other accelerators and the CPU-fallback variable. ``pick_device()`` is the
only function in the course that chooses a device; notebooks never paste their own
``if cuda ... elif mps ...`` block. ``require_same_device()`` fails early, naming both devices.
"""

from __future__ import annotations

import logging
import os
import platform
import re
from dataclasses import asdict, dataclass

import torch

from course_utils.core import startup as _startup

log = logging.getLogger(__name__)

FALLBACK_VAR = "PYTORCH_ENABLE_MPS_FALLBACK"
DEVICE_VAR = "MPS_DETECTIVE_DEVICE"  # optional override of the automatic choice, e.g. "cpu"
NOT_BUILT, UNAVAILABLE, AVAILABLE = "not built", "built but unavailable", "available"



@dataclass(frozen=True)
class Probe:
    """Raw facts about this machine; tests build their own to simulate every MPS state."""

    torch_version: str
    python_version: str
    system: str
    macos_version: str | None
    mps_built: bool
    mps_available: bool
    mps_allocates: bool | None  # None when not tried (MPS not available)
    accelerator: str | None  # torch.accelerator's device type when one is available
    fallback_now: str | None
    fallback_at_torch_import: str | None
    fallback_import_order_known: bool


def _mps_allocates() -> bool:
    """Hosted macOS runners report MPS available yet fail to allocate (R26, R27 in references.md).

    So: try one tensor."""
    try:
        torch.empty(1, device="mps")
        return True
    except (RuntimeError, OSError):
        return False


def probe() -> Probe:
    """Read this machine's facts with documented torch APIs."""
    mps = torch.backends.mps
    available = mps.is_available()
    accel = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    mac = platform.mac_ver()[0] or None
    return Probe(
        torch_version=torch.__version__,
        python_version=platform.python_version(),
        system=f"{platform.system()}-{platform.machine()}",
        macos_version=mac,
        mps_built=mps.is_built(),
        mps_available=available,
        mps_allocates=_mps_allocates() if available else None,
        accelerator=accel.type if accel is not None else None,
        fallback_now=os.environ.get(FALLBACK_VAR),
        fallback_at_torch_import=_startup.FALLBACK_AT_IMPORT,
        fallback_import_order_known=not _startup.TORCH_IMPORTED_FIRST,
    )


def mps_state(built: bool, available: bool) -> str:
    """One of the three states: 'not built', 'built but unavailable', 'available'."""
    if not built:
        return NOT_BUILT
    return AVAILABLE if available else UNAVAILABLE


@dataclass(frozen=True)
class Report:
    """``diagnose()``'s answer: facts plus the conclusions a learner acts on."""

    probe: Probe
    mps_state: str
    advice: str
    fallback_enabled: bool
    fallback_note: str

    def as_dict(self) -> dict:
        """A plain dict (the shape lesson 01's "read a report" exercise uses)."""
        out = asdict(self.probe)
        out.update(mps_state=self.mps_state, advice=self.advice,
                   fallback_enabled=self.fallback_enabled, fallback_note=self.fallback_note)
        return out

    def __str__(self) -> str:
        p = self.probe
        rows = [
            ("torch", p.torch_version), ("python", p.python_version), ("system", p.system),
            ("macOS", p.macos_version or "not macOS"), ("MPS", self.mps_state),
            ("accelerator", p.accelerator or "none"),
            (FALLBACK_VAR, self.fallback_note), ("next step", self.advice),
        ]
        return "\n".join(f"{k:<29} {v}" for k, v in rows)


ADVICE = {
    NOT_BUILT: "this torch has no MPS backend (normal off macOS): lessons use CPU and emulate MPS",
    UNAVAILABLE: "MPS is built but this Mac cannot use it: check macOS >= 14.0 (sw_vers) "
                 "on Apple silicon",
    AVAILABLE: "MPS is ready: lessons run on 'mps'",
}


def fallback_enabled_by(value: str | None) -> bool | None:
    """How torch's MPS library reads PYTORCH_ENABLE_MPS_FALLBACK (lesson 04; R48 in references.md).

    It parses the value with ``std::stoi``, and ``0`` means off: unset -> False, an integer (leading
    blanks and sign allowed, trailing text ignored, as ``stoi`` does) -> whether it is non-zero,
    anything else, or an integer outside a 32-bit ``int`` -> None (``stoi`` throws while the MPS
    library loads)."""
    if value is None:
        return False
    number = re.match(r"\s*[+-]?\d+", value)
    if number is None or not -2**31 <= int(number.group()) < 2**31:
        return None
    return int(number.group()) != 0


def _fallback_note(p: Probe) -> tuple[bool, str]:
    seen = p.fallback_at_torch_import
    value = seen if p.fallback_import_order_known else p.fallback_now
    parsed = fallback_enabled_by(value)
    enabled = bool(parsed)
    if parsed is None:
        return enabled, (f"{value!r} is not an int: std::stoi throws on it while torch loads its MPS "
                         "library, most likely aborting import torch on a Mac (read in the source, not "
                         "run here); use 1 (on) or 0 (off)")
    if not p.fallback_import_order_known:
        return enabled, f"{p.fallback_now or 'unset'} (torch was imported first: import order unknown)"
    if p.fallback_now != seen:
        return enabled, (f"changed after import torch ({seen or 'unset'} -> {p.fallback_now or 'unset'})"
                         ": restart the kernel for it to take effect")
    return enabled, f"{seen or 'unset'} (set before import torch)" if seen else "unset"


def diagnose(facts: Probe | None = None) -> Report:
    """Report the MPS state, versions, accelerator and the fallback variable."""
    p = facts or probe()
    state = mps_state(p.mps_built, p.mps_available)
    advice = ADVICE[state]
    if state == AVAILABLE and p.mps_allocates is False:
        advice = ("MPS says available but cannot allocate (typical of hosted CI runners): "
                  "use CPU here")
    enabled, note = _fallback_note(p)
    return Report(p, state, advice, enabled, note)


@dataclass(frozen=True)
class Choice:
    """The chosen device and why."""

    device: torch.device
    reason: str
    fell_back: bool = False


def _usable(kind: str, p: Probe) -> str | None:
    """None when ``kind`` can be used here, else the reason it cannot."""
    if kind == "cpu" or kind == "meta":
        return None
    if kind == "mps":
        state = mps_state(p.mps_built, p.mps_available)
        if state != AVAILABLE:
            return f"MPS is {state}"
        return None if p.mps_allocates is not False else "MPS cannot allocate memory here"
    if p.accelerator == kind:
        return None
    return f"no {kind} accelerator (found: {p.accelerator or 'none'})"


def decide(prefer: str | None, facts: Probe) -> Choice:
    """The device-choice state machine, free of side effects so every state can be tested."""
    if prefer and prefer != "auto":
        kind = torch.device(prefer).type
        problem = _usable(kind, facts)
        if problem is None:
            return Choice(torch.device(prefer), f"{prefer} as requested")
        fallback = decide(None, facts)
        return Choice(fallback.device, f"{prefer} requested but {problem}; using "
                      f"{fallback.device.type}", fell_back=True)
    for kind in ("mps", facts.accelerator):
        if kind and _usable(kind, facts) is None:
            return Choice(torch.device(kind), f"{kind} is available")
    why = _usable("mps", facts)
    return Choice(torch.device("cpu"), f"no accelerator ({why}); using cpu")


def pick_device(prefer: str | None = None, facts: Probe | None = None) -> torch.device:
    """Choose the course's device: ``prefer`` if usable, else mps, another accelerator, or cpu.

    ``prefer`` defaults to ``$MPS_DETECTIVE_DEVICE`` (e.g. "cpu" to force the CPU path).
    A preference that cannot be honoured falls back with a logged warning saying why.
    """
    choice = decide(prefer or os.environ.get(DEVICE_VAR), facts or probe())
    (log.warning if choice.fell_back else log.info)("device: %s", choice.reason)
    return choice.device


class DeviceMismatchError(RuntimeError):
    """A model and its inputs live on different devices."""


def module_device(model: torch.nn.Module) -> torch.device:
    """The single device holding all of a model's parameters and buffers."""
    devices = {t.device for t in (*model.parameters(), *model.buffers())}
    if len(devices) > 1:
        names = ", ".join(sorted(str(d) for d in devices))
        raise DeviceMismatchError(f"the model is split across devices: {names}")
    return devices.pop() if devices else torch.device("cpu")


def require_same_device(model: torch.nn.Module | torch.Tensor, *tensors: torch.Tensor) -> torch.device:
    """Raise DeviceMismatchError naming both devices unless model and tensors share one."""
    where = module_device(model) if isinstance(model, torch.nn.Module) else model.device
    for i, t in enumerate(tensors):
        if t.device != where:
            raise DeviceMismatchError(
                f"the model is on {where} but input {i} is on {t.device}: "
                f"move them together, e.g. input = input.to({str(where)!r})")
    return where


def summary(facts: Probe | None = None) -> str:
    """The lesson header line: torch version and the chosen device with the reason."""
    p = facts or probe()
    choice = decide(os.environ.get(DEVICE_VAR), p)
    return f"torch {p.torch_version} | device: {choice.device} ({choice.reason})"


def float64_works(device: torch.device | str) -> bool:
    """Whether ``device`` can hold a float64 tensor (MPS cannot: R1 in references.md)."""
    try:
        torch.zeros(1, dtype=torch.float64, device=device)
        return True
    except (TypeError, RuntimeError):
        return False
