"""Probabilities given to a distribution as logits (``course watch``): ``Categorical(logits=p)``
where ``p`` is a softmax's output (a policy head that ends in ``nn.Softmax``). ``Categorical``
takes a second softmax of its logits, so every distribution is squeezed towards uniform (two
classes: probabilities between 0.27 and 0.73), and sampling, ``log_prob`` and the entropy all use
that flattened distribution. Rows of real logits are not all in [0, 1] summing to 1.

``Categorical.__init__`` (which ``OneHotCategorical`` and the relaxed ones build on) is wrapped
while the watcher is installed. The check reads three numbers back from the device (a host sync),
so it runs on the first ``FIRST`` distributions made with logits and then one in ``EVERY``, and
stops once it has reported.
"""

from __future__ import annotations

from torch.distributions import Categorical

from course_utils.toolkit.watch.findings import Finding, user_site

FIRST, EVERY = 8, 256
IN_A_ROW = 3  # looks that all found probabilities before it is reported


class DistributionLogits:
    """Looks at the logits some ``Categorical`` distributions are built from."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.calls = self.hits = 0
        self.done = False
        self._saved = None

    def install(self) -> None:
        original = Categorical.__init__
        owner = self

        def __init__(dist, probs=None, logits=None, validate_args=None):
            if logits is not None and probs is None and not owner.done and owner.watcher.live:
                try:
                    owner.on_logits(logits)
                except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
                    owner.watcher.fail(err, "on_logits")
            original(dist, probs, logits, validate_args)

        __init__.__wrapped__ = original
        self._saved = (original, __init__)
        Categorical.__init__ = __init__

    def uninstall(self) -> None:
        if self._saved and Categorical.__init__ is self._saved[1]:
            Categorical.__init__ = self._saved[0]
        self._saved = None

    def on_logits(self, logits) -> None:
        """Sampled: are these rows probabilities (all values in [0, 1], each row summing to 1)?"""
        self.calls += 1
        if self.watcher.paused or not (self.calls <= FIRST or self.calls % EVERY == 0):
            return
        if not logits.is_floating_point() or logits.dim() == 0 or logits.shape[-1] < 2 or not logits.numel():
            return
        import torch

        with torch.no_grad():
            x = logits.detach().float()
            low, high, off = torch.stack([x.min(), x.max(), (x.sum(-1) - 1).abs().max()]).tolist()
        if not (low >= 0 and high <= 1 and off < 1e-3):
            self.hits = 0
            return
        self.hits += 1
        if self.hits < IN_A_ROW:
            return
        self.done = True
        rows = logits.numel() // logits.shape[-1]
        self.watcher.log.add(Finding(
            "probabilities as logits",
            f"Categorical(logits=...) was given {rows} row(s) of {logits.shape[-1]} values all in "
            f"[{low:.3g}, {high:.3g}] that sum to 1 (largest deviation {off:.1e}), {IN_A_ROW} times in "
            "a row: these are probabilities; the distribution applies its own softmax to them, so "
            "its probabilities are squeezed towards uniform (here at most "
            f"{_squeezed(high, logits.shape[-1]):.2f})",
            user_site(3),
            self.watcher.step + 1,
            subject="distribution logits",
            why="Categorical(logits=x) takes softmax(x): probabilities in [0, 1] given as logits give a "
                "distribution close to uniform, so sampling explores at random, and log_prob, the "
                "entropy and the policy gradient are those of the wrong distribution",
            fix="pass them as probabilities, Categorical(probs=p), or drop the softmax from the model "
                "and pass its raw output as logits",
        ))


def _squeezed(high: float, classes: int) -> float:
    """The largest probability a second softmax leaves: one logit at ``high``, the rest at 0."""
    import math

    return math.exp(high) / (math.exp(high) + classes - 1)
