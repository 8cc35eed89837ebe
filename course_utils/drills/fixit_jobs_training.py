"""Job checks of the training-loop fix-it drills (``fixit_cases_training``): each compares the
edit's run with the fixed code's where the symptom alone could be silenced by a wrong edit.

A job check (``job(edited run, fixed run) -> problem or None``, see ``fixit.judge_edit``) here
asks whether the edit kept what the drill's job is: the data (micro-batches of one length, text
without padding hide the bug), the learning-rate schedule and the weights it trains to, the raw
gradient and the step's length (a learning rate cut, a loss scaled down, a gradient clipped to
nothing), the weight decay of the matrices, the loader's workers, a backward pass without NaN.
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


def matrices_decayed(run: CodeRun, ref: CodeRun) -> str | None:
    """Every weight matrix keeps the fixed code's weight decay (none at all is no fix)."""
    def decay_of(r: CodeRun) -> list[float]:
        matrices = {id(p) for p in r["model"].parameters() if p.ndim >= 2}
        return sorted(g["weight_decay"] for g in r["optimizer"].param_groups
                      for p in g["params"] if id(p) in matrices)
    got, want = decay_of(run), decay_of(ref)
    if got != want:
        return f"the weight matrices' decay is {got}; the fixed code keeps {want}"
    return None


def workers_kept(run: CodeRun, ref: CodeRun) -> str | None:
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


def gradient_not_rescaled(run: CodeRun, ref: CodeRun) -> str | None:
    """Same model, same data: the same raw gradient and learning rate (a loss scaled down, or a
    learning rate cut, bounds one step, not the next batch's)."""
    if run["optimizer"].param_groups[0]["lr"] != ref["optimizer"].param_groups[0]["lr"]:
        return "the learning rate is not the fixed code's: a smaller one hides the explosion"
    if math.isclose(run["loss_before"], ref["loss_before"], rel_tol=1e-6) and not math.isclose(
            run["grad_norm"], ref["grad_norm"], rel_tol=1e-4):
        return (f"the gradient norm before clipping is {run['grad_norm']:.3g}, the fixed code's "
                f"{ref['grad_norm']:.3g}: the loss or its gradient was rescaled")
    return None


def step_not_shrunk(run: CodeRun, ref: CodeRun) -> str | None:
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


def weights_as_fixed(run: CodeRun, ref: CodeRun) -> str | None:
    """The model ends where the fixed code's does: every step ran at the fixed code's learning
    rate (whatever the code records about it)."""
    got, want = run["model"].state_dict(), ref["model"].state_dict()
    if got.keys() != want.keys() or not all(_close(got[k], want[k], 1e-5) for k in want):
        return "the trained weights are not the fixed code's: some steps ran at another learning rate"
    return None


def backward_finite(run: CodeRun, ref: CodeRun) -> str | None:
    """x's gradient is the fixed code's, and the backward pass makes no NaN on the way (run again
    with anomaly detection on everywhere: a NaN gradient cleaned afterwards is still made)."""
    if not _close(run["x"].grad, ref["x"].grad, 1e-6):
        return f"x.grad is {run['x'].grad}; the fixed code's is {ref['x'].grad}"
    with torch.autograd.set_detect_anomaly(True):
        again = run_code(run.source, "anomaly everywhere")
    if again.error is not None:
        return f"with anomaly detection on everywhere, the backward pass raises {again.error_text}"
    return None


def scaler_on(run: CodeRun, ref: CodeRun) -> str | None:
    """The GradScaler still scales the float16 loss (switching it off drops its underflow guard)."""
    if not run["scaler"].is_enabled():
        return "the GradScaler is switched off: float16 gradients lose their underflow guard"
    return None


def epoch_starts(run: CodeRun, ref: CodeRun) -> str | None:
    """The LR at the start of each epoch follows the fixed code's schedule."""
    per_epoch = len(ref["batches"])
    got, want = run["lrs"][::per_epoch], ref["lrs"][::per_epoch]
    if len(run["lrs"]) != len(ref["lrs"]) or not _close(got, want, 1e-6):
        shown = ", ".join(f"{lr:.3g}" for lr in got)
        return f"the LR at the start of each epoch is {shown}; the fixed code's schedule is " + \
            ", ".join(f"{lr:.3g}" for lr in want)
    return None
