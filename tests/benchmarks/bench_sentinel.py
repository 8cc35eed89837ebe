"""The training sentinel's overhead on lesson 06's training step (budget <= 1.10x).

    .venv/bin/python tests/benchmarks/bench_sentinel.py [--blocks 60]

Not part of the test suite. Two copies of the lesson's model (TopKSAE, Adam, batch 128, built from
the same seed) train side by side: one plain, one followed by ``Sentinel.step(loss)`` with its
default schedule (every step for the first 10, then every 4th). Blocks of 20 steps alternate
(plain, watched, watched, plain, ...), each timed in this thread's CPU time on one torch thread, so
other programs on a busy machine inflate neither side; the ratio is of the medians. A second ratio
checks on every step (``every=1``): the cost of one check, for information.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BUDGET = 1.10


def overhead(blocks: int = 60, block: int = 20, every: int = 4, warmup: int = 10) -> float:
    """Median block time with the sentinel / without, after both have taken their first steps."""
    import torch

    from course_utils.labs.sae import TopKSAE, activations, batches, make_optimizer, one_thread, sae_step
    from course_utils.toolkit.sentinel import Sentinel

    data = activations()
    torch.manual_seed(0)
    plain_model = TopKSAE(tied_init=False)
    torch.manual_seed(0)
    watched_model = TopKSAE(tied_init=False)
    plain_opt, watched_opt = make_optimizer(plain_model), make_optimizer(watched_model)
    sentinel = Sentinel(watched_model, watched_opt, every=every, warmup=warmup, verbose=False)
    xs = list(batches(data, block))

    def plain() -> None:
        for xb in xs:
            sae_step(plain_model, plain_opt, xb)

    def watched() -> None:
        for xb in xs:
            sentinel.step(sae_step(watched_model, watched_opt, xb))

    times: dict = {plain: [], watched: []}
    with one_thread():
        plain(), watched()  # warm-up: first steps, the sentinel's dense start
        for i in range(blocks):
            for fn in ((plain, watched) if i % 2 else (watched, plain)):
                start = time.thread_time()
                fn()
                times[fn].append(time.thread_time() - start)
    return statistics.median(times[watched]) / statistics.median(times[plain])


def row() -> tuple[str, str, str, bool]:
    """(what, measured, budget, met) for tests/benchmarks/bench.py."""
    ratio = overhead()
    every_step = overhead(blocks=20, every=1, warmup=0)
    return ("sentinel overhead, lesson-06 step", f"{ratio:.3f}x (every step: {every_step:.2f}x)",
            f"<= {BUDGET:.2f}x", ratio <= BUDGET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=60)
    args = parser.parse_args()
    ratio = overhead(blocks=args.blocks)
    print(f"sentinel (defaults) / plain step: {ratio:.3f}x   budget <= {BUDGET:.2f}x")
    print(f"sentinel checking every step / plain step: {overhead(blocks=20, every=1, warmup=0):.3f}x")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
