"""The activations autograd saves for backward, in bytes (lessons 02 and 07).

``SavedTensors`` (a context manager) and ``saved_bytes(fn, *args)`` count what autograd saves while
code runs, through ``saved_tensors_hooks``; ``graph_saved_bytes(outputs)`` counts what the graphs
behind existing outputs still keep alive. Each storage is counted once (``x * x`` saves ``x`` twice)
and whole (a saved view keeps all of its storage alive), as ``sizes.distinct_storage_bytes`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch

from course_utils.toolkit.memory.sizes import distinct_storage_bytes, storage_bytes, storage_key


class Save(NamedTuple):
    """One tensor autograd saved: its storage (``sizes.storage_key``), the bytes of that storage,
    and the bytes of the tensor itself (less than the storage's for a view)."""

    storage: int
    storage_bytes: int
    view_bytes: int


class SavedTensors:
    """Context manager: bytes of distinct storages autograd saves for backward (lesson 02).

    ``saved_tensors_hooks`` hands every tensor saved for backward to ``pack``; we count each
    storage once (``x * x`` saves ``x`` twice) and skip ``exclude`` (e.g. the weights and the batch,
    which the bill counts elsewhere). ``saves`` lists every save in order, repeats included.
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        self._skip = {storage_key(t) for t in exclude}
        self.storages: dict[int, int] = {}
        self.saves: list[Save] = []
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        key = storage_key(t)
        if key not in self._skip:
            self.storages[key] = storage_bytes(t)
            self.saves.append(Save(key, self.storages[key], t.numel() * t.element_size()))
        return t

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())

    def __enter__(self) -> SavedTensors:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)


def saved_bytes(fn: Callable, *args, exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes autograd saves for backward while ``fn(*args)`` runs (distinct storages, without
    those of ``exclude``)."""
    with SavedTensors(exclude) as saved:
        fn(*args)
    return saved.bytes


def graph_saved_bytes(outputs: Iterable[torch.Tensor], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes the autograd graphs behind ``outputs`` keep alive (saved tensors, each storage once,
    without the storages of ``exclude``): what keeping an output with a graph costs (lesson 07)."""
    found: list[torch.Tensor] = []
    todo = [o.grad_fn for o in outputs if o.grad_fn is not None]
    visited = set()
    while todo:
        node = todo.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        for name in dir(node):
            if name.startswith("_saved_"):
                value = getattr(node, name)
                if isinstance(value, torch.Tensor):
                    found.append(value)
        todo += [nxt for nxt, _ in node.next_functions]
    return distinct_storage_bytes(found, exclude)
