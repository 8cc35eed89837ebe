"""Lesson 07's exercises: fix the classic training bugs of the drill bank, graded by behaviour.

Each exercise links to a drill in ``course_utils.drills`` (its ``exercise`` field). Training
exercises return the model and are judged on what it learned: its parameters, and its loss on a
fresh batch, against the reference trained on the same batches. The mutants are the fixes
learners really write that hide the symptom but keep the bug.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.drills.models import LinearKeepingGrad

# --- shared helpers ------------------------------------------------------------------------------


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _batch(seed: int, n: int, d_in: int, d_out: int, scale: float = 1.0):
    g = _gen(seed)
    return torch.randn(n, d_in, generator=g), scale * torch.randn(n, d_out, generator=g)


def _linear(seed: int, d_in: int, d_out: int) -> nn.Linear:
    torch.manual_seed(seed)
    return LinearKeepingGrad(d_in, d_out)  # defined outside the bank: `course grade` sends it


def _optimizer(kind: str, params) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=0.05)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    return torch.optim.SGD(params, lr=0.1)


def _stale(model: nn.Module, seed: int) -> nn.Module:
    """Leave a gradient from earlier work in .grad (a validation pass that called backward)."""
    first = next(model.parameters())
    x, y = _batch(seed + 999, 4, first.shape[1], first.shape[0], scale=3.0)
    F.mse_loss(model(x), y).backward()
    return model


def _fresh_batch_losses(ref: nn.Module, mine: nn.Module) -> tuple[float, float]:
    """The reference's loss and the answer's on a fresh batch, both computed by the reference's
    module (``course grade`` receives a submission's parameters, not a model that can run)."""
    matrices = [w for w in ref.parameters() if w.dim() == 2]
    x, y = _batch(4242, 16, matrices[0].shape[1], matrices[-1].shape[0])
    names = [name for name, _ in ref.named_parameters()]
    with torch.no_grad():
        yours = torch.func.functional_call(ref, dict(zip(names, mine.parameters(), strict=True)), (x,))
        return F.mse_loss(ref(x), y).item(), F.mse_loss(yours, y).item()


def _model_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Compare trained models: every parameter, and the loss on a fresh batch."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if not isinstance(got.value, nn.Module):
        return f"return the trained model, got {type(got.value).__name__}"
    ref, mine = expected.value, got.value
    for (name, p), q in zip(ref.named_parameters(), mine.parameters(), strict=True):
        if not torch.allclose(p, q, atol=1e-5, rtol=1e-4):
            ours, yours = _fresh_batch_losses(ref, mine)
            diff = (p - q).abs().max().item()
            return (f"after training, parameter '{name}' differs from the reference by up to "
                    f"{diff:.3g}; on a fresh batch your model's loss is {yours:.4g}, the "
                    f"reference's {ours:.4g}")
    return None


def _training_case(label: str, seed: int, kind: str, n_batches: int, d_in: int = 3,
                   d_out: int = 2, stale: bool = True, accum: int | None = None) -> Case:
    model = _linear(seed, d_in, d_out)
    if stale:
        _stale(model, seed)
    opt = _optimizer(kind, model.parameters())
    size = 4 if accum else 8
    batches = [_batch(seed * 100 + i, size, d_in, d_out) for i in range(n_batches)]
    args = (model, opt, batches) if accum is None else (model, opt, batches, accum)
    return Case(label, args)


# --- 07.zero_grad_loop ---------------------------------------------------------------------------


def train(model, optimizer, batches):
    """Reference: one step per batch, each using only that batch's gradient."""
    for x, y in batches:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


def _zg_fixed() -> list[Case]:
    return [
        _training_case("SGD, 3 batches, a stale gradient left by a validation pass", 1, "sgd", 3),
        _training_case("SGD, 1 batch, a stale gradient", 2, "sgd", 1),
        _training_case("Adam, 3 batches, no stale gradient", 3, "adam", 3, stale=False),
        _training_case("SGD with momentum, 4 batches", 4, "momentum", 4),
    ]


def _zg_random(rng: random.Random) -> Case:
    kind = rng.choice(("sgd", "adam", "momentum"))
    n, d_in, d_out = rng.randint(1, 4), rng.randint(1, 6), rng.randint(1, 3)
    stale = rng.random() < 0.7
    return _training_case(f"{kind}, {n} batch(es), {d_in}->{d_out}, stale gradient={stale}",
                          rng.randint(5, 10**6), kind, n, d_in, d_out, stale)


def _zg_never(model, optimizer, batches):
    for x, y in batches:
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


def _zg_after_step(model, optimizer, batches):
    for x, y in batches:
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


def _zg_before_step(model, optimizer, batches):
    for x, y in batches:
        F.mse_loss(model(x), y).backward()
        optimizer.zero_grad()
        optimizer.step()
    return model


def _zg_once(model, optimizer, batches):
    optimizer.zero_grad()
    for x, y in batches:
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


# --- 07.accumulate -------------------------------------------------------------------------------


def train_accumulated(model, optimizer, micro_batches, accum_steps):
    """Reference: one step per ``accum_steps`` micro-batches, equal to a step on their union."""
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        (F.mse_loss(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    return model


def _acc_fixed() -> list[Case]:
    return [
        _training_case("SGD, 8 micro-batches, accum_steps=4", 11, "sgd", 8, accum=4),
        _training_case("SGD, 4 micro-batches, accum_steps=2, a stale gradient", 12, "sgd", 4,
                       accum=2),
        _training_case("SGD with momentum, 6 micro-batches, accum_steps=3", 13, "momentum", 6,
                       accum=3),
        _training_case("Adam, 4 micro-batches, accum_steps=4", 14, "adam", 4, accum=4),
        _training_case("accum_steps=1: plain training", 15, "sgd", 3, accum=1),
    ]


def _acc_random(rng: random.Random) -> Case:
    kind, accum = rng.choice(("sgd", "adam", "momentum")), rng.randint(1, 4)
    groups = rng.randint(1, 3)
    return _training_case(f"{kind}, {accum * groups} micro-batches, accum_steps={accum}",
                          rng.randint(16, 10**6), kind, accum * groups, rng.randint(1, 5),
                          rng.randint(1, 3), rng.random() < 0.5, accum=accum)


def _acc_seed_bug(model, optimizer, micro_batches, accum_steps):
    for step, (x, y) in enumerate(micro_batches):
        F.mse_loss(model(x), y).backward()
        if step % accum_steps == 0:
            optimizer.step()
    return model


def _acc_no_division(model, optimizer, micro_batches, accum_steps):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        F.mse_loss(model(x), y).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    return model


def _acc_zero_every_micro(model, optimizer, micro_batches, accum_steps):
    for i, (x, y) in enumerate(micro_batches):
        optimizer.zero_grad()
        (F.mse_loss(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
    return model


def _acc_never_zero(model, optimizer, micro_batches, accum_steps):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        (F.mse_loss(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
    return model


# --- 07.logits_loss ------------------------------------------------------------------------------


def classification_loss(logits, targets):
    """Reference: mean cross-entropy from raw logits."""
    return F.cross_entropy(logits, targets)


def _ce_case(label: str, seed: int, n: int, c: int, scale: float = 1.0,
             transposed: bool = False) -> Case:
    g = _gen(seed)
    logits = scale * (torch.randn(c, n, generator=g).t() if transposed
                      else torch.randn(n, c, generator=g))
    return Case(label, (logits, torch.randint(0, c, (n,), generator=g)))


def _ce_fixed() -> list[Case]:
    return [
        _ce_case("ordinary logits, 8 samples, 5 classes", 21, 8, 5),
        _ce_case("confident logits (scale 300): some targets get probability 0", 22, 6, 4,
                 scale=300.0),
        _ce_case("two classes, a transposed (non-contiguous) logits view", 23, 5, 2,
                 transposed=True),
        _ce_case("one sample, many classes", 24, 1, 50),
    ]


def _ce_random(rng: random.Random) -> Case:
    n, c = rng.randint(1, 16), rng.randint(2, 12)
    scale = rng.choice((0.5, 1.0, 5.0, 200.0))
    return _ce_case(f"{n} samples, {c} classes, logit scale {scale}", rng.randint(25, 10**6), n,
                    c, scale, rng.random() < 0.3)


def _ce_double_softmax(logits, targets):
    return F.cross_entropy(F.softmax(logits, dim=-1), targets)


def _ce_log_softmax_prob(logits, targets):
    return -torch.log(F.softmax(logits, dim=-1)[torch.arange(len(targets)), targets]).mean()


def _ce_epsilon(logits, targets):
    return F.nll_loss(torch.log(F.softmax(logits, dim=-1) + 1e-8), targets)


# --- 07.masked_token_mean ------------------------------------------------------------------------


def masked_mean(loss_per_token, attn_mask):
    """Reference: the mean loss over real tokens; attn_mask is (B, 1, S), True = real token."""
    mask = attn_mask.squeeze(1)
    return torch.where(mask, loss_per_token, 0.0).sum() / mask.sum()


def _mask_case(label: str, seed: int, lengths: list[int], seq: int, pad_value: float) -> Case:
    g = _gen(seed)
    b = len(lengths)
    loss = torch.rand(b, seq, generator=g)
    real = torch.arange(seq) < torch.tensor(lengths)[:, None]
    loss = torch.where(real, loss, pad_value)
    return Case(label, (loss, real[:, None, :]))


def _mask_fixed() -> list[Case]:
    return [
        _mask_case("4 sequences of lengths 6, 4, 3, 1; padding loss 0", 31, [6, 4, 3, 1], 6, 0.0),
        _mask_case("padding positions hold a large loss (1000)", 32, [5, 2, 3], 5, 1000.0),
        _mask_case("B == S = 4: a wrong mask shape would still broadcast", 33, [4, 1, 2, 3], 4,
                   7.0),
        _mask_case("padding loss is inf (log of a zero probability)", 34, [3, 1], 4, math.inf),
        _mask_case("no padding at all", 35, [3, 3], 3, 0.0),
    ]


def _mask_random(rng: random.Random) -> Case:
    seq, b = rng.randint(1, 8), rng.randint(1, 5)
    lengths = [rng.randint(1, seq) for _ in range(b)]
    pad = rng.choice((0.0, 5.0, 1e3, math.inf))
    return _mask_case(f"lengths {lengths}, S={seq}, padding loss {pad}", rng.randint(36, 10**6),
                      lengths, seq, pad)


def _mask_broadcast(loss_per_token, attn_mask):
    return (loss_per_token * attn_mask).sum() / attn_mask.sum()


def _mask_all_tokens(loss_per_token, attn_mask):
    return (loss_per_token * attn_mask.squeeze(1)).mean()


def _mask_multiply(loss_per_token, attn_mask):
    mask = attn_mask.squeeze(1)
    return (loss_per_token * mask).sum() / mask.sum()


# --- 07.predict ----------------------------------------------------------------------------------


def predict(model, x):
    """Reference: evaluation mode and no graph."""
    model.eval()
    with torch.no_grad():
        return model(x)


def _classifier(seed: int, d_in: int, n_classes: int) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(d_in, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(16, n_classes))
    with torch.no_grad():
        for _ in range(5):  # some training-mode use fills the running statistics
            model(torch.randn(32, d_in) + 1)
    return model.train()


def _predict_case(label: str, seed: int, d_in: int, n: int, classes: int = 3) -> Case:
    return Case(label, (_classifier(seed, d_in, classes),
                        torch.randn(n, d_in, generator=_gen(seed + 1))))


def _predict_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if isinstance(got.value, torch.Tensor) and got.value.requires_grad:
        return ("the prediction carries an autograd graph (requires_grad=True): run the forward "
                "pass under torch.no_grad()")
    return mismatch(expected.value, got.value, 1e-5, 1e-4)


def _predict_random(rng: random.Random) -> Case:
    d_in, n = rng.randint(2, 8), rng.randint(2, 10)
    return _predict_case(f"{n} samples with {d_in} features", rng.randint(40, 10**6), d_in, n)


def _predict_train_mode(model, x):
    with torch.no_grad():
        return model(x)


def _predict_keeps_graph(model, x):
    model.eval()
    return model(x)


def _predict_dropout_only(model, x):
    model[3].eval()  # dropout off, batch norm still on batch statistics
    with torch.no_grad():
        return model(x)


# --- 07.masked_attention -------------------------------------------------------------------------


def attention(q, k, v, pad_mask):
    """Reference: scaled dot-product attention; padding keys masked with -inf before softmax."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~pad_mask[:, None, :], float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


def _attn_case(label: str, seed: int, lengths: list[int], seq: int, dim: int) -> Case:
    g = _gen(seed)
    b = len(lengths)
    real = torch.arange(seq) < torch.tensor(lengths)[:, None]
    q = torch.randn(b, dim, seq, generator=g).transpose(1, 2)  # a non-contiguous view
    k = torch.randn(b, seq, dim, generator=g)
    v = torch.randn(b, seq, dim, generator=g)
    k = torch.where(real[..., None], k, 30.0)  # padding keys and values hold wild values
    v = torch.where(real[..., None], v, 1000.0)
    return Case(label, (q, k, v, real))


def _attn_fixed() -> list[Case]:
    return [
        _attn_case("2 sequences, lengths 5 and 3, dim 8", 51, [5, 3], 5, 8),
        _attn_case("one real token in a sequence of 4", 52, [1, 4], 4, 4),
        _attn_case("no padding", 53, [3, 3, 3], 3, 2),
    ]


def _attn_random(rng: random.Random) -> Case:
    seq, b, dim = rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 8)
    lengths = [rng.randint(1, seq) for _ in range(b)]
    return _attn_case(f"lengths {lengths}, S={seq}, dim {dim}", rng.randint(54, 10**6), lengths,
                      seq, dim)


def _attn_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
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
    return mismatch(expected.value[0], out, 1e-4, 1e-4)


def _attn_after_softmax(q, k, v, pad_mask):
    weights = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    weights = weights * pad_mask[:, None, :]
    return weights @ v, weights


def _attn_fill_zero(q, k, v, pad_mask):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = F.softmax(scores.masked_fill(~pad_mask[:, None, :], 0.0), dim=-1)
    return weights @ v, weights


def _attn_mask_queries(q, k, v, pad_mask):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = F.softmax(scores.masked_fill(~pad_mask[:, :, None], float("-inf")), dim=-1)
    return weights @ v, weights


# --- 07.split_normalise --------------------------------------------------------------------------


def normalise(train, test):
    """Reference: per-feature mean and std of the training rows, applied to both splits."""
    mean, std = train.mean(0), train.std(0)
    return (train - mean) / std, (test - mean) / std


def _split_case(label: str, seed: int, n_train: int, n_test: int, d: int, shift: float,
                column_major: bool = False) -> Case:
    g = _gen(seed)
    train = torch.randn(n_train, d, generator=g) * 3 + 5
    test = torch.randn(n_test, d, generator=g) * 3 + 5 + shift
    if column_major:
        train = train.t().contiguous().t()  # same values, non-contiguous layout
    return Case(label, (train, test))


def _split_fixed() -> list[Case]:
    return [
        _split_case("800 train rows, 200 test rows from a shifted period", 61, 800, 200, 3, 3.0),
        _split_case("a column-major (non-contiguous) training tensor", 62, 50, 10, 4, 1.0,
                    column_major=True),
        _split_case("one feature, small test split", 63, 20, 3, 1, -2.0),
    ]


def _split_random(rng: random.Random) -> Case:
    n, m, d = rng.randint(3, 60), rng.randint(1, 20), rng.randint(1, 5)
    shift = rng.choice((0.0, 1.5, -4.0))
    return _split_case(f"{n} train, {m} test rows, {d} features, test shift {shift}",
                       rng.randint(64, 10**6), n, m, d, shift, rng.random() < 0.3)


def _split_all_rows(train, test):
    both = torch.cat([train, test])
    mean, std = both.mean(0), both.std(0)
    return (train - mean) / std, (test - mean) / std


def _split_each_own(train, test):
    return (train - train.mean(0)) / train.std(0), (test - test.mean(0)) / test.std(0)


def _split_global(train, test):
    mean, std = train.mean(), train.std()
    return (train - mean) / std, (test - mean) / std


# --- 07.clipped_step -----------------------------------------------------------------------------


def clipped_step(model, optimizer, x, y, max_norm):
    """Reference: one step with the total gradient norm clipped to ``max_norm``."""
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return model


def _clip_case(label: str, seed: int, d_in: int, d_out: int, target_scale: float,
               max_norm: float) -> Case:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(d_in, 8), nn.Tanh(), nn.Linear(8, d_out))
    x, y = _batch(seed, 16, d_in, d_out, scale=target_scale)
    return Case(label, (model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, max_norm))


def _clip_fixed() -> list[Case]:
    return [
        _clip_case("huge targets: the gradient norm is far above max_norm=1", 71, 4, 2, 500.0, 1.0),
        _clip_case("small gradients: clipping must change nothing", 72, 3, 1, 0.01, 100.0),
        _clip_case("max_norm=0.5, one layer's gradient dominates", 73, 5, 3, 50.0, 0.5),
    ]


def _clip_random(rng: random.Random) -> Case:
    scale, max_norm = rng.choice((0.1, 10.0, 300.0)), rng.choice((0.25, 1.0, 5.0))
    return _clip_case(f"target scale {scale}, max_norm {max_norm}", rng.randint(74, 10**6),
                      rng.randint(1, 6), rng.randint(1, 3), scale, max_norm)


def _clip_none(model, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    optimizer.step()
    return model


def _clip_each(model, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    for p in model.parameters():
        torch.nn.utils.clip_grad_norm_([p], max_norm)
    optimizer.step()
    return model


def _clip_value(model, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
    optimizer.step()
    return model


def _clip_after_step(model, optimizer, x, y, max_norm):
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    optimizer.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return model


# --- 07.log_probs --------------------------------------------------------------------------------


def log_probs(logits):
    """Reference: log-probabilities over the last dimension, finite for any finite logits."""
    return F.log_softmax(logits, dim=-1)


def _lp_case(label: str, seed: int, shape: tuple[int, ...], scale: float) -> Case:
    return Case(label, (scale * torch.randn(*shape, generator=_gen(seed)),))


def _lp_fixed() -> list[Case]:
    return [
        _lp_case("ordinary logits (4, 6)", 81, (4, 6), 1.0),
        _lp_case("very confident logits (scale 500)", 82, (3, 5), 500.0),
        _lp_case("a batch of sequences (2, 3, 7)", 83, (2, 3, 7), 3.0),
    ]


def _lp_random(rng: random.Random) -> Case:
    shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 3)))
    scale = rng.choice((0.1, 1.0, 40.0, 400.0))
    return _lp_case(f"shape {shape}, logit scale {scale}", rng.randint(84, 10**6), shape, scale)


# --- 07.unit_rows --------------------------------------------------------------------------------


def unit_rows(x):
    """Reference: each row divided by max(its L2 norm, 1e-12); zero rows stay zero."""
    return F.normalize(x, dim=-1)


def _unit_case(label: str, seed: int, rows: int, cols: int, zero: int | None = None,
               tiny: int | None = None, transposed: bool = False) -> Case:
    g = _gen(seed)
    x = torch.randn(cols, rows, generator=g).t() if transposed else torch.randn(rows, cols,
                                                                                  generator=g)
    x = x.clone() if not transposed else x
    if zero is not None:
        x[zero] = 0.0
    if tiny is not None:
        x[tiny] = x[tiny] * 1e-7
    return Case(label, (x,))


def _unit_fixed() -> list[Case]:
    return [
        _unit_case("4 rows, row 2 all zeros", 91, 4, 8, zero=2),
        _unit_case("a row with a tiny norm (about 1e-7)", 92, 3, 5, tiny=1),
        _unit_case("a transposed (non-contiguous) input with a zero row", 93, 5, 3, zero=0,
                   transposed=True),
        _unit_case("one row, one column", 94, 1, 1),
    ]


def _unit_random(rng: random.Random) -> Case:
    rows, cols = rng.randint(1, 6), rng.randint(1, 6)
    zero = rng.randrange(rows) if rng.random() < 0.5 else None
    return _unit_case(f"{rows}x{cols}, zero row {zero}", rng.randint(95, 10**6), rows, cols, zero,
                      transposed=rng.random() < 0.3)


# --- the exercises -------------------------------------------------------------------------------

EXERCISES = [
    Exercise(
        id="07.zero_grad_loop",
        title="A training loop whose every step uses only its own batch",
        reference=train,
        fixed=_zg_fixed,
        random=_zg_random,
        n_random=8,
        judge=_model_judge,
        hints=("backward() adds into .grad; something must clear it before each backward().",
               "The model may arrive with a stale gradient: clear it before the first backward, "
               "not after the step.",
               "for x, y in batches: optimizer.zero_grad(); loss.backward(); optimizer.step()"),
        mutants={
            "never calls zero_grad": _zg_never,
            "zero_grad after step (a stale gradient leaks into step 1)": _zg_after_step,
            "zero_grad between backward and step (nothing learns)": _zg_before_step,
            "zero_grad once, before the loop": _zg_once,
        },
    ),
    Exercise(
        id="07.accumulate",
        title="Gradient accumulation equal to a big-batch step",
        reference=train_accumulated,
        fixed=_acc_fixed,
        random=_acc_random,
        n_random=8,
        judge=_model_judge,
        hints=("One optimizer.step() per accum_steps micro-batches, after the last of each group.",
               "Divide each micro-batch loss by accum_steps so the summed gradient is the mean.",
               "Zero the gradients before the first micro-batch and after every step."),
        mutants={
            "the seed's loop: step % accum == 0, no zero_grad, no division": _acc_seed_bug,
            "right schedule, loss not divided by accum_steps": _acc_no_division,
            "zero_grad on every micro-batch (nothing accumulates)": _acc_zero_every_micro,
            "divides and steps right but never zeroes": _acc_never_zero,
        },
    ),
    Exercise(
        id="07.logits_loss",
        title="Cross-entropy from raw logits",
        reference=classification_loss,
        fixed=_ce_fixed,
        random=_ce_random,
        atol=1e-4,
        rtol=1e-4,
        hints=("F.cross_entropy applies log_softmax itself: give it the raw logits.",
               "Never form probabilities and take their log: they underflow to 0 for confident "
               "logits."),
        mutants={
            "softmax before cross_entropy": _ce_double_softmax,
            "-log(softmax) of the target": _ce_log_softmax_prob,
            "log(softmax + 1e-8): finite, but capped": _ce_epsilon,
        },
    ),
    Exercise(
        id="07.masked_token_mean",
        title="The mean loss over real tokens",
        reference=masked_mean,
        fixed=_mask_fixed,
        random=_mask_random,
        hints=("attn_mask has shape (B, 1, S); loss_per_token is (B, S). What does their product's "
               "shape become?",
               "Bring the mask to (B, S) and divide by the number of real tokens, not of all.",
               "Padding may hold inf, and inf * 0 is NaN: select with torch.where or boolean "
               "indexing instead of multiplying."),
        mutants={
            "multiplies by the (B, 1, S) mask": _mask_broadcast,
            "right shape, but the mean over all tokens": _mask_all_tokens,
            "right shape and count, but multiplies (inf * 0 = NaN)": _mask_multiply,
        },
    ),
    Exercise(
        id="07.predict",
        title="Predictions in evaluation mode, without a graph",
        reference=predict,
        fixed=lambda: [_predict_case("a classifier with batch norm and dropout, in training mode",
                                     41, 4, 6),
                       _predict_case("two samples", 42, 3, 2)],
        random=_predict_random,
        n_random=8,
        judge=_predict_judge,
        hints=("Two switches: model.eval() for dropout and batch norm, torch.no_grad() for the "
               "graph.",
               "model.eval() does not stop autograd, and no_grad() does not change a module's "
               "mode."),
        mutants={
            "no_grad but still in training mode": _predict_train_mode,
            "eval() but the output keeps its graph": _predict_keeps_graph,
            "only dropout switched to eval": _predict_dropout_only,
        },
    ),
    Exercise(
        id="07.masked_attention",
        title="Attention that ignores padding",
        reference=attention,
        fixed=_attn_fixed,
        random=_attn_random,
        judge=_attn_judge,
        hints=("Mask the scores, not the weights: masking after softmax leaves rows that sum to "
               "less than 1.",
               "scores.masked_fill(~pad_mask[:, None, :], float('-inf')) masks the keys of every "
               "query.",
               "exp(-inf) = 0, so padding gets exactly zero weight and each row sums to 1."),
        mutants={
            "mask applied after softmax": _attn_after_softmax,
            "masked_fill with 0 (rows sum to 1, padding still weighted)": _attn_fill_zero,
            "masks the queries instead of the keys": _attn_mask_queries,
        },
    ),
    Exercise(
        id="07.split_normalise",
        title="Normalise with training statistics only",
        reference=normalise,
        fixed=_split_fixed,
        random=_split_random,
        atol=1e-4,
        rtol=1e-4,
        hints=("Which rows may the statistics see? Only the training rows.",
               "Per feature: mean(0) and std(0) of train, applied unchanged to both splits."),
        mutants={
            "statistics of all rows (the leak)": _split_all_rows,
            "each split with its own statistics": _split_each_own,
            "one global mean and std instead of per feature": _split_global,
        },
    ),
    Exercise(
        id="07.clipped_step",
        title="One SGD step with gradient-norm clipping",
        reference=clipped_step,
        fixed=_clip_fixed,
        random=_clip_random,
        n_random=8,
        judge=_model_judge,
        hints=("Clip between backward() and step(): after backward the gradients exist, after "
               "step it is too late.",
               "clip_grad_norm_ on all parameters at once: the total norm, not each tensor's."),
        mutants={
            "no clipping": _clip_none,
            "clips each parameter's norm separately": _clip_each,
            "clips values instead of the norm": _clip_value,
            "clips after the step": _clip_after_step,
        },
    ),
    Exercise(
        id="07.log_probs",
        title="Log-probabilities that never hit log(0)",
        reference=log_probs,
        fixed=_lp_fixed,
        random=_lp_random,
        atol=1e-4,
        rtol=1e-5,
        hints=("log(softmax(z)) underflows: softmax gives exactly 0 for very unlikely classes.",
               "F.log_softmax computes z - logsumexp(z) without forming the probability."),
        mutants={
            "log of softmax": lambda logits: torch.log(F.softmax(logits, dim=-1)),
            "log(softmax + 1e-8): finite, but capped at -18.4":
                lambda logits: torch.log(F.softmax(logits, dim=-1) + 1e-8),
            "log_softmax over the first dimension": lambda logits: F.log_softmax(logits, dim=0),
        },
    ),
    Exercise(
        id="07.unit_rows",
        title="Unit-length rows without dividing by zero",
        reference=unit_rows,
        fixed=_unit_fixed,
        random=_unit_random,
        hints=("A zero row has norm 0, and 0 / 0 is NaN.",
               "Divide by max(norm, 1e-12), as F.normalize does; adding 1e-8 distorts tiny rows.",
               "Norm of each row: x.norm(dim=-1, keepdim=True)."),
        mutants={
            "x / norm (NaN for a zero row)": lambda x: x / x.norm(dim=-1, keepdim=True),
            "x / (norm + 1e-8): no NaN, but tiny rows shrink":
                lambda x: x / (x.norm(dim=-1, keepdim=True) + 1e-8),
            "divides by the norm of the whole tensor": lambda x: x / x.norm().clamp_min(1e-12),
        },
    ),
]

QUIZ = Quiz("07", [
    Question(
        "You run 50 steps on the same batch without optimizer.zero_grad() and a tiny learning "
        "rate. The gradient used at step 50 is about how many times one step's?",
        ("1x", "about 7x (the square root of 50)", "50x", "2500x"),
        2, "each backward() adds one gradient to .grad: the sum of 50 nearly equal gradients is "
        "about 50 times one (seed 004 quick check; computed in this lesson)."),
    Question(
        "A 7B-parameter model in float32 takes about 28 GB of weights. Weights, gradients and "
        "Adam's two moment buffers together take about:",
        ("28 GB", "56 GB", "84 GB", "112 GB"),
        3, "16 bytes per parameter: 4 for the weight, 4 for its gradient, 8 for exp_avg and "
        "exp_avg_sq, before activations (seed 004 recap quiz; measured for a small model here)."),
    Question(
        "fp16 training without a GradScaler is fine for 500 steps, then every loss is NaN. Which "
        "mechanism fits best?",
        ("float16 rounds the learning rate down to zero after a while",
         "A gradient passes 65504, becomes inf, and the step writes NaN",
         "The data loader runs out of batches and repeats a bad one",
         "autocast switches itself off after a fixed number of steps"),
        1, "float16 overflows above 65504; a GradScaler skips such steps and lowers its scale "
        "(seed 004 incident 1; run here with real float16 arithmetic)."),
    Question(
        "In DDP, rank 0 skips a batch with continue while the other ranks go on. What happens?",
        ("The batch is skipped on every rank automatically",
         "The others wait in an all-reduce until the timeout",
         "Rank 0 raises an error at once and the job stops",
         "Each rank averages only its own gradients from then on"),
        1, "collectives match by call order; without timeout= the wait lasts 30 minutes "
        "(seed 004 incident 2; toolchain notes; run here with gloo)."),
    Question(
        "A custom attention zeroes the padding weights after softmax. Why is the output still "
        "wrong?",
        ("It is not wrong: a zero weight means no influence",
         "Padding already entered softmax's denominator",
         "Multiplying by a mask detaches the weights from autograd",
         "softmax over the keys is the wrong dimension for attention"),
        1, "mask the scores with -inf before softmax (seed 004 incident 3)."),
    Question(
        "Gradient checkpointing cuts the activation memory of a deep model. What does it cost?",
        ("Nothing: the recomputed values are cached for free",
         "Extra compute: blocks run their forward again in backward",
         "Lower accuracy, since recomputed activations are rounded",
         "It only works with float16 weights and activations"),
        1, "it keeps only block inputs and recomputes the rest in backward (seed 004 recap; "
        "forward calls counted in this lesson)."),
])
