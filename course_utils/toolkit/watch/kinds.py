"""The kinds of finding ``course watch`` reports: a title, a severity (bug, perf, info), why it
matters and the usual fix. ``KINDS`` is the registry every finding is rendered from;
``kinds_table()`` is the list in docs/watch.md (a test keeps the two the same, and proves each
kind is exercised by a unit test or a benchmark pair).

    python -m course_utils.toolkit.watch.kinds     # print the table for docs/watch.md
"""

from __future__ import annotations

from typing import NamedTuple

SEVERITIES = ("bug", "perf", "info")


class Kind(NamedTuple):
    """One kind of finding."""

    title: str
    severity: str  # one of SEVERITIES
    why: str  # why it matters
    fix: str  # the usual fix


# kind -> (title, severity, why it matters, the usual fix), made into Kind records below
_FIELDS: dict[str, tuple[str, str, str, str]] = {
    "not in optimizer": (
        "trainable parameter no optimizer holds",
        "bug",
        "it gets a gradient every step but never changes: that part of the model does not learn",
        "build the optimizer after the model is final (after swapping a head), or "
        "optimizer.add_param_group({'params': new_module.parameters()})",
    ),
    "stale optimizer": (
        "optimizer holds tensors the model no longer uses",
        "bug",
        "the optimizer updates tensors that nothing reads, while the module the model uses is "
        "not updated (a head or model replaced after the optimizer was built)",
        "create the optimizer from model.parameters() after the last change to the model",
    ),
    "no gradient": (
        "trainable parameter never receives a gradient",
        "bug",
        "the loss does not depend on it: the graph was cut (.detach(), .numpy(), .item(), "
        "torch.tensor(...) of a result) or the branch is never used",
        "keep the computation in torch from the parameters to the loss (no .detach()/.numpy()/"
        ".item() in between); delete unused branches or set requires_grad_(False) on purpose",
    ),
    "zero grad at step": (
        "optimizer.step() finds no gradients",
        "bug",
        "backward() ran, but the gradients were cleared (or not yet computed) when step() ran: "
        "nothing is learned",
        "order each iteration as zero_grad(), forward, loss.backward(), optimizer.step()",
    ),
    "missing zero_grad": (
        "gradients accumulate across optimizer steps",
        "bug",
        "each step adds this batch's gradient to all previous ones: the effective step grows "
        "and points at old batches",
        "call optimizer.zero_grad() once per optimizer step (not once per epoch)",
    ),
    "frozen": (
        "updates are lost: the parameter does not change although its update is visible",
        "bug",
        "lr x gradient is above the float resolution of the parameter, yet its values stay "
        "bit-identical: the optimizer's in-place write does not land",
        "make the parameter and its optimizer state contiguous; step the tensor the model uses",
    ),
    "below resolution": (
        "update below float resolution",
        "info",
        "lr x gradient is smaller than the spacing of floats around the parameter's values, so "
        "the step rounds away; not a bug in the optimizer",
        "nothing, if intended; otherwise raise the lr or keep a float32 master copy",
    ),
    "lr collapse": (
        "learning rate collapsed early",
        "bug",
        "the learning rate fell to a tiny fraction of its start early in training: the scheduler "
        "is stepped once per batch where it was written for epochs",
        "call scheduler.step() once per epoch (or size the schedule in optimizer steps)",
    ),
    "update ratio": (
        "update-to-weight ratio out of range",
        "bug",
        "each step changes the weights by far too much (divergence) or by almost nothing "
        "(no learning); healthy training moves weights by ~1e-4 to 1e-2 of their size per step",
        "tune the learning rate (and warm-up); check the scheduler and the loss scale",
    ),
    "flat loss": (
        "loss does not change although gradients are non-zero",
        "bug",
        "the optimizer steps with non-zero gradients, yet the loss stays exactly the same: "
        "the updates do not reach the model that computes the loss",
        "update the tensors the model uses in place (p -= lr * p.grad, or an optimizer built on "
        "model.parameters())",
    ),
    "broadcast": (
        "loss computed from tensors broadcast to a larger shape",
        "bug",
        "(B, 1) against (B,) broadcasts to (B, B): the loss compares every prediction with "
        "every target and the model learns their mean",
        "make the shapes equal before the loss: pred.squeeze(-1), or target.unsqueeze(-1)",
    ),
    "non-finite": (
        "an op produced NaN or Inf",
        "bug",
        "one NaN spreads to the loss, the gradients and every parameter within a step",
        "guard the op's input: clamp before log/sqrt/division (x.clamp_min(eps)), use the "
        "fused stable form (log_softmax, BCEWithLogits), lower the learning rate",
    ),
    "growing grads": (
        "total gradient norm keeps growing",
        "bug",
        "gradients that grow check after check usually accumulate (zero_grad missing) or "
        "diverge (lr too high)",
        "call optimizer.zero_grad() each step; lower the learning rate",
    ),
    "eval mode": (
        "training in eval mode",
        "bug",
        "dropout is off and batch norm uses frozen running statistics while the optimizer "
        "steps: training differs from what you meant",
        "call model.train() before the training loop (again after each evaluation)",
    ),
    "train mode in eval": (
        "evaluating in train mode",
        "bug",
        "dropout stays on and batch norm overwrites its running statistics with evaluation "
        "batches: the scores are noisy and the model is changed by evaluating it",
        "call model.eval() before evaluating and model.train() after",
    ),
    "grad in eval": (
        "evaluating with autograd on",
        "perf",
        "forwards in eval mode without torch.no_grad build a graph each time: time and memory "
        "for nothing, and every output kept (a list of losses, predictions) keeps its graph alive",
        "wrap the evaluation in torch.no_grad() (or decorate the function with @torch.no_grad())",
    ),
    "host sync": (
        "host syncs every step",
        "perf",
        "each read of a device value (.item(), .cpu(), .numpy(), .tolist(), print, if t:) makes "
        "the host wait until the device has finished all queued work",
        "keep running values on the device (total += loss.detach()) and read them every N steps",
    ),
    "host copy": (
        "host-to-device copy every step of a tensor built on the host",
        "perf",
        "the same tensor (a mask, positions, a numpy array) is built on the host and copied to "
        "the device every step; each copy costs a transfer and often a wait",
        "build it once on the device (device=..., register_buffer), or move the whole array to "
        "the device once and index it there",
    ),
    "memory growth": (
        "memory grows step after step",
        "bug",
        "tensors made in one step stay alive in later steps: something keeps a reference (a list "
        "append, a hook that stores activations, a running total that carries autograd history)",
        "store .detach() (or .item() every N steps) instead of the tensor; clear lists of "
        "activations; accumulate loss.detach()",
    ),
    "dead units": (
        "a ReLU layer whose units are dead",
        "bug",
        "a ReLU unit that outputs 0 for every input passes no gradient back, so nothing revives it: "
        "a layer that is nearly all dead leaves the model a constant or a handful of live units "
        "(dying ReLU: a learning rate too large for the inputs, an initialisation that puts every "
        "pre-activation below 0)",
        "scale the inputs (pixels / 255, standardised features), lower the learning rate, keep the "
        "default (Kaiming) initialisation; LeakyReLU or a norm layer before the ReLU keeps units alive; "
        "a head that must be non-negative: softplus or exp rather than ReLU",
    ),
    "fallback": (
        "op falls back to the CPU on a Mac",
        "perf",
        "MPS has no kernel for it: every call copies its inputs to the host and back",
        "avoid the op in the hot loop (R48 in references.md: embedding max_norm, svd) or move that part to "
        "the CPU once",
    ),
    "non-contiguous": (
        "non-contiguous parameter or optimizer state where in-place updates are lost",
        "bug",
        "on this torch/macOS pair addcmul_/addcdiv_ into non-contiguous tensors are lost: Adam "
        "never updates the parameter",
        "make parameters contiguous before building the optimizer (p.data = p.data.contiguous())",
    ),
    "probabilities as logits": (
        "a loss or a distribution fed probabilities where it expects logits",
        "bug",
        "cross_entropy applies log_softmax, BCEWithLogitsLoss a sigmoid and Categorical(logits=...) a "
        "softmax themselves: a softmax or sigmoid before them is applied twice, the loss cannot approach "
        "0 and its gradients shrink, a policy is squeezed towards uniform",
        "remove the softmax/sigmoid from the model's output (apply it only for predictions), or use "
        "nll_loss(log(probs)) / binary_cross_entropy / Categorical(probs=...) on probabilities",
    ),
    "not log-probabilities": (
        "nll_loss fed probabilities or raw logits where it expects log-probabilities",
        "bug",
        "nll_loss does not take a log or a softmax itself: it returns -x[target]. Given a softmax's "
        "probabilities the loss is -p, always in [-1, 0], and its gradients vanish once a prediction is "
        "confident; given raw logits it has no lower bound and pushes the target's logit up for ever",
        "end the model in log_softmax (nn.LogSoftmax(dim=1)) before nll_loss, or give the raw logits to "
        "cross_entropy, which is log_softmax and nll_loss in one",
    ),
    "softmax over batch": (
        "softmax taken over the batch dimension",
        "bug",
        "each class's scores are normalised across the samples of the batch instead of each sample's "
        "scores across its classes: a sample's output depends on the other samples",
        "softmax over the class or time dimension (dim=-1 or dim=1), not dim=0",
    ),
    "padding in loss": (
        "padding scored by the loss",
        "bug",
        "padded positions count as targets: the model learns to predict padding and the loss (and "
        "perplexity) is partly about padding",
        "ignore_index=<pad id> in cross_entropy, or multiply the per-token loss by the mask and divide "
        "by mask.sum()",
    ),
    "constant targets": (
        "targets that never vary",
        "bug",
        "every target the loss sees has the same value: the model learns one answer; usually labels "
        "parsed or mapped wrongly",
        "check how the labels are read and mapped (case, column, dtype); print torch.unique(targets)",
    ),
    "shared copy": (
        "a copy of a model that shares its parameters",
        "bug",
        "copy.copy of a module keeps the same parameter tensors: the 'copy' changes with every step "
        "of the original (a target network that is not a target)",
        "copy.deepcopy(model), or build a new model and load_state_dict(model.state_dict())",
    ),
    "stale copy": (
        "a moving-average copy that never changes",
        "bug",
        "the EMA/averaged copy keeps its initial weights while the model trains: evaluating or "
        "saving it gives an untrained model",
        "update the copy in place after every optimizer step (ema.mul_(d).add_(p, alpha=1 - d)) and "
        "check the update is called",
    ),
    "clip before unscale": (
        "gradients clipped while still scaled",
        "bug",
        "a GradScaler multiplies the gradients by its scale: clip_grad_norm_ before unscale_ measures a "
        "norm scale times too large and shrinks every step by that factor",
        "scaler.scale(loss).backward(); scaler.unscale_(optimizer); clip_grad_norm_(...); "
        "scaler.step(optimizer); scaler.update()",
    ),
    "same order": (
        "the same data order every epoch",
        "bug",
        "a DistributedSampler seeds its shuffle with seed + epoch: without set_epoch(epoch) every epoch "
        "draws the same permutation, so the batches (and the negatives in each) repeat in the same order",
        "call sampler.set_epoch(epoch) at the start of every epoch, inside the epoch loop",
    ),
    "loss at chance": (
        "a classification loss that ends the run at chance",
        "bug",
        "the loss stays at the entropy of the labels, the loss of predicting only the class frequencies: "
        "the inputs tell the model nothing about their labels, usually because labels were shuffled, "
        "split or indexed apart from their inputs; data with nothing to learn (random labels) looks the same",
        "shuffle and split inputs and labels with one permutation, and take each label by the index its "
        "sample came with (dataset returns (x, y) together), not by batch position",
    ),
    "lr schedule": (
        "a warm-up that never finishes",
        "bug",
        "the schedule is sized in optimizer steps but scheduler.step() runs once per epoch: the learning "
        "rate stays in its warm-up, far below the peak, for the whole run",
        "call scheduler.step() after every optimizer.step() (Lightning: interval='step'), or size the "
        "schedule in epochs",
    ),
    "decayed while frozen": (
        "a parameter with a zero gradient that changes all the same",
        "bug",
        "zeroed gradients do not stop an optimizer: weight decay (AdamW's decoupled decay above all) and "
        "momentum from earlier steps still move the parameters meant to stay fixed",
        "leave frozen parameters out of the optimizer (or give them weight_decay=0 and no momentum), "
        "zero_grad(set_to_none=True) so the optimizer skips them, or restore their values after each step",
    ),
    "note": ("note", "info", "", ""),
}

KINDS: dict[str, Kind] = {name: Kind(*fields) for name, fields in _FIELDS.items()}


def kinds_table() -> str:
    """The Markdown list of every kind (docs/watch.md), in the registry's order."""
    lines = ["| kind | severity | what it means | the usual fix |", "|---|---|---|---|"]
    for name, kind in KINDS.items():
        if name != "note":
            cells = [f"`{name}`", kind.severity, kind.title, kind.fix]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(kinds_table())
