"""Out-of-memory errors, and the correct version of a retry-on-OOM helper (lesson 02).

A context manager that yields a second time cannot retry (lesson 02); ``retry_on_oom`` halves the
chunk size after an OOM, empties the cache, retries the failed chunk and never skips or repeats a
row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

log = logging.getLogger(__package__)  # "course_utils.toolkit.memory", as before the module became a package


def is_out_of_memory(err: BaseException) -> bool:
    """True for torch.OutOfMemoryError (CUDA and others) and MPS's "MPS backend out of memory"."""
    return isinstance(err, torch.OutOfMemoryError) or (
        isinstance(err, RuntimeError) and "out of memory" in str(err).lower())


class MinBatchOutOfMemoryError(RuntimeError):
    """Even the smallest allowed batch ran out of memory: shrink the work another way."""


@dataclass(frozen=True)
class Retried:
    """``retry_on_oom``'s answer: one result per chunk, the final chunk size, and the OOMs met."""

    results: list
    batch_size: int
    ooms: int


def _rows(batch) -> int:
    return len(batch[0]) if isinstance(batch, tuple | list) else len(batch)


def _chunk(batch, start: int, stop: int):
    if isinstance(batch, tuple | list):
        return type(batch)(t[start:stop] for t in batch)
    return batch[start:stop]


def _empty_cache(device: torch.device | str | None) -> str:
    """``course_utils.toolkit.memory.empty_cache``, looked up when called so it can be replaced
    there (tests do)."""
    from course_utils.toolkit import memory

    return memory.empty_cache(device)


def retry_on_oom(step: Callable, batch, min_batch: int = 1,
                 device: torch.device | str | None = None,
                 report: Callable[[str], None] | None = None) -> Retried:
    """Run ``step`` over all of ``batch``, halving the chunk size whenever it runs out of memory.

    ``batch`` is a tensor or a tuple/list of tensors sharing dim 0. ``step(chunk)`` is called on
    consecutive chunks (first the whole batch); after an out-of-memory error the cache is emptied
    and the failed chunk is retried at half the size, never below ``min_batch``. Other errors
    propagate untouched; when ``min_batch`` itself fails, ``MinBatchOutOfMemoryError`` is raised.
    No row is skipped or run twice, so for training let ``step`` do forward and backward only
    (loss scaled by ``len(chunk) / len(batch)``) and call ``optimizer.step()`` once afterwards:
    gradient accumulation, which keeps the effective batch (lesson 02).
    """
    if min_batch < 1:
        raise ValueError(f"min_batch must be at least 1, got {min_batch}")
    say = report or log.info
    total, size, start, results, ooms = _rows(batch), _rows(batch), 0, [], 0
    while start < total:
        failed = False
        try:
            results.append(step(_chunk(batch, start, start + size)))
        except Exception as err:  # noqa: BLE001 - filtered at once: only OOM is handled
            if not is_out_of_memory(err):
                raise
            if size <= min_batch:
                raise MinBatchOutOfMemoryError(
                    f"out of memory even at batch size {size} (min_batch={min_batch}): shorten "
                    "sequences, use a smaller model or precision, or free other memory") from err
            failed = True
        if failed:  # outside `except`: the traceback (and the tensors it holds) is gone now
            ooms += 1
            done = _empty_cache(device)
            size = max(min_batch, size // 2)
            say(f"out of memory: {done}; retrying rows {start}.. with batch size {size}")
            continue
        start += size
    return Retried(results, size, ooms)
