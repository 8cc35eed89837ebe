"""Find the ops that fall back in a trace: ops on mps tensors without an MPS kernel, each once, in
order. A trace is a list of dicts: op, inputs (devices of its tensor inputs), outputs, mps_kernel."""

from __future__ import annotations

import random

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs


def find_fallbacks(events: list[dict]) -> list[str]:
    """Reference: ops whose tensors are on mps but MPS has no kernel; each once, in order."""
    found: list[str] = []
    for e in events:
        on_mps = "mps" in (e["inputs"] or e["outputs"])
        if on_mps and not e["mps_kernel"] and e["op"] not in found:
            found.append(e["op"])
    return found


def _event(op: str, inputs: tuple, outputs: tuple, kernel: bool) -> dict:
    return {"op": op, "inputs": inputs, "outputs": outputs, "mps_kernel": kernel}


HOST_STEPS = [_event("aten::lift_fresh", ("cpu",), ("cpu",), False),
              _event("aten::_unique2", ("cpu",), ("cpu", "cpu"), False),
              _event("aten::_to_copy", ("cpu",), ("mps",), True)]
DEVICE_STEPS = [_event("aten::embedding", ("mps", "mps"), ("mps",), True),
                _event("aten::addmm", ("mps", "mps", "mps"), ("mps",), True),
                _event("aten::relu", ("mps",), ("mps",), True)]
FALLBACK_STEPS = [_event("aten::embedding_renorm_", ("mps", "mps"), ("mps",), False),
                  _event("aten::cumsum", ("mps",), ("mps",), False),
                  _event("aten::linalg_svd", ("mps",), ("mps",), False),
                  _event("aten::add.Tensor", ("mps", "cpu"), ("mps",), False),  # a 0-dim cpu scalar
                  _event("aten::randperm", (), ("mps",), False)]  # a factory asked for mps


def _fixed() -> list[Case]:
    emb, cumsum, svd, add, randperm = FALLBACK_STEPS
    read = _event("aten::_local_scalar_dense", ("mps",), (), True)
    return [
        Case("the lesson's classifier", ([*HOST_STEPS[2:], emb, *DEVICE_STEPS, read],)),
        Case("no fallback, host steps only on the cpu", ([*HOST_STEPS, *DEVICE_STEPS],)),
        Case("one op falling back three times", ([*HOST_STEPS, cumsum, DEVICE_STEPS[0], cumsum,
                                                  cumsum],)),
        Case("two different ops", ([*DEVICE_STEPS, svd, DEVICE_STEPS[2], emb, svd],)),
        Case("a mixed mps/cpu-scalar op and a factory on mps", ([HOST_STEPS[0], add, randperm],)),
        Case("an empty trace", ([],)),
        Case("an op that is host work first, a fallback later: listed where it falls back",
             ([_event("aten::linalg_svd", ("cpu",), ("cpu",), False), cumsum, svd, cumsum],)),
        Case("a copy from the host to mps without a kernel is host work",
             ([_event("aten::_to_copy", ("cpu",), ("mps",), False), *DEVICE_STEPS],)),
        Case("one event, a fallback", ([randperm],)),
        Case("every op falls back", ([emb, cumsum, svd, add, randperm, emb],)),
    ]


def _random(rng: random.Random) -> Case:
    pool = HOST_STEPS + DEVICE_STEPS * 2 + FALLBACK_STEPS
    events = [dict(rng.choice(pool)) for _ in range(rng.randint(0, 14))]
    return Case(f"random trace of {len(events)} ops", (events,))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    return mismatch(expected.value, got.value) or changed_inputs(case, got, ("events",))


def _seen_set(events: list[dict]) -> list[str]:
    """An alternative answer: a set for what is already listed, the devices tested one by one."""
    found, seen = [], set()
    for e in events:
        devices = e["inputs"] if e["inputs"] else e["outputs"]
        if any(d == "mps" for d in devices) and e["mps_kernel"] is False and e["op"] not in seen:
            seen.add(e["op"])
            found.append(e["op"])
    return found


def _ordered_keys(events: list[dict]) -> list[str]:
    """An alternative answer: dict.fromkeys keeps the first appearance of each op, in order."""
    def falls_back(e: dict) -> bool:
        return not e["mps_kernel"] and "mps" in (tuple(e["inputs"]) or tuple(e["outputs"]))

    return list(dict.fromkeys(e["op"] for e in events if falls_back(e)))


def first_seen_anywhere(events: list[dict]) -> list[str]:
    """A wrong answer: orders the fallbacks by where the op first appears, host work included."""
    fallbacks = set(find_fallbacks(events))
    return [op for op in dict.fromkeys(e["op"] for e in events) if op in fallbacks]


EXERCISE = Exercise(
    id="04.find_fallbacks",
    title="Find the ops that fall back in a trace",
    reference=find_fallbacks,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "An op falls back when its tensors are on mps and MPS has no kernel for it. An op on cpu "
        "tensors (tokenizing, collating) is host work, not a fallback, kernel or not.",
        "Look at the inputs; an op with no tensor inputs (a factory) is where its outputs are.",
        "Return each op once, in the order it first appears.",
    ),
    mutants={
        "every op without an MPS kernel, host work included": patched(find_fallbacks, (
            'if on_mps and not e["mps_kernel"]', 'if not e["mps_kernel"]')),
        "lists an op every time it runs": patched(find_fallbacks, (' and e["op"] not in found', "")),
        "stops at the first fallback": lambda events: find_fallbacks(events)[:1],
        "misses factories (looks at inputs only)": patched(find_fallbacks, (
            '(e["inputs"] or e["outputs"])', 'e["inputs"]')),
        "orders by first appearance, host work included": first_seen_anywhere,
        "a set: each op once, order lost": lambda events: sorted(set(find_fallbacks(events))),
    },
    alternatives={
        "a set of what is listed, devices tested one by one": _seen_set,
        "dict.fromkeys of the ops that fall back": _ordered_keys,
    },
)
