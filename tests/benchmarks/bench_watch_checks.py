"""What the checks added for data order, labels at chance, schedules, frozen parameters and padding
masks cost on their own, per call, beside one training step of a small transformer language model
(32k-token embedding, 4 layers): this thread's CPU time, medians of repeats.

    .venv/bin/python tests/benchmarks/bench_watch_checks.py

Not part of the test suite. ``same order`` (a dictionary look-up per pass over a sampler) and the
zero-gradient test of ``decayed while frozen`` (values the check step has read already) cost nothing
measurable and are not timed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from course_utils.toolkit.watch.chance import ChanceLevel  # noqa: E402
from course_utils.toolkit.watch.loss_checks import padding_mask  # noqa: E402
from course_utils.toolkit.watch.trends import _drivers  # noqa: E402


def timed(f, repeats: int = 20) -> float:
    """Median milliseconds of this thread's CPU time per call."""
    times = []
    for _ in range(repeats):
        began = time.thread_time()
        f()
        times.append(time.thread_time() - began)
    return statistics.median(times) * 1e3


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = nn.Sequential(nn.Embedding(32000, 256), nn.TransformerEncoder(layer, 4), nn.Linear(256, 32000))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    ids = torch.randint(0, 32000, (16, 128))

    def step():
        opt.zero_grad()
        model(ids).float().mean().backward()
        opt.step()

    emb = model[0].weight

    def rows():
        with torch.no_grad():
            (emb.grad != 0).any(1)
            torch.stack([emb.sum(1), emb.abs().sum(1)])

    mask = torch.arange(128)[None] < torch.randint(10, 128, (16, 1))
    chance = ChanceLevel(type("Watcher", (), {"step": 0})())
    x, y = torch.randn(64, 10), torch.randint(0, 10, (64,))
    print(f"one training step (the yardstick): {timed(step, 3):.1f} ms")
    print(f"lr schedule: finding the schedulers (a scan of gc objects, once per optimizer): "
          f"{timed(lambda: _drivers(opt), 5):.1f} ms")
    print(f"decayed while frozen: the rows of a 32000 x 256 embedding under weight decay, per check step: "
          f"{timed(rows):.2f} ms")
    print(f"padding in loss: a (16, 128) boolean output tested as a padding mask, per such op in a deep "
          f"window: {timed(lambda: padding_mask(mask), 200):.3f} ms")
    print(f"loss at chance: counting a (64,) target's classes, per loss call in a deep window: "
          f"{timed(lambda: chance.on_loss(None, x, y, {}, 'site'), 200):.3f} ms")


if __name__ == "__main__":
    main()
