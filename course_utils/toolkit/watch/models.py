"""The models ``course watch`` found, and the checks that need only their structure and modes.

Models are found, not passed in: a *root* is a module with parameters whose forward is called
while no other module's forward runs (global forward hooks, during the first steps and the deep
windows). Where each module and parameter was created or attached comes from the global
registration hooks (``model.fc = nn.Linear(...)`` is the line a swapped head was attached on).

Checks: parameters no optimizer holds and optimizer tensors the model no longer has
(``coverage``); training with dropout/batch norm in eval mode and evaluating (under no_grad) with
them in train mode (``on_root_forward``, ``check_modes``).
"""

from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.utils.weak import WeakIdKeyDictionary

from course_utils.toolkit.watch import coverage as watch_coverage
from course_utils.toolkit.watch.carried import CarriedGraph
from course_utils.toolkit.watch.evalloop import GradForwards, no_grad_forwards_in_train_mode
from course_utils.toolkit.watch.findings import UNKNOWN, Finding, Site, user_site
from course_utils.toolkit.watch.relay import Relays

_NORMS = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm, nn.modules.instancenorm._InstanceNorm)
_PER_CHANNEL = (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)  # remove a bias too


def mode_sensitive(module: nn.Module) -> bool:
    """Whether train/eval changes what this module computes (dropout, batch norm statistics)."""
    if isinstance(module, nn.modules.dropout._DropoutNd):
        return module.p > 0
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        return module.track_running_stats
    if isinstance(module, (nn.RNNBase, nn.MultiheadAttention)):
        return getattr(module, "dropout", 0) > 0
    return False


class ModelTracker:
    """Roots, where modules and parameters were made, parameter names, modes."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.live = True
        self.roots: list[weakref.ref] = []
        self.batch_size = 0
        self._root_ids: set[int] = set()
        self._has_params: WeakIdKeyDictionary = WeakIdKeyDictionary()  # module -> any parameter below
        self._own_params: WeakIdKeyDictionary = WeakIdKeyDictionary()  # module -> a parameter of its own
        self.module_site: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.param_info: WeakIdKeyDictionary = WeakIdKeyDictionary()  # param -> (site, owner, name)
        self.relays = Relays(self)
        self.depth = 0
        self.top_forwards = 0
        self.inner_called: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.trained_at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> window
        self._names: dict[int, str] = {}
        self._sensitive: dict[int, list[tuple[str, nn.Module]]] = {}
        self.last_train_forward: dict[int, tuple] = {}  # root id -> (eval modules, site)
        self.pending_eval: dict[int, tuple] = {}  # root id -> (train-mode modules, site, step)
        # root id -> (site, eval-mode forwards with grad since a backward)
        self.eval_grad: dict[int, tuple] = {}
        self.grad_forwards = GradForwards(watcher)
        self.carried = CarriedGraph(watcher)

    # --- registration hooks (always on: they fire only while models are built) -----------------
    def on_module_registered(self, parent, name, sub):
        if sub is not None and sub not in self.module_site:
            self.module_site[sub] = (user_site(2), type(parent).__name__, name)

    def on_param_registered(self, module, name, param):
        if param is not None:
            self.param_info[param] = (user_site(2), module, name)

    # --- forward hooks (discovery windows only) -------------------------------------------------
    def on_forward_pre(self, module, args):
        if self.depth and self._owns_params(module):
            self.inner_called[module] = self.watcher.deep_steps  # a part the forward calls, and when
        if self.depth == 0 and torch.is_grad_enabled():
            self.top_forwards += 1  # forwards that may be trained through (a rollout's, a micro-batch's)
            self.trained_at[module] = self.watcher.deep_steps
        if self.depth == 0 and id(module) not in self._root_ids:
            has = self._has_params.get(module)
            if has is None:
                has = self._has_params[module] = next(module.parameters(), None) is not None
            if has:
                self.add_root(module)
        if self.depth == 0 and id(module) in self._root_ids and args:
            if isinstance(args[0], torch.Tensor):
                self.batch_size = args[0].shape[0] if args[0].dim() else 0  # the batch a model received
            if torch.is_grad_enabled() and module not in self.relays:  # a relayed root: on_root_forward
                self.carried.forward(module, args)
        self.depth += 1

    def _owns_params(self, module) -> bool:
        owns = self._own_params.get(module)
        if owns is None:
            owns = self._own_params[module] = next(module.parameters(False), None) is not None
        return owns

    def on_forward(self, module, args, out):
        self.depth = max(0, self.depth - 1)

    def add_root(self, module: nn.Module) -> None:
        self._root_ids.add(id(module))
        self.roots.append(weakref.ref(module))
        self._names.clear()
        self._sensitive[id(module)] = [(n, m) for n, m in module.named_modules() if mode_sensitive(m)]
        if self._sensitive[id(module)] or self.watcher._manual is not None:
            self.relay(module)
        self.watcher.on_root(module)
        self.on_root_forward(module)  # the relay joins from the next call on

    def relay(self, module: nn.Module | None = None) -> None:
        """Hand the forwards of this root (default: of every root) to ``on_root_forward``. Only
        where it has work: mode-sensitive layers, or a hand-written update whose step boundary is
        the next forward (a module hook takes the slower call path in torch: ~1% of a small step)."""
        for root in [module] if module is not None else self.live_roots():
            self.relays.add(root)

    def live_roots(self) -> list[nn.Module]:
        return [m for m in (r() for r in self.roots) if m is not None]

    def close(self) -> None:
        self.live = False
        self.relays.close()

    # --- names ------------------------------------------------------------------------------------
    def names(self) -> dict[int, str]:
        if not self._names:
            roots = self.live_roots()
            for root in roots:
                prefix = f"{type(root).__name__}." if len(roots) > 1 else ""
                for name, p in root.named_parameters():
                    self._names.setdefault(id(p), prefix + name)
        return self._names

    def name(self, p: torch.Tensor, default: str = "") -> str:
        found = self.names().get(id(p))
        if found is None:
            self._names.clear()
            found = self.names().get(id(p))
        if found is None:
            info = self.param_info.get(p)
            found = f"{type(info[1]).__name__}.{info[2]} (not in the model)" if info else default
        return found

    def site_of(self, p: torch.Tensor) -> Site:
        """Where the parameter's module was attached to its parent (else where it was created)."""
        info = self.param_info.get(p)
        if info is None:
            return UNKNOWN
        attached = self.module_site.get(info[1])
        return attached[0] if attached is not None else info[0]

    # --- coverage ---------------------------------------------------------------------------------
    def coverage(self, optimizers: list, step: int, seen_whole: bool = True) -> None:
        """Trainable parameters no optimizer holds; optimizer tensors the models no longer have (on
        a step seen whole only: a cut window may have missed the modules a forward called)."""
        watch_coverage.coverage(self, optimizers, step, seen_whole)

    def _optimized(self, root: nn.Module) -> bool:
        held = {id(p) for o in self.watcher._all_optimizers() for g in o.param_groups for p in g["params"]}
        return self.watcher._manual is not None or any(id(p) in held for p in root.parameters())

    # --- modes --------------------------------------------------------------------------------------
    def on_root_forward(self, root: nn.Module, args=()) -> None:
        if self.watcher._boundary_due:
            searching = bool(self.watcher._discovery)
            self.watcher.before_root_forward()
            if self.watcher._discovery and not searching:
                self.depth = 1  # the search began inside this model's forward: its parts are no models
        if args and torch.is_grad_enabled():
            self.carried.forward(root, args)
        sensitive = self._sensitive.get(id(root))
        if not sensitive:
            return
        key = id(root)
        if torch.is_grad_enabled():
            self.pending_eval.pop(key, None)
            off = [(n, m) for n, m in sensitive if not m.training]
            self.last_train_forward[key] = (off, user_site(3) if off else UNKNOWN)
            if not root.training:
                self._eval_with_grad(root)
            elif not off:
                self.grad_forwards.forward(root, user_site(3))
            return
        on = [(n, m) for n, m in sensitive if m.training]
        if not on:
            self.pending_eval.pop(key, None)
            return
        pending = self.pending_eval.get(key)
        if pending is not None:  # a second no_grad forward with no backward between: evaluation
            if self._optimized(root):  # not a target or teacher copy (BYOL runs its target in train mode)
                self._report_eval_in_train(root, pending)
            return
        self.pending_eval[key] = (on, user_site(3), self.watcher.step)

    def clear_pending(self, tensors=None) -> None:
        """A backward ran: the no_grad forwards before it were part of training (a GAN, a teacher),
        and so were eval-mode forwards with autograd on (frozen batch norm, a teacher)."""
        self.pending_eval.clear()
        self.eval_grad.clear()
        self.grad_forwards.backward(tensors)
        self.relays.wake()

    def _eval_with_grad(self, root) -> None:
        """A second eval-mode forward with autograd on and no backward since: evaluation that builds
        graphs (``model.eval()`` without ``torch.no_grad()``)."""
        key = id(root)
        site, count = self.eval_grad.get(key, (user_site(3), 0))
        self.eval_grad[key] = (site, count + 1)
        if count + 1 == 2:
            self.watcher.log.add(
                Finding(
                    "grad in eval",
                    f"{type(root).__name__} runs in eval mode with autograd on, forward after forward "
                    "with no backward between: evaluation without torch.no_grad",
                    site,
                    self.watcher.step,
                    subject=f"{type(root).__name__}@{key}",
                )
            )

    def _report_eval_in_train(self, root, pending) -> None:
        self.watcher.log.add(no_grad_forwards_in_train_mode(root, pending))

    def finish(self) -> None:
        self.grad_forwards.finish()
        for key, pending in list(self.pending_eval.items()):
            root = next((m for m in self.live_roots() if id(m) == key), None)
            if root is not None and self._optimized(root):
                self._report_eval_in_train(root, pending)
        self.pending_eval.clear()

    def check_modes(self, optimizer, step: int) -> None:
        """At an optimizer step: was the last training forward of its models in eval mode?"""
        held = None
        for root in self.live_roots():
            state = self.last_train_forward.get(id(root))
            if not state or not state[0]:
                continue
            if held is None:
                held = {id(p) for g in optimizer.param_groups for p in g["params"]}
            if not any(id(p) in held for p in root.parameters()):
                continue
            off, site = state
            trained = [
                (n, m)
                for n, m in off
                if any(p.requires_grad for p in m.parameters(recurse=False))
                or isinstance(m, nn.modules.dropout._DropoutNd)
            ]
            kinds = sorted({type(m).__name__ for _, m in off})
            names = ", ".join(n or type(root).__name__ for n, _ in off[:4])
            if not trained:
                self.watcher.log.add(
                    Finding(
                        "note",
                        f"{names}: batch norm frozen on purpose (eval mode, no trainable affine)",
                        site,
                        step,
                        subject=f"frozen-bn {type(root).__name__}",
                    )
                )
                continue
            self.watcher.log.add(
                Finding(
                    "eval mode",
                    f"the optimizer steps while {', '.join(kinds)} in {type(root).__name__} "
                    f"ran in eval mode ({names}{'...' if len(off) > 4 else ''})",
                    site,
                    step,
                    subject=f"{type(root).__name__}@{id(root)}",
                )
            )


def _norm_after(root: nn.Module, owner: str) -> tuple[nn.Module, int | None] | None:
    """The leaf module right after leaf ``owner`` (in registration order) when it is a norm layer,
    with its number of features."""
    leaves = [(n, m) for n, m in root.named_modules() if not next(m.children(), None)]
    for i, (name, _) in enumerate(leaves[:-1]):
        if name == owner:
            nxt = leaves[i + 1][1]
            if not isinstance(nxt, _NORMS):
                return None
            size = getattr(nxt, "num_features", None) or getattr(nxt, "num_channels", None)
            if size is None and isinstance(nxt, nn.LayerNorm):
                size = nxt.normalized_shape[-1]
            return nxt, size
    return None


def feeds_norm(root: nn.Module, param_name: str, numel: int) -> str | None:
    """If ``param_name`` is the bias of a Linear/Conv whose output goes straight into a norm layer
    (the next leaf module, with as many features), that norm layer's class name."""
    if not param_name.endswith("bias"):
        return None
    found = _norm_after(root, param_name.rsplit(".", 1)[0] if "." in param_name else "")
    return type(found[0]).__name__ if found and found[1] == numel else None


def scale_invariant(root: nn.Module, param_name: str) -> bool:
    """Whether ``param_name`` is the weight of a Linear/Conv whose output goes straight into a norm
    layer over its output features (batch or instance norm; layer or group norm only without a bias):
    the norm divides out the weight's scale, so the weight's size says nothing about the step's
    effect (its relative updates are large early and shrink as its norm grows)."""
    if not param_name.endswith("weight") or "." not in param_name:
        return False
    owner = param_name.rsplit(".", 1)[0]
    module = dict(root.named_modules()).get(owner)
    features = getattr(module, "out_channels", None) or getattr(module, "out_features", None)
    found = _norm_after(root, owner) if features else None
    per_channel = found and (isinstance(found[0], _PER_CHANNEL) or getattr(module, "bias", None) is None)
    return bool(per_channel) and found[1] == features
