"""Lesson 08's capstone: a haunted training script, its fixed version, and the lab that measures them.

``haunted(lab)`` trains a tiny tag classifier (token ids -> one of four tags). It runs without an
error and logs a loss every step, and it is wrong in five ways: a gradient bug, a data bug, a layout
bug that bites only on an affected Mac (emulated), an op in the forward that falls back to the CPU
(emulated), and a host sync in every step. ``fixed(lab)`` is the same script repaired; it is the
solution of the capstone exercises (``course_utils.bank.lesson08``).

A ``Lab`` is the world a script runs in: its data (``lab.dataset()``), its budget of steps, and
``lab.run(model, optimizer)``, the training context. Inside it the machine is an **affected Mac,
emulated on CPU tensors**: in-place ``addcmul_``/``addcdiv_`` into non-contiguous tensors are lost
(``mps_inplace_bug``, lesson 06), ops without an MPS kernel fall back to the CPU with real copies
inside every module's forward (``emulate_fallback``, lesson 04; entered per forward, which costs far
less than for the whole step), and every read of a device value by the host is counted
(``SyncWatch``, lesson 03; also by any ``find_sync_points`` running around the script).
``run.log(value)`` is the run's logger; ``run.report()`` is what a script returns: a plain dict
(held-out loss and accuracy, frozen parameters, fallbacks and host copies inside the forward, syncs
per step) that the checkpoints judge. They never take a script's word for it: each run files what it
measured in the lab's ledger (``lab.measured_runs()``; a copy has its own), the report a script
returns must be that one, and the run also measures the task's rules (``capstone_rules``: model and
optimizer, token norms, rows trained on, shared storage, lost in-place writes). The lab's own
measurements (the frozen check, the rules, the optional sentinel) are made with the sync watch
paused; the logger's reads count, since the script asks for them. The checkpoints, ``scorecard``
and ``fixed`` live in ``capstone_checks`` and are re-exported here. Lesson 08's stored outputs
print where ``haunted`` syncs (``capstone.py:311``): a line added or removed above it moves that
location (the run's helpers live below the scripts for that reason).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections import Counter
from dataclasses import dataclass, field, fields

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.labs.capstone_checks import *  # noqa: F403 - re-exported: checkpoints, fixed
from course_utils.labs.capstone_data import CLASSES, LENGTH, POOL, SIGNALS, VOCAB, TagModel, tagged_sequences  # noqa: F401 - re-exported: the task
from course_utils.labs.capstone_rules import Ledger, RuleWatch, device_of, global_forward_hooks

# --- the lab ---------------------------------------------------------------------------------------


@dataclass
class Lab:
    """Where a capstone script runs (lesson 08): the data, the step budget and the machine.

    ``affected`` plays an affected Mac (the in-place bug of lesson 06, emulated); with ``False`` the
    machine is healthy. ``sentinel=True`` attaches lesson 06's ``Sentinel``, which prints what it
    finds. The machine, the fallback emulation and the sync watch act only inside ``run()``.
    """

    seed: int = 0
    steps: int = 64
    batch: int = 32
    lr: float = 1e-2
    n_train: int = 512
    n_eval: int = 256
    log_every: int = 16
    affected: bool = True
    sentinel: bool = False
    _handed: list = field(default_factory=list, init=False, repr=False, compare=False)
    _ledger: Ledger = field(default_factory=Ledger, init=False, repr=False, compare=False)

    def dataset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The training data: (ids of shape (n_train, LENGTH), tags of shape (n_train,)), as collected."""
        ids, labels = tagged_sequences(self.n_train, self.seed, sort=True)
        self._handed[:] = [ids, labels]  # the run counts them as device tensors
        return ids, labels

    def eval_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Held-out data the script never sees; the report's loss and accuracy are measured on it."""
        return tagged_sequences(self.n_eval, self.seed + 10_000, sort=False)

    def run(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> LabRun:
        """The training context: ``with lab.run(model, optimizer) as run: ...``, then ``run.report()``."""
        return LabRun(self, model, optimizer)

    def measured_runs(self) -> list[dict]:
        """What each run in this lab (this object) measured, oldest first: the judges' evidence."""
        return [dict(r) for r in self._ledger.runs]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_handed"], state["_ledger"] = [], Ledger()
        return state

    def settings(self) -> dict:
        """The lab's settings (everything but the data it handed out)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    def __deepcopy__(self, memo) -> Lab:
        """A lab of the same settings that has handed out no data and measured no run: runs made
        in a copy are filed in the copy's own ledger (a pickled lab's too)."""
        return Lab(**self.settings())


class LabRun:
    """One training run inside a lab: the machine, the logger and the measurements (lesson 08)."""

    def __init__(self, lab: Lab, model: nn.Module, optimizer: torch.optim.Optimizer):
        self.lab, self.model, self.optimizer = lab, model, optimizer
        self.steps = self.forwards = self.forward_copies = 0
        self.logged: list[float] = []
        self.forward_fallbacks: Counter[str] = Counter()
        self.sentinel = None
        self.watch = self.emulation = self.bug = self.rules = None
        self._pending: list[torch.Tensor] = []
        self._depth = self._fallbacks_at = 0
        self._own_emulation = None
        self._outer: list = []
        self._stack: contextlib.ExitStack | None = None
        self._report: dict | None = None

    # --- the logger ---------------------------------------------------------------------------------
    def log(self, value: float | torch.Tensor) -> None:
        """Log one loss. A float is kept as is; a tensor stays on the device and is read together with
        the others every ``lab.log_every`` logs (one host read per group)."""
        if isinstance(value, torch.Tensor):
            self._pending.append(value.detach().reshape(()))
            if len(self._pending) >= self.lab.log_every:
                self._flush()
        else:
            self._flush()
            self.logged.append(float(value))

    def _flush(self) -> None:
        if self._pending:
            values, self._pending = self._pending, []
            self.logged += torch.stack(values).tolist()  # one read of the device for the group

    # --- the hooks ----------------------------------------------------------------------------------
    def _quiet(self) -> contextlib.ExitStack:
        """Pause every sync watcher (the run's own and any outer one) for the lab's own reads."""
        stack = contextlib.ExitStack()
        for watch in [*self._outer, self.watch]:
            if watch is not None:
                stack.enter_context(watch.quiet())
        return stack

    def _after_step(self, optimizer, args, kwargs) -> None:
        self.steps += 1
        with self._quiet(), torch.no_grad():
            grads = [p.grad for p in self._params if p.grad is not None]
            for i, p in enumerate(self._params):
                if p.grad is not None:
                    self._had_grad[i] |= bool(p.grad.ne(0).any())
            if grads:  # kept on the device; read once, at the end of the run
                self._grad_norms.append(torch.linalg.vector_norm(torch.stack(
                    [torch.linalg.vector_norm(g) for g in grads])))
            if self.sentinel is not None:
                self.sentinel.step()

    def _before_forward(self, module, args) -> None:
        if self._depth == 0:
            self.forwards += 1
            self.rules.forward_starts(args)
            self._forward_emulation()
        self._depth += 1

    def _after_forward(self, module, args, output) -> None:
        self._depth = max(0, self._depth - 1)
        self.rules.module_done(module, output)
        if self._depth == 0:
            self._end_forward_emulation()
            self.rules.forward_done()

    def _forward_emulation(self) -> None:
        """Emulate the fallback for the length of one forward (cheaper than for the whole step)."""
        from course_utils.toolkit.emulate import mps_fallback as emulated

        emulation = emulated.active()
        if emulation is None:  # none of the learner's own: the run's machine
            emulation = emulated.emulate_fallback(device="cpu")
            emulation.__enter__()
            self._own_emulation = emulation
        emulation.listeners.append(self._on_copy)
        self.emulation, self._fallbacks_at = emulation, len(emulation.fallbacks)

    def _end_forward_emulation(self) -> None:
        emulation, self.emulation = self.emulation, None
        if emulation is None:
            return
        self.forward_fallbacks.update(emulation.fallbacks[self._fallbacks_at:])
        emulation.listeners.remove(self._on_copy)
        if emulation is self._own_emulation:
            self._own_emulation = None
            emulation.__exit__(None, None, None)

    def _on_copy(self, op: str, src: str, dst: str, nbytes: int) -> None:
        if self._depth > 0:
            self.forward_copies += 1

    # --- the context --------------------------------------------------------------------------------
    def __enter__(self) -> LabRun:
        self._names = [n for n, _ in self.model.named_parameters()]
        self._params = [p for _, p in self.model.named_parameters()]
        self._start = [p.detach().clone() for p in self._params]
        self._had_grad = [False] * len(self._params)
        self._grad_norms: list[torch.Tensor] = []
        stack = self._stack = contextlib.ExitStack()
        try:
            self._enter(stack)
        except BaseException:
            self._stack = None
            stack.close()
            raise
        return self

    def _enter(self, stack: contextlib.ExitStack) -> None:
        from course_utils.toolkit.emulate.inplace import mps_inplace_bug
        from course_utils.toolkit.emulate.mps_fallback import EmulatedFallbackWarning
        from course_utils.toolkit.syncs import finder as syncpoints
        from course_utils.toolkit.syncs.finder import SyncWatch
        from course_utils.toolkit.timing import one_thread

        stack.enter_context(one_thread())
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", EmulatedFallbackWarning)
        stack.callback(self.optimizer.register_step_post_hook(self._after_step).remove)
        stack.enter_context(global_forward_hooks(self._before_forward, self._after_forward))
        if self.lab.affected:
            self.bug = stack.enter_context(mps_inplace_bug(device="cpu"))
        if self.lab.sentinel:
            from course_utils.toolkit.sentinel import Sentinel

            self.sentinel = Sentinel(self.model, self.optimizer)
        self._outer = list(syncpoints.active_watches())  # e.g. find_sync_points(script, lab) around the run
        for watch in [*self._outer, SyncWatch()]:
            watch.mark((self.model, self.lab._handed))  # the lab's tensors live on the device
        self.watch = watch
        stack.enter_context(self.watch)
        self.rules = RuleWatch(self)  # the task's rules, measured from here

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self._flush()  # the last group of logged tensors, read before the run ends
        finally:
            self._depth = 0
            self._end_forward_emulation()  # a forward that raised: leave its emulation first
            stack, self._stack = self._stack, None
            stack.close()
        if exc[0] is None:
            self._report = self._measure()
            self.lab._ledger.file(self._report)

    # --- the report ---------------------------------------------------------------------------------
    def _measure(self) -> dict:
        from course_utils.toolkit.timing import one_thread

        ids, labels = self.lab.eval_set()
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad(), one_thread(), self._quiet():
            logits = self.model(ids.to(device_of(self.model))).float().cpu()
            loss = F.cross_entropy(logits, labels).item()
            accuracy = (logits.argmax(dim=-1) == labels).float().mean().item()
            frozen = [name for name, p, start, grad in zip(self._names, self._params, self._start,
                                                             self._had_grad, strict=True)
                      if grad and torch.equal(p.detach().cpu(), start.cpu())]
            norms = torch.stack(self._grad_norms).tolist() if self._grad_norms else []
        self.model.train(was_training)
        report = self.watch.report
        places = [f"{g.kind} at {g.where} ({g.count}x): {g.where.code}" for g in report.groups()]
        return {
            "steps": self.steps,
            "logged": [round(v, 4) for v in self.logged],
            "grad_norms": [round(v, 4) for v in norms],
            "eval_loss": round(loss, 4) if math.isfinite(loss) else float("nan"),
            "eval_accuracy": round(accuracy, 4), "frozen": frozen,
            "untrained": self.rules.untrained(self._names, self._params, self._start, self._had_grad),
            "forwards": self.forwards,
            "forward_fallbacks": dict(self.forward_fallbacks),
            "forward_copies": self.forward_copies,
            "syncs": len(report),
            "syncs_per_step": round(len(report) / max(self.steps, 1), 4),
            "sync_places": places,
            "machine": "affected Mac (emulated)" if self.lab.affected else "healthy (emulated)",
            "rules": self.rules.measure(sum(self.bug.dropped.values()) if self.bug else 0, self._had_grad),
        }

    def report(self) -> dict:
        """What the run measured, as a plain dict (after the ``with`` block)."""
        if self._report is None:
            raise RuntimeError("call run.report() after the `with lab.run(...) as run:` block")
        return dict(self._report)


# --- the haunted script and the fixed one ------------------------------------------------------------


def haunted(lab: Lab) -> dict:
    """The haunted training script of lesson 08: it runs, it logs, and it is wrong five times over."""
    torch.manual_seed(lab.seed)
    ids, labels = lab.dataset()  # token ids, one tag per sequence
    model = TagModel(max_norm=1.0)  # keep every token vector within norm 1
    model.up.weight.data = model.down.weight.T.clone()  # start the block symmetric
    optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)
    with lab.run(model, optimizer) as run:
        for step in range(lab.steps):
            start = step * lab.batch % len(ids)
            batch, target = ids[start:start + lab.batch], labels[start:start + lab.batch]
            loss = F.cross_entropy(model(batch), target)
            loss.backward()
            optimizer.step()
            run.log(loss.item())
    return run.report()
