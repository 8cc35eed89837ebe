"""Log-probabilities that never hit log(0)."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import gen
from course_utils.core.exercise import Case, Exercise, patched


def log_probs(logits):
    """Reference: log-probabilities over the last dimension, finite for any finite logits."""
    return F.log_softmax(logits, dim=-1)


def _case(label: str, seed: int, shape: tuple[int, ...], scale: float) -> Case:
    return Case(label, (scale * torch.randn(*shape, generator=gen(seed)),))


def _fixed() -> list[Case]:
    return [
        _case("ordinary logits (4, 6)", 81, (4, 6), 1.0),
        _case("very confident logits (scale 500)", 82, (3, 5), 500.0),
        _case("a batch of sequences (2, 3, 7)", 83, (2, 3, 7), 3.0),
    ]


def _random(rng: random.Random) -> Case:
    shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 3)))
    scale = rng.choice((0.1, 1.0, 40.0, 400.0))
    return _case(f"shape {shape}, logit scale {scale}", rng.randint(84, 10**6), shape, scale)


EXERCISE = Exercise(
    id="07.log_probs",
    title="Log-probabilities that never hit log(0)",
    reference=log_probs,
    fixed=_fixed,
    random=_random,
    atol=1e-4,
    rtol=1e-5,
    hints=("log(softmax(z)) underflows: softmax gives exactly 0 for very unlikely classes.",
           "F.log_softmax computes z - logsumexp(z) without forming the probability."),
    mutants={
        "log of softmax": lambda logits: torch.log(F.softmax(logits, dim=-1)),
        "log(softmax + 1e-8): finite, but capped at -18.4":
            lambda logits: torch.log(F.softmax(logits, dim=-1) + 1e-8),
        "log_softmax over the first dimension": patched(log_probs, ("dim=-1", "dim=0")),
    },
)
