"""The device-choice state machine: a usable preference wins, else mps, then cuda, then cpu."""

from __future__ import annotations

import itertools

from course_utils.core.exercise import Case, Exercise

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


def _if_chain(mps_built: bool, mps_available: bool, cuda_available: bool, prefer: str | None) -> str:
    """An alternative answer: the rule as a chain of ifs."""
    mps_ok = mps_built and mps_available
    if prefer == "cpu" or (prefer == "mps" and mps_ok) or (prefer == "cuda" and cuda_available):
        return prefer
    if mps_ok:
        return "mps"
    if cuda_available:
        return "cuda"
    return "cpu"


def _first_usable(mps_built: bool, mps_available: bool, cuda_available: bool,
                  prefer: str | None) -> str:
    """An alternative answer: the preference put in front of the automatic order, first usable wins."""
    usable = {"mps": mps_built and mps_available, "cuda": cuda_available, "cpu": True}
    order = ([prefer] if prefer else []) + ["mps", "cuda", "cpu"]
    return [kind for kind in order if usable[kind]][0]


EXERCISE = Exercise(
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
        "treats is_built() as available": lambda built, avail, cuda, prefer: choose_device(
            built, built, cuda, prefer),
        "ignores the preference": lambda built, avail, cuda, prefer: choose_device(built, avail, cuda, None),
        "trusts the preference blindly": lambda built, avail, cuda, prefer: prefer or choose_device(
            built, avail, cuda, None),
        "prefers cuda over mps": lambda built, avail, cuda, prefer: choose_device(
            built, avail and not cuda, cuda, prefer) if prefer != "mps" else choose_device(
            built, avail, cuda, prefer),
    },
    alternatives={
        "a chain of ifs": _if_chain,
        "the preference first, then the automatic order": _first_usable,
    },
)
