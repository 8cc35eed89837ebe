"""Cross-entropy from raw logits."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import gen, value_judge
from course_utils.core.exercise import Case, Exercise


def classification_loss(logits, targets):
    """Reference: mean cross-entropy from raw logits."""
    return F.cross_entropy(logits, targets)


def _case(label: str, seed: int, n: int, c: int, scale: float = 1.0, transposed: bool = False) -> Case:
    g = gen(seed)
    logits = scale * (torch.randn(c, n, generator=g).t() if transposed
                      else torch.randn(n, c, generator=g))
    return Case(label, (logits, torch.randint(0, c, (n,), generator=g)))


def _fixed() -> list[Case]:
    return [
        _case("ordinary logits, 8 samples, 5 classes", 21, 8, 5),
        _case("confident logits (scale 300): some targets get probability 0", 22, 6, 4, scale=300.0),
        _case("two classes, a transposed (non-contiguous) logits view", 23, 5, 2, transposed=True),
        _case("one sample, many classes", 24, 1, 50),
        _case("7 samples, 3 classes, confident (scale 80), rows of a transposed view", 25, 7, 3,
              scale=80.0, transposed=True),
    ]


def _random(rng: random.Random) -> Case:
    n, c = rng.randint(1, 16), rng.randint(2, 12)
    scale = rng.choice((0.5, 1.0, 5.0, 200.0))
    return _case(f"{n} samples, {c} classes, logit scale {scale}", rng.randint(26, 10**6), n,
                 c, scale, rng.random() < 0.3)


def _gathered(logits, targets):
    """An alternative answer: log_softmax, then the target's entry of each row."""
    return -F.log_softmax(logits, dim=1).gather(1, targets[:, None]).mean()


def _logsumexp(logits, targets):
    """An alternative answer from the formula: logsumexp(z) - z[target], averaged."""
    picked = logits[torch.arange(len(targets)), targets]
    return (torch.logsumexp(logits, dim=-1) - picked).mean()


EXERCISE = Exercise(
    id="07.logits_loss",
    title="Cross-entropy from raw logits",
    reference=classification_loss,
    fixed=_fixed,
    random=_random,
    atol=1e-4,
    rtol=1e-4,
    judge=value_judge("logits", "targets", atol=1e-4, rtol=1e-4),
    hints=("F.cross_entropy applies log_softmax itself: give it the raw logits.",
           "Never form probabilities and take their log: they underflow to 0 for confident "
           "logits."),
    mutants={
        "softmax before cross_entropy":
            lambda logits, targets: classification_loss(F.softmax(logits, dim=-1), targets),
        "-log(softmax) of the target": lambda logits, targets:
            -torch.log(F.softmax(logits, dim=-1)[torch.arange(len(targets)), targets]).mean(),
        "log(softmax + 1e-8): finite, but capped":
            lambda logits, targets: F.nll_loss(torch.log(F.softmax(logits, dim=-1) + 1e-8), targets),
    },
    equivalent={
        "contiguous added: `return F.cross_entropy(logits, targets)` -> "
        "`return F.cross_entropy(logits, targets).contiguous()`":
            "the loss is a 0-d tensor: .contiguous() returns it unchanged",
    },
    alternatives={
        "log_softmax, then gather the targets": _gathered,
        "logsumexp minus the target's logit": _logsumexp,
    },
)
