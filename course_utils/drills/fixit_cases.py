"""The drills that offer fix-it mode, with the other correct fixes each accepts and its job check.

A drill is in fix-it mode when it is listed here: ``FIXIT[id]`` gives ``other_fixes`` (edits of the
declared buggy code that fix the bug another way than the drill's own fix) and, where the symptom
alone could be silenced by a wrong edit, a ``job`` check. ``course mutants --drills`` and
tests/test_drill_fixit.py prove, per drill, that the declared fix and every other fix are accepted
and every automatic degenerate edit (``fix_mutants``) is rejected. The bank's loader attaches these
to the drills (``course_utils.drills._load``).
"""

from __future__ import annotations

import math

import torch

from course_utils.drills import fixit_cases_systems, fixit_cases_training
from course_utils.drills.core import CodeRun


def loss_not_worse(slack: float = 0.25):
    """A job check: the edit's final ``loss`` is finite and at most (1 + slack) times the fixed
    code's, plus 0.01 (a loss made small by cutting the data or the model is not a fix)."""
    def job(run: CodeRun, ref: CodeRun) -> str | None:
        if not isinstance(run.get("loss"), torch.Tensor):
            return "there is no final loss: the fixed code computes one"
        got, want = float(run["loss"].detach()), float(ref["loss"].detach())
        if not math.isfinite(got) or got > want * (1 + slack) + 0.01:
            return f"the final loss is {got:.3g}; the fixed code reaches {want:.3g}"
        return None
    return job


def every_sample_seen(job=None):
    """A job check: the epoch's batches (``sizes``) cover every one of the ``x`` samples (dropping
    the awkward last batch hides the bug instead of fixing it); then ``job``, if given."""
    def check(run: CodeRun, ref: CodeRun) -> str | None:
        seen, total = sum(run.get("sizes") or []), len(ref["x"])
        if seen != total:
            return f"the epoch trains on {seen} of the {total} samples: every sample must be used"
        return job(run, ref) if job else None
    return check


FIXIT: dict[str, dict] = {
    "gradients.plain_list_of_layers": {
        "other_fixes": (("self.blocks = [nn.Linear(width, width) for _ in range(depth)]",
                         "self.blocks = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])"),),
        "job": loss_not_worse(),
    },
    "gradients.optimizer_before_layer_swap": {
        "other_fixes": (("model[1] = nn.Linear(32, 3)\n",
                         "model[1] = nn.Linear(32, 3)\n"
                         "optimizer.add_param_group({'params': model[1].parameters()})\n"),),
        "job": loss_not_worse(),
    },
    "gradients.inplace_breaks_autograd": {
        "other_fixes": (("h += x", "h = torch.add(h, x)"),
                        ("h = torch.sigmoid(layer(x))", "h = torch.sigmoid(layer(x)).clone()")),
    },
    "numerics.zero_norm_division": {
        "other_fixes": (("unit = x / x.norm(dim=-1, keepdim=True)",
                         "unit = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)"),),
    },
    "losses.cross_entropy_class_dim": {
        "other_fixes": (("loss = F.cross_entropy(logits, targets)",
                         "loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))"),),
        "job": loss_not_worse(),
    },
    "losses.squeeze_batch_of_one": {
        "other_fixes": (("logits = model(xb).squeeze()", "logits = model(xb).view(-1)"),
                        ("logits = model(xb).squeeze()", "logits = model(xb)[:, 0]")),
        "job": every_sample_seen(loss_not_worse()),
    },
    "memory.eval_keeps_graph": {
        "other_fixes": (("outputs = [model(x) for x in val_batches]",
                         "outputs = [model(x).detach() for x in val_batches]"),
                        ("outputs = [model(x) for x in val_batches]",
                         "with torch.inference_mode():\n    outputs = [model(x) for x in val_batches]")),
    },
    "data.wrong_normalisation_constants": {
        "other_fixes": (("x = (images.float() - mean) / std",
                         "x = (images.float() - 255 * mean) / (255 * std)"),),
    },
    "modes.batchnorm_at_eval": {
        "other_fixes": (("with torch.no_grad():", "model.train(False)\nwith torch.no_grad():"),),
    },
    "data.test_statistics_leak": {
        "other_fixes": (("mean, std = data.mean(0), data.std(0)",
                         "mean, std = data[:800].mean(0), data[:800].std(0)"),),
    },
    "losses.next_token_labels_unshifted": {
        "other_fixes": (("loss = F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))",
                         "loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:])"),),
        "job": loss_not_worse(),
    },
}

# Each drill's own degenerate edits, beside the automatic ones: (label, old, new) replacements in
# the buggy code that silence the symptom without fixing the bug; each must be rejected.
DODGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "losses.squeeze_batch_of_one": (
        ("drop the last, one-sample batch", "batch_size=8)", "batch_size=8, drop_last=True)"),
    ),
}

# Automatic edits that change nothing the drill computes, with the reason (``course mutants --drills``
# lists them as equivalent: accepted, and rightly so).
EQUIVALENT: dict[str, dict[str, str]] = {
    "memory.eval_keeps_graph": {
        "drop model.eval()": "the model has no dropout and no BatchNorm: eval() changes nothing it computes",
    },
}

# The devices, memory, attention, performance, distributed and seed-advice drills' cases, and the
# training-loop drills' (gradients, losses, data loading, numerics), each in its own module.
for _cases in (fixit_cases_systems, fixit_cases_training):
    FIXIT.update(_cases.FIXIT)
    DODGES.update(_cases.DODGES)
    EQUIVALENT.update(_cases.EQUIVALENT)
