"""Lesson 01's exercises: the device state machine, the same-device guard, a batch's bytes and
reading a diagnose report."""

from __future__ import annotations

import functools
import itertools
import math
import operator
import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz

# --- 01.choose_device ---------------------------------------------------------------------------

PREFERENCES = (None, "cpu", "mps", "cuda")


def choose_device(mps_built: bool, mps_available: bool, cuda_available: bool,
                  prefer: str | None) -> str:
    """Reference: a usable preference wins; otherwise mps, then cuda, then cpu."""
    usable = {"cpu": True, "mps": mps_built and mps_available, "cuda": cuda_available}
    if prefer is not None and usable[prefer]:
        return prefer
    return next(kind for kind in ("mps", "cuda", "cpu") if usable[kind])


def _device_states() -> list[Case]:
    cases = []
    for built, avail, cuda, prefer in itertools.product((False, True), (False, True),
                                                        (False, True), PREFERENCES):
        if avail and not built:
            continue  # impossible: an unbuilt backend is never available
        label = f"built={built} available={avail} cuda={cuda} prefer={prefer}"
        cases.append(Case(label, (built, avail, cuda, prefer)))
    return cases


def _choose_only_built(built, avail, cuda, prefer):
    return choose_device(built, built, cuda, prefer)


def _choose_ignores_prefer(built, avail, cuda, prefer):
    return choose_device(built, avail, cuda, None)


def _choose_trusts_prefer(built, avail, cuda, prefer):
    return prefer or choose_device(built, avail, cuda, None)


# --- 01.same_device -----------------------------------------------------------------------------


def same_device(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    """Reference: return the model's device, or raise RuntimeError naming both devices."""
    where = next(model.parameters()).device
    for i, t in enumerate(tensors):
        if t.device != where:
            raise RuntimeError(f"model is on {where} but tensor {i} is on {t.device}")
    return where


def _on(device: str, *shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=device)


def _guard_fixed() -> list[Case]:
    cpu_model, meta_model = nn.Linear(4, 2), nn.Linear(4, 2).to("meta")
    return [
        Case("model and batch on cpu", (cpu_model, _on("cpu", 3, 4))),
        Case("model on cpu, batch on meta", (cpu_model, _on("meta", 3, 4))),
        Case("model on meta, batch on cpu", (meta_model, _on("cpu", 3, 4))),
        Case("batch fine, labels on the other device", (cpu_model, _on("cpu", 3, 4), _on("meta", 3))),
        Case("model only, no tensors", (cpu_model,)),
    ]


def _guard_random(rng: random.Random) -> Case:
    model_dev = rng.choice(("cpu", "meta"))
    devs = [rng.choice(("cpu", "meta")) for _ in range(rng.randint(1, 4))]
    model = nn.Linear(2, 2).to(model_dev)
    tensors = tuple(_on(d, rng.randint(1, 3)) for d in devs)
    return Case(f"model on {model_dev}, tensors on {devs}", (model, *tensors))


def _guard_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if expected.error is None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return None if got.value == expected.value else f"returned {got.value!r}, expected {expected.value!r}"
    if not isinstance(got.error, RuntimeError | ValueError):
        return "expected a RuntimeError (or ValueError) naming both devices" + (
            f", got {type(got.error).__name__}: {got.error}" if got.error else ", nothing was raised")
    named = [d for d in ("cpu", "meta") if d in str(expected.error)]
    missing = [d for d in named if d not in str(got.error)]
    return f"the error message does not name {missing}" if missing else None


def _guard_first_only(model, *tensors):
    return same_device(model, *tensors[:1])


def _guard_vague(model, *tensors):
    try:
        return same_device(model, *tensors)
    except RuntimeError:
        raise RuntimeError("device mismatch") from None


def _guard_model_device(model, *tensors):
    return same_device(model.device, *tensors)  # nn.Module has no .device


# --- 01.batch_bytes -----------------------------------------------------------------------------

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
          torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64)


def batch_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """Reference: elements times bytes per element."""
    return math.prod(shape) * dtype.itemsize


def _bytes_fixed() -> list[Case]:
    return [
        Case("lesson 01's batch (32, 128, 768) float32", ((32, 128, 768), torch.float32)),
        Case("the same batch in float16", ((32, 128, 768), torch.float16)),
        Case("a scalar shape ()", ((), torch.float32)),
        Case("an empty batch (0, 10)", ((0, 10), torch.float32)),
        Case("a bool mask (8, 8)", ((8, 8), torch.bool)),
        Case("an image batch (16, 3, 224, 224) uint8", ((16, 3, 224, 224), torch.uint8)),
    ]


def _bytes_random(rng: random.Random) -> Case:
    shape = tuple(rng.randint(0, 64) for _ in range(rng.randint(0, 4)))
    dtype = rng.choice(DTYPES)
    return Case(f"shape {shape} {dtype}", (shape, dtype))


# --- 01.read_report -----------------------------------------------------------------------------


def read_report(report: dict) -> tuple[str, bool]:
    """Reference: (MPS state, whether torch runs with CPU fallback enabled)."""
    if not report["mps_built"]:
        state = "not built"
    else:
        state = "available" if report["mps_available"] else "built but unavailable"
    return state, report["fallback_at_torch_import"] == "1"


def _report(built: bool, avail: bool, at_import: str | None, now: str | None) -> dict:
    return {
        "torch_version": "2.13.0", "python_version": "3.11.7",
        "system": "Darwin-arm64" if built else "Linux-x86_64",
        "macos_version": "15.1" if built else None,
        "mps_built": built, "mps_available": avail, "mps_allocates": True if avail else None,
        "accelerator": "mps" if avail else None,
        "fallback_now": now, "fallback_at_torch_import": at_import,
        "fallback_import_order_known": True,
    }


FALLBACK_SETTINGS = ((None, None), ("1", "1"), (None, "1"), ("0", "0"), ("1", None))


def _report_fixed() -> list[Case]:
    cases = []
    for (built, avail), (at_import, now) in itertools.product(
            ((False, False), (True, False), (True, True)), FALLBACK_SETTINGS):
        label = f"built={built} available={avail}, fallback at import={at_import} now={now}"
        cases.append(Case(label, (_report(built, avail, at_import, now),)))
    return cases


def _report_random(rng: random.Random) -> Case:
    built = rng.random() < 0.6
    avail = built and rng.random() < 0.6
    at_import, now = rng.choice(FALLBACK_SETTINGS)
    return Case(f"random report built={built} available={avail} fallback {at_import}->{now}",
                (_report(built, avail, at_import, now),))


def _report_reads_env_now(report):
    return read_report({**report, "fallback_at_torch_import": report["fallback_now"]})


def _report_any_value_is_on(report):
    state, _ = read_report(report)
    return state, bool(report["fallback_at_torch_import"])


def _report_available_only(report):
    state = "available" if report["mps_available"] else "not built"
    return state, read_report(report)[1]


EXERCISES = [
    Exercise(
        id="01.choose_device",
        title="The device-choice state machine",
        reference=choose_device,
        fixed=_device_states,
        hints=(
            "MPS is usable only when it is built *and* available; CPU is always usable.",
            "Honour the preference only if that device is usable; otherwise choose automatically.",
            "Automatic order: mps, then cuda, then cpu.",
        ),
        mutants={
            "treats is_built() as available": _choose_only_built,
            "ignores the preference": _choose_ignores_prefer,
            "trusts the preference blindly": _choose_trusts_prefer,
        },
    ),
    Exercise(
        id="01.same_device",
        title="A guard that keeps model and batch together",
        reference=same_device,
        fixed=_guard_fixed,
        random=_guard_random,
        judge=_guard_judge,
        hints=(
            "nn.Module has no .device: read it from a parameter, next(model.parameters()).device.",
            "Check every tensor, not only the first one: labels travel separately from inputs.",
            "Raise RuntimeError with both devices in the message, e.g. f'model on {a}, input on {b}'.",
        ),
        mutants={
            "checks only the first tensor": _guard_first_only,
            "message does not name the devices": _guard_vague,
            "reads model.device": _guard_model_device,
        },
    ),
    Exercise(
        id="01.batch_bytes",
        title="How many bytes does a batch take?",
        reference=batch_bytes,
        fixed=_bytes_fixed,
        random=_bytes_random,
        hints=(
            "Bytes = number of elements × bytes per element.",
            "math.prod(shape) counts elements (and gives 1 for a scalar shape ()).",
            "dtype.itemsize is the bytes per element: 4 for float32, 2 for float16, 1 for bool.",
        ),
        mutants={
            "assumes 4 bytes per element": lambda shape, dtype: math.prod(shape) * 4,
            "forgets the element size": lambda shape, dtype: math.prod(shape),
            "reduce without a start value": lambda shape, dtype: functools.reduce(
                operator.mul, shape) * dtype.itemsize,
            "adds dimensions instead of multiplying": lambda shape, dtype: sum(shape) * dtype.itemsize,
        },
    ),
    Exercise(
        id="01.read_report",
        title="Read a diagnose() report",
        reference=read_report,
        fixed=_report_fixed,
        random=_report_random,
        hints=(
            "Three states: not built, built but unavailable, available; 'built' is checked first.",
            "torch reads PYTORCH_ENABLE_MPS_FALLBACK once, at import: use fallback_at_torch_import.",
            "Only the value '1' turns the fallback on; '0' is a string and is truthy in Python.",
        ),
        mutants={
            "reads the variable's current value": _report_reads_env_now,
            "treats any value as on": _report_any_value_is_on,
            "looks only at mps_available": _report_available_only,
        },
    ),
]

QUIZ = Quiz("01", [
    Question(
        "torch.backends.mps.is_built() is True but is_available() is False. Which state is this?",
        ("not built", "built but unavailable", "available", "fallback"),
        1, "is_built asks whether this wheel knows MPS; is_available whether this machine can use "
        "it now (seed 003, PyTorch MPS notes)."),
    Question(
        "Why did switching to float64 seem to 'fix' the frozen encoder in the addcmul_ story?",
        ("float64 has more precision for Adam", "MPS has no float64, so the run moved to CPU, "
         "where the bug does not exist", "float64 tensors are always contiguous",
         "Adam uses a different kernel for float64"),
        1, "a red herring: float32 on CPU also trained; the device mattered (facts §1)."),
    Question(
        "A model is on mps and the batch is on cpu. What happens in the forward pass?",
        ("PyTorch moves the batch for you", "An error about tensors on different devices",
         "It silently runs on CPU", "Unified memory makes it work"),
        1, "placement is explicit even with unified memory; move model and batch together "
        "(seed 003)."),
    Question(
        "You set os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a cell after import torch. "
        "What now?",
        ("Fallback is on from the next op", "Nothing changes until you restart the kernel and "
         "set it before import torch", "Only new tensors fall back", "torch re-reads it on "
         "every op"),
        1, "the variable is read once when the MPS library registers (facts §4)."),
    Question(
        "A CI runner on macOS reports mps available but every allocation fails. Why?",
        ("A PyTorch bug in is_available", "Hosted macOS arm64 runners do not support MPS although "
         "is_available() says True", "The runner has too little RAM", "MPS needs float64"),
        1, "GitHub's docs say MPS is unsupported on those runners (facts §5); pick_device probes "
        "an allocation for that reason."),
])
