"""Evaluation that runs neither ``model.eval()`` nor ``torch.no_grad()`` (``course watch``): the
model stays in train mode with autograd on, so nothing marks the loop as evaluation except that no
backward ever uses its forwards.

Per model, the lines that call its forward with autograd on are counted between backward passes.
At each backward the line of the last forward is *trained* (the training forward). Another line
that ran the model twice or more since the previous backward is looked at closer: from its second
call on, a global forward hook keeps the graph node of that line's latest output; the backward's
graph is searched for it (a policy's rollout, twin inputs: found, trained). Not found, or no backward
before the run ends: an evaluation loop. The hook is on only while such a line is unresolved.
"""

from __future__ import annotations

import torch
from torch.nn.modules import module as module_hooks

from course_utils.toolkit.watch.findings import Finding, Site

_WALK_LIMIT = 200_000  # graph nodes searched per backward at most


def _grad_fn(out):
    for t in out if isinstance(out, (tuple, list)) else (out,):
        if isinstance(t, torch.Tensor) and t.grad_fn is not None:
            return t.grad_fn
    return None


def _reached(roots: list, wanted: set[int]) -> set[int]:
    """Which of the graph nodes ``wanted`` (ids; the caller holds them) the graph of ``roots`` reaches."""
    found, seen, todo = set(), set(), [r for r in roots if r is not None]
    while todo and len(seen) < _WALK_LIMIT and found != wanted:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in wanted:
            found.add(id(node))
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return found


def no_grad_forwards_in_train_mode(root, pending) -> Finding:
    """The finding for forwards under no_grad (evaluation) with dropout or batch norm in train mode."""
    on, site, step = pending
    kinds = sorted({type(m).__name__ for _, m in on})
    return Finding(
        "train mode in eval",
        f"{type(root).__name__} runs under no_grad (evaluation) with "
        f"{', '.join(kinds)} in train mode ({', '.join(n or 'the model' for n, _ in on[:3])})",
        site,
        step,
        subject=f"{type(root).__name__}@{id(root)}",
    )


class GradForwards:
    """The forwards with autograd on of each mode-sensitive model, between backward passes."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.pending: dict[int, tuple] = {}  # root id -> (root, {site: forwards}, last site)
        self.outputs: dict[tuple, object] = {}  # (root id, site) -> graph node of its latest output
        self.trained: dict[int, set[Site]] = {}
        self._hook = None

    def forward(self, root, site: Site) -> None:
        key = id(root)  # on every forward with autograd on: one lookup, one count, no new objects
        entry = self.pending.get(key)
        counts = entry[1] if entry is not None else {}
        n = counts[site] = counts.get(site, 0) + 1
        self.pending[key] = (root, counts, site)
        if n == 2 and site not in self.trained.get(key, ()) and self._hook is None:
            self._hook = module_hooks.register_module_forward_hook(self._on_output)

    def _on_output(self, module, args, out) -> None:
        entry = self.pending.get(id(module))
        if entry is not None and torch.is_grad_enabled():
            node = _grad_fn(out)
            if node is not None:
                self.outputs[(id(module), entry[2])] = node

    def backward(self, tensors) -> None:
        """A backward of ``tensors`` ran: which lines' forwards did it use? Judge the others."""
        roots = [t.grad_fn for t in (tensors if isinstance(tensors, (tuple, list)) else (tensors,))
                 if isinstance(t, torch.Tensor)]
        open_ = {k: node for k, node in self.outputs.items() if k[1] != self.pending.get(k[0], (0, 0, 0))[2]}
        used = _reached(roots, {id(n) for n in open_.values()}) if open_ else set()
        for key, (root, counts, last) in self.pending.items():
            trained = self.trained.setdefault(key, set())
            trained.add(last)
            trained.update(site for (k, site), node in open_.items() if k == key and id(node) in used)
            self._judge(root, counts, trained)
        self._reset()

    def finish(self) -> None:
        for key, (root, counts, _) in self.pending.items():
            self._judge(root, counts, self.trained.get(key, set()))
        self._reset()

    def _reset(self) -> None:
        self.pending.clear()
        self.outputs.clear()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def _judge(self, root, counts: dict, trained: set) -> None:
        for site, n in counts.items():
            if n < 2 or site in trained or (id(root), site) not in self.outputs:
                continue
            name = type(root).__name__
            for kind, what in (
                ("train mode in eval", f"{name} runs in train mode (dropout, batch norm statistics on)"),
                ("grad in eval", f"{name} builds an autograd graph at every call"),
            ):
                self.watcher.log.add(
                    Finding(
                        kind,
                        f"{what} at this line, {n} forwards that no backward used: an evaluation "
                        "loop without model.eval() and torch.no_grad()",
                        site,
                        self.watcher.step,
                        subject=f"{name}@{id(root)}",
                    )
                )
