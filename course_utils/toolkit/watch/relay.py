"""The watcher's per-root forward pre-hook, and taking it out of what ``torch.save`` writes
(``course watch``)."""

from __future__ import annotations

import functools
import weakref

from torch import nn


class RootRelay:
    """The per-root forward pre-hook: hands the call to the active watcher. Pickles (and deep-copies
    into a saved model) as ``partial(dict.get, {})``, a stdlib no-op that returns the inputs as they
    are, so a model saved with ``torch.save(model)`` loads where course_utils is not installed."""

    def __init__(self, models):  # a ModelTracker
        self.models = weakref.ref(models)

    def __call__(self, module, args):
        models = self.models()
        if models is not None and models.live:
            models.on_root_forward(module, args)

    def __reduce__(self):
        return (functools.partial, (dict.get, {}))


def _is_relay(hook) -> bool:
    """The watcher's relay, or what a deep copy of it became (``partial(dict.get, {})``)."""
    if isinstance(hook, RootRelay):
        return True
    return isinstance(hook, functools.partial) and hook.func is dict.get and hook.args == ({},)


def take_relays(obj) -> list[tuple]:
    """Take the relays out of the modules ``obj`` holds (a module, or a checkpoint dict, list or
    tuple of them, one level down) for ``torch.save``: a model saved whole then loads with
    ``weights_only`` (torch's default), which allows no hook. Returns what ``put_back`` restores."""
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else [obj]
    taken = []
    for top in items:
        for module in top.modules() if isinstance(top, nn.Module) else ():
            hooks = module._forward_pre_hooks
            for key in [k for k, h in hooks.items() if _is_relay(h)]:
                taken.append((hooks, key, hooks.pop(key)))
    return taken


def put_back(taken: list[tuple]) -> None:
    for hooks, key, hook in taken:
        hooks.setdefault(key, hook)
