"""Fix-it cases of the training-loop drills (gradients, losses, data, numerics): other correct
fixes, job checks (``fixit_jobs_training``) and each drill's own degenerate edits.

``fixit_cases`` merges ``FIXIT``, ``DODGES`` and ``EQUIVALENT`` from here into its own tables (see
its docstring for what each holds).
"""

from __future__ import annotations

from course_utils.drills.fixit_jobs_training import (
    all_of,
    backward_finite,
    epoch_starts,
    gradient_not_rescaled,
    matrices_decayed,
    not_above_fixed,
    same_as_fixed,
    scaler_on,
    step_not_shrunk,
    weights_as_fixed,
    workers_kept,
)

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
        "job": matrices_decayed,
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
        "job": workers_kept,
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
        "job": all_of(gradient_not_rescaled, step_not_shrunk),
    },
    "numerics.anomaly_detection": {
        "other_fixes": (("torch.log(x)", "torch.log(x.clamp_min(1e-12))"),
                        ("safe_log = torch.where(x > 0, torch.log(x), torch.zeros_like(x))",
                         "safe_log = torch.zeros_like(x)\n    safe_log[x > 0] = torch.log(x[x > 0])")),
        "job": backward_finite,
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
        "job": all_of(scaler_on, same_as_fixed("losses", rtol=1e-2, why=": the steps are not "
                                                "the fixed code's clipped steps")),
    },
    "numerics.scheduler_stepped_per_batch": {
        "other_fixes": (("T_max=5", "T_max=5 * 10"),
                        ("        scheduler.step()\n",
                         "        if len(lrs) % len(batches) == 0:\n            scheduler.step()\n")),
        "job": epoch_starts,
    },
    "numerics.scheduler_before_optimizer": {
        "other_fixes": (("    scheduler.step()\n    used.append",
                         "    if epoch > 0:\n        scheduler.step()\n    used.append"),),
        "job": all_of(same_as_fixed("used", why=": the epochs train at other learning rates"),
                      weights_as_fixed),
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
