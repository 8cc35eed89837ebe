"""An honest timer for an asynchronous device, judged on ``case_inputs.FakeDevice``'s exact clock:
warm up, synchronize before and after each timed call, report the median."""

from __future__ import annotations

import random
import statistics

from course_utils.core.exercise import Case, Exercise, patched
from course_utils.labs.case_inputs import FakeDevice


def honest_time(fn, sync, clock, warmup: int, repeats: int) -> float:
    """Reference: warm up, then the median of ``repeats`` calls each synchronized before and after."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return statistics.median(times)


def _case(label: str, warmup: int, repeats: int, **device) -> Case:
    dev = FakeDevice(**device)
    return Case(label, (dev.run, dev.sync, dev.clock, warmup, repeats))


def _fixed() -> list[Case]:
    return [
        _case("seed 003's story: 3 ms launch, 35 ms work, a slow first call", 2, 5,
              launch=0.003, work=0.035, slow_calls=1, slow_extra=0.5),
        _case("the first three calls are slow", 3, 5, launch=0.001, work=0.02, slow_calls=3,
              slow_extra=0.2),
        _case("a 200 ms hiccup in the second timed call", 1, 5, launch=0.002, work=0.01,
              spike_at=3, spike=0.2),
        _case("tiny kernel: launch-bound", 1, 3, launch=2e-5, work=5e-6),
    ]


def _random(rng: random.Random) -> Case:
    warmup, repeats = rng.randint(1, 4), rng.choice((3, 5, 7))
    spike_at = warmup + rng.randint(1, repeats) if rng.random() < 0.5 else None
    device = dict(launch=rng.uniform(1e-5, 5e-3), work=rng.uniform(1e-4, 0.05),
                  slow_calls=rng.randint(0, warmup), slow_extra=rng.uniform(0.01, 1.0),
                  spike_at=spike_at, spike=rng.uniform(0.05, 0.5))
    return _case(f"random device: warmup={warmup} repeats={repeats} spike_at={spike_at}",
                 warmup, repeats, **device)


def _one_block(fn, sync, clock, warmup, repeats):
    for _ in range(warmup):
        fn()
    return honest_time(lambda: [fn() for _ in range(repeats)], sync, clock, 0, 1) / repeats


_TIMED_CALL = "sync()\n        start = clock()\n        fn()\n        sync()\n"

EXERCISE = Exercise(
    id="03.honest_timer",
    title="An honest timer for an asynchronous device",
    reference=honest_time,
    fixed=_fixed,
    random=_random,
    atol=1e-9,
    rtol=1e-6,
    hints=(
        "A call only queues work: sync() after it, or the clock stops before the device is done.",
        "Sync before starting the clock too, so leftover work from earlier calls is not counted.",
        "First calls pay one-time costs: make `warmup` untimed calls before timing.",
        "Report the median of the timed calls: one slow call (a hiccup) must not move the result.",
    ),
    mutants={
        "no sync at all": patched(honest_time, (_TIMED_CALL, "start = clock()\n        fn()\n")),
        "sync only before the call": patched(honest_time, ("fn()\n        sync()\n", "fn()\n")),
        "no warm-up": lambda fn, sync, clock, warmup, repeats: honest_time(fn, sync, clock, 0, repeats),
        "mean over every call, the first included": patched(
            honest_time, ("    for _ in range(warmup):\n        fn()\n", ""),
            ("range(repeats)", "range(warmup + repeats)"),
            ("statistics.median(times)", "sum(times) / len(times)")),
        "one block, averaged": _one_block,
    },
)
