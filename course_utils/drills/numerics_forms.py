"""The variants of the NaN/Inf drills in ``numerics`` (lesson 07/08): the same bug on other data,
models, shapes and statement orders. Kept apart so ``numerics`` stays short."""

from __future__ import annotations

from course_utils.drills.core import Variant

LR_FORMS = (
    Variant("16 features, batch of 256",
            {"model": "net", "x": "inputs", "y": "targets"},
            (("torch.randn(128, 8) * 3", "torch.randn(256, 16) * 2"),
             ("torch.randn(8, 1)", "torch.randn(16, 1)"), ("nn.Linear(8, 1)", "nn.Linear(16, 1)"),
             ("lr=0.5)", "lr=1.0)"))),
    Variant("a hidden layer",
            {"model": "mlp"},
            (("nn.Linear(8, 1)", "nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))"),)),
    Variant("30 steps, the loss recorded before the step",
            {"losses": "history", "x": "features"},
            (("torch.randn(128, 8) * 3", "torch.randn(128, 8) * 4"), ("lr=0.5)", "lr=0.3)"),
             ("range(40)", "range(30)"),
             ("    optimizer.step()\n    losses.append(loss.item())",
              "    losses.append(loss.item())\n    optimizer.step()"))),
)

LOG_FORMS = (
    Variant("6 samples, 5 classes",
            edits=(("torch.randn(4, 10)", "torch.randn(6, 5)"), ("logits[1, 7]", "logits[1, 4]"),
                   ("torch.tensor([3, 1, 2, 5])", "torch.tensor([0, 1, 2, 3, 4, 0])"),
                   ("torch.arange(4)", "torch.arange(6)"))),
    Variant("gather instead of fancy indexing",
            {"targets": "labels"},
            (("probs[torch.arange(4), targets]", "probs.gather(1, targets[:, None]).squeeze(1)"),
             ("= 120.0", "= 150.0"))),
    Variant("nll_loss on log(softmax)",
            {"logits": "scores"},
            (("-torch.log(probs[torch.arange(4), targets]).mean()",
              "F.nll_loss(torch.log(probs), targets)"),)),
)

NORM_FORMS = (
    Variant("6 rows of 16 features",
            edits=(("torch.randn(4, 8)", "torch.randn(6, 16)"), ("x[2] = 0.0", "x[4] = 0.0"))),
    Variant("bag-of-words counts",
            edits=(("torch.randn(4, 8)", "torch.randint(0, 3, (5, 8)).float()"),)),
    Variant("torch.linalg.vector_norm over dim 1",
            edits=(("x.norm(dim=-1, keepdim=True)", "torch.linalg.vector_norm(x, dim=1, keepdim=True)"),
                   ("x[2] = 0.0", "x[0] = 0.0"))),
)

EXPLODE_FORMS = (
    Variant("10 layers of 24 units",
            {"layers": "stack"},
            (("nn.Linear(16, 16) for _ in range(12)", "nn.Linear(24, 24) for _ in range(10)"),
             ("std=0.6", "std=0.5"),
             ("torch.randn(32, 16), torch.randn(32, 16)", "torch.randn(16, 24), torch.randn(16, 24)"))),
    Variant("an L1 loss",
            {"x": "inputs", "y": "targets"},
            (("F.mse_loss(", "F.l1_loss("),)),
    Variant("14 layers, zero_grad first",
            {"model": "deep", "layers": "blocks"},
            (("range(12)", "range(14)"), ("std=0.6", "std=0.55"),
             ("loss_before = F.mse_loss(model(x), y).item()\noptimizer.zero_grad()\n",
              "optimizer.zero_grad()\nloss_before = F.mse_loss(model(x), y).item()\n"))),
)

ANOMALY_FORMS = (
    Variant("five inputs, 0 first",
            {"safe_log": "log_or_zero", "loss": "total"},
            (("torch.tensor([2.0, 0.5, 0.0, -1.0]", "torch.tensor([0.0, 3.0, -2.0, 1.5, 0.25]"),)),
    Variant("a floor of -10 for non-positive inputs",
            {"safe_log": "floored"},
            (("torch.zeros_like(x))", "torch.full_like(x, -10.0))"),
             ("x, 1.0)), 0.0)", "x, 1.0)), -10.0)"))),
    Variant("a weighted mean",
            {"safe_log": "log_x"},
            (("loss = safe_log.sum()", "loss = (safe_log * torch.arange(1.0, 5.0)).mean()"),)),
)
