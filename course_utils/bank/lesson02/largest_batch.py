"""The largest batch under a memory budget: what is left after weights, gradients and optimizer
state, divided by the bytes per sample, rounded down."""

from __future__ import annotations

import math
import random
from fractions import Fraction

from course_utils.core.exercise import Case, Exercise, patched

STATE_BUFFERS = {"sgd": 0, "sgd_momentum": 1, "adam": 2}


def largest_batch(budget: int, n_params: int, optimizer: str, per_sample: int,
                  bytes_per_value: int = 4) -> int:
    """Reference: the most samples whose activations fit after weights, grads and state."""
    fixed = n_params * bytes_per_value * (2 + STATE_BUFFERS[optimizer])
    return max(0, (budget - fixed) // per_sample)


def _fixed() -> list[Case]:
    gib = 2**30
    return [
        Case("1M params, Adam, 16 MiB budget, 64 KiB/sample", (16 * 2**20, 1_000_000, "adam", 65536)),
        Case("same with SGD", (16 * 2**20, 1_000_000, "sgd", 65536)),
        Case("same with SGD momentum", (16 * 2**20, 1_000_000, "sgd_momentum", 65536)),
        Case("7B params, Adam fp32, 128 GiB, 50 MiB/sample", (128 * gib, 7_000_000_000, "adam", 50 * 2**20)),
        Case("7B params, Adam fp32, 96 GiB: nothing fits", (96 * gib, 7_000_000_000, "adam", 50 * 2**20)),
        Case("budget exactly the fixed part", (16_000_000, 1_000_000, "adam", 1000)),
        Case("fp16 values, 2 bytes each", (10_000_000, 1_000_000, "adam", 1000, 2)),
        Case("room for exactly one sample: a batch of 1", (16_001_000, 1_000_000, "adam", 1000)),
        Case("one byte short of a second sample", (16_001_999, 1_000_000, "adam", 1000)),
        Case("one byte short of the first sample", (16_000_999, 1_000_000, "adam", 1000)),
        Case("an odd number of samples fit (7), 8 bytes per value",
             (3 * 8 * 5 + 7 * 3, 5, "sgd_momentum", 3, 8)),
        Case("no parameters at all", (4096, 0, "adam", 512)),
    ]


def _random(rng: random.Random) -> Case:
    n_params = rng.randint(1, 5_000_000)
    optimizer = rng.choice(sorted(STATE_BUFFERS))
    per_sample = rng.randint(1, 2**20)
    bpv = rng.choice((2, 4))
    budget = rng.randint(0, n_params * bpv * 5 + 100 * per_sample)
    return Case(f"budget {budget:,}, {n_params:,} params, {optimizer}, {per_sample:,} B/sample, "
                f"{bpv} B/value", (budget, n_params, optimizer, per_sample, bpv))


def _step_by_step(budget: int, n_params: int, optimizer: str, per_sample: int,
                  bytes_per_value: int = 4) -> int:
    """An alternative answer: subtract each fixed part, then divmod what is left."""
    left = budget
    for copies in (1, 1, {"sgd": 0, "sgd_momentum": 1, "adam": 2}[optimizer]):  # weights, grads, state
        left -= copies * n_params * bytes_per_value
    if left < per_sample:
        return 0
    samples, _rest = divmod(left, per_sample)
    return samples


def _floor_of_ratio(budget: int, n_params: int, optimizer: str, per_sample: int,
                    bytes_per_value: int = 4) -> int:
    """An alternative answer: math.floor of an exact fraction, clamped at zero."""
    values_per_param = 2 + ("momentum" in optimizer) + 2 * (optimizer == "adam")
    left = Fraction(budget - n_params * bytes_per_value * values_per_param, per_sample)
    return max(math.floor(left), 0)


EXERCISE = Exercise(
    id="02.largest_batch",
    title="The largest batch under a memory budget",
    reference=largest_batch,
    fixed=_fixed,
    random=_random,
    hints=(
        "Fixed part: weights + gradients + optimizer state, each n_params * bytes_per_value, "
        "with 0 state buffers for sgd, 1 for sgd_momentum, 2 for adam.",
        "What is left over, divided by the bytes per sample, rounded down: a partial sample "
        "does not fit.",
        "When the fixed part alone exceeds the budget, the answer is 0, not a negative number.",
    ),
    mutants={
        "forgets the gradients": patched(largest_batch, ("(2 + STATE", "(1 + STATE")),
        "counts Adam as one moment": patched(largest_batch, ("STATE_BUFFERS[optimizer]",
                                                             "min(1, STATE_BUFFERS[optimizer])")),
        "returns a negative batch": patched(largest_batch, ("max(0, (budget - fixed) // per_sample)",
                                                            "(budget - fixed) // per_sample")),
        "rounds up": patched(largest_batch, ("(budget - fixed) // per_sample",
                                             "-((fixed - budget) // per_sample)")),
        "true division, rounded down, as a float": patched(largest_batch, (
            "max(0, (budget - fixed) // per_sample)", "max(0.0, (budget - fixed) / per_sample // 1)")),
    },
    alternatives={
        "each fixed part subtracted, then divmod": _step_by_step,
        "math.floor of an exact fraction": _floor_of_ratio,
    },
)
