"""What a capstone run measures about the task's rules, and where a lab keeps what its runs measured.

The checkpoints of lesson 08 judge what the lab saw, never what a script says about itself: every
``lab.run(...)`` files its measured report in the lab's ``Ledger`` (each lab object has its own:
a judge reads the ledger of the very lab the answer was handed, ``Outcome.inputs``), and a
``RuleWatch`` rides along each run to measure the rules the task states:

- the model is a ``TagModel`` whose ``up.weight`` starts as the transpose of ``down.weight``, and no
  two parameters share storage (a symmetric *start*, not a tie);
- the optimizer is a fresh ``torch.optim.Adam`` with ``lr=lab.lr`` and the model was not trained
  in an earlier run of this lab;
- every token vector a forward uses (the output of each ``nn.Embedding``) has norm at most 1;
- every row a forward trains on is a row of ``lab.dataset()`` (not the held-out set, not made up),
  and each forward takes 1 to ``lab.batch`` rows;
- how many parameters received a non-zero gradient (a run in which none did trained nothing);
- how many in-place writes the affected Mac lost (``mps_inplace_bug``'s own count).

Its measurements run with the sync watch paused and outside the forward's fallback emulation, so
they add no sync, no device op and no fallback to what the run reports.
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from typing import Any

import torch
from torch import nn

from course_utils.labs.capstone_data import LENGTH, TagModel, tagged_sequences

NORM_LIMIT = 1.0 + 1e-4  # "token vectors kept within norm 1", with room for float rounding


class Ledger:
    """What the runs of one lab object measured, oldest first, and the parameters they trained
    (weakly held)."""

    def __init__(self) -> None:
        self.runs: list[dict] = []
        self._trained: dict[int, weakref.ref] = {}  # by id: tensors compare by value, not identity

    def file(self, report: dict) -> None:
        self.runs.append(copy.deepcopy(report))

    def note_trained(self, params) -> None:
        self._trained.update({id(p): weakref.ref(p) for p in params})

    def was_trained(self, p: torch.Tensor) -> bool:
        ref = self._trained.get(id(p))
        return ref is not None and ref() is p

    def __reduce__(self):
        return (Ledger, ())  # a pickled lab starts a ledger of its own


def shared_storage(model: nn.Module) -> list[list[str]]:
    """Pairs of parameter names whose tensors share one storage (a tie, or views of one tensor)."""
    seen: dict[int, str] = {}
    pairs = []
    for name, p in model.named_parameters(remove_duplicate=False):
        if p.numel() == 0:
            continue
        key = p.untyped_storage().data_ptr()
        if key in seen:
            pairs.append([seen[key], name])
        else:
            seen[key] = name
    return pairs


def _symmetric(model: nn.Module) -> bool:
    up, down = getattr(model, "up", None), getattr(model, "down", None)
    if not (isinstance(up, nn.Linear) and isinstance(down, nn.Linear)):
        return False
    return up.weight.shape == down.weight.T.shape and torch.equal(up.weight, down.weight.T)


class RuleWatch:
    """The rule measurements of one run (``LabRun`` calls it at enter, around each forward, and
    when it measures)."""

    def __init__(self, run):

        self.run = run
        lab, model, optimizer = run.lab, run.model, run.optimizer
        self.inputs: list[torch.Tensor | None] = []
        self.token_norms: list[torch.Tensor] = []
        self._pending: list[torch.Tensor] = []
        with run._quiet(), torch.no_grad():
            self.start = {
                "tag_model": isinstance(model, TagModel),
                "symmetric_start": _symmetric(model),
                "optimizer": type(optimizer).__name__,
                "lr": [float(g.get("lr", float("nan"))) for g in optimizer.param_groups],
                "optimizer_fresh": not any(optimizer.state.values()),
                "trained_before": any(lab._ledger.was_trained(p) for p in model.parameters()),
                "shared_storage": shared_storage(model),
            }

    def forward_starts(self, args: tuple) -> None:
        """A top-level forward begins: keep a copy of the rows it takes."""
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        with self.run._quiet(), torch.no_grad():
            self.inputs.append(None if x is None else x.detach().clone())

    def module_done(self, module: nn.Module, output: Any) -> None:
        """A module's forward ended: an embedding's output is a batch of token vectors."""
        if isinstance(module, nn.Embedding) and isinstance(output, torch.Tensor):
            self._pending.append(output.detach())

    def forward_done(self) -> None:
        """The top-level forward ended (its emulation is off): measure its token vectors."""
        pending, self._pending = self._pending, []
        with self.run._quiet(), torch.no_grad():
            for out in pending:
                if out.numel():
                    self.token_norms.append(torch.linalg.vector_norm(out.float(), dim=-1).amax())

    def _foreign_rows(self, lab) -> tuple[int, int, list[int]]:
        """(rows not in the training data, rows seen, rows per forward)."""

        train = tagged_sequences(lab.n_train, lab.seed, sort=True)[0]
        foreign = seen = 0
        sizes = []
        usable = []
        for x in self.inputs:
            rows = 0 if x is None or x.dim() == 0 else x.shape[0]
            sizes.append(rows)
            seen += rows
            if x is None or x.dim() != 2 or x.shape[1] != LENGTH or x.dtype not in (torch.int64, torch.int32):
                foreign += rows
            else:
                usable.append(x.long().cpu())
        if usable:
            used = torch.cat(usable)
            _, inverse = torch.unique(torch.cat([train, used]), dim=0, return_inverse=True)
            known = set(inverse[:len(train)].tolist())
            foreign += sum(i not in known for i in inverse[len(train):].tolist())
        return foreign, seen, sizes

    def untrained(self, names: list[str], params: list[torch.Tensor], start: list[torch.Tensor],
                  had_grad: list[bool]) -> dict[str, str]:
        """Each parameter the reference trains (all of them) that this run left untrained, and
        why: no gradient reached it (``requires_grad_(False)``, a detach, a cleared or zeroed
        gradient), the optimizer does not hold it or steps it with lr 0, it was replaced inside the
        run, or its value never changed."""
        run = self.run
        groups = {id(p): float(g.get("lr", 0.0)) for g in run.optimizer.param_groups for p in g["params"]}
        now = dict(run.model.named_parameters())
        found = {}
        with run._quiet(), torch.no_grad():
            for name, p, first, grad in zip(names, params, start, had_grad, strict=True):
                if now.get(name) is not p:
                    found[name] = "replaced by a new tensor inside lab.run(...), which trained the old one"
                elif not p.requires_grad or not grad:
                    found[name] = "never received a gradient (requires_grad off, detached, or cleared)"
                elif id(p) not in groups:
                    found[name] = "not in the optimizer"
                elif groups[id(p)] == 0.0:
                    found[name] = "stepped with lr 0"
                elif torch.equal(p.detach().cpu(), first.cpu()):
                    found[name] = "never changed"
        return found

    def measure(self, lost_writes: int, had_grad: list[bool]) -> dict:
        """The rules' measurements, as plain data; notes the model's parameters as trained."""
        run = self.run
        with run._quiet(), torch.no_grad():
            norms = torch.stack(self.token_norms).amax().item() if self.token_norms else 0.0
            foreign, seen, sizes = self._foreign_rows(run.lab)
            shared_end = shared_storage(run.model)
        run.lab._ledger.note_trained(run.model.parameters())
        return {**self.start,
                "shared_storage": self.start["shared_storage"] or shared_end,
                "max_token_norm": round(float(norms), 6),
                "rows_seen": seen,
                "foreign_rows": foreign,
                "batch_rows": [min(sizes), max(sizes)] if sizes else [0, 0],
                "got_gradients": sum(had_grad),
                "lost_writes": int(lost_writes)}


@contextlib.contextmanager
def global_forward_hooks(before, after):
    """Call ``before(module, args)`` / ``after(module, args, output)`` around every module's forward."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    handles = [register_module_forward_pre_hook(before), register_module_forward_hook(after)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def device_of(model: nn.Module) -> torch.device:
    """The device of the model's first parameter (cpu for a model with none)."""
    first = next(model.parameters(), None)
    return first.device if first is not None else torch.device("cpu")
