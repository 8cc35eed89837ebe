"""Loss bugs (lesson 07): softmax before cross_entropy, softmax over the wrong dimension, and a
loss mask that broadcasts silently."""

from __future__ import annotations

import math

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- double softmax ------------------------------------------------------------------------------

DOUBLE_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    x = torch.randn(128, 10)
    y = x.argmax(dim=1)                      # 10 classes, learnable by a linear layer
    model = nn.Linear(10, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    for step in range(60):
        probs = F.softmax(model(x), dim=-1)
        loss = F.cross_entropy(probs, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

DOUBLE_FIXED = DOUBLE_BUGGY.replace(
    "    probs = F.softmax(model(x), dim=-1)\n    loss = F.cross_entropy(probs, y)\n",
    "    loss = F.cross_entropy(model(x), y)       # raw logits: log_softmax happens inside\n")


def softmax_floor(classes: int) -> float:
    """The smallest value cross_entropy(softmax(z)) can reach: inputs in [0, 1] give at best
    probabilities e / (e + classes - 1) for the right class."""
    return math.log(1 + (classes - 1) / math.e)


def _double_measure(run: CodeRun) -> Symptom:
    import torch.nn.functional as F

    reported = run["loss"].item()
    with torch.no_grad():
        logits = run["model"](run["x"])
        true = F.cross_entropy(logits, run["y"]).item()
    classes, steps = logits.shape[-1], run["step"] + 1
    floor = softmax_floor(classes)
    stuck = reported >= floor - 1e-6
    return Symptom(f"reported loss after {steps} steps {reported:.3f} (floor for {classes} classes "
                   f"log(1 + {classes - 1}/e) = {floor:.3f}); true cross-entropy {true:.3f}", stuck,
                   {"reported": reported, "true": true, "floor": floor})


DOUBLE = Drill(
    id="losses.double_softmax",
    category="losses",
    title="softmax before F.cross_entropy",
    buggy_code=DOUBLE_BUGGY,
    fixed_code=DOUBLE_FIXED,
    measure=_double_measure,
    question=shuffled_question(
        "losses.double_softmax",
        "The loss plateaus well above zero on data a linear layer can learn. Why?",
        "cross_entropy re-normalises values that are already probabilities",
        ("cross_entropy needs one-hot float targets, not indices",
         "lr=1.0 overshoots, so the loss bounces above its minimum",
         "argmax labels carry no gradient, so the model cannot fit"),
        "F.cross_entropy expects raw logits; probabilities in [0, 1] squeezed through a second "
        "softmax can never give a confident distribution"),
    hints=("What does F.cross_entropy do to its input first?",
           "Pass the raw logits; use softmax only where you need probabilities (e.g. to report)."),
    explanation="F.cross_entropy = log_softmax + nll_loss, so it wants raw logits. Given "
                "probabilities (all in [0, 1]) it applies softmax a second time, which flattens the "
                "distribution: the best it can give the right class is e / (e + C - 1), so the "
                "loss cannot fall below log(1 + (C-1)/e) and the gradients shrink.",
    source="R62 in references.md (CrossEntropyLoss expects unnormalized logits)",
    exercise="07.logits_loss",
    variants=(
        Variant("5 classes",
                {"x": "features", "y": "labels", "model": "classifier"},
                (("torch.randn(128, 10)", "torch.randn(96, 5)"),
                 ("nn.Linear(10, 10)", "nn.Linear(5, 5)"))),
        Variant("a hidden layer, 80 steps",
                {"model": "net"},
                (("nn.Linear(10, 10)", "nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 10))"),
                 ("range(60)", "range(80)"))),
        Variant("nn.CrossEntropyLoss, the softmax as a method",
                {"x": "inputs", "y": "targets", "optimizer": "opt"},
                (("optimizer = torch.optim.SGD(model.parameters(), lr=1.0)",
                  "optimizer = torch.optim.SGD(model.parameters(), lr=1.0)\n"
                  "criterion = nn.CrossEntropyLoss()"),
                 ("F.softmax(model(x), dim=-1)", "model(x).softmax(dim=-1)"),
                 ("F.cross_entropy(", "criterion("))),
    ),
)

# --- softmax over the wrong dimension -------------------------------------------------------------

DIM_BUGGY = code("""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)              # [batch, seq, vocab]
    probs = F.softmax(logits, dim=0)           # normalise ... across the batch
    next_token = probs.argmax(dim=-1)
""")

DIM_FIXED = DIM_BUGGY.replace("dim=0)           # normalise ... across the batch",
                              "dim=-1)          # normalise across the vocabulary")


def _dim_measure(run: CodeRun) -> Symptom:
    probs, logits = run["probs"], run["logits"]
    sums = probs.sum(dim=-1)
    off = (sums - 1).abs().max().item()
    wrong = (run["next_token"] != logits.argmax(dim=-1)).sum().item()
    buggy = off > 1e-5 or wrong > 0
    span = f"{sums.min().item():.2f} to {sums.max().item():.2f}" if off > 1e-5 else "1 everywhere"
    return Symptom(f"sums over the vocabulary: {span}; next_token disagrees with "
                   f"logits.argmax at {wrong} of {sums.numel()} positions", buggy,
                   {"max_off": off, "wrong_tokens": wrong})


DIM = Drill(
    id="losses.softmax_wrong_dim",
    category="losses",
    title="softmax over the wrong dimension",
    buggy_code=DIM_BUGGY,
    fixed_code=DIM_FIXED,
    measure=_dim_measure,
    question=shuffled_question(
        "losses.softmax_wrong_dim",
        "logits has shape [batch, seq, vocab], and each next-token distribution sums to far from 1. What "
        "does softmax(dim=0) normalise over?",
        "The batch: sequences compete at each position",
        ("Each sequence's positions, one vocabulary entry at a time",
         "Each sequence's logits as one flat vector",
         "The vocabulary, since dim 0 is the default"),
        "softmax normalises along the dimension you name; for next-token probabilities that is "
        "the vocabulary, dim=-1"),
    hints=("Sum probs over the vocabulary: do you get 1?",
           "Name the dimension you normalise over: dim=-1 for the vocabulary."),
    explanation="softmax(dim=0) normalises each (position, token) across the batch, so "
                "sequences compete with each other and a position's probabilities no longer sum "
                "to 1; the argmax can pick a different token. Use dim=-1 (the vocabulary).",
    source="lesson 07 (softmax normalises along the dim it is given)",
    variants=(
        Variant("a batch of 3, 4 positions, 11 tokens",
                {"next_token": "predicted"},
                (("torch.randn(2, 5, 7)", "torch.randn(3, 4, 11)"),)),
        Variant("logits from a linear head",
                {"next_token": "choice"},
                (("logits = torch.randn(2, 5, 7)",
                  "hidden = torch.randn(4, 6, 16)\nhead = torch.nn.Linear(16, 9)\nlogits = head(hidden)"),)),
        Variant("softmax as a method, max(...).indices",
                {"next_token": "tokens"},
                (("torch.randn(2, 5, 7)", "torch.randn(8, 3, 5) * 2"),
                 ("F.softmax(logits, dim=0)", "logits.softmax(dim=0)"),
                 ("F.softmax(logits, dim=-1)", "logits.softmax(dim=-1)"),
                 ("probs.argmax(dim=-1)", "probs.max(dim=-1).indices"))),
    ),
)

# --- a loss mask that broadcasts ------------------------------------------------------------------

MASK_BUGGY = code("""
    import torch

    torch.manual_seed(0)
    B, S = 4, 6
    loss_per_token = torch.rand(B, S)
    lengths = torch.tensor([6, 4, 3, 1])
    attn_mask = (torch.arange(S) < lengths[:, None])[:, None, :]   # (B, 1, S), made for attention
    loss = (loss_per_token * attn_mask).sum() / attn_mask.sum()
""")

MASK_FIXED = MASK_BUGGY.replace(
    "loss = (loss_per_token * attn_mask).sum() / attn_mask.sum()\n",
    "mask = attn_mask.squeeze(1)                                     # (B, S)\n"
    "assert mask.shape == loss_per_token.shape\n"
    "loss = torch.where(mask, loss_per_token, 0.0).sum() / mask.sum()\n")


def _mask_measure(run: CodeRun) -> Symptom:
    per_token, lengths = run["loss_per_token"], run["lengths"]
    real = torch.arange(per_token.shape[1]) < lengths[:, None]
    truth = per_token[real].mean().item()
    got = run["loss"].item()
    used = run.get("mask", run["attn_mask"])
    product = tuple(torch.broadcast_shapes(per_token.shape, used.shape))
    buggy = not math.isclose(got, truth, rel_tol=1e-5)
    if not buggy and "mask" not in run.namespace:  # a fix that reshapes the mask where it uses it
        return Symptom(f"loss {fmt(got)}, the mean over real tokens {fmt(truth)}", False,
                       {"loss": got, "truth": truth})
    return Symptom(f"the masked product has shape {product}; loss {fmt(got)} vs the mean over "
                   f"real tokens {fmt(truth)}", buggy, {"loss": got, "truth": truth, "shape": product})


MASK = Drill(
    id="losses.mask_broadcast",
    category="losses",
    title="A loss mask that broadcasts silently",
    buggy_code=MASK_BUGGY,
    fixed_code=MASK_FIXED,
    measure=_mask_measure,
    question=shuffled_question(
        "losses.mask_broadcast",
        "No error, a plausible number. What does this masked loss compute?",
        "A (B, B, S) product that counts other rows' padding",
        ("The per-sequence mean, averaged over the batch",
         "The mean loss over real tokens, as intended",
         "The mean over all B*S tokens, padding included, as if unmasked"),
        "broadcasting aligns shapes from the right and stretches size-1 dimensions without a "
        "warning; assert the mask's shape before using it"),
    hints=("Print (loss_per_token * attn_mask).shape.",
           "Bring the mask to (B, S), assert the shapes match, divide by the number of real "
           "tokens."),
    explanation="Shapes align from the right: (B, S) is read as (1, B, S), and with (B, 1, S) the "
                "product is (B, B, S). Each sequence's mask now multiplies every sequence's "
                "losses, so padding positions count. Squeeze the mask to (B, S), assert the "
                "shape, and divide the masked sum by mask.sum().",
    source="R66 in references.md (broadcasting semantics)",
    exercise="07.masked_token_mean",
    variants=(
        Variant("3 sequences of up to 8 tokens",
                edits=(("B, S = 4, 6", "B, S = 3, 8"),
                       ("torch.tensor([6, 4, 3, 1])", "torch.tensor([8, 5, 2])"))),
        Variant("per-token cross-entropy from a vocabulary of 5",
                edits=(("import torch\n", "import torch\nimport torch.nn.functional as F\n"),
                       ("loss_per_token = torch.rand(B, S)",
                        "logits, targets = torch.randn(B, S, 5), torch.randint(0, 5, (B, S))\n"
                        "loss_per_token = F.cross_entropy(logits.transpose(1, 2), targets, "
                        "reduction=\"none\")"))),
        Variant("the mask made with unsqueeze, 5 sequences",
                {"lengths": "lens"},
                (("B, S = 4, 6", "B, S = 5, 7"),
                 ("torch.tensor([6, 4, 3, 1])", "torch.tensor([7, 2, 5, 1, 6])"),
                 ("(torch.arange(S) < lengths[:, None])[:, None, :]",
                  "(torch.arange(S)[None, :] < lengths[:, None]).unsqueeze(1)"))),
    ),
)

DRILLS = (DOUBLE, DIM, MASK)
