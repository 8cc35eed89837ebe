"""Lesson 03's lab: the workloads it times and searches for sync points, shared by the notebook,
the exercises (``course_utils.bank.lesson03``) and the tests.

- the course's issue classifier, scaled down: ``issue_classifier`` and ``issue_batch`` (reports of
  128 token positions of 768 features), ``classifier_head`` and ``pooled_batches`` on pooled
  report vectors;
- ``leaky_loop``: a training loop with sync points planted in it, each planted line marked with a
  ``# sync: <kind>`` comment (``planted_sync_points`` reads the marks, ``show_source`` prints the
  loop without them; the lesson prints this file's line numbers, so the loop keeps its place);
- ``train_logging``, ``every_step`` and ``loop_data``: the loops and data of the exercises.
"""

from __future__ import annotations

import inspect
import random
import re
import time

import torch
import torch.nn.functional as F
from torch import nn

TOKENS, FEATURES, CLASSES = 128, 768, 3  # the course's batch is (32, 128, 768) with 3 labels


class TokenMean(nn.Module):
    """Average the token positions: (reports, tokens, features) -> (reports, features)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


def issue_classifier(hidden: int = 512, seed: int = 0) -> nn.Module:
    """The course's issue classifier with a small two-layer encoder before the token average."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                         TokenMean(), nn.Linear(hidden, CLASSES))


def issue_batch(reports: int = 16, seed: int = 0) -> torch.Tensor:
    """A batch of ``reports`` issue reports, each 128 token positions of 768 features."""
    return torch.randn(reports, TOKENS, FEATURES, generator=torch.Generator().manual_seed(seed))


def pooled_batches(n: int = 4, reports: int = 16, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n`` batches of pooled report vectors (reports, 768) with labels, for training loops."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(reports, FEATURES, generator=gen), torch.randint(0, CLASSES, (reports,),
                                                                          generator=gen))
            for _ in range(n)]


def classifier_head(hidden: int = 64, seed: int = 0) -> nn.Module:
    """The classifier on pooled vectors: 768 -> hidden -> 3."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


# --- the planted loop --------------------------------------------------------------------------
# Lesson 03 prints it with this file's line numbers (show_source, and the sync report's
# "sync_lab.py:74"), and its stored outputs hold them: keep leaky_loop at lines 66-86, or run the
# lesson again and check every place that names a line.


def leaky_loop(model: nn.Module, batches: list, lr: float = 0.1) -> list[float]:
    """Lesson 03's training loop with hidden sync points planted in it (each line marked)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    max_loss = torch.tensor(5.0)  # made here without a device: a host tensor
    history = []
    for step, (x, y) in enumerate(batches):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        if torch.isnan(loss):  # sync: bool
            raise FloatingPointError(f"loss is NaN at step {step}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # sync: item
        wrong = x[logits.argmax(1) != y]  # sync: data-dependent shape
        if step % 2 == 0:
            print(f"step {step}: loss {loss:.3f}, {len(wrong)} misclassified")  # sync: print
        preds = logits.argmax(1).cpu().numpy()  # sync: to host
        shares = logits.softmax(1).mean(0).tolist()  # sync: tolist
        assert len(preds) == len(x) and len(shares) == 3 and max_loss.item() > 0  # host values
    return history


def planted_sync_points(fn=leaky_loop) -> set[tuple[int, str]]:
    """The (line, kind) pairs marked ``# sync: <kind>`` in ``fn``'s source."""
    lines, first = inspect.getsourcelines(fn)
    marks = (re.search(r"  # sync: (.+)$", line) for line in lines)
    return {(first + i, m.group(1).strip()) for i, m in enumerate(marks) if m}


def show_source(fn, start: int | None = None) -> None:
    """Print ``fn``'s source numbered from ``start`` (default: its file's line numbers),
    without the sync markers."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines, first if start is None else start):
        print(f"{i:>3}  {re.sub(r'  # sync: .+$', '', line.rstrip())}")


def train_logging(model: nn.Module, optimizer: torch.optim.Optimizer, batches: list, steps: int,
                  every: int = 1, host_work: float = 0.0) -> list[float]:
    """Train ``steps`` steps and return every step's loss, read to the host every ``every`` steps.

    ``host_work`` seconds of host time per step stand for the data loader preparing the next batch
    (simulated with ``time.sleep``: it takes no CPU from the emulated device).
    """
    values: list[float] = []
    pending: list[torch.Tensor] = []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        if host_work:
            time.sleep(host_work)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pending.append(loss.detach())
        if len(pending) == every or i == steps - 1:
            values += torch.stack(pending).tolist()
            pending.clear()
    return values


def every_step(step, n_steps: int) -> list[float]:
    """The loop to rewrite: one ``.item()`` (one sync) per step."""
    return [step().item() for _ in range(n_steps)]


def loop_data(rng: random.Random, steps: int) -> tuple[nn.Module, list]:
    """A small model and ``steps`` batches for a generated loop (``case_inputs.make_loop``)."""
    torch.manual_seed(rng.randint(0, 10_000))
    model = nn.Linear(4, 3)
    batches = [(torch.randn(6, 4), torch.randint(0, 3, (6,))) for _ in range(steps)]
    return model, batches
