"""Low-precision bugs (lesson 08's timed drills): a running total kept in bfloat16, and gradients
clipped while a GradScaler still scales them. Both run on the CPU with real bfloat16 / float16
arithmetic and the real torch.amp.GradScaler("cpu")."""

from __future__ import annotations

import math

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- a running total kept in bfloat16 ------------------------------------------------------------

TOTAL_BUGGY = code("""
    import torch

    torch.manual_seed(0)
    losses = 2.0 + 0.5 * torch.rand(2000, dtype=torch.bfloat16)
    total = torch.zeros((), dtype=torch.bfloat16)
    for loss in losses:
        total += loss
    epoch_loss = total.item() / losses.numel()
""")

TOTAL_FIXED = TOTAL_BUGGY.replace("total = torch.zeros((), dtype=torch.bfloat16)",
                                  "total = torch.zeros((), dtype=torch.float32)   # float32 total")


def _total_measure(run: CodeRun) -> Symptom:
    losses, logged = run["losses"], run["epoch_loss"]
    true = losses.double().mean().item()
    off = abs(logged - true) / true
    return Symptom(f"logged mean loss {fmt(logged)}, true mean {fmt(true)} over {losses.numel()} "
                   f"losses (the total ended at {fmt(float(run['total']))}, off by {off:.0%})",
                   off > 0.01, {"logged": logged, "true": true, "relative_error": off})


TOTAL = Drill(
    id="numerics.bf16_running_total",
    category="numerics",
    title="A running loss total kept in bfloat16",
    buggy_code=TOTAL_BUGGY,
    fixed_code=TOTAL_FIXED,
    measure=_total_measure,
    question=shuffled_question(
        "numerics.bf16_running_total",
        "Every loss lies between 2.0 and 2.5, yet the logged epoch mean does not. Why?",
        "A large bfloat16 accumulator rounds away each additional loss",
        ("total.item() converts to float64 and loses the sum",
         "bfloat16 cannot represent values between 2.0 and 2.5",
         "torch.rand in bfloat16 returns mostly zeros here"),
        "bfloat16 keeps 8 significant bits: above 1024 neighbouring values are 8 apart, so adding "
        "about 2.25 rounds back to the same total and the sum stalls. Keep totals in float32"),
    hints=("Print total after every 200 losses.",
           "What is the gap between neighbouring bfloat16 values near 1024?"),
    explanation="bfloat16 has float32's range but only 8 significant bits. Between 1024 and 2048 "
                "its values are 8 apart, so total + 2.25 rounds back to total and the running sum "
                "stops growing at 1024, whatever follows; float16 (11 bits) drifts later, and a "
                "sum of batch totals can round up instead of down. Accumulate in float32 (or "
                "call .item() and add Python floats); bfloat16 is fine for the values themselves. "
                "torch.sum over a bfloat16 tensor gave the right mean in our CPU run, since it "
                "adds in higher precision inside; a running total does not.",
    source="R68 in references.md (bfloat16 keeps float32's range with fewer mantissa bits)",
    variants=(
        Variant("float16 totals",
                {"losses": "step_losses", "loss": "value"},
                (("dtype=torch.bfloat16)\ntotal", "dtype=torch.float16)\ntotal"),
                 ("total = torch.zeros((), dtype=torch.bfloat16)",
                  "total = torch.zeros((), dtype=torch.float16)"))),
        Variant("per-batch sums of 64 token losses",
                {"loss": "batch"},
                (("torch.rand(2000, dtype=torch.bfloat16)", "torch.rand(25600, dtype=torch.bfloat16)"),
                 ("for loss in losses:\n    total += loss\n",
                  "for loss in losses.view(-1, 64):\n    total += loss.sum()\n"))),
        Variant("3000 steps, another seed",
                {"epoch_loss": "mean_loss", "loss": "value"},
                (("torch.rand(2000,", "torch.rand(3000,"), ("manual_seed(0)", "manual_seed(1)"))),
    ),
)

# --- clipping before unscale_ ----------------------------------------------------------------------

CLIP_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = x @ torch.randn(8, 1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for step in range(30):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
""")

CLIP_FIXED = CLIP_BUGGY.replace(
    "    scaler.scale(loss).backward()\n",
    "    scaler.scale(loss).backward()\n"
    "    scaler.unscale_(optimizer)                       # true gradients before clipping\n")


def _clip_measure(run: CodeRun) -> Symptom:
    losses = run["losses"]
    first, last = losses[0], losses[-1]
    stuck = not math.isfinite(last) or last > 0.5 * first
    scale = run["scaler"].get_scale()
    verdict = "barely moved" if stuck else "fell"
    return Symptom(f"loss {fmt(first)} -> {fmt(last)} over {len(losses)} steps ({verdict}); "
                   f"the scaler's scale: {scale:.0f}", stuck,
                   {"first": first, "last": last, "scale": scale})


CLIP = Drill(
    id="numerics.clip_before_unscale",
    category="numerics",
    title="Gradients clipped before the GradScaler unscales them",
    buggy_code=CLIP_BUGGY,
    fixed_code=CLIP_FIXED,
    measure=_clip_measure,
    question=shuffled_question(
        "numerics.clip_before_unscale",
        "With a GradScaler and gradient clipping at max_norm=1.0, the loss barely moves in 30 "
        "steps. What do the clipped gradients measure?",
        "The still-scaled gradients, so every step shrinks by the scale",
        ("Nothing, since clip_grad_norm_ skips the inf checks",
         "The unscaled gradients, clipped a second time inside scaler.step()",
         "The float16 gradients, which underflowed to zero"),
        "scaler.scale(loss) multiplies the loss, hence the gradients, by the scale (65536 at "
        "first). Clipping those to norm 1.0 and then letting scaler.step divide by the scale "
        "leaves steps 65536 times too small. Call scaler.unscale_(optimizer) before clipping"),
    hints=("Print the gradient norm right before clipping: is it the size you expect?",
           "The AMP examples call scaler.unscale_(optimizer) right before clipping."),
    explanation="scaler.scale(loss).backward() leaves every gradient multiplied by the scale "
                "(65536 at first). clip_grad_norm_ then sees a norm about 65536 times the true one "
                "and cuts it to max_norm; scaler.step divides by the scale afterwards, so the "
                "update is max_norm / 65536 in size and the model barely learns (with a smaller "
                "scale or a larger max_norm the effect varies from step to step). Call "
                "scaler.unscale_(optimizer) between backward and clipping; scaler.step then knows "
                "the gradients are unscaled and does not divide them again. With Adam, which "
                "divides by a running gradient size, the steps keep their size and the mistake is "
                "harder to see, but every step is clipped, whatever the true norm.",
    source="R70, R71 in references.md (AMP examples: unscale_ before clipping; grad_scaler.py)",
    variants=(
        Variant("momentum, 16 features",
                {"x": "inputs", "y": "targets", "optimizer": "opt"},
                (("torch.randn(256, 8)", "torch.randn(128, 16)"),
                 ("torch.randn(8, 1)", "torch.randn(16, 1)"),
                 ("nn.Linear(8, 1)", "nn.Linear(16, 1)"),
                 ("lr=0.1)", "lr=0.05, momentum=0.9)"))),
        Variant("clip_grad_value_",
                {"model": "net"},
                (("clip_grad_norm_(model.parameters(), max_norm=1.0)",
                  "clip_grad_value_(model.parameters(), clip_value=1.0)"),)),
        Variant("a hidden layer, 40 steps",
                {"model": "regressor", "losses": "history"},
                (("nn.Linear(8, 1)", "nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))"),
                 ("range(30)", "range(40)"))),
    ),
)

DRILLS = (TOTAL, CLIP)
