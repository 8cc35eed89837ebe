"""Case inputs of lesson 07: a layer whose copies keep their gradients."""

from __future__ import annotations

from torch import nn

# --- 07: a layer whose copies keep their gradients ---------------------------------------------

_GRADS = "_kept_grads"  # the extra entry of a pickled or deep-copied module's state


class LinearKeepingGrad(nn.Linear):
    """``nn.Linear`` whose copies keep each parameter's ``.grad``, like the live model they copy.

    A deep copy or a pickle of a plain module drops ``.grad``. The exercises hand a model with a
    stale gradient (left by a validation pass) to the learner's loop, so the copy ``check()`` makes
    for each call, and the one ``course grade`` sends to a submission's process, must keep it.
    """

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state[_GRADS] = {name: p.grad.detach().clone() for name, p in self.named_parameters()
                         if p.grad is not None}
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        grads = state.pop(_GRADS, {})
        super().__setstate__(state)
        for name, p in self.named_parameters():
            p.grad = grads.get(name)
