"""A model input that carries an earlier step's autograd graph (``course watch``): the hidden state of
a recurrent model fed back into the next step without ``.detach()`` (truncated BPTT without its
``repackage_hidden``), often with ``backward(retain_graph=True)`` added to silence the error the
second backward raises. Every step's graph then hangs on the next one: each backward walks the whole
history, and memory and time per step grow until the run ends; with an optimizer that updates the
parameters in place, the second backward fails instead ("modified by an inplace operation").

Seen without any op-by-op window: on the first forward of a model in a step (with gradients on), an
input that has a ``grad_fn`` is followed back through the graph; reaching the model's own parameters
means the input was computed by this model before this step began. Inputs from data have no graph,
so a correct loop walks nothing; a model fed another model's output in the same step (a GAN's
discriminator) is not on its first forward of the step or does not reach its own parameters.
"""

from __future__ import annotations

import torch

from course_utils.toolkit.watch.findings import Finding, user_site

WALK_LIMIT = 20_000  # graph nodes followed per input at most
LOOKS = 8  # inputs with a graph followed per model before it stops looking


def _tensors(args) -> list[torch.Tensor]:
    """The tensors among a forward's arguments, one level into tuples and lists ((h, c) of an LSTM)."""
    found = []
    for a in args:
        if isinstance(a, torch.Tensor):
            found.append(a)
        elif isinstance(a, tuple | list):
            found.extend(t for t in a if isinstance(t, torch.Tensor))
    return found


def reaches(node, wanted: set[int]) -> int:
    """How many nodes were followed from ``node`` before one accumulating into a parameter of
    ``wanted`` (ids) was found; 0 if none was within ``WALK_LIMIT``."""
    seen, todo = set(), [node]
    while todo and len(seen) < WALK_LIMIT:
        n = todo.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        variable = getattr(n, "variable", None)
        if variable is not None and id(variable) in wanted:
            return len(seen)
        todo.extend(m for m, _ in n.next_functions)
    return 0


class CarriedGraph:
    """Per model: the step of its last forward, what was found, and how many inputs were followed."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.last_step: dict[int, int] = {}
        self.looks: dict[int, int] = {}

    def forward(self, root: torch.nn.Module, args) -> None:
        """Before a model's forward (with gradients on): its first in this step is looked at."""
        key, step = id(root), self.watcher.step
        if self.last_step.get(key) == step:
            return
        self.last_step[key] = step
        carrying = [t for t in _tensors(args) if t.grad_fn is not None]
        if not carrying or self.looks.get(key, 0) >= LOOKS:
            return
        self.looks[key] = self.looks.get(key, 0) + 1
        own = {id(p) for p in root.parameters()}
        walked = max((reaches(t.grad_fn, own) for t in carrying), default=0)
        if not walked:
            return
        self._report(root, step)  # the evidence is the graph itself: one sighting is enough
        self.looks[key] = LOOKS

    def _report(self, root, step: int) -> None:
        name = type(root).__name__
        self.watcher.log.add(Finding(
            "memory growth",
            f"the input of {name}'s forward at step {step} carries the autograd graph of an earlier step: "
            f"followed back, it reaches {name}'s own parameters, so it was "
            "computed by this model before the step began (a hidden state fed back without .detach()); "
            "each backward then goes through every earlier step, and memory and time per step grow",
            user_site(),  # the line that called the model
            step,
            subject=f"carried graph {id(root)}",
        ))
