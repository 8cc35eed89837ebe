"""Gradient bugs of sequence models (lesson 08's timed drills): gradient accumulation that averages
each micro-batch over its own tokens."""

from __future__ import annotations

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

TOKENS_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    V = 12
    model = nn.Sequential(nn.Embedding(V, 8), nn.Linear(8, V))
    lengths = [3, 14, 6, 9]
    micro_batches = []
    for n in lengths:
        seq = torch.randint(0, V, (1, n + 1))
        micro_batches.append((seq[:, :-1], seq[:, 1:]))
    model.zero_grad()
    for inputs, targets in micro_batches:
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)) / len(micro_batches)
        loss.backward()
""")

TOKENS_FIXED = TOKENS_BUGGY.replace(
    "model.zero_grad()\n",
    "total_tokens = sum(t.numel() for _, t in micro_batches)   # over the whole accumulated batch\n"
    "model.zero_grad()\n",
).replace(
    "targets.reshape(-1)) / len(micro_batches)",
    "targets.reshape(-1), reduction=\"sum\") / total_tokens")


def _tokens_measure(run: CodeRun) -> Symptom:
    import torch.nn.functional as F

    model, batches = run["model"], run["micro_batches"]
    params = [p for p in model.parameters() if p.grad is not None]
    logits = torch.cat([model(x).flatten(0, -2) for x, _ in batches])
    targets = torch.cat([t.reshape(-1) for _, t in batches])
    reference = torch.autograd.grad(F.cross_entropy(logits, targets, ignore_index=-100), params)
    accumulated = torch.cat([p.grad.reshape(-1) for p in params])
    whole = torch.cat([g.reshape(-1) for g in reference])
    gap = ((accumulated - whole).norm() / whole.norm()).item()
    counts = [int((t != -100).sum()) for _, t in batches]
    buggy = gap > 1e-4
    return Symptom(f"micro-batches of {', '.join(map(str, counts))} tokens: the accumulated "
                   f"gradient differs from one batch of all {sum(counts)} tokens by {gap:.1%}",
                   buggy, {"gap": gap, "tokens": counts})


TOKENS = Drill(
    id="gradients.accumulation_mean_per_micro_batch",
    category="gradients",
    title="Gradient accumulation that averages each micro-batch over its own tokens",
    buggy_code=TOKENS_BUGGY,
    fixed_code=TOKENS_FIXED,
    measure=_tokens_measure,
    question=shuffled_question(
        "gradients.accumulation_mean_per_micro_batch",
        "Each micro-batch's loss is divided by the number of micro-batches, yet the accumulated "
        "gradient differs from the gradient of one batch holding all the tokens. Why?",
        "Token counts differ, so not every token weighs the same",
        ("backward() overwrites .grad between micro-batches, so only the last counts",
         "cross_entropy is not linear, so gradients cannot add",
         "Dividing the loss shrinks the learning rate as well"),
        "cross_entropy averages over the micro-batch's own tokens, so a token in a 3-token "
        "micro-batch counts about five times as much as one in a 14-token micro-batch. Sum the "
        "token losses and divide by the token count of the whole accumulated batch"),
    hints=("Compare the accumulated .grad with the gradient of the mean loss over all tokens at "
           "once.",
           "reduction=\"sum\", then divide by the total token count of the accumulated batch."),
    explanation="Gradients add up across backward() calls, so accumulation reproduces a big "
                "batch only if each token gets the weight it would have there: 1 / (all tokens). "
                "A mean per micro-batch gives each token 1 / (its micro-batch's tokens), divided "
                "by the number of micro-batches, so tokens in short micro-batches count more. With "
                "equal lengths both agree, which is why this goes unnoticed; with sequences or "
                "padding of varying length the gradient is biased. Sum the token losses "
                "(reduction=\"sum\") and divide by the total number of non-padding tokens in the "
                "accumulated batch.",
    source="R86 in references.md (the loss normalisation behind gradient accumulation for "
           "language models); R61 (gradients accumulate in .grad)",
    variants=(
        Variant("three micro-batches, vocabulary 16",
                {"model": "lm", "inputs": "x", "targets": "y"},
                (("V = 12", "V = 16"), ("[3, 14, 6, 9]", "[2, 20, 5]"))),
        Variant("padded micro-batches of two sequences, ignore_index",
                {"seq": "batch"},
                (("torch.randint(0, V, (1, n + 1))", "torch.randint(0, V, (2, 16))"),
                 ("    micro_batches.append((seq[:, :-1], seq[:, 1:]))\n",
                  "    targets = seq[:, 1:].clone()\n"
                  "    targets[:, n:] = -100\n"
                  "    micro_batches.append((seq[:, :-1], targets))\n"),
                 ("sum(t.numel() for _, t in micro_batches)",
                  "sum(int((t != -100).sum()) for _, t in micro_batches)"))),
        Variant("five micro-batches, a hidden layer",
                {"micro_batches": "chunks", "lengths": "sizes"},
                (("[3, 14, 6, 9]", "[5, 2, 11, 4, 8]"),
                 ("nn.Linear(8, V))", "nn.GELU(), nn.Linear(8, V))"))),
    ),
)

DRILLS = (TOKENS,)
