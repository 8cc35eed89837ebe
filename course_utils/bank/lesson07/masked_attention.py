"""Attention that ignores padding."""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import gen
from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs, grad_mode_left_off


def attention(q, k, v, pad_mask):
    """Reference: scaled dot-product attention; padding keys masked with -inf before softmax."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~pad_mask[:, None, :], float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


def _case(label: str, seed: int, lengths: list[int], seq: int, dim: int, packed: bool = False) -> Case:
    """Padding keys and values hold wild values. q is a non-contiguous view; with ``packed``, q, k
    and v are three views of ONE (B, S, 3D) tensor, at storage offsets 0, D and 2D."""
    g = gen(seed)
    b = len(lengths)
    real = torch.arange(seq) < torch.tensor(lengths)[:, None]
    if packed:
        qkv = torch.randn(b, seq, 3 * dim, generator=g)
        pad = ~real[..., None] & (torch.arange(3 * dim) >= dim)  # padding keys and values
        qkv = torch.where(pad, torch.where(torch.arange(3 * dim) < 2 * dim, 30.0, 1000.0), qkv)
        q, k, v = qkv.split(dim, dim=-1)
        return Case(label, (q, k, v, real))
    q = torch.randn(b, dim, seq, generator=g).transpose(1, 2)  # a non-contiguous view
    k = torch.randn(b, seq, dim, generator=g)
    v = torch.randn(b, seq, dim, generator=g)
    k = torch.where(real[..., None], k, 30.0)  # padding keys and values hold wild values
    v = torch.where(real[..., None], v, 1000.0)
    return Case(label, (q, k, v, real))


def _fixed() -> list[Case]:
    return [
        _case("2 sequences, lengths 5 and 3, dim 8", 51, [5, 3], 5, 8),
        _case("one real token in a sequence of 4", 52, [1, 4], 4, 4),
        _case("no padding", 53, [3, 3, 3], 3, 2),
        _case("one sequence (B=1) of one token (S=1), dim 1", 54, [1], 1, 1),
        _case("q, k, v: views of one packed (B, S, 3D) tensor at offsets 0, D, 2D", 55, [4, 2, 3], 4, 3,
              packed=True),
    ]


def _random(rng: random.Random) -> Case:
    seq, b, dim = rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 8)
    lengths = [rng.randint(1, seq) for _ in range(b)]
    packed = rng.random() < 0.3
    return _case(f"lengths {lengths}, S={seq}, dim {dim}{', packed q/k/v' if packed else ''}",
                 rng.randint(56, 10**6), lengths, seq, dim, packed)


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    left = grad_mode_left_off()
    if left:
        return left
    value = got.value
    if not (isinstance(value, tuple) and len(value) == 2
            and all(isinstance(t, torch.Tensor) for t in value)):
        return "return a tuple (output, weights) of two tensors"
    out, weights = value
    if weights.shape != expected.value[1].shape:
        return f"weights have shape {tuple(weights.shape)}, expected {tuple(expected.value[1].shape)}"
    sums = weights.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5) or torch.isnan(sums).any():
        return (f"attention rows must sum to 1: yours range from {sums.min().item():.4g} to "
                f"{sums.max().item():.4g}")
    pad = ~case.args[3][:, None, :]
    leaked = (weights.abs() * pad).max().item()
    if leaked > 1e-6:
        return f"a padding key still gets weight {leaked:.3g}: padding must get exactly 0"
    return (mismatch(expected.value[0], out, 1e-4, 1e-4)
            or changed_inputs(case, got, ("q", "k", "v", "pad_mask")))


def _where_then_softmax(q, k, v, pad_mask):
    """An alternative answer: torch.where with -inf, Tensor.softmax, matmul by einsum."""
    scores = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
    scores = torch.where(pad_mask.unsqueeze(1), scores, -math.inf)
    weights = scores.softmax(dim=-1)
    return torch.einsum("bqk,bkd->bqd", weights, v), weights


def _softmax_by_hand(q, k, v, pad_mask):
    """An alternative answer: softmax written out over the real keys only."""
    keys = pad_mask[:, None, :].expand(-1, q.shape[1], -1)
    scores = torch.matmul(q, k.mT) * (1.0 / math.sqrt(q.shape[-1]))
    top = scores.masked_fill(~keys, -math.inf).amax(dim=-1, keepdim=True)
    e = torch.exp(scores - top) * keys
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights


_MASK = '\n    scores = scores.masked_fill(~pad_mask[:, None, :], float("-inf"))'

EXERCISE = Exercise(
    id="07.masked_attention",
    title="Attention that ignores padding",
    reference=attention,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=("Mask the scores, not the weights: masking after softmax leaves rows that sum to "
           "less than 1.",
           "scores.masked_fill(~pad_mask[:, None, :], float('-inf')) masks the keys of every "
           "query.",
           "exp(-inf) = 0, so padding gets exactly zero weight and each row sums to 1."),
    mutants={
        "mask applied after softmax": patched(attention, (_MASK, ""), (
            "F.softmax(scores, dim=-1)", "F.softmax(scores, dim=-1) * pad_mask[:, None, :]")),
        "masked_fill with 0 (rows sum to 1, padding still weighted)":
            patched(attention, ('float("-inf")', "0.0")),
        "masks the queries instead of the keys":
            patched(attention, ("~pad_mask[:, None, :]", "~pad_mask[:, :, None]")),
    },
    equivalent={
        "in-place: `scores.masked_fill(~pad_mask[:, None, :], float('-inf'))` -> "
        "`scores.masked_fill_(~pad_mask[:, None, :], float('-inf'))`":
            "scores is a fresh tensor the function made: filling it in place changes nothing else",
        "swapped arguments: `k.transpose(-2, -1)` -> `k.transpose(-1, -2)`":
            "transpose(a, b) and transpose(b, a) swap the same two dimensions",
    },
    alternatives={
        "torch.where with -inf, softmax, einsum": _where_then_softmax,
        "softmax by hand over the real keys": _softmax_by_hand,
    },
)
