"""The watcher's per-root forward pre-hooks (``Relays``), and taking them out of what ``torch.save``
writes (``course watch``)."""

from __future__ import annotations

import functools
import weakref

from torch import nn

# Forwards of a root with no backward between that its relay hands on; then it rests until the next
# backward or deep window. The mode checks it serves are decided on the first forwards after a
# backward: a step's first forward, the first two of an evaluation loop (evaluation follows an update
# or comes before any), so a rollout of hundreds of forwards per update pays for eight of them.
FULL = 8


class Relays:
    """The relays of a ``ModelTracker``'s roots: each hands its root's forwards to ``on_root_forward``
    until ``FULL`` of them ran with no backward between, then takes itself off the root (a module
    hook costs the slower call path in torch) until ``wake()``."""

    def __init__(self, models):
        self.models = models
        self._entries: dict[int, list] = {}  # root id -> [root ref, relay, handle or None, forwards]
        self._resting: list[list] = []

    def __contains__(self, root: nn.Module) -> bool:
        return id(root) in self._entries

    def add(self, root: nn.Module) -> None:
        if id(root) not in self._entries:
            entry = self._entries[id(root)] = [weakref.ref(root), RootRelay(self), None, 0]
            self._arm(entry)

    def forward(self, root: nn.Module, args) -> None:
        """A relayed forward: the checks, then the count that may rest the relay."""
        models = self.models
        if not models.live:
            return
        models.on_root_forward(root, args)
        entry = self._entries.get(id(root))
        if entry is None or entry[0]() is not root or entry[2] is None:
            return
        entry[3] += 1
        if entry[3] >= FULL and not models.watcher.ops.open:
            entry[2].remove()
            entry[2] = None
            self._resting.append(entry)

    def wake(self) -> None:
        """A backward ran or a window opens: every relay counts again from 0, the resting ones back on."""
        for entry in self._entries.values():
            entry[3] = 0
        for entry in self._resting:
            self._arm(entry)
        self._resting.clear()

    def close(self) -> None:
        for entry in self._entries.values():
            if entry[2] is not None:
                entry[2].remove()
                entry[2] = None
        self._resting.clear()

    @staticmethod
    def _arm(entry: list) -> None:
        root = entry[0]()
        if root is not None and entry[2] is None:
            entry[2] = root.register_forward_pre_hook(entry[1])


class RootRelay:
    """The per-root forward pre-hook: hands the call to its ``Relays``. Pickles (and deep-copies
    into a saved model) as ``partial(dict.get, {})``, a stdlib no-op that returns the inputs as they
    are, so a model saved with ``torch.save(model)`` loads where course_utils is not installed."""

    def __init__(self, relays: Relays):
        self.relays = weakref.ref(relays)

    def __call__(self, module, args):
        relays = self.relays()
        if relays is not None:
            relays.forward(module, args)

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
