"""Learning-rate schedule bugs (lesson 07): an epoch schedule stepped every batch, and the
scheduler stepped before the optimizer."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- an epoch schedule stepped every batch ---------------------------------------------------------

PER_BATCH_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
    batches = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(10)]
    lrs = []                                              # (instrumentation) one per batch
    for epoch in range(5):
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            lrs.append(optimizer.param_groups[0]["lr"])
            scheduler.step()
""")

PER_BATCH_FIXED = PER_BATCH_BUGGY.replace(
    "        lrs.append(optimizer.param_groups[0][\"lr\"])\n        scheduler.step()\n",
    "        lrs.append(optimizer.param_groups[0][\"lr\"])\n"
    "    scheduler.step()                                  # once per epoch: T_max counts epochs\n")


def _per_batch_measure(run: CodeRun) -> Symptom:
    lrs, per_epoch = run["lrs"], len(run["batches"])
    epochs = [lrs[i:i + per_epoch] for i in range(0, len(lrs), per_epoch)]
    first = epochs[0]
    changes = sum(a != b for a, b in zip(first[:-1], first[1:], strict=True))
    starts = ", ".join(fmt(e[0], 2) for e in epochs)
    lowest = min(first)
    # the decay meant for the whole run is spent in epoch 1: a per-batch schedule whose horizon
    # counts batches (T_max = epochs * batches) moves a little every batch, and is no bug
    spent = lowest < 0.1 * first[0]
    return Symptom(f"epoch 1: the LR changes {changes} times across its {per_epoch} batches, "
                   f"down to {fmt(lowest, 2)}; LR at the start of each epoch: {starts}",
                   spent, {"lrs": lrs, "changes": changes},
                   plot=lambda ax: (ax.plot(range(1, len(lrs) + 1), lrs, ".-"),
                                    ax.set(xlabel="batch", ylabel="learning rate")))


PER_BATCH = Drill(
    id="numerics.scheduler_stepped_per_batch",
    category="numerics",
    title="An epoch schedule stepped every batch",
    buggy_code=PER_BATCH_BUGGY,
    fixed_code=PER_BATCH_FIXED,
    measure=_per_batch_measure,
    question=shuffled_question(
        "numerics.scheduler_stepped_per_batch",
        "This loop should decay the learning rate gradually over its 5 epochs; instead the "
        "loss stalls within the first epoch. What happens to the learning rate?",
        "It takes a schedule step every batch, so the 5-epoch decay is spent early",
        ("scheduler.step() must come first, or the first value is skipped",
         "The scheduler resets to its first value at every new epoch",
         "The optimizer reads a new LR only at the next epoch, one epoch late"),
        "a scheduler counts calls to step(), not epochs; T_max=5 means five calls"),
    hints=("Record optimizer.param_groups[0]['lr'] at every batch and plot it.",
           "How many times is scheduler.step() called per epoch, and what unit is T_max in?"),
    explanation="A scheduler knows nothing about epochs: it advances one position per call to "
                "scheduler.step(). T_max=5 was meant as 5 epochs, but stepping after every batch "
                "reaches the end of the cosine after 5 batches, where the LR is 0; cosine "
                "annealing then keeps following the curve (no restart), so the LR climbs back "
                "up and falls again. Step an epoch schedule once per epoch, or give it "
                "T_max = epochs * batches per epoch and step it every batch.",
    source="R83 in references.md (learning-rate schedulers: step once per epoch, after "
           "optimizer.step())",
    variants=(
        Variant("StepLR every 2 epochs, Adam",
                {"batches": "loader", "lrs": "history"},
                (("torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)",
                  "torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)"),
                 ("torch.optim.SGD(model.parameters(), lr=0.1)",
                  "torch.optim.Adam(model.parameters(), lr=0.01)"),
                 ("T_max counts epochs", "step_size counts epochs"))),
        Variant("8 batches per epoch, a 3-class classifier",
                {"x": "inputs", "y": "labels"},
                (("nn.Linear(8, 1)", "nn.Linear(8, 3)"),
                 ("torch.randn(16, 1)) for _ in range(10)", "torch.randint(0, 3, (16,))) "
                  "for _ in range(8)"),
                 ("F.mse_loss(model(x), y)", "F.cross_entropy(model(x), y)"))),
        Variant("exponential decay, a two-layer model",
                {"model": "net", "epoch": "ep"},
                (("model = nn.Linear(8, 1)",
                  "model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))"),
                 ("torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)",
                  "torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)"),
                 ("T_max counts epochs", "gamma applies per epoch"))),
    ),
)

# --- scheduler.step() before optimizer.step() ------------------------------------------------------

ORDER_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    batches = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(4)]
    used = []                                             # (instrumentation) LR of each epoch
    for epoch in range(3):
        scheduler.step()
        used.append(optimizer.param_groups[0]["lr"])
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

ORDER_FIXED = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    batches = [(torch.randn(16, 8), torch.randn(16, 1)) for _ in range(4)]
    used = []                                             # (instrumentation) LR of each epoch
    for epoch in range(3):
        used.append(optimizer.param_groups[0]["lr"])
        for x, y in batches:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()                                  # after the epoch's optimizer steps
""")

WARNING = "Detected call of `lr_scheduler.step()` before `optimizer.step()`"


def _order_measure(run: CodeRun) -> Symptom:
    used = run["used"]
    first = run["optimizer"].param_groups[0]["initial_lr"]
    warned = any(WARNING in w for w in run.warnings)
    shown = ", ".join(fmt(lr, 2) for lr in used)
    return Symptom(f"LR of epochs 1-{len(used)}: {shown} (the schedule starts at {fmt(first, 2)}); "
                   f"PyTorch warned \"{WARNING}\": {warned}", used[0] != first or warned,
                   {"used": used, "first": first, "warned": warned})


ORDER = Drill(
    id="numerics.scheduler_before_optimizer",
    category="numerics",
    title="scheduler.step() called before optimizer.step()",
    buggy_code=ORDER_BUGGY,
    fixed_code=ORDER_FIXED,
    measure=_order_measure,
    question=shuffled_question(
        "numerics.scheduler_before_optimizer",
        "This schedule should train epoch 1 at the optimizer's own lr and decay from there. "
        "A UserWarning appears at the start. What happens to the schedule?",
        "Epoch 1 already trains at the schedule's second value",
        ("Nothing, the warning concerns PyTorch versions before 1.1",
         "The LR decays once per batch instead of once per epoch",
         "The first batch's optimizer.step() is skipped by the warning"),
        "since PyTorch 1.1 the scheduler must step after the optimizer; stepping it first moves "
        "to the schedule's second value before any update used the first"),
    hints=("Print optimizer.param_groups[0]['lr'] right before the first optimizer.step().",
           "Read the UserWarning the run gives: which call does it want first?"),
    explanation="Since PyTorch 1.1 a scheduler's step() belongs after optimizer.step(): building "
                "the scheduler sets the first LR of the schedule, and each step() moves to the "
                "next. Calling it at the top of the epoch moves on before any update used the "
                "first value, so every epoch trains one position ahead and the first value is "
                "skipped. PyTorch notices the order and warns \"Detected call of "
                "`lr_scheduler.step()` before `optimizer.step()`\" (torch/optim/lr_scheduler.py "
                "in 2.13). Step the scheduler at the end of the epoch.",
    source="R83 in references.md (how to adjust the learning rate: scheduler.step() after "
           "optimizer.step())",
    variants=(
        Variant("cosine over 4 epochs, Adam",
                {"used": "epoch_lrs", "batches": "train_set"},
                (("torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)",
                  "torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)"),
                 ("torch.optim.SGD(model.parameters(), lr=0.1)",
                  "torch.optim.Adam(model.parameters(), lr=0.01)"),
                 ("range(3)", "range(4)"))),
        Variant("a multi-step schedule, a classifier",
                {"x": "inputs", "y": "labels", "model": "classifier"},
                (("torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)",
                  "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)"),
                 ("nn.Linear(8, 1)", "nn.Linear(8, 4)"),
                 ("torch.randn(16, 1)) for _ in range(4)", "torch.randint(0, 4, (16,))) "
                  "for _ in range(4)"),
                 ("F.mse_loss(model(x), y)", "F.cross_entropy(model(x), y)"))),
        Variant("the LR read at each epoch's first batch, exponential decay",
                {"epoch": "ep"},
                (("torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)",
                  "torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)"),
                 ("    used.append(optimizer.param_groups[0][\"lr\"])\n    for x, y in batches:\n",
                  "    for i, (x, y) in enumerate(batches):\n        if i == 0:\n"
                  "            used.append(optimizer.param_groups[0][\"lr\"])\n"))),
    ),
)

DRILLS = (PER_BATCH, ORDER)
