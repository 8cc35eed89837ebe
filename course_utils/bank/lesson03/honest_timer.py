"""An honest timer for an asynchronous device, judged on ``case_inputs.FakeDevice``'s exact clock:
warm up, synchronize before and after each timed call, report the median."""

from __future__ import annotations

import math
import random
import statistics

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
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
        _case("lesson 03's story: 3 ms launch, 35 ms work, a slow first call", 2, 5,
              launch=0.003, work=0.035, slow_calls=1, slow_extra=0.5),
        _case("the first three calls are slow", 3, 5, launch=0.001, work=0.02, slow_calls=3,
              slow_extra=0.2),
        _case("a 200 ms hiccup in the second timed call", 1, 5, launch=0.002, work=0.01,
              spike_at=3, spike=0.2),
        _case("tiny kernel: launch-bound", 1, 3, launch=2e-5, work=5e-6),
        _case("per-call jitter, 5 timed calls (odd)", 1, 5, launch=0.001, work=0.01,
              jitter=(0.004, 0.0, 0.009, 0.001, 0.006, 0.002)),
        _case("per-call jitter, 4 timed calls (even: the mean of the middle two)", 2, 4,
              launch=0.001, work=0.01, jitter=(0.0, 0.005, 0.001, 0.008, 0.003)),
        _case("no warm-up asked for, a slow first call counts", 0, 3, launch=0.001, work=0.01,
              slow_calls=1, slow_extra=0.05, jitter=(0.002, 0.0, 0.001)),
        _case("one timed call", 2, 1, launch=0.002, work=0.03, slow_calls=2, slow_extra=0.3),
        _case("two timed calls and a spike in one", 1, 2, launch=0.001, work=0.01, spike_at=3,
              spike=0.1),
    ]


def _random(rng: random.Random) -> Case:
    warmup, repeats = rng.randint(0, 4), rng.choice((1, 2, 3, 4, 5, 6, 7))
    spike_at = warmup + rng.randint(1, repeats) if rng.random() < 0.5 else None
    work = rng.uniform(1e-4, 0.05)
    jitter = tuple(rng.uniform(0, 0.3 * work) for _ in range(rng.randint(2, 5))) if rng.random() < 0.7 else ()
    device = dict(launch=rng.uniform(1e-5, 5e-3), work=work,
                  slow_calls=rng.randint(0, warmup), slow_extra=rng.uniform(0.01, 1.0),
                  spike_at=spike_at, spike=rng.uniform(0.05, 0.5), jitter=jitter)
    return _case(f"random device: warmup={warmup} repeats={repeats} spike_at={spike_at}"
                 f"{' with jitter' if jitter else ''}", warmup, repeats, **device)


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """The device's own record is the evidence: ``warmup + repeats`` calls, each timed call
    bracketed by clock reads with the device idle, and the answer is the median of what the
    device saw timed (a number the answer made up, however right, is not a measurement)."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    problem = mismatch(expected.value, got.value, atol=1e-9, rtol=1e-6)
    if problem or got.inputs is None:
        return problem
    device = got.inputs[0][0].__self__
    warmup, repeats = case.args[3], case.args[4]
    if device.calls != warmup + repeats:
        return (f"the device ran fn {device.calls} times: time it with {warmup} untimed warm-up "
                f"calls, then {repeats} timed calls, {warmup + repeats} in all")
    timed = device.timed(warmup)
    for n, seconds in enumerate(timed, start=1):
        if seconds is None:
            return (f"timed call {n} was not measured between two clock reads taken with the device "
                    "idle: sync() before starting the clock and after the call, then read it")
    measured = statistics.median(timed)
    if not math.isclose(got.value, measured, rel_tol=1e-9, abs_tol=1e-12):
        return (f"your result {got.value!r} is not the median of the times the device saw you "
                f"measure ({measured!r})")
    return None


def _one_block(fn, sync, clock, warmup, repeats):
    for _ in range(warmup):
        fn()
    return honest_time(lambda: [fn() for _ in range(repeats)], sync, clock, 0, 1) / repeats


def _timestamps(fn, sync, clock, warmup: int, repeats: int) -> float:
    """An alternative answer: one sync, then a timestamp after each synchronized call (the end of
    one timed call is the start of the next); the median by hand."""
    for _ in range(warmup):
        fn()
    sync()
    stamps = [clock()]
    for _ in range(repeats):
        fn()
        sync()
        stamps.append(clock())
    times = sorted(b - a for a, b in zip(stamps, stamps[1:], strict=False))
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


def _one_loop(fn, sync, clock, warmup: int, repeats: int) -> float:
    """An alternative answer: one loop over every call, the first ``warmup`` not kept; the median
    as the middle of statistics.quantiles (or the one value)."""
    kept = []
    for i in range(warmup + repeats):
        sync()
        start = clock()
        fn()
        sync()
        if i >= warmup:
            kept.append(clock() - start)
    return kept[0] if len(kept) == 1 else statistics.quantiles(kept, n=2, method="inclusive")[0]


_TIMED_CALL = "sync()\n        start = clock()\n        fn()\n        sync()\n"

EXERCISE = Exercise(
    id="03.honest_timer",
    title="An honest timer for an asynchronous device",
    reference=honest_time,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    in_process_only="its check reads the device's own record of the calls, syncs and clock reads "
                    "the answer made, which only the answer's own process can see; a submission "
                    "could return a made-up time",
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
        "the fastest timed call": patched(honest_time, ("statistics.median(times)", "min(times)")),
        "the upper middle call for an even count": patched(
            honest_time, ("statistics.median(times)", "sorted(times)[len(times) // 2]")),
        "median_low": patched(honest_time, ("statistics.median(times)", "statistics.median_low(times)")),
    },
    alternatives={
        "timestamps shared between calls, the median by hand": _timestamps,
        "warm-up inside the loop, statistics.quantiles' middle": _one_loop,
    },
)
