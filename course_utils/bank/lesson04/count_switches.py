"""Count the backend switches of a path.

A path is a list of steps (op, device, mps_kernel): the op, the device its tensors are on, and
whether MPS has a kernel for it. A step runs on the cpu when its tensors are on the cpu or when
MPS has no kernel (a fallback); otherwise on mps.
"""

from __future__ import annotations

import itertools
import random

from course_utils.core.exercise import Case, Exercise, patched

# Lesson 04's five stages: host batch -> mps forward -> fallback op -> mps classifier -> host log.
SEED_PATH = [
    ("aten::lift_fresh", "cpu", False), ("aten::_to_copy", "mps", True),
    ("aten::embedding", "mps", True), ("aten::cumsum", "mps", False),
    ("aten::addmm", "mps", True), ("aten::_to_copy", "cpu", True),
]
OPS = ("aten::addmm", "aten::relu", "aten::cumsum", "aten::embedding", "aten::linalg_svd", "aten::mean")


def _runs_on(device: str, kernel: bool) -> str:
    return "cpu" if device == "cpu" or not kernel else device


def count_switches(path: list[tuple[str, str, bool]]) -> int:
    """Reference: places each step runs on, then count changes between neighbours."""
    places = [_runs_on(device, kernel) for _, device, kernel in path]
    return sum(a != b for a, b in zip(places, places[1:], strict=False))


def _fixed() -> list[Case]:
    mps = [("aten::addmm", "mps", True), ("aten::relu", "mps", True)]
    return [
        Case("lesson 04's five-stage path", (SEED_PATH,)),
        Case("an empty path", ([],)),
        Case("all on mps", (mps,)),
        Case("tokenizing on the cpu first (no MPS kernel needed there)",
             ([("aten::lift_fresh", "cpu", False), ("aten::_unique2", "cpu", False), *mps],)),
        Case("two fallbacks in a row",
             ([mps[0], ("aten::cumsum", "mps", False), ("aten::linalg_svd", "mps", False), mps[1]],)),
        Case("the path starts with a fallback", ([("aten::embedding_renorm_", "mps", False), *mps],)),
        Case("a fallback, then the host", ([mps[0], ("aten::linalg_svd", "mps", False),
                                             ("aten::_to_copy", "cpu", True)],)),
        Case("one step", ([("aten::cumsum", "mps", False)],)),
        Case("every step falls back",
             ([("aten::cumsum", "mps", False), ("aten::linalg_svd", "mps", False)],)),
        Case("mps and cpu alternate, 5 steps (4 switches)",
             ([mps[0], ("aten::mean", "cpu", True)] * 2 + [mps[1]],)),
        Case("mps and cpu alternate, 4 steps (3 switches)", ([("aten::mean", "cpu", True), mps[0]] * 2,)),
    ]


def _random(rng: random.Random) -> Case:
    path = [(rng.choice(OPS), rng.choice(("mps", "mps", "cpu")), rng.random() < 0.7)
            for _ in range(rng.randint(0, 12))]
    return Case(f"random path of {len(path)} steps", (path,))


def _previous_place(path: list[tuple[str, str, bool]]) -> int:
    """An alternative answer: walk the path, remembering where the last step ran."""
    switches, last = 0, None
    for _op, device, kernel in path:
        here = "mps" if device == "mps" and kernel else "cpu"
        if last is not None and here != last:
            switches += 1
        last = here
    return switches


def _runs_of_places(path: list[tuple[str, str, bool]]) -> int:
    """An alternative answer: group neighbouring steps by place; the switches are the runs minus one."""
    places = ["cpu" if device == "cpu" or not kernel else device for _, device, kernel in path]
    return max(0, sum(1 for _ in itertools.groupby(places)) - 1)


_ignores_kernels = patched(count_switches, ("_runs_on(device, kernel)", "_runs_on(device, True)"))
_COUNT = "sum(a != b for a, b in zip(places, places[1:], strict=False))"

EXERCISE = Exercise(
    id="04.count_switches",
    title="Count the backend switches of a path",
    reference=count_switches,
    fixed=_fixed,
    random=_random,
    hints=(
        "First decide where each step runs: on the cpu if its tensors are on the cpu or if MPS "
        "has no kernel for it (a fallback), otherwise on mps.",
        "Then count neighbouring steps that run in different places: "
        "sum(a != b for a, b in zip(places, places[1:])).",
        "A fallback is not always two switches: two fallbacks in a row, or one at the start, "
        "change place fewer times.",
    ),
    mutants={
        "ignores missing MPS kernels": _ignores_kernels,
        "adds two switches per fallback": lambda path: _ignores_kernels(path) + 2 * sum(
            device != "cpu" and not kernel for _, device, kernel in path),
        "counts distinct places minus one": patched(count_switches, (_COUNT, "max(len(set(places)) - 1, 0)")),
        "counts the steps on the cpu": patched(count_switches, (_COUNT, 'sum(p == "cpu" for p in places)')),
        "counts the fallbacks": lambda path: sum(
            device != "cpu" and not kernel for _, device, kernel in path),
    },
    equivalent={
        "swapped arguments: `zip(places, places[1:], strict=False)` -> "
        "`zip(places[1:], places, strict=False)`":
            "a != b is symmetric: the pairs are the same neighbours, each in the other order",
        "keyword dropped: `zip(places, places[1:], strict=False)` -> `zip(places, places[1:])`":
            "strict=False is zip's default",
    },
    alternatives={
        "walk the path, remembering the last place": _previous_place,
        "itertools.groupby runs minus one": _runs_of_places,
    },
)
