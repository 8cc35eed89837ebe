"""The in-place bug on non-contiguous outputs, emulated at the dispatcher (lesson 06). *Emulated.*

On affected Macs (PyTorch < 2.4 with macOS < 15; R1 in references.md) ``addcmul_`` and ``addcdiv_`` on an MPS
tensor that is not contiguous left it **unchanged**. The MPS kernel handed its output to a
``Placeholder``, which quietly gathered a non-contiguous tensor into a contiguous temporary; the
kernel wrote its result there, and nothing copied it back (issue #118115, PR #124442; Elana
Simon's post of 2025-10-22). A follow-up bug did the same for the random in-place ops
(``normal_``, ``uniform_``, ``exponential_``, ``random_``, ``bernoulli_``; issue #165257).

``mps_inplace_bug(ops=...)`` does exactly that, as a ``TorchDispatchMode``: for a named in-place
op (and its ``_foreach_`` form) whose output is on the emulated device and not contiguous, the op
runs on a contiguous temporary copy of the output, and the temporary is dropped. So unmodified
code, ``torch.optim.Adam`` included (per-tensor loop or ``foreach``), meets the bug as on an
affected Mac. Contiguous outputs, out-of-place ops and every op not named run normally.

Which tensors count as on the emulated device: tensors of the device type the emulation plays
(``pick_device()``: ``cpu`` on a machine without an accelerator, else the real ``mps``/``cuda``)
whose dtype MPS can hold. A float64 tensor cannot live on MPS (R1), so float64 outputs are
untouched: that is the story's red herring. A contiguous tensor with a storage offset (a slice of
rows) counts as contiguous, as in the post; whether 2.2's ``Placeholder`` also gathered those is not
in our sources. Not emulated: ``out=`` forms, ``fused=True`` optimizers (the sources say nothing about
them) and the kernels' slowness on non-contiguous outputs.

``known_bug_status()`` says whether *this* torch/macOS pair has the real bugs, per the sources,
and on a Mac with MPS can run the real minimal repro.
"""

from __future__ import annotations

import contextlib
import platform
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ADDC_OPS = ("addcmul_", "addcdiv_")
RANDOM_OPS = ("normal_", "uniform_", "exponential_", "random_", "bernoulli_")
NOT_ON_MPS = (torch.float64, torch.complex128)  # dtypes MPS cannot hold: such tensors live on the CPU
POST = ("Elana Simon, 'the bug that taught me more about PyTorch than years of using it', 2025-10-22, "
        "https://elanapearl.github.io/blog/2025/the-bug-that-taught-me-pytorch/")

_active: list[InplaceBug] = []


def active() -> InplaceBug | None:
    """The innermost ``mps_inplace_bug`` now in effect, or None (the sentinel asks this)."""
    return _active[-1] if _active else None


def _packet_names(ops: Iterable[str]) -> frozenset[str]:
    names = set()
    for op in ops:
        if not re.fullmatch(r"[a-z][a-z0-9_]*_", op):
            raise ValueError(f"{op!r} is not an in-place op name such as 'addcmul_'")
        names |= {f"aten::{op}", f"aten::_foreach_{op}"}
    return frozenset(names)


class InplaceBug(TorchDispatchMode):
    """An active ``mps_inplace_bug``: which ops it breaks, and what it dropped (``dropped``)."""

    def __init__(self, ops: Iterable[str], device: torch.device | str | None = None):
        super().__init__()
        if device is None:
            from course_utils.toolkit.device import pick_device

            device = pick_device()
        self.ops = tuple(ops)
        self.device_type = torch.device(device).type
        self._names = _packet_names(self.ops)
        self._hit: dict = {}  # OpOverload -> whether it is one of ours (asked once per overload)
        self.dropped: Counter[str] = Counter()  # op name -> outputs left unchanged

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ to keep torch.compile out of it, importing
        # torch._dynamo (about 2 s) on first use; nothing here is compiled, so skip that wrapper.
        return False

    def __repr__(self) -> str:
        where = "emulated on cpu" if self.device_type == "cpu" else f"emulated on {self.device_type}"
        return f"mps_inplace_bug(ops={self.ops}, {where})"

    def affects(self, t: torch.Tensor) -> bool:
        """Whether an in-place write to ``t`` is lost: on the emulated device and non-contiguous."""
        return (t.device.type == self.device_type and t.dtype not in NOT_ON_MPS
                and not t.is_contiguous())

    def _temporary(self, t: torch.Tensor, op: str) -> torch.Tensor:
        if not self.affects(t):
            return t
        self.dropped[op] += 1
        return t.clone(memory_format=torch.contiguous_format)  # the Placeholder's gathered copy

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ours = self._hit.get(func)
        if ours is None:
            ours = self._hit[func] = func._schema.name in self._names
        if not ours or not args:
            return func(*args, **kwargs)
        op = func._schema.name.removeprefix("aten::")
        out = args[0]
        if isinstance(out, torch.Tensor):  # addcmul_: the result lands in the temporary, then is lost
            func(self._temporary(out, op), *args[1:], **kwargs)
            return out
        temps = [self._temporary(t, op) for t in out]  # _foreach_addcmul_: one temporary per tensor
        return func(temps, *args[1:], **kwargs)

    def __enter__(self) -> InplaceBug:
        super().__enter__()
        _active.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _active.remove(self)
        super().__exit__(*exc)


def mps_inplace_bug(ops: Iterable[str] = ADDC_OPS,
                    device: torch.device | str | None = None) -> InplaceBug:
    """Emulate the lost in-place writes of affected Macs for ``ops`` (lesson 06). *Emulated.*

    ``with mps_inplace_bug():`` breaks ``addcmul_`` and ``addcdiv_`` (and ``_foreach_addcmul_``,
    ``_foreach_addcdiv_``) on non-contiguous outputs; ``mps_inplace_bug(RANDOM_OPS)`` is the random
    in-place follow-up; any in-place op names work (a planted bug). ``device`` is the device type
    the emulation plays (default: ``pick_device()``). The returned object counts what it dropped.
    """
    return InplaceBug(ops, device)


def mps_random_bug(device: torch.device | str | None = None) -> InplaceBug:
    """The random in-place follow-up bug (#165257), emulated: ``mps_inplace_bug(RANDOM_OPS)``."""
    return InplaceBug(RANDOM_OPS, device)


# --- machines: named, picklable settings of the emulation ----------------------------------------


@dataclass
class Machine:
    """A machine to run code on, as a reusable context manager: ``with machine: ...`` (lesson 06).

    It loses the writes of the in-place ``ops`` into non-contiguous outputs, emulated on tensors of
    ``device`` (the CPU by default); no ops: a healthy machine. Picklable, so graders can send one."""

    name: str
    ops: tuple[str, ...] = ()
    device: str = "cpu"
    _stack: list = field(default_factory=list, repr=False, compare=False)

    def __enter__(self):
        bug = mps_inplace_bug(self.ops, self.device) if self.ops else contextlib.nullcontext()
        self._stack.append(bug)
        return bug.__enter__()

    def __exit__(self, *exc):
        return self._stack.pop().__exit__(*exc)


HEALTHY = Machine("healthy Mac (torch >= 2.4)")
AFFECTED = Machine("affected Mac (torch 2.2, macOS 14)", ADDC_OPS)


# --- the real thing, on a real Mac ---------------------------------------------------------------


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text.split("+")[0])[:2]
    return tuple(int(p) for p in parts) if parts else None


def addc_affected(torch_version: str, macos_version: str | None) -> bool | None:
    """The addcmul_/addcdiv_ bug (#118115), per the sources (R1-R4 in references.md).

    torch >= 2.4: fixed (PR #124442), on any macOS -> False. torch < 2.4 on macOS < 15: affected ->
    True. torch < 2.4 on macOS >= 15: None (uncertain): macOS 15 skips the gathering copy only in
    torch builds with PR #128393 (after 2.4), so for an older torch the sources do not say.
    None also when there is no macOS version (not a Mac)."""
    tv, mv = _version(torch_version), _version(macos_version)
    if mv is None or tv is None:
        return None
    if tv >= (2, 4):
        return False
    return True if mv < (15,) else None


def random_affected(torch_version: str, macos_version: str | None) -> bool | None:
    """The random in-place bug (#165257) per the sources (R1, R4, R11, R12 in references.md).

    macOS < 15: True up to torch 2.10 (the post saw it there), None after (whether PR #165267
    landed is uncertain). macOS >= 15: False from torch 2.10 (the post places the bug on macOS < 15
    only), None for older torch (the macOS 15 path needs PR #128393; its first release is
    uncertain). None also when there is no macOS version (not a Mac)."""
    tv, mv = _version(torch_version), _version(macos_version)
    if mv is None or tv is None:
        return None
    if mv >= (15,):
        return False if tv >= (2, 10) else None
    return True if tv <= (2, 10) else None


def real_addcmul_repro(device: str = "mps") -> bool:
    """The minimal repro of #118115 on a real device: True when the bug shows (R2 in references.md)."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(2, 3, generator=g).t(), torch.rand(2, 3, generator=g).t()
    z = torch.rand(3, 2, generator=g)
    expected = torch.addcmul(x, y, z)  # out-of-place, on the CPU
    out = x.to(device).addcmul_(y.to(device), z.to(device))  # .to keeps the transposed layout
    return not torch.allclose(expected, out.cpu())


def real_random_repro(device: str = "mps") -> bool:
    """The random-op repro from the post on a real device: True when ``normal_`` wrote nothing."""
    return torch.zeros(10, 10, device=device).T.normal_().abs().max().item() == 0


@dataclass(frozen=True)
class BugStatus:
    """``known_bug_status()``'s answer; ``print()`` it."""

    on_mac: bool
    torch_version: str
    macos_version: str | None
    addc: bool | None  # addcmul_/addcdiv_ affected per the sources (None: uncertain or not a Mac)
    random: bool | None  # random in-place ops affected per the sources (None: uncertain or not a Mac)
    measured_addc: bool | None = None  # the real repro's result on mps, when run
    measured_random: bool | None = None
    repro_error: str | None = None  # why the real repro could not run (e.g. mps cannot allocate)

    def __str__(self) -> str:
        if not self.on_mac:
            return (f"not a Mac: emulated. torch {self.torch_version} here has no MPS backend; "
                    "lesson 06 reproduces the bug with mps_inplace_bug().")
        yes = {True: "AFFECTED", False: "not affected", None: "UNCERTAIN"}
        lines = [f"torch {self.torch_version} on macOS {self.macos_version} (per the sources, "
                 "R1-R4 and R11-R12 in references.md):",
                 f"  addcmul_/addcdiv_ on non-contiguous outputs (#118115): {yes[self.addc]}"
                 " (affected: torch < 2.4 on macOS < 15; fixed from torch 2.4 on any macOS; "
                 "torch < 2.4 on macOS 15: uncertain)",
                 f"  random in-place ops on non-contiguous tensors (#165257): {yes[self.random]}"
                 " (affected: macOS < 15, seen up to torch 2.10; whether PR #165267 was merged "
                 "is not confirmed; macOS 15 with torch older than 2.10: uncertain)"]
        for name, value in (("addcmul_ repro", self.measured_addc), ("normal_ repro", self.measured_random)):
            if value is not None:
                lines.append(f"  measured on this Mac's mps, {name}: "
                             f"{'bug SHOWS' if value else 'correct result'}")
        if self.repro_error:
            lines.append(f"  the real repro could not run on mps: {self.repro_error}")
        return "\n".join(lines)


def known_bug_status(torch_version: str | None = None, macos_version: str | None = None,
                     run_repro: bool = False) -> BugStatus:
    """Whether this torch/macOS pair has the real bugs, per the sources (lesson 06; R1-R4 in references.md).

    Off macOS it answers "not a Mac: emulated". Pass ``torch_version``/``macos_version`` to ask about
    another pair. ``run_repro=True`` also runs the real minimal repros on ``mps`` when this is a Mac
    with MPS available, and stores what they measured (never a guess).
    """
    mac = platform.mac_ver()[0] or None
    on_mac = macos_version is not None or mac is not None
    tv = torch_version or torch.__version__
    mv = macos_version or mac
    status = BugStatus(on_mac, tv, mv, addc_affected(tv, mv), random_affected(tv, mv))
    if run_repro and mac is not None and torch.backends.mps.is_available():
        try:
            measured = (real_addcmul_repro("mps"), real_random_repro("mps"), None)
        except (RuntimeError, TypeError) as err:  # e.g. a CI runner whose mps cannot allocate (R27)
            measured = (None, None, f"{type(err).__name__}: {err}"[:200])
        status = BugStatus(on_mac, tv, mv, status.addc, status.random, *measured)
    return status
