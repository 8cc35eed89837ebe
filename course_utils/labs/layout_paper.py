"""The paper's two layout experiments, scaled down to run in seconds (R56 in references.md; lesson 05).

- ``permute_copy_times``: ``.contiguous()`` after permuting the first k dimensions of a 6-D tensor
  (``reverse_first``), judged by ``rises``.
- ``augment_times``: an augmentation pipeline (``augment`` on ``synthetic_images``),
  contiguity-aware vs default.
- ``one_thread``: run torch on one CPU thread, so other programs disturb timings less.

The layout tools they use (``describe``, ``Layout``) live in ``course_utils.toolkit.layout``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import torch

from course_utils.toolkit.layout import Layout, describe
from course_utils.toolkit.timing import one_thread


def reverse_first(k: int, ndim: int = 6) -> tuple[int, ...]:
    """Reverse the first ``k`` of ``ndim`` dimensions: k=3 -> (2, 1, 0, 3, 4, 5) (lesson 05, section 8)."""
    return tuple(reversed(range(k))) + tuple(range(k, ndim))


def permute_copy_times(n: int = 24, ks: Sequence[int] = (2, 3, 4, 5, 6), repeats: int = 7,
                       min_time: float = 0.02,
                       extra: dict[str, tuple[int, ...]] | None = None) -> dict:
    """Seconds ``x.permute(reverse_first(k)).contiguous()`` takes on x of shape (1, n, n, n, n, n).

    The paper's experiment on a (1, 101, 101, 101, 101, 101) tensor, scaled down (R56 in
    references.md; lesson 05, section 8). ``extra`` adds named permutations of your own (lesson 05
    adds a k = 2 swap of two size-n dimensions, since reversing the first two moves the size-1 one).
    Each sample is a ``torch.utils.benchmark.Timer`` block of copies lasting about ``min_time``
    on one thread (so a scheduler hiccup is a small part of it); samples are interleaved across k,
    in alternating order, so a noisy moment hits every k alike. Take the median of each list.
    """
    from course_utils.toolkit.timing import Timer  # torch's, imported without an unrelated warning

    x = torch.randn(1, n, n, n, n, n, generator=torch.Generator().manual_seed(0))
    perms = {k: reverse_first(k) for k in ks} | dict(extra or {})
    timers = {k: Timer("v.contiguous()", globals={"v": x.permute(p)}, num_threads=1)
              for k, p in perms.items()}
    loops = {k: max(1, round(min_time / timer.timeit(1).mean)) for k, timer in timers.items()}
    times: dict = {k: [] for k in perms}
    for round_ in range(repeats):
        for k in (list(perms) if round_ % 2 else list(reversed(perms))):
            times[k].append(timers[k].timeit(loops[k]).mean)
    return times


def rises(medians: Sequence[float], slack: float = 0.75) -> bool:
    """True when a curve rises overall: no step drops below ``slack`` times the previous point,
    and the last point is at least twice the first (lesson 05's acceptance for experiment 1)."""
    steps_ok = all(b >= slack * a for a, b in zip(medians, medians[1:], strict=False))
    return steps_ok and medians[-1] >= 2 * medians[0]


GRAY_WEIGHTS = (0.299, 0.587, 0.114)  # ITU-R 601 luma, the usual grayscale weights


def synthetic_images(n: int, seed: int = 0) -> torch.Tensor:
    """``n`` random 32x32 RGB uint8 images, (n, 32, 32, 3) = height, width, channel as CIFAR-10's
    arrays (lesson 05, section 10)."""
    return torch.randint(0, 256, (n, 32, 32, 3), dtype=torch.uint8,
                         generator=torch.Generator().manual_seed(seed))


def _rotation(batch: int, degrees: float) -> torch.Tensor:
    a = math.radians(degrees)
    theta = torch.tensor([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]])
    return theta.expand(batch, 2, 3)


def augment(images: torch.Tensor, aware: bool,
            record: list[tuple[str, Layout]] | None = None) -> torch.Tensor:
    """The paper's augmentation chain in plain torch on uint8 (n, 32, 32, 3) images (R56 in
    references.md; lesson 05, section 10).

    To tensor, crop, vertical flip, horizontal flip, rotation (10 degrees), colour jitter
    (brightness, saturation), crop, grayscale, normalise. ``aware=True`` makes the result of
    every step contiguous, as the paper's contiguity-aware version; ``False`` lets layouts vary.
    Pass a list as ``record`` to collect (step name, ``describe()`` of its result).
    """
    import torch.nn.functional as F

    def step(name: str, t: torch.Tensor) -> torch.Tensor:
        t = t.contiguous() if aware else t
        if record is not None:
            record.append((name, describe(t)))
        return t

    gray = torch.tensor(GRAY_WEIGHTS).view(1, 3, 1, 1)
    x = step("to tensor", images.permute(0, 3, 1, 2).float().div(255))  # HWC uint8 -> CHW float
    x = step("crop 28x28", x[:, :, 2:30, 2:30])
    x = step("vertical flip", x.flip(-2))
    x = step("horizontal flip", x.flip(-1))
    grid = F.affine_grid(_rotation(x.shape[0], 10.0), list(x.shape), align_corners=False)
    x = step("rotate 10 degrees", F.grid_sample(x, grid, align_corners=False))
    luma = (x * gray).sum(1, keepdim=True)
    x = step("colour jitter", (x * 1.2).lerp(luma, 0.3).clamp(0, 1))  # brightness, saturation
    x = step("crop 24x24", x[:, :, 2:26, 2:26])
    x = step("grayscale", (x * gray).sum(1, keepdim=True))
    return step("normalise", (x - 0.5) / 0.25)


def augment_times(images: torch.Tensor, batch: int = 1,
                  repeats: int = 5) -> dict[str, list[float]]:
    """Seconds per pass over ``images`` for the default and contiguity-aware pipelines (lesson 05).

    The two versions alternate batch by batch (order flipping each time), on one thread, so a
    noisy moment hits both alike. Returns {"default": [...], "aware": [...]}, one entry per pass.
    """
    totals: dict[str, list[float]] = {"default": [], "aware": []}
    with one_thread():
        augment(images[:batch], True)  # warm-up
        for rep in range(repeats):
            spent = {"default": 0.0, "aware": 0.0}
            for i, start in enumerate(range(0, len(images), batch)):
                chunk = images[start:start + batch]
                for name in (("default", "aware") if (i + rep) % 2 else ("aware", "default")):
                    began = time.perf_counter()
                    augment(chunk, name == "aware")
                    spent[name] += time.perf_counter() - began
            for name, seconds in spent.items():
                totals[name].append(seconds)
    return totals

