"""Log-probabilities that never hit log(0)."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import gen, value_judge
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
        _case("one class (last dimension of size 1): every log-probability is 0", 84, (4, 1), 5.0),
        _case("no rows at all: shape (0, 5)", 85, (0, 5), 1.0),
        _case("one 1-D row of 6 logits", 86, (6,), 40.0),
    ]


def _random(rng: random.Random) -> Case:
    shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 3)))
    scale = rng.choice((0.1, 1.0, 40.0, 400.0))
    return _case(f"shape {shape}, logit scale {scale}", rng.randint(87, 10**6), shape, scale)


def _minus_logsumexp(logits):
    """An alternative answer: z - logsumexp(z)."""
    return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


def _shifted(logits):
    """An alternative answer: shift by the row maximum, then log of the sum of exponentials."""
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


EXERCISE = Exercise(
    id="07.log_probs",
    title="Log-probabilities that never hit log(0)",
    reference=log_probs,
    fixed=_fixed,
    random=_random,
    atol=1e-4,
    rtol=1e-5,
    judge=value_judge("logits", atol=1e-4, rtol=1e-5),
    hints=("log(softmax(z)) underflows: softmax gives exactly 0 for very unlikely classes.",
           "F.log_softmax computes z - logsumexp(z) without forming the probability."),
    mutants={
        "log of softmax": lambda logits: torch.log(F.softmax(logits, dim=-1)),
        "log(softmax + 1e-8): finite, but capped at -18.4":
            lambda logits: torch.log(F.softmax(logits, dim=-1) + 1e-8),
        "log_softmax over the first dimension": patched(log_probs, ("dim=-1", "dim=0")),
    },
    equivalent={
        "contiguous added: `return F.log_softmax(logits, dim=-1)` -> "
        "`return F.log_softmax(logits, dim=-1).contiguous()`":
            "log_softmax returns a new contiguous tensor: .contiguous() returns it unchanged",
    },
    alternatives={
        "z - logsumexp(z)": _minus_logsumexp,
        "shift by the maximum, then log-sum-exp by hand": _shifted,
    },
)
