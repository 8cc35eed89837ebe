"""NaN and Inf bugs (lesson 07): a learning rate too high, log(0), division by a zero norm,
exploding gradients, and finding a NaN with anomaly detection."""

from __future__ import annotations

import math
import re

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, code, fmt, shuffled_question
from course_utils.drills.numerics_forms import ANOMALY_FORMS, EXPLODE_FORMS, LOG_FORMS, LR_FORMS, NORM_FORMS

# --- learning rate too high ----------------------------------------------------------------------

LR_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    x = torch.randn(128, 8) * 3
    y = x @ torch.randn(8, 1)
    torch.manual_seed(1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for step in range(40):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
""")

LR_FIXED = LR_BUGGY.replace("lr=0.5)", "lr=0.01)")


def _first_bad(values) -> int | None:
    return next((i for i, v in enumerate(values) if not math.isfinite(v)), None)


def _lr_measure(run: CodeRun) -> Symptom:
    losses = run["losses"]
    bad = _first_bad(losses)

    def plot(ax):
        finite = [v if math.isfinite(v) else float("nan") for v in losses]
        ax.semilogy(range(len(losses)), finite, ".-")
        ax.set(xlabel="step", ylabel="loss (log scale)")

    if bad is None:
        return Symptom(f"loss {fmt(losses[0])} -> {fmt(losses[-1])} after {len(losses)} steps, "
                       "always finite", False, {"losses": losses}, plot=plot)
    return Symptom(f"loss {fmt(losses[0])}, {fmt(losses[1])}, {fmt(losses[2])}, ... grows "
                   f"about x{fmt(losses[2] / losses[1], 2)} per step; first non-finite loss at "
                   f"step {bad} ({fmt(losses[bad])})", True, {"losses": losses, "first_bad": bad},
                   plot=plot)


LR = Drill(
    id="numerics.lr_too_high",
    category="numerics",
    title="A learning rate too high: loss to inf, then NaN",
    buggy_code=LR_BUGGY,
    fixed_code=LR_FIXED,
    measure=_lr_measure,
    question=shuffled_question(
        "numerics.lr_too_high",
        "The loss grows by a constant factor every step, reaches inf, then NaN. First thing to "
        "try?",
        "Lower the learning rate, say to a tenth",
        ("Increase the batch size 10x to reduce the noise",
         "Switch to float64 so the loss cannot overflow",
         "Clip the loss so that it stays below 1e4"),
        "a step larger than the curvature allows overshoots; the error is multiplied every "
        "step until float32 overflows"),
    hints=("Plot the loss on a log scale: a straight line up means geometric growth.",
           "Reduce lr by 10x, add warmup, or clip gradients."),
    explanation="With too large a learning rate every update overshoots the minimum and lands "
                "farther away, so the loss grows by a constant factor per step until it "
                "overflows float32 to inf and inf - inf gives NaN. Lower the learning rate (10x), "
                "add warmup, or clip gradients.",
    source="lesson 07 (a step too large for the curvature)",
    variants=LR_FORMS,
)

# --- log(0) -------------------------------------------------------------------------------------

LOG_BUGGY = code("""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    logits = (torch.randn(4, 10) * 2).requires_grad_()
    with torch.no_grad():
        logits[1, 7] = 120.0                  # a confident, wrong prediction for sample 1
    targets = torch.tensor([3, 1, 2, 5])
    probs = F.softmax(logits, dim=-1)
    loss = -torch.log(probs[torch.arange(4), targets]).mean()
    loss.backward()
""")

LOG_FIXED = LOG_BUGGY.replace(
    "probs = F.softmax(logits, dim=-1)\n"
    "loss = -torch.log(probs[torch.arange(4), targets]).mean()\n",
    "loss = F.cross_entropy(logits, targets)  # log_softmax inside: no probability to underflow\n")


def _finite_summary(run: CodeRun) -> tuple[float, bool]:
    loss = run["loss"].item()
    grad = run["logits"].grad
    return loss, bool(grad is not None and torch.isfinite(grad).all())


def _log_measure(run: CodeRun) -> Symptom:
    loss, grad_ok = _finite_summary(run)
    buggy = not (math.isfinite(loss) and grad_ok)
    return Symptom(f"loss = {fmt(loss)}; gradient finite: {grad_ok}", buggy,
                   {"loss": loss, "grad_finite": grad_ok, "gap": logit_gap(run)})


def logit_gap(run: CodeRun) -> float:
    """The largest gap between a sample's top logit and its target's logit (119.4 as declared)."""
    logits = next(v for k, v in run.namespace.items() if k in ("logits", "scores"))
    labels = next(v for k, v in run.namespace.items() if k in ("targets", "labels"))
    with torch.no_grad():
        z = logits.detach().float()
        return float((z.max(dim=1).values - z[torch.arange(len(labels)), labels]).max())


LOG = Drill(
    id="numerics.log_of_zero",
    category="numerics",
    title="log(softmax) underflows to log(0)",
    buggy_code=LOG_BUGGY,
    fixed_code=LOG_FIXED,
    measure=_log_measure,
    question=shuffled_question(
        "numerics.log_of_zero",
        "Training is fine for a while, then the loss is inf and the gradients NaN. What "
        "happens in these two lines?",
        "A probability underflows to 0, and log(0) is -inf",
        ("Indexing probs with targets breaks the gradient, so it turns NaN",
         "mean() over the large per-sample losses overflows float32",
         "targets must be float for log-probabilities"),
        "a logit 119.4 above the target's gives the target a probability near exp(-119.4), below "
        "float32's smallest number, so it is 0 and its log -inf; log_softmax computes the same "
        "quantity without forming the probability"),
    hints=("Print probs[1]: is any entry exactly 0?",
           "Use F.log_softmax or F.cross_entropy, which never form the probability."),
    explanation="Sample 1's wrong logit is 120 and its target's about 0.6: a gap of 119.4, so "
                "softmax gives the target about exp(-119.4), below float32's smallest subnormal "
                "(about exp(-103.3)), and it is exactly 0; log(0) = -inf and the backward "
                "pass gives NaN. F.log_softmax / F.cross_entropy compute log-probabilities as "
                "z - logsumexp(z) and stay finite. Adding 1e-8 inside the log (a fix often suggested) "
                "avoids the inf but caps the loss at 18.4 and flattens its gradient.",
    source="R62 in references.md (cross_entropy applies log_softmax to logits)",
    exercise="07.log_probs",
    variants=LOG_FORMS,
)

# --- division by a zero norm --------------------------------------------------------------------

NORM_BUGGY = code("""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    x = torch.randn(4, 8)
    x[2] = 0.0                                    # an empty document: all features zero
    unit = x / x.norm(dim=-1, keepdim=True)
""")

NORM_FIXED = NORM_BUGGY.replace("unit = x / x.norm(dim=-1, keepdim=True)",
                                "unit = F.normalize(x, dim=-1)              # divides by "
                                "max(norm, 1e-12)")


def _norm_measure(run: CodeRun) -> Symptom:
    unit = run["unit"]
    nans = int(torch.isnan(unit).sum())
    rows = [i for i in range(unit.shape[0]) if torch.isnan(unit[i]).any()]
    return Symptom(f"NaN values in unit: {nans} (rows {rows}); row norms "
                   f"{[round(v, 3) + 0.0 for v in unit.norm(dim=-1).tolist()]}", nans > 0,
                   {"nans": nans})


NORM = Drill(
    id="numerics.zero_norm_division",
    category="numerics",
    title="Division by a zero norm",
    buggy_code=NORM_BUGGY,
    fixed_code=NORM_FIXED,
    measure=_norm_measure,
    question=shuffled_question(
        "numerics.zero_norm_division",
        "One row of unit is all NaN. Why?",
        "That row's norm is 0, and 0 divided by 0 is NaN",
        ("keepdim=True broadcasts the norms along the wrong dimension",
         "norm() overflows float32 when it squares the large features of that row",
         "dim=-1 takes each column's norm, not each row's"),
        "a zero vector has no direction; divide by max(norm, eps) so zero rows stay zero"),
    hints=("Print x.norm(dim=-1): which row is 0?",
           "F.normalize divides by max(norm, eps)."),
    explanation="An all-zero row has norm 0, and 0 / 0 = NaN; the NaN then spreads through "
                "every later operation. F.normalize divides by max(norm, 1e-12), so a zero row "
                "stays zero. Adding 1e-8 to the norm also avoids the NaN but distorts rows whose "
                "norm is tiny.",
    source="lesson 07 (a zero norm divides 0 by 0)",
    exercise="07.unit_rows",
    variants=NORM_FORMS,
)

# --- exploding gradients -------------------------------------------------------------------------

EXPLODE_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    layers = [nn.Linear(16, 16) for _ in range(12)]
    for layer in layers:
        nn.init.normal_(layer.weight, std=0.6)    # each layer multiplies the signal by ~2.4
    model = nn.Sequential(*layers)
    x, y = torch.randn(32, 16), torch.randn(32, 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_before = F.mse_loss(model(x), y).item()
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    grad_norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]).item()
    optimizer.step()
    loss_after = F.mse_loss(model(x), y).item()
""")

EXPLODE_FIXED = EXPLODE_BUGGY.replace(
    "optimizer.step()\n",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
    "optimizer.step()\n")


def _explode_measure(run: CodeRun) -> Symptom:
    before, after, norm = run["loss_before"], run["loss_after"], run["grad_norm"]
    buggy = not math.isfinite(after) or after > before
    return Symptom(f"gradient norm {fmt(norm, 2)}; loss {fmt(before, 2)} before the step, "
                   f"{fmt(after, 2)} after", buggy,
                   {"grad_norm": norm, "before": before, "after": after})


EXPLODE = Drill(
    id="numerics.exploding_gradients",
    category="numerics",
    title="Exploding gradients, no clipping",
    buggy_code=EXPLODE_BUGGY,
    fixed_code=EXPLODE_FIXED,
    measure=_explode_measure,
    question=shuffled_question(
        "numerics.exploding_gradients",
        "The gradient norm is in the billions and one SGD step turns the loss into NaN. "
        "Which change keeps the step bounded?",
        "clip_grad_norm_ between backward() and step()",
        ("A torch.no_grad() block around optimizer.step()",
         "zero_grad() after step() instead of before it",
         "clip_grad_norm_ right after optimizer.step()"),
        "clipping rescales all gradients together so their total norm is at most max_norm; the "
        "direction is kept, the step length is bounded"),
    hints=("Print the total gradient norm before the step.",
           "torch.nn.utils.clip_grad_norm_ goes after backward() and before step()."),
    explanation="Twelve layers that each amplify by about 2.4 multiply the signal, and the "
                "gradient, by about 2.4^12. One SGD step of that size throws the weights so far "
                "that the loss overflows. clip_grad_norm_ rescales the gradients so their total "
                "norm is at most max_norm (1.0 is the usual LLM pretraining default) before the "
                "step; fixing the initialisation is the deeper cure.",
    source="R73 in references.md (clip_grad_norm_)",
    exercise="07.clipped_step",
    variants=EXPLODE_FORMS,
)

# --- anomaly detection ---------------------------------------------------------------------------

ANOMALY_BUGGY = code("""
    import torch

    x = torch.tensor([2.0, 0.5, 0.0, -1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():        # development only: slow, but names the culprit
        safe_log = torch.where(x > 0, torch.log(x), torch.zeros_like(x))
        loss = safe_log.sum()                    # finite
        loss.backward()
""")

ANOMALY_FIXED = ANOMALY_BUGGY.replace(
    "safe_log = torch.where(x > 0, torch.log(x), torch.zeros_like(x))",
    "safe_log = torch.where(x > 0, torch.log(torch.where(x > 0, x, 1.0)), 0.0)")


def _anomaly_measure(run: CodeRun) -> Symptom:
    if run.error is not None:
        found = [re.findall(r'File "<drill [^>]*>", line (\d+)', w) for w in run.warnings
                 if "Error detected in" in w]
        where = ""
        if found and found[0]:
            number = int(found[0][-1])
            where = f"; it blames the forward call on line {number}: {run.line(number)}"
        return Symptom(f"anomaly mode raised: {run.error_text}{where}", True,
                       error=run.error_text)
    grad = run["x"].grad
    ok = bool(torch.isfinite(grad).all())
    return Symptom(f"loss {fmt(run['loss'].item())}; x.grad = "
                   f"{[round(v, 3) + 0.0 for v in grad.tolist()]}, finite: {ok}", not ok)


ANOMALY = Drill(
    id="numerics.anomaly_detection",
    category="numerics",
    title="A NaN gradient behind a finite loss",
    buggy_code=ANOMALY_BUGGY,
    fixed_code=ANOMALY_FIXED,
    measure=_anomaly_measure,
    question=shuffled_question(
        "numerics.anomaly_detection",
        "detect_anomaly() reports 'LogBackward0 returned nan values' although the forward output "
        "is finite. Why?",
        "where() still backpropagates into log(0), and 0 times 1/0 is NaN",
        ("The gradient overflows float32 to inf, then turns NaN",
         "log of the negative input is NaN in the forward, and where() passes it on",
         "An in-place op changed a tensor that log saved for backward"),
        "where() picks values in the forward pass, but both branches are computed and both "
        "receive a gradient (zero for the unpicked one); 0 * inf = NaN"),
    hints=("Which input of log is 0 or negative?",
           "Make the input of log safe, not only its output: log(where(x > 0, x, 1))."),
    explanation="torch.where computes both branches. At x = 0 the masked branch log(0) = -inf is "
                "discarded in the forward pass, but in the backward pass where() sends it a zero "
                "gradient and log's backward computes 0 / 0 = NaN. Anomaly detection raises at "
                "the first backward function that returns NaN and shows the forward line that "
                "created it. Fix the input of log: where(x > 0, log(where(x > 0, x, 1)), 0).",
    source="R72 in references.md (torch.autograd.detect_anomaly)",
    variants=ANOMALY_FORMS,
)

DRILLS = (LR, LOG, NORM, EXPLODE, ANOMALY)
