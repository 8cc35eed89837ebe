"""``Watcher``: attaches to unmodified training code through PyTorch's global hooks and runs the
checks of ``course watch`` on a schedule that keeps the cost to a few percent of a step.

Hooks: module/parameter registration (where each layer was made), global forward hooks (which
modules are models: only during the first step and the deep windows), optimizer step pre/post
hooks (the step boundaries), ``torch.autograd.backward`` wrapped (which tensor is the loss: PyTorch
has no global pre-backward hook), and, in deep windows only, a TorchFunctionMode and a
TorchDispatchMode (``ops``).

Schedule: cheap checks (``params``) on steps 1..10 and every 16th step after; deep windows on
steps 1..3, then spaced so their measured extra time stays near ``budget`` (2%) of the run, and on
the step after a non-finite value or a gradient spike; all of it within the run's cost budget
(``cost_budget``: windows and checks wait, or are cut, when they cost more). ``deep_every=1``
watches every step deeply, with no budget.
"""

from __future__ import annotations

import functools
import math
import time
import weakref
from collections import deque

import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from course_utils.toolkit.watch import autograd as watch_autograd
from course_utils.toolkit.watch.copies import Copies
from course_utils.toolkit.watch.cost_budget import SHARE, Budget
from course_utils.toolkit.watch.data_order import SamplerOrder
from course_utils.toolkit.watch.deep import DeepJudge
from course_utils.toolkit.watch.distributions import DistributionLogits
from course_utils.toolkit.watch.findings import UNKNOWN, Finding, FindingLog, user_site
from course_utils.toolkit.watch.models import ModelTracker
from course_utils.toolkit.watch.ops import OpWatch, loss_nodes
from course_utils.toolkit.watch.params import OptimizerWatch
from course_utils.toolkit.watch.schedule import Schedule
from course_utils.toolkit.watch.verdicts import Verdicts

_ACTIVE: list[Watcher] = []
MANUAL_AFTER = 16  # backward passes with no optimizer step before updates count as hand-written


def _guarded(method):
    """A hook must never break the script it watches: an error inside it stops the watching."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not self.live or self.paused:
            return None
        if not self.ops.modes:  # no deep window: nothing to keep the watcher's own work out of
            start = self.cost.clock()
            try:
                return method(self, *args, **kwargs)
            except Exception as err:  # noqa: BLE001 - reported, and the script goes on unwatched
                self.fail(err, method.__name__)
                return None
            finally:
                self.cost.spent += self.cost.clock() - start
        if not self.ops.cut and self.ops.overdue():
            self.ops.cut = True  # the window outgrew its budget
        if self.ops.cut and self._drop_window():  # a safe point to leave a window cut for its cost
            return wrapper(self, *args, **kwargs)
        self.ops.paused += 1  # the watcher's own tensor work is not the script's
        try:
            return method(self, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - reported, and the script goes on unwatched
            self.fail(err, method.__name__)
            return None
        finally:
            self.ops.paused -= 1

    return wrapper


class _Manual:
    """Stands in for an optimizer when the script updates parameters by hand."""

    def __init__(self, params: list):
        self.param_groups = [{"params": params, "lr": 1.0}]


class Watcher(Verdicts, Schedule):
    """Watches every model and optimizer the running code creates; ``findings`` and ``report()``."""

    def __init__(
        self,
        *,
        verbose: bool = True,
        stream=None,
        deep_every: int | None = None,
        check_every: int = 16,
        warmup: int = 10,
        budget: float = 0.02,
        cost: Budget | None = None,
    ):
        self.log = FindingLog(stream, verbose)
        self.check_every, self.warmup, self.budget = max(1, check_every), warmup, budget
        self.cost = cost or Budget(math.inf if deep_every is not None else SHARE)  # asked for: no limit
        self._checks: dict[int, tuple[int, bool]] = {}  # optimizer watch -> (step, checked)
        self.deep_every = deep_every
        self.models = ModelTracker(self)
        self.ops = OpWatch(self)
        self.deep = DeepJudge(self)
        self.copies = Copies(self)  # model copies and the GradScaler's order
        self.order = SamplerOrder(self)  # the order of the training data
        self.distributions = DistributionLogits(self)  # probabilities given as a distribution's logits
        self.step = 0  # steps of the first optimizer seen (or manual updates)
        self.backwards = 0
        self.backward_since_step = False
        self.in_step = False
        self.live = False
        self.step_site = self.loss_site = UNKNOWN
        self.optimizers: dict[int, OptimizerWatch] = {}
        self._primary: weakref.ref | None = None  # the optimizer whose steps count as the run's steps
        self._coverage_at = 3
        self._coverage_due = False  # coverage waits for a step watched op by op from start to end
        self._coverage_judged = False
        self._manual: OptimizerWatch | None = None
        self._handles: list = []
        self._discovery: list = []
        self._backward = self._grad = None  # torch.autograd's own, while wrapped
        self._in_backward = False
        self.paused = False
        self._boundary_due = False
        self.last_loss: torch.Tensor | None = None
        self.loss_ref: weakref.ref | None = None  # the tensor the last backward started from
        self.deep_steps = 0
        self._next_deep = 1
        self._armed = False
        self._pending_nan: tuple | None = None
        self._window_start = 0.0
        self._window_step = 0  # the step the open window watches
        self._window_one_step = False  # whether it was opened at a step boundary
        self._plain: deque = deque(maxlen=50)  # seconds of recent plain steps
        self._extra: list[float] = []
        self._last_post = self._last_post_cpu = 0.0  # the last step boundary: wall, budget clock
        self._plain_cpu: deque = deque(maxlen=3)  # budget clock seconds of the last plain steps
        self._window_plain, self._unrated = 0.0, []  # that at the window's opening; costs to rate
        self._last_gnorm = 0.0
        self.started = time.perf_counter()

    # --- attach / detach -------------------------------------------------------------------------
    def install(self) -> Watcher:
        if _ACTIVE:
            raise RuntimeError("course watch is already watching this process")
        self.live = True
        self._handles = [
            module_hooks.register_module_module_registration_hook(self.models.on_module_registered),
            module_hooks.register_module_parameter_registration_hook(self.models.on_param_registered),
            optimizer_hooks.register_optimizer_step_pre_hook(self._on_step_pre),
            optimizer_hooks.register_optimizer_step_post_hook(self._on_step_post),
        ]
        self._discover(True)
        watch_autograd.install(self)
        self.copies.install()
        self.order.install()
        self.distributions.install()
        _ACTIVE.append(self)
        self._open_window(one_step=False)  # the set-up and the first step, op by op
        return self

    def uninstall(self) -> None:
        if self not in _ACTIVE:
            return
        broken, self.live = not self.live, True
        if not broken:
            self._close_window()
        self.ops.stop()
        self.ops.stop(force=True)
        self._discover(False)
        for handle in self._handles:
            handle.remove()
        watch_autograd.uninstall(self)
        self.copies.uninstall()
        self.order.uninstall()
        self.distributions.uninstall()
        if not broken:
            self.models.finish()
            self._flush_nan()
            self._finish_run()
        self.live = False
        self.models.close()
        for ow in [*self.optimizers.values(), *([self._manual] if self._manual else [])]:
            ow.close()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def __enter__(self) -> Watcher:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()
        if self.log.verbose:
            from course_utils.toolkit.watch.render import console

            print(console(self), file=self.log.stream or __import__("sys").stderr)

    def pause(self) -> None:
        """Stop looking until ``resume()`` (the hooks stay; they return at once)."""
        self._close_window()
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    @property
    def where_step(self):
        """The line of the optimizer's step() (for a hand-written update: the backward() line)."""
        return self.step_site if self.step_site.line else self.loss_site

    @property
    def findings(self) -> list[Finding]:
        return self.log.findings

    # --- events ------------------------------------------------------------------------------------
    @_guarded
    def _on_forward_pre(self, module, args) -> None:
        self.models.on_forward_pre(module, args)
        if not self.ops.open and self.models.roots and self.cost.left(windows=True) < 0:
            self._discover(False)  # models are looked for after a cut window until the budget is spent

    @_guarded
    def before_root_forward(self) -> None:
        if self._boundary_due:
            self._boundary_due = False
            self._window_boundary()

    @_guarded
    def on_root(self, root) -> None:
        """A model was found: its tensors are the device's; the window of the set-up counts from here
        (a set-up parked for its length goes on, op by op, with the first forward)."""
        if self.ops.parked:
            self.ops.resume()
        self.ops.on_root(root)
        if self.ops.open and math.isinf(self.ops.deadline):
            self.ops.restart_clock()
            self.ops.deadline = self.cost.deadline(self.ops.opened_at)

    @_guarded
    def _on_backward(self, tensors) -> None:
        loss = tensors if isinstance(tensors, torch.Tensor) else None
        if self.ops.modes:
            self.ops.nan.end_phase("forward", [loss])
        if loss is not None and loss.numel() == 1:
            if self.ops.open:
                self.ops.losses.chance.on_backward(loss)
                self.ops.loss_nodes += loss_nodes(loss.grad_fn)
            # the next window's reads of this loss are logging too; held weakly: a graph kept alive
            # past the script's own last reference slows the next backward (~10% on a long LSTM)
            self.loss_ref = weakref.ref(loss)
            self.last_loss = loss.detach()
            if self.loss_site is UNKNOWN or self.ops.open:
                self.loss_site = user_site(3)
        self.backwards += 1
        self.backward_since_step = True
        self.models.clear_pending(tensors)
        if self._manual is not None and not self.optimizers:
            self._manual.after_step(self._manual_opt, self._is_check(self._manual), self.last_loss)
            self.step += 1
            self._boundary_due = True  # at the next forward of the model: modes change outside torch calls

    @_guarded
    def _after_backward(self) -> None:
        if self.optimizers or not self.models.roots:
            return
        if self._manual is None and self.backwards >= MANUAL_AFTER:
            params = [p for r in self.models.live_roots() for p in r.parameters() if p.requires_grad]
            if params:
                self._manual_opt = _Manual(params)
                self._manual = OptimizerWatch(self, self._manual_opt)
                self._manual.name = "manual update"
                self.models.relay()  # its step boundary is the next forward
        if self.ops.open:
            self.ops.nan.end_phase(
                "backward", [p.grad for r in self.models.live_roots() for p in r.parameters()]
            )
        if self._manual is not None:
            self.in_step = False
            self._manual.before_step(self._manual_opt, self._is_check(self._manual))

    @_guarded
    def _on_step_pre(self, optimizer, args, kwargs) -> None:
        if not self.live:
            return
        self.in_step = True
        if self.ops.open:
            self.ops.nan.end_phase("backward", [p.grad for g in optimizer.param_groups for p in g["params"]])
            self.ops.suspend()
        ow = self._watch_of(optimizer)
        if ow is None:
            ow = self.optimizers[id(optimizer)] = OptimizerWatch(self, optimizer)
            if self._primary is None:
                self._primary = weakref.ref(optimizer)
                self.step_site = user_site(3)
            if self._manual is not None:
                self._manual.close()
                self._manual = None
        check = self._is_check(ow)
        if check:
            self.models.check_modes(optimizer, self.step + 1)
        closure = args[1] if len(args) > 1 else kwargs.get("closure")  # args[0] is the optimizer
        if closure is not None:  # LBFGS: the gradients come from the closure, inside step()
            return self._closure_as_user(closure, ow, optimizer, check, args, kwargs)
        ow.before_step(optimizer, check)
        if check and (ow.steps == 0 or ow.steps % 800 == 0):
            self._check_layout(optimizer)
        return None

    @_guarded
    def _on_step_post(self, optimizer, args, kwargs) -> None:
        if not self.live:
            return
        self.in_step = False
        self.ops.resume()
        ow = self._watch_of(optimizer)
        if ow is None:
            return
        ow.after_step(optimizer, self._is_check(ow), self.last_loss)
        primary = self._primary is not None and self._primary() is optimizer
        if not primary and not self._takes_over(ow, optimizer):
            return
        self.step += 1
        if self.step == self._coverage_at or self.step % 200 == 0:
            self._coverage_due = True
        if self._coverage_due and self.ops.open and not self.ops.cut:
            self._coverage_due = False  # judged on a step seen whole: every model it called was found
            self._coverage_judged = True
            self.models.coverage(self._all_optimizers(), self.step)
        elif self._coverage_due:
            self._armed = True  # the next step is watched op by op, as the budget allows
        self.backward_since_step = False
        if self.step % 10 == 0 and self.copies.averaged:
            self.copies.check(self.step)
        self._window_boundary()

    def _watch_of(self, optimizer):
        """The checks of ``optimizer``, if it has stepped before. An optimizer the script let go of
        (one built inside a pretraining function) frees its id for the next one: its checks go."""
        ow = self.optimizers.get(id(optimizer))
        if ow is not None and ow.ref() is not optimizer:
            del self.optimizers[id(optimizer)]
            ow.close()
            return None
        return ow

    def _all_optimizers(self) -> list:
        return [o for o in (ow.ref() for ow in self.optimizers.values()) if o is not None]
