"""The mean loss over real tokens."""

from __future__ import annotations

import math
import random

import torch

from course_utils.bank.lesson07._shared import gen, value_judge
from course_utils.core.exercise import Case, Exercise, patched


def masked_mean(loss_per_token, attn_mask):
    """Reference: the mean loss over real tokens; attn_mask is (B, 1, S), True = real token."""
    mask = attn_mask.squeeze(1)
    return torch.where(mask, loss_per_token, 0.0).sum() / mask.sum()


def _case(label: str, seed: int, lengths: list[int], seq: int, pad_value: float) -> Case:
    g = gen(seed)
    b = len(lengths)
    loss = torch.rand(b, seq, generator=g)
    real = torch.arange(seq) < torch.tensor(lengths)[:, None]
    loss = torch.where(real, loss, pad_value)
    return Case(label, (loss, real[:, None, :]))


def _fixed() -> list[Case]:
    return [
        _case("4 sequences of lengths 6, 4, 3, 1; padding loss 0", 31, [6, 4, 3, 1], 6, 0.0),
        _case("padding positions hold a large loss (1000)", 32, [5, 2, 3], 5, 1000.0),
        _case("B == S = 4: a wrong mask shape would still broadcast", 33, [4, 1, 2, 3], 4, 7.0),
        _case("padding loss is inf (log of a zero probability)", 34, [3, 1], 4, math.inf),
        _case("no padding at all", 35, [3, 3], 3, 0.0),
        _case("one sequence (B=1) of length 1 (S=1)", 36, [1], 1, 0.0),
        _case("sequences of length 1 in S=3, padding loss inf", 37, [1, 1, 2], 3, math.inf),
    ]


def _random(rng: random.Random) -> Case:
    seq, b = rng.randint(1, 8), rng.randint(1, 5)
    lengths = [rng.randint(1, seq) for _ in range(b)]
    pad = rng.choice((0.0, 5.0, 1e3, math.inf))
    return _case(f"lengths {lengths}, S={seq}, padding loss {pad}", rng.randint(38, 10**6),
                 lengths, seq, pad)


def _indexed(loss_per_token, attn_mask):
    """An alternative answer: boolean indexing picks the real tokens, then their mean."""
    return loss_per_token[attn_mask[:, 0, :]].mean()


def _masked_select(loss_per_token, attn_mask):
    """An alternative answer: masked_select, a float count."""
    mask = attn_mask.reshape(loss_per_token.shape)
    real = torch.masked_select(loss_per_token, mask)
    return real.sum() / mask.float().sum()


_MULTIPLIES = ("torch.where(mask, loss_per_token, 0.0)", "(loss_per_token * mask)")

EXERCISE = Exercise(
    id="07.masked_token_mean",
    title="The mean loss over real tokens",
    reference=masked_mean,
    fixed=_fixed,
    random=_random,
    judge=value_judge("loss_per_token", "attn_mask"),
    hints=("attn_mask has shape (B, 1, S); loss_per_token is (B, S). What does their product's "
           "shape become?",
           "Bring the mask to (B, S) and divide by the number of real tokens, not of all.",
           "Padding may hold inf, and inf * 0 is NaN: select with torch.where or boolean "
           "indexing instead of multiplying."),
    mutants={
        "multiplies by the (B, 1, S) mask":
            patched(masked_mean, ("attn_mask.squeeze(1)", "attn_mask"), _MULTIPLIES),
        "right shape, but the mean over all tokens":
            patched(masked_mean, _MULTIPLIES, (".sum() / mask.sum()", ".mean()")),
        "right shape and count, but multiplies (inf * 0 = NaN)": patched(masked_mean, _MULTIPLIES),
    },
    equivalent={
        "contiguous added: `return torch.where(mask, loss_per_token, 0.0).sum() / mask.…` -> "
        "`return (torch.where(mask, loss_per_token, 0.0).sum() / mask…`":
            "the mean is a 0-d tensor: .contiguous() returns it unchanged",
    },
    alternatives={
        "boolean indexing, then mean()": _indexed,
        "masked_select over a float count": _masked_select,
    },
)
