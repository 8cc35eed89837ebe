"""Train/eval mode bugs (lesson 07): dropout and batch norm left in training mode at inference."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

DROPOUT_BUGGY = code("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2))
    x_test = torch.randn(8, 16)
    # ... training happened here; the model is still in training mode
    first = model(x_test)
    second = model(x_test)                     # the same inputs, a moment later
""")

DROPOUT_FIXED = DROPOUT_BUGGY.replace(
    "first = model(x_test)\nsecond = model(x_test)                     # the same inputs, a "
    "moment later\n",
    "model.eval()                               # dropout off, batch norm uses running stats\n"
    "with torch.no_grad():                      # and no graph for backward\n"
    "    first = model(x_test)\n"
    "    second = model(x_test)\n")


def _dropout_measure(run: CodeRun) -> Symptom:
    a, b = run["first"], run["second"]
    diff = (a - b).abs().max().item()
    flips = (a.argmax(1) != b.argmax(1)).sum().item()
    graph = a.grad_fn is not None
    buggy, n = diff > 0, a.shape[0]
    return Symptom(f"two predictions of the same {n} inputs differ by up to {fmt(diff)} "
                   f"(the predicted class flips for {flips} of {n}); outputs carry a graph: {graph}", buggy,
                   {"max_diff": diff, "flips": flips, "graph": graph})


DROPOUT = Drill(
    id="modes.dropout_at_eval",
    category="modes",
    title="Evaluating with dropout still on",
    buggy_code=DROPOUT_BUGGY,
    fixed_code=DROPOUT_FIXED,
    measure=_dropout_measure,
    question=shuffled_question(
        "modes.dropout_at_eval",
        "Accuracy is 90% in training but jumps between 60% and 89% at inference, run to run, on the same "
        "test set. Most likely cause?",
        "The model is still in training mode at inference",
        ("The test set is too small to measure accuracy reliably",
         "The dropout rate is too high for inference to be stable",
         "The weights are still being updated during inference"),
        "dropout is random only in training mode; model.eval() turns it into the identity"),
    hints=("Call the model twice on the same input: are the outputs equal?",
           "model.eval() before predicting, and torch.no_grad() to skip the graph."),
    explanation="Dropout and batch norm behave differently in training and evaluation. In "
                "training mode dropout zeroes a random 30% of units on every call, so the same "
                "input gives different predictions. Call model.eval() (and wrap inference in "
                "torch.no_grad(), which saves the memory of the graph); call model.train() "
                "before training again.",
    source="R64 in references.md (eval() and no_grad() are separate switches)",
    exercise="07.predict",
    variants=(
        Variant("a wider model, 12 inputs",
                {"x_test": "batch", "first": "pred_a", "second": "pred_b"},
                (("nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2)",
                  "nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 3)"),
                 ("torch.randn(8, 16)", "torch.randn(12, 20)"))),
        Variant("two dropout layers, a 4-class head",
                {"x_test": "held_out"},
                (("nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 2)",
                  "nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.3), nn.Linear(32, 32), nn.GELU(), "
                  "nn.Dropout(0.3), nn.Linear(32, 4)"),)),
        Variant("both predictions from one generator",
                {"x_test": "samples", "model": "classifier"},
                (("torch.manual_seed(0)", "torch.manual_seed(3)"),
                 ("    first = model(x_test)\n    second = model(x_test)\n",
                  "    first, second = (model(x_test) for _ in range(2))\n"),
                 ("first = model(x_test)\nsecond = model(x_test)\n",
                  "first, second = (model(x_test) for _ in range(2))\n"))),
    ),
)

BATCHNORM_BUGGY = code("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
    for _ in range(20):                        # training fills BatchNorm's running statistics
        model(torch.randn(32, 4) + 2)
    patient = torch.randn(1, 4) + 2            # one sample we want a prediction for
    with torch.no_grad():
        in_batch_a = model(torch.cat([patient, torch.randn(7, 4) + 2]))[0]
        in_batch_b = model(torch.cat([patient, torch.randn(7, 4) + 5]))[0]
""")

BATCHNORM_FIXED = BATCHNORM_BUGGY.replace(
    "with torch.no_grad():\n",
    "model.eval()                               # use the running statistics\n"
    "with torch.no_grad():\n")


def _batchnorm_measure(run: CodeRun) -> Symptom:
    a, b = run["in_batch_a"].item(), run["in_batch_b"].item()
    buggy = abs(a - b) > 1e-6
    return Symptom(f"the same sample's prediction: {a:.3f} in one batch, {b:.3f} in another",
                   buggy, {"a": a, "b": b})


BATCHNORM = Drill(
    id="modes.batchnorm_at_eval",
    category="modes",
    title="Batch norm in training mode at inference",
    buggy_code=BATCHNORM_BUGGY,
    fixed_code=BATCHNORM_FIXED,
    measure=_batchnorm_measure,
    question=shuffled_question(
        "modes.batchnorm_at_eval",
        "The same sample gets a different prediction depending on which other samples share "
        "its batch. Why?",
        "BatchNorm still uses the current mean and variance of its input",
        ("Linear layers mix information across a batch's samples",
         "torch.no_grad() changes the arithmetic of the forward",
         "The random seed differs between the two batches"),
        "in training mode BatchNorm uses (and updates) batch statistics; in eval mode it uses "
        "the running averages, so samples are independent"),
    hints=("no_grad() does not change a module's mode: print model.training.",
           "model.eval() makes BatchNorm use its running mean and variance."),
    explanation="torch.no_grad() only stops graph recording; it does not switch modes. In "
                "training mode BatchNorm normalises with the batch's own mean and variance (and "
                "updates its running statistics), so a prediction depends on the batch. "
                "model.eval() uses the running statistics: one sample, one answer.",
    source="R64 in references.md; BatchNorm uses batch statistics in training mode",
    variants=(
        Variant("6 features, 16 hidden units",
                {"patient": "sample"},
                (("nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)",
                  "nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1)"),
                 ("torch.randn(32, 4)", "torch.randn(32, 6)"), ("torch.randn(1, 4)", "torch.randn(1, 6)"),
                 ("torch.randn(7, 4)", "torch.randn(7, 6)"))),
        Variant("a small CNN with BatchNorm2d",
                {"patient": "scan", "in_batch_a": "score_a", "in_batch_b": "score_b"},
                (("nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)",
                  "nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 1)"),
                 ("torch.randn(32, 4)", "torch.randn(32, 1, 8, 8)"),
                 ("torch.randn(1, 4)", "torch.randn(1, 1, 8, 8)"),
                 ("torch.randn(7, 4)", "torch.randn(7, 1, 8, 8)"))),
        Variant("batches of different sizes",
                {"patient": "query", "in_batch_a": "with_group", "in_batch_b": "with_others"},
                (("torch.randn(7, 4) + 2", "torch.randn(15, 4) + 2"),
                 ("torch.randn(7, 4) + 5", "torch.randn(3, 4) - 1"),
                 ("range(20)", "range(30)"))),
    ),
)

DRILLS = (DROPOUT, BATCHNORM)
