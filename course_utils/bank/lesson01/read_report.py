"""Read a diagnose() report: the MPS state, and whether torch runs with CPU fallback enabled."""

from __future__ import annotations

import itertools
import random

from course_utils.core.exercise import Case, Exercise, patched

FALLBACK_SETTINGS = ((None, None), ("1", "1"), (None, "1"), ("0", "0"), ("1", None), ("2", "2"),
                     ("0", "1"), ("00", "1"))


def read_report(report: dict) -> tuple[str, bool]:
    """Reference: (MPS state, whether torch runs with CPU fallback enabled)."""
    if not report["mps_built"]:
        state = "not built"
    else:
        state = "available" if report["mps_available"] else "built but unavailable"
    value = report["fallback_at_torch_import"]
    return state, value is not None and int(value) != 0


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


def _fixed() -> list[Case]:
    cases = []
    for (built, avail), (at_import, now) in itertools.product(
            ((False, False), (True, False), (True, True)), FALLBACK_SETTINGS):
        label = f"built={built} available={avail}, fallback at import={at_import} now={now}"
        cases.append(Case(label, (_report(built, avail, at_import, now),)))
    return cases


def _random(rng: random.Random) -> Case:
    built = rng.random() < 0.6
    avail = built and rng.random() < 0.6
    at_import, now = rng.choice(FALLBACK_SETTINGS)
    return Case(f"random report built={built} available={avail} fallback {at_import}->{now}",
                (_report(built, avail, at_import, now),))


_STATES = {(False, False): "not built", (True, False): "built but unavailable",
           (True, True): "available"}


def _table(report: dict) -> tuple[str, bool]:
    """An alternative answer: the state from a table of (built, available), the value as a number."""
    state = _STATES[(bool(report["mps_built"]), bool(report["mps_built"] and report["mps_available"]))]
    return state, int(report["fallback_at_torch_import"] or 0) != 0


def _step_by_step(report: dict) -> tuple[str, bool]:
    """An alternative answer: the states asked in the other order, the value parsed as an integer."""
    if report["mps_built"] and report["mps_available"]:
        state = "available"
    elif report["mps_built"]:
        state = "built but unavailable"
    else:
        state = "not built"
    at_import = report["fallback_at_torch_import"]
    return state, bool(int(at_import)) if at_import is not None else False


_FALLBACK_ON = 'value = report["fallback_at_torch_import"]'
_PARSED = 'value is not None and int(value) != 0'

EXERCISE = Exercise(
    id="01.read_report",
    title="Read a diagnose() report",
    reference=read_report,
    fixed=_fixed,
    random=_random,
    hints=(
        "Three states: not built, built but unavailable, available; 'built' is checked first.",
        "torch reads PYTORCH_ENABLE_MPS_FALLBACK once, at import: use fallback_at_torch_import.",
        "torch parses the value as an integer (std::stoi in MPSFallback.mm, R48 in references.md): "
        "0 is off, any other integer on; '0' is a non-empty string, so truthy in Python.",
    ),
    mutants={
        "reads the variable's current value": patched(read_report, (
            _FALLBACK_ON, 'value = report["fallback_now"]')),
        "treats any value as on": patched(read_report, (_PARSED, "bool(value)")),
        "counts only the value '1' as on": patched(read_report, (_PARSED, 'value == "1"')),
        "looks only at mps_available": patched(read_report, ('if not report["mps_built"]:',
                                                              'if not report["mps_available"]:')),
        "compares the text with '0'": patched(read_report, (_PARSED, 'value not in (None, "0")')),
        "returns the value itself": patched(read_report, (_PARSED, "value")),
    },
    alternatives={
        "a table of (built, available); int(value or 0)": _table,
        "the states in the other order; bool(int(value))": _step_by_step,
    },
)
