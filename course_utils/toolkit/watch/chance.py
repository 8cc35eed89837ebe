"""A classification loss that ends the run at chance (``course watch``): the cross-entropy stays at
the entropy of the labels it is given, the loss of a model that predicts only the class
frequencies. Labels separated from their inputs (shuffled apart, taken by batch position while the
loader shuffles, split with two permutations) still vary, so only this shows them.

The labels are counted in deep windows where ``cross_entropy``/``nll_loss`` gets one class index
per row (with its class weights); the loss is read on check steps (the batched read already holds
it) when ``backward()`` runs on that loss itself; the verdict is taken at the end of the run, on
the mean of its last checks (in its second half), none of which may lie below what a model at chance
can score on a batch: ``-log`` of the largest class frequency (every label the most frequent one),
or, with near-even classes, ``NEAR`` of the entropy; one checked batch far below it shows a model that
has learnt something. The run is the last model's: a new model (cross-validation folds, restarts, a
sweep) starts the count again, as its first steps are at chance by nature; a new optimizer over the
same parameters does not.
"""

from __future__ import annotations

import math
import weakref
from collections import deque

import torch

from course_utils.toolkit.watch.findings import Finding

AT_CHANCE = 0.95  # a mean loss at or above this share of the labels' entropy is at chance
MIN_STEPS = 100  # optimizer steps before a run is judged
LAST = 3  # the last check-step losses of the run, averaged (one batch's loss is noisy)
MIN_ENTROPY = 0.3  # nats: below it a constant guess is already good
NEAR = 0.9  # of the entropy: with near-even classes no batch of a model at chance scores below it


class ChanceLevel:
    """The labels one classification loss sees, and its values on the check steps."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.counts: torch.Tensor | None = None
        self.weight: torch.Tensor | None = None
        self.site = None
        self.output: weakref.ref | None = None
        self.direct = False  # backward() ran on that loss itself
        self.losses: deque = deque(maxlen=8)  # (step, loss) on check steps
        self.model: weakref.ref | None = None  # a parameter of the model those losses train
        self.since = 0  # the step at which that model's training began

    def on_loss(self, func, x, target, kwargs: dict, site) -> None:
        """Before ``cross_entropy``/``nll_loss``: count its class indices (one per row)."""
        if self.site is not None and site != self.site:
            return
        if (x.dim() != 2 or target.dim() != 1 or target.is_floating_point() or x.shape[0] != target.shape[0]
                or x.shape[1] < 2 or kwargs.get("reduction", "mean") != "mean"
                or float(kwargs.get("label_smoothing", 0.0) or 0.0) > 0):
            return
        t = target.detach()
        t = t[t != kwargs.get("ignore_index", -100)]
        if not t.numel() or int(t.min()) < 0 or int(t.max()) >= x.shape[1]:
            return
        counts = torch.bincount(t.cpu(), minlength=x.shape[1]).double()
        same = self.counts is not None and self.counts.shape == counts.shape
        self.counts = self.counts + counts if same else counts
        weight = kwargs.get("weight")
        self.weight = weight.detach().double().cpu() if isinstance(weight, torch.Tensor) else None
        self.site = site
        self.output = None

    def on_output(self, out: torch.Tensor) -> None:
        if self.site is not None and self.output is None:
            self.output = weakref.ref(out)

    def on_backward(self, loss) -> None:
        if self.output is not None and loss is not None and self.output() is loss:
            self.direct = True

    def on_check(self, loss: float | None, param: torch.Tensor | None = None) -> None:
        """A check step's loss; ``param``, one the optimizer updates: another model's starts over."""
        if param is not None and (self.model is None or self.model() is not param):
            if self.model is not None:
                self.losses.clear()
                self.since = self.watcher.step
            self.model = weakref.ref(param)
        if self.direct and loss is not None and math.isfinite(loss):
            self.losses.append((self.watcher.step + 1, loss))

    def frequencies(self) -> torch.Tensor:
        """The prediction of a model at chance: the (weighted) class frequencies p_c w_c, normalised."""
        weighted = self.weight is not None and self.weight.shape == self.counts.shape
        r = self.counts * (self.weight if weighted else 1)
        return r[r > 0] / r.sum()

    def entropy(self) -> float:
        """The loss of predicting the class frequencies: their entropy, with the Miller-Madow correction
        for the classes counted."""
        r, n = self.frequencies(), float(self.counts.sum())
        return float(-(r * r.log()).sum()) + (len(r) - 1) / (2 * n)

    def floor(self, chance: float) -> float:
        """The lowest loss a batch can have under a model at chance (every label the most frequent)."""
        return min(NEAR * chance, -math.log(float(self.frequencies().max())))

    def finish(self) -> None:
        """At the end of the run: the last checks of its second half all at the labels' entropy."""
        w = self.watcher
        steps = w.step - self.since
        if not self.direct or self.counts is None or steps < MIN_STEPS:
            return
        late = [(s, v) for s, v in self.losses if s >= self.since + steps / 2][-LAST:]
        if len(late) < LAST:
            return
        chance = self.entropy()
        mean = sum(v for _, v in late) / len(late)
        lowest = min(v for _, v in late)
        if chance < MIN_ENTROPY or mean < AT_CHANCE * chance or lowest < self.floor(chance):
            return
        classes = int((self.counts > 0).sum())
        weighted = " with its class weights" if self.weight is not None else ""
        w.log.add(Finding(
            "loss at chance",
            f"the loss stayed at chance: its {len(late)} checked values from step {late[0][0]} to "
            f"{late[-1][0]} average {mean:.4g} (lowest {lowest:.4g}), while the entropy of "
            f"the {int(self.counts.sum())} "
            f"labels it was given ({classes} classes{weighted}) is {chance:.4g}: after {steps} steps"
            f"{_since(self.since)} the model predicts no better than the class frequencies",
            self.site,
            w.step,
            subject="loss at chance",
        ))


def _since(step: int) -> str:
    return f" (since step {step}, when the model trained last began)" if step else ""
