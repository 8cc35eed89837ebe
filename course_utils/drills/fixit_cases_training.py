"""Fix-it cases of the training-loop drills (gradients, losses, data, numerics): other correct
fixes, job checks and each drill's own degenerate edits.

``fixit_cases`` merges ``FIXIT``, ``DODGES`` and ``EQUIVALENT`` from here into its own tables (see
its docstring for what each holds). A job check here compares the edit's run with the fixed code's:
the data, the schedule, the gradient a drill's job is to keep, where the symptom alone could be
silenced by changing them.
"""

from __future__ import annotations

import math

import torch

from course_utils.drills.core import CodeRun, run_code


def _close(got, want, rtol: float) -> bool:
    """Whether ``got`` equals ``want`` within ``rtol``: tensors, numbers, and lists or tuples of them."""
    if isinstance(want, torch.Tensor):
        return (isinstance(got, torch.Tensor) and got.shape == want.shape
                and torch.allclose(got.detach().double(), want.detach().double(), rtol, 1e-12))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return (isinstance(got, (int, float)) and not isinstance(got, bool)
                and math.isclose(got, want, rel_tol=rtol, abs_tol=1e-12))
    if isinstance(want, (list, tuple)):
        return (isinstance(got, (list, tuple)) and len(got) == len(want)
                and all(_close(g, w, rtol) for g, w in zip(got, want, strict=True)))
    return got == want


def same_as_fixed(*names: str, rtol: float = 1e-6, why: str = ""):
    """A job check: each named result equals the fixed code's, within ``rtol`` (the data a fix
    must not change, a schedule it must keep); ``why`` says what changing it would hide."""
    def check(run: CodeRun, ref: CodeRun) -> str | None:
        for name in names:
            if not _close(run.get(name), ref[name], rtol):
                return f"{name} is not what the fixed code has{why}"
        return None
    return check


def not_above_fixed(name: str = "loss", slack: float = 0.25):
    """A job check: the edit's final ``name`` (a loss) is finite and at most (1 + slack) times the
    fixed code's, plus 0.01 (a step made too small to train is not a fix)."""
    def check(run: CodeRun, ref: CodeRun) -> str | None:
        got, want = run.get(name), ref[name]
        got = float(got.detach()) if isinstance(got, torch.Tensor) else got
        want = float(want.detach()) if isinstance(want, torch.Tensor) else want
        if not isinstance(got, float) or not math.isfinite(got) or got > want * (1 + slack) + 0.01:
            shown = f"{got:.3g}" if isinstance(got, float) else "missing"
            return f"the final {name} is {shown}; the fixed code reaches {want:.3g}"
        return None
    return check


def all_of(*checks):
    """A job check made of several: the first problem found, or None."""
    def check(run: CodeRun, ref: CodeRun) -> str | None:
        return next((p for p in (c(run, ref) for c in checks) if p), None)
    return check


def _matrices_decayed(run: CodeRun, ref: CodeRun) -> str | None:
    """Every weight matrix keeps the fixed code's weight decay (none at all is no fix)."""
    def decay_of(r: CodeRun) -> list[float]:
        matrices = {id(p) for p in r["model"].parameters() if p.ndim >= 2}
        return sorted(g["weight_decay"] for g in r["optimizer"].param_groups
                      for p in g["params"] if id(p) in matrices)
    got, want = decay_of(run), decay_of(ref)
    if got != want:
        return f"the weight matrices' decay is {got}; the fixed code keeps {want}"
    return None


def _workers_kept(run: CodeRun, ref: CodeRun) -> str | None:
    """The loader still loads with the fixed code's workers, every sample of every epoch, with
    the jitter's spread."""
    if run["loader"].num_workers != ref["loader"].num_workers:
        return (f"the loader uses {run['loader'].num_workers} workers; the fixed code keeps "
                f"{ref['loader'].num_workers} (loading in the main process hides the copies)")
    got, want = run["shifts"], ref["shifts"]
    if len(got) != len(want):
        return f"{len(got)} shifts drawn; the fixed code draws {len(want)}"
    spread, meant = torch.tensor(got).std().item(), torch.tensor(want).std().item()
    if not 0.5 * meant < spread < 2 * meant:
        return f"the shifts spread {spread:.3g}; the fixed code's jitter spreads {meant:.3g}"
    return None


def _gradient_not_rescaled(run: CodeRun, ref: CodeRun) -> str | None:
    """Same model, same data: the same raw gradient and learning rate (a loss scaled down, or a
    learning rate cut, bounds one step, not the next batch's)."""
    if run["optimizer"].param_groups[0]["lr"] != ref["optimizer"].param_groups[0]["lr"]:
        return "the learning rate is not the fixed code's: a smaller one hides the explosion"
    if math.isclose(run["loss_before"], ref["loss_before"], rel_tol=1e-6) and not math.isclose(
            run["grad_norm"], ref["grad_norm"], rel_tol=1e-4):
        return (f"the gradient norm before clipping is {run['grad_norm']:.3g}, the fixed code's "
                f"{ref['grad_norm']:.3g}: the loss or its gradient was rescaled")
    return None


def _step_not_shrunk(run: CodeRun, ref: CodeRun) -> str | None:
    """The SGD step (learning rate times the gradient it used) is at least a quarter as long as
    the fixed code's, or ends at a loss no higher than the fixed code's (a model initialised to
    a sane scale takes short steps from a low loss): a gradient clipped to almost nothing leaves
    the weights where they were."""
    def length(r: CodeRun) -> float:
        grads = [p.grad for p in r["model"].parameters() if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads).item() if grads else 0.0
        return r["optimizer"].param_groups[0]["lr"] * norm
    if not (length(run) >= 0.25 * length(ref) or run["loss_after"] <= ref["loss_after"]):
        return f"the step is {length(run):.3g} long; the fixed code's step is {length(ref):.3g}"
    return None


def _weights_as_fixed(run: CodeRun, ref: CodeRun) -> str | None:
    """The model ends where the fixed code's does: every step ran at the fixed code's learning
    rate (whatever the code records about it)."""
    got, want = run["model"].state_dict(), ref["model"].state_dict()
    if got.keys() != want.keys() or not all(_close(got[k], want[k], 1e-5) for k in want):
        return "the trained weights are not the fixed code's: some steps ran at another learning rate"
    return None


def _backward_finite(run: CodeRun, ref: CodeRun) -> str | None:
    """x's gradient is the fixed code's, and the backward pass makes no NaN on the way (run again
    with anomaly detection on everywhere: a NaN gradient cleaned afterwards is still made)."""
    if not _close(run["x"].grad, ref["x"].grad, 1e-6):
        return f"x.grad is {run['x'].grad}; the fixed code's is {ref['x'].grad}"
    with torch.autograd.set_detect_anomaly(True):
        again = run_code(run.source, "anomaly everywhere")
    if again.error is not None:
        return f"with anomaly detection on everywhere, the backward pass raises {again.error_text}"
    return None


def _scaler_on(run: CodeRun, ref: CodeRun) -> str | None:
    """The GradScaler still scales the float16 loss (switching it off drops its underflow guard)."""
    if not run["scaler"].is_enabled():
        return "the GradScaler is switched off: float16 gradients lose their underflow guard"
    return None


def _epoch_starts(run: CodeRun, ref: CodeRun) -> str | None:
    """The LR at the start of each epoch follows the fixed code's schedule."""
    per_epoch = len(ref["batches"])
    got, want = run["lrs"][::per_epoch], ref["lrs"][::per_epoch]
    if len(run["lrs"]) != len(ref["lrs"]) or not _close(got, want, 1e-6):
        shown = ", ".join(f"{lr:.3g}" for lr in got)
        return f"the LR at the start of each epoch is {shown}; the fixed code's schedule is " + \
            ", ".join(f"{lr:.3g}" for lr in want)
    return None


DECAY_OPTIMIZER = "optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.2)\n"
ACCUMULATE = "targets.reshape(-1)) / len(micro_batches)\n    loss.backward()\n"
PAD_LOSS = "    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))\n"
ANOMALY_BLOCK = ("with torch.autograd.detect_anomaly():\n"
                 "    safe_log = torch.where(x > 0, torch.log(x), torch.zeros_like(x))\n"
                 "    loss = safe_log.sum()\n    loss.backward()\n")
NOISE = "float(self.rng.normal(0, 0.1))"
CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"

FIXIT: dict[str, dict] = {
    "gradients.weight_decay_on_norms": {
        "other_fixes": (
            (DECAY_OPTIMIZER,
             "decay, no_decay = [], []\n"
             "for module in model.modules():\n"
             "    for name, p in module.named_parameters(recurse=False):\n"
             "        (no_decay if isinstance(module, nn.LayerNorm) or name == 'bias' else decay).append(p)\n"
             "optimizer = torch.optim.AdamW([{'params': decay}, {'params': no_decay, 'weight_decay': 0.0}],\n"
             "                              lr=0.01, weight_decay=0.2)\n"),
            (DECAY_OPTIMIZER,
             "weights = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]\n"
             "rest = [p for p in model.parameters() if all(p is not w for w in weights)]\n"
             "optimizer = torch.optim.AdamW([{'params': weights, 'weight_decay': 0.2},\n"
             "                               {'params': rest, 'weight_decay': 0.0}], lr=0.01)\n")),
        "job": _matrices_decayed,
    },
    "gradients.accumulation_mean_per_micro_batch": {
        "other_fixes": (
            ("/ len(micro_batches)", "* targets.numel() / sum(t.numel() for _, t in micro_batches)"),
            (ACCUMULATE,
             "targets.reshape(-1), reduction='sum')\n    loss.backward()\n"
             "for p in model.parameters():\n"
             "    p.grad /= sum(t.numel() for _, t in micro_batches)\n")),
        "job": same_as_fixed("micro_batches", why=": micro-batches of equal length hide the bias"),
    },
    "losses.mask_broadcast": {
        "other_fixes": (
            ("(loss_per_token * attn_mask).sum()", "(loss_per_token * attn_mask.squeeze(1)).sum()"),
            ("loss = (loss_per_token * attn_mask).sum() / attn_mask.sum()",
             "loss = loss_per_token[attn_mask[:, 0]].mean()"),
            ("loss_per_token * attn_mask", "loss_per_token.unsqueeze(1) * attn_mask")),
    },
    "losses.padding_in_lm_loss": {
        "other_fixes": (
            (PAD_LOSS,
             "    per_token = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction='none')\n"
             "    loss = per_token[targets.reshape(-1) != PAD].mean()\n"),
            ("inputs, targets = tokens[:, :-1], tokens[:, 1:]",
             "inputs, targets = tokens[:, :-1], tokens[:, 1:].masked_fill(tokens[:, 1:] == PAD, -100)")),
        "job": all_of(same_as_fixed("tokens", "inputs", why=": text without padding hides the bug"),
                      not_above_fixed("loss")),
    },
    "data.worker_rng_copies": {
        "other_fixes": ((NOISE, "0.1 * torch.randn(()).item()"),
                        (NOISE, "float(np.random.normal(0, 0.1))")),
        "job": _workers_kept,
    },
    "data.validation_in_train_mode": {
        "other_fixes": (("def validate():\n", "def validate():\n    model.eval()\n"),
                        ("model.load_state_dict(torch.load(checkpoint))\n",
                         "model.load_state_dict(torch.load(checkpoint))\nmodel.train(False)\n")),
    },
    "numerics.exploding_gradients": {
        "other_fixes": (
            ("optimizer.step()\n",
             "torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=1.0)\noptimizer.step()\n"),
            ("std=0.6", "std=16 ** -0.5"),
            ("nn.init.normal_(layer.weight, std=0.6)", "nn.init.orthogonal_(layer.weight)")),
        "job": all_of(_gradient_not_rescaled, _step_not_shrunk),
    },
    "numerics.anomaly_detection": {
        "other_fixes": (("torch.log(x)", "torch.log(x.clamp_min(1e-12))"),
                        ("safe_log = torch.where(x > 0, torch.log(x), torch.zeros_like(x))",
                         "safe_log = torch.zeros_like(x)\n    safe_log[x > 0] = torch.log(x[x > 0])")),
        "job": _backward_finite,
    },
    "numerics.bf16_running_total": {
        "other_fixes": (
            ("dtype=torch.bfloat16)\nfor", "dtype=torch.float64)\nfor"),
            ("total = torch.zeros((), dtype=torch.bfloat16)\nfor loss in losses:\n    total += loss\n"
             "epoch_loss = total.item() / losses.numel()",
             "total = 0.0\nfor loss in losses:\n    total += loss.item()\n"
             "epoch_loss = total / losses.numel()"),
            ("total = torch.zeros((), dtype=torch.bfloat16)\nfor loss in losses:\n    total += loss\n",
             "total = losses.sum(dtype=torch.float32)\n")),
    },
    "numerics.clip_before_unscale": {
        "other_fixes": (("max_norm=1.0)", "max_norm=1.0 * scaler.get_scale())"),),
        "job": all_of(_scaler_on, same_as_fixed("losses", rtol=1e-2, why=": the steps are not "
                                                "the fixed code's clipped steps")),
    },
    "numerics.scheduler_stepped_per_batch": {
        "other_fixes": (("T_max=5", "T_max=5 * 10"),
                        ("        scheduler.step()\n",
                         "        if len(lrs) % len(batches) == 0:\n            scheduler.step()\n")),
        "job": _epoch_starts,
    },
    "numerics.scheduler_before_optimizer": {
        "other_fixes": (("    scheduler.step()\n    used.append",
                         "    if epoch > 0:\n        scheduler.step()\n    used.append"),),
        "job": all_of(same_as_fixed("used", why=": the epochs train at other learning rates"),
                      _weights_as_fixed),
    },
}

DODGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "gradients.weight_decay_on_norms": (
        ("no weight decay on any tensor", "weight_decay=0.2)", "weight_decay=0.0)"),
        ("the LayerNorm removed", "nn.LayerNorm(32), ", ""),
        ("only the LayerNorm spared, the biases still decayed", DECAY_OPTIMIZER,
         "norm = list(model[1].parameters())\n"
         "rest = [p for p in model.parameters() if all(p is not q for q in norm)]\n"
         "optimizer = torch.optim.AdamW([{'params': rest}, {'params': norm, 'weight_decay': 0.0}],\n"
         "                              lr=0.01, weight_decay=0.2)\n"),
    ),
    "gradients.accumulation_mean_per_micro_batch": (
        ("micro-batches of one length", "lengths = [3, 14, 6, 9]", "lengths = [8, 8, 8, 8]"),
        ("one micro-batch", "lengths = [3, 14, 6, 9]", "lengths = [32]"),
        ("the gradient cleared before each micro-batch", "    logits = model(inputs)\n",
         "    model.zero_grad()\n    logits = model(inputs)\n"),
    ),
    "losses.mask_broadcast": (
        ("a mean over every position", "(loss_per_token * attn_mask).sum() / attn_mask.sum()",
         "loss_per_token.mean()"),
        ("the mean of the broadcast product", "(loss_per_token * attn_mask).sum() / attn_mask.sum()",
         "(loss_per_token * attn_mask).mean()"),
        ("the attention mask itself reshaped (attention needs (B, 1, S))", "[:, None, :]", ""),
    ),
    "losses.padding_in_lm_loss": (
        ("sequences without padding", "tokens[torch.arange(13) > lengths[:, None]] = PAD\n", ""),
        ("train on the one unpadded row", "inputs, targets = tokens[:, :-1], tokens[:, 1:]",
         "inputs, targets = tokens[:1, :-1], tokens[:1, 1:]"),
        ("padding written as -100 in the data", "V, PAD = 10, 0", "V, PAD = 10, -100"),
        ("ignore_index with a rate too small to train", "lr=0.05)\nfor step in range(40):\n"
         "    logits = model(inputs)\n" + PAD_LOSS,
         "lr=0.0005)\nfor step in range(40):\n    logits = model(inputs)\n"
         "    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=PAD)\n"),
    ),
    "data.worker_rng_copies": (
        ("a constant shift", NOISE, "0.0"),
        ("reseeded by the worker's id, so each epoch replays", "num_workers=2)",
         "num_workers=2, worker_init_fn=lambda i: setattr(\n"
         "        torch.utils.data.get_worker_info().dataset, 'rng', np.random.default_rng(i)))"),
        ("load in the main process", "num_workers=2", "num_workers=0"),
        ("a generator seeded by the sample index", NOISE,
         "float(np.random.default_rng(i).normal(0, 0.1))"),
        ("a tiny torch jitter on top of the copied stream", NOISE,
         NOISE + " + 1e-6 * torch.rand(()).item()"),
    ),
    "data.validation_in_train_mode": (
        ("dropout off, BatchNorm frozen by momentum 0", "nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2)",
         "nn.BatchNorm1d(16, momentum=0.0), nn.ReLU(), nn.Dropout(0.0)"),
        ("one pass reported twice", "first, second = validate(), validate()",
         "first = second = validate()"),
        ("the same dropout mask every pass", "    with torch.no_grad():\n",
         "    torch.manual_seed(0)\n    with torch.no_grad():\n"),
    ),
    "numerics.exploding_gradients": (
        ("a learning rate too small to move", "lr=0.01", "lr=1e-11"),
        ("the loss scaled down", "F.mse_loss(model(x), y).backward()",
         "(1e-9 * F.mse_loss(model(x), y)).backward()"),
        ("clipped to a norm too small to move", "optimizer.step()\n",
         "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)\noptimizer.step()\n"),
        ("the gradient zeroed before the step", "optimizer.step()\n",
         "optimizer.zero_grad()\noptimizer.step()\n"),
    ),
    "numerics.anomaly_detection": (
        ("anomaly mode off, the NaN gradient zeroed afterwards", ANOMALY_BLOCK,
         ANOMALY_BLOCK.replace("with torch.autograd.detect_anomaly():", "if True:")
         + "x.grad = torch.nan_to_num(x.grad)\n"),
        ("the log branch detached", "torch.log(x)", "torch.log(x).detach()"),
        ("no zero or negative input", "[2.0, 0.5, 0.0, -1.0]", "[2.0, 0.5, 1.0, 1.0]"),
    ),
    "numerics.bf16_running_total": (
        ("hard-code the expected mean", "epoch_loss = total.item() / losses.numel()", "epoch_loss = 2.25"),
        ("fewer losses, so the total stays small", "torch.rand(2000", "torch.rand(200"),
        ("the losses scaled down before summing",
         "    total += loss\nepoch_loss = total.item() / losses.numel()",
         "    total += loss / 2000\nepoch_loss = total.item()"),
    ),
    "numerics.clip_before_unscale": (
        ("no clipping", "    " + CLIP + "\n", ""),
        ("a threshold no gradient reaches", "max_norm=1.0", "max_norm=1e9"),
        ("unscaled after the clip", "    scaler.step(optimizer)\n",
         "    scaler.unscale_(optimizer)\n    scaler.step(optimizer)\n"),
        ("the scaler switched off", 'GradScaler("cpu")', 'GradScaler("cpu", enabled=False)'),
        ("a learning rate raised to make up for the tiny steps", "lr=0.1", "lr=1000.0"),
    ),
    "numerics.scheduler_stepped_per_batch": (
        ("no scheduler steps", "        scheduler.step()\n", ""),
        ("a horizon too long to notice", "T_max=5", "T_max=500"),
        ("a floor under the learning rate", "T_max=5)", "T_max=5, eta_min=0.05)"),
    ),
    "numerics.scheduler_before_optimizer": (
        ("no scheduler steps", "    scheduler.step()\n", ""),
        ("start from twice the rate", "lr=0.1", "lr=0.2"),
        ("the LR read before the step, the warning silenced",
         "    scheduler.step()\n    used.append(optimizer.param_groups[0][\"lr\"])\n",
         "    import warnings\n    warnings.simplefilter('ignore')\n"
         "    used.append(optimizer.param_groups[0][\"lr\"])\n    scheduler.step()\n"),
        ("silence the warning", "import torch\n",
         "import warnings\nimport torch\nwarnings.simplefilter('ignore')\n"),
    ),
}

EQUIVALENT: dict[str, dict[str, str]] = {
    "losses.mask_broadcast": {
        "detach the loss": "nothing here requires a gradient: detach() returns the same values",
        "drop assert mask.shape == loss_per_token.shap": "the assert guards the shapes; it computes "
                                                         "nothing",
    },
    "numerics.exploding_gradients": {
        "delete the loop": "its only loop sets the exploding initialisation: without it the layers keep "
                           "PyTorch's default one, the deeper cure",
    },
    "numerics.bf16_running_total": {
        "a constant total": "the total starts at zero: setting it to zero again changes nothing",
    },
}
