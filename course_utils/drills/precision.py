"""Mixed-precision bugs (lesson 07): float16 training without a GradScaler, run on the CPU with
real float16 arithmetic (torch.autocast on "cpu")."""

from __future__ import annotations

import math

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

FP16_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(8):
        x = torch.randn(32, 16)
        y = x.sum(1, keepdim=True)
        if step == 3:
            x = x * 1000                                  # one batch of outliers
        with torch.autocast("cpu", dtype=torch.float16):  # real float16 matmuls
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
""")

FP16_FIXED = FP16_BUGGY.replace(
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n",
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
    "scaler = torch.amp.GradScaler(\"cpu\")                  # dynamic loss scaling\n",
).replace(
    "    loss.backward()\n    optimizer.step()\n",
    "    scaler.scale(loss).backward()\n"
    "    scaler.step(optimizer)                             # skipped if a gradient is inf/NaN\n"
    "    scaler.update()                                    # ... and the scale is halved\n")


def _fp16_measure(run: CodeRun) -> Symptom:
    losses = run["losses"]
    weights_ok = all(bool(p.isfinite().all()) for p in run["model"].parameters())
    shown = ", ".join(fmt(v) for v in losses)
    tail = f"weights finite: {weights_ok}"
    scaler = run.get("scaler")
    if scaler is not None:
        skipped = round(math.log2(65536.0 / scaler.get_scale()))
        tail += f"; scale 65536 -> {scaler.get_scale():.0f}: {skipped} steps skipped"
    return Symptom(f"losses by step: {shown}\n{tail}", not math.isfinite(losses[-1]),
                   {"losses": losses, "weights_finite": weights_ok})


FP16 = Drill(
    id="numerics.fp16_without_grad_scaler",
    category="numerics",
    title="float16 training without a GradScaler",
    buggy_code=FP16_BUGGY,
    fixed_code=FP16_FIXED,
    measure=_fp16_measure,
    question=shuffled_question(
        "numerics.fp16_without_grad_scaler",
        "fp16 autocast, no GradScaler: the loss is normal, one batch of outliers arrives, and "
        "every loss after it is NaN. What happened?",
        "A float16 gradient overflowed to inf, and AdamW applied it",
        ("The outlier batch's loss was NaN in float32 as well",
         "autocast cast the labels to float16 and they overflowed",
         "AdamW cannot update weights that autocast has turned into float16 copies"),
        "a float16 gradient passed 65504 and became inf. A GradScaler exists for small gradients "
        "that underflow, but it also skips any step whose gradients hold inf/NaN and lowers its "
        "scale, so that step never reaches the weights"),
    hints=("Check torch.isfinite on every parameter's .grad right after backward().",
           "torch.amp.GradScaler: scaler.scale(loss).backward(); scaler.step(optimizer); "
           "scaler.update()."),
    explanation="float16 holds at most 65504. The outlier batch's loss is finite (it is computed "
                "in float32), but a gradient computed in float16 passes 65504 and becomes inf; "
                "AdamW steps with it, the weights become NaN and training cannot recover. A "
                "GradScaler exists to stop small float16 gradients from underflowing to zero: it "
                "multiplies the loss by its scale (65536 at first), which makes overflow likelier, "
                "not rarer. What saves this run is its check: a step whose unscaled gradients hold "
                "inf/NaN is skipped and the scale halved, so no inf reaches the weights. A few "
                "skipped steps, especially at the start, are normal. It cannot rescue an overflow in "
                "the forward pass (an activation above 65504); keep values in range or use bfloat16 "
                "(float32's range). With clipping, call scaler.unscale_(optimizer) before "
                "clip_grad_norm_.",
    source="R68, R69, R70, R71 in references.md (float16 range, torch.amp, AMP examples, "
           "grad_scaler.py)",
    variants=(
        Variant("a wider model, the outliers at step 2",
                {"model": "net", "losses": "history", "x": "batch", "y": "target"},
                (("nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)",
                  "nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 1)"),
                 ("step == 3", "step == 2"))),
        Variant("32 features, a GELU, outliers x 2000",
                {"x": "inputs", "y": "targets"},
                (("nn.Linear(16, 64), nn.ReLU()", "nn.Linear(32, 64), nn.GELU()"),
                 ("torch.randn(32, 16)", "torch.randn(32, 32)"), ("x * 1000", "x * 2000"))),
        Variant("zero_grad first in the loop, 10 steps",
                {"losses": "curve"},
                (("range(8)", "range(10)"), ("step == 3", "step == 5"),
                 ("    x = torch.randn(32, 16)\n",
                  "    optimizer.zero_grad()\n    x = torch.randn(32, 16)\n"),
                 ("    optimizer.zero_grad()\n    loss.backward()", "    loss.backward()"),
                 ("    optimizer.zero_grad()\n    scaler.scale", "    scaler.scale"))),
    ),
)

DRILLS = (FP16,)
