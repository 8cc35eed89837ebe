"""The order of the training data (``course watch``): a ``DistributedSampler`` that shuffles but is
iterated again with the same epoch (``set_epoch`` never called, or called once before the loop)
gives every epoch the same permutation, so the batches repeat in the same order.

``DistributedSampler.__iter__`` is wrapped while the watcher is installed: one call per epoch, a
dictionary look-up each.
"""

from __future__ import annotations

import weakref

from torch.utils.data.distributed import DistributedSampler

from course_utils.toolkit.watch.findings import Finding, user_site

SAME_AFTER = 2  # passes with one epoch value beyond the first before it is reported


class SamplerOrder:
    """Each shuffling DistributedSampler's passes and the epoch value each used."""

    def __init__(self, watcher):
        self.watcher = watcher
        self.passes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # sampler -> [epochs]
        self._saved = None

    def install(self) -> None:
        original = DistributedSampler.__iter__
        order = self

        def __iter__(sampler):
            if order.watcher.live and not order.watcher.paused and getattr(sampler, "shuffle", False):
                try:
                    order.on_pass(sampler)
                except Exception as err:  # noqa: BLE001 - the watcher's error must not become the script's
                    order.watcher.fail(err, "on_pass")
            return original(sampler)

        __iter__.__wrapped__ = original
        self._saved = (original, __iter__)
        DistributedSampler.__iter__ = __iter__

    def uninstall(self) -> None:
        if self._saved and DistributedSampler.__iter__ is self._saved[1]:
            DistributedSampler.__iter__ = self._saved[0]
        self._saved = None

    def on_pass(self, sampler) -> None:
        """A new pass over the sampler: the same epoch value as every pass before it means the same
        permutation (the sampler seeds its shuffle with seed + epoch)."""
        epochs = self.passes.setdefault(sampler, [])
        epochs.append(int(getattr(sampler, "epoch", 0)))
        if len(epochs) <= SAME_AFTER or len(set(epochs)) > 1:
            return
        self.watcher.log.add(Finding(
            "same order",
            f"{type(sampler).__name__} (shuffle=True, seed {getattr(sampler, 'seed', 0)}) was iterated "
            f"{len(epochs)} times, each time with epoch={epochs[0]}: every pass drew the same permutation, "
            f"so each epoch sees the same batches in the same order",
            user_site(2),
            self.watcher.step + 1,
            subject=f"same order {id(sampler)}",
        ))
