"""Log every N steps with the same values: every step's loss, read to the host once per N steps.

The cases hand over ``case_inputs.TrainingRun`` steps whose losses count their host reads; the
loop to rewrite is ``sync_lab.every_step``.
"""

from __future__ import annotations

import math
import random

import torch

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.labs.case_inputs import TrainingRun
from course_utils.labs.sync_lab import every_step


def log_every_n(step, n_steps: int, n: int) -> list[float]:
    """Reference: every step's loss as floats, read to the host once per ``n`` steps."""
    values: list[float] = []
    pending = []
    for _ in range(n_steps):
        pending.append(step())
        if len(pending) == n:
            values += torch.stack(pending).tolist()
            pending = []
    if pending:
        values += torch.stack(pending).tolist()
    return values


def _case(n_steps: int, n: int, seed: int) -> Case:
    return Case(f"{n_steps} steps, read every {n}", (TrainingRun(n_steps, seed), n_steps, n))


def _fixed() -> list[Case]:
    return [_case(12, 4, 0), _case(10, 4, 1), _case(7, 3, 2), _case(5, 5, 3), _case(6, 10, 4)]


def _random(rng: random.Random) -> Case:
    return _case(rng.randint(2, 14), rng.randint(2, 6), rng.randint(0, 1000))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    problem = mismatch(expected.value, got.value, atol=1e-6, rtol=1e-5)
    if problem:
        return f"{problem} (the values must be every step's loss, as logging every step gives)"
    run, n_steps, n = case.args
    reads = run.copies[-1].reads
    allowed = math.ceil(n_steps / n)
    if len(reads) > allowed:
        kinds = ", ".join(sorted(set(reads)))
        return (f"read the device {len(reads)} times ({kinds}) in {n_steps} steps; reading once "
                f"every {n} steps needs at most {allowed}")
    return None


_FLUSH = "values += torch.stack(pending).tolist()\n            pending = []"
_LAST = "if pending:\n        values += torch.stack(pending).tolist()\n"

EXERCISE = Exercise(
    id="03.log_every_n",
    title="Log every N steps with the same values",
    reference=log_every_n,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    in_process_only="its check counts how often the answer reads the losses to the host, which "
                    "only the answer's own process can see, and a submission could forge a report of",
    hints=(
        "Keep the loss tensors (they stay on the device) and read them together every n steps.",
        "torch.stack(pending).tolist() reads n values in one sync; .item() or float() on each "
        "one is n syncs.",
        "Do not forget the last group when n_steps is not a multiple of n.",
    ),
    mutants={
        ".item() every step": lambda step, n_steps, n: every_step(step, n_steps),
        "keeps only every n-th loss": patched(log_every_n, (
            _FLUSH, "values.append(pending[-1].item())\n            pending = []"), ("    " + _LAST, "")),
        "drops the last partial group": patched(log_every_n, ("    " + _LAST, "")),
        "flushes at step % n == 0, from step 0": patched(log_every_n, ("for _ in range(n_steps):",
                                                                        "for i in range(n_steps):"),
                                                         ("if len(pending) == n:", "if i % n == 0:")),
        "float() on each pending loss": patched(log_every_n, (
            _FLUSH, "values += [float(v) for v in pending]\n            pending = []"), (
            _LAST, "if pending:\n        values += [float(v) for v in pending]\n")),
    },
)
