"""Log every N steps with the same values: every step's loss, read to the host once per N steps.

The cases hand over ``case_inputs.TrainingRun`` steps whose losses count their host reads; the
loop to rewrite is ``sync_lab.every_step``.
"""

from __future__ import annotations

import copy
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
    return [_case(12, 4, 0), _case(10, 4, 1), _case(7, 3, 2), _case(5, 5, 3), _case(6, 10, 4),
            _case(1, 3, 5), _case(4, 1, 6), _case(9, 2, 7), _case(8, 2, 8)]


def _random(rng: random.Random) -> Case:
    return _case(rng.randint(1, 14), rng.randint(1, 6), rng.randint(0, 1000))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """The run the answer was given records what happened to it (``TrainingRun``): every step run,
    each group of ``n`` losses read before the next step, at most one read per group. The values
    the answer returns are compared with the reference's; what it says about its reads is nothing."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    problem = mismatch(expected.value, got.value, atol=1e-6, rtol=1e-5)
    if problem:
        return f"{problem} (the values must be every step's loss, as logging every step gives)"
    if got.inputs is None:
        return None
    run, (_, n_steps, n) = got.inputs[0][0], case.args
    if run.steps_done != n_steps:
        return (f"the run you were given ran {run.steps_done} of its {n_steps} steps: call "
                "step() itself, n_steps times (a copy of the run is not the run)")
    for i, reads in enumerate(run.reads_before_step):
        if reads < i // n:
            return (f"when step {i + 1} began, {reads} reads had been made of the {i} losses so "
                    f"far: read each group of {n} as soon as it is complete, before the next step "
                    "(reading them all at the end is not logging every n steps)")
    allowed = math.ceil(n_steps / n)
    if len(run.reads) > allowed:
        kinds = ", ".join(sorted(set(run.reads)))
        return (f"read the device {len(run.reads)} times ({kinds}) in {n_steps} steps; reading once "
                f"every {n} steps needs at most {allowed}")
    return None


def _reads_a_copy(step, n_steps: int, n: int) -> list[float]:
    """A wrong answer: trains a copy of the run (its reads are the copy's), never the run given."""
    twin = copy.deepcopy(step)
    return [twin().item() for _ in range(n_steps)]


def _cat_by_index(step, n_steps: int, n: int) -> list[float]:
    """An alternative answer: flush by step index, torch.cat of 1-element views."""
    values, pending = [], []
    for i in range(n_steps):
        pending.append(step().reshape(1))
        if (i + 1) % n == 0 or i == n_steps - 1:
            values.extend(torch.cat(pending).tolist())
            pending.clear()
    return values


def _device_buffer(step, n_steps: int, n: int) -> list[float]:
    """An alternative answer: a buffer on the losses' device, filled in place, read per group."""
    values: list[float] = []
    buffer, filled = None, 0
    for _ in range(n_steps):
        loss = step()
        if buffer is None:
            buffer = loss.new_zeros(n)
        buffer[filled] = loss
        filled += 1
        if filled == n:
            values += buffer.tolist()
            filled = 0
    if filled:
        values += buffer[:filled].tolist()
    return values


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
        "reads every loss once, at the end": lambda step, n_steps, n: torch.stack(
            [step() for _ in range(n_steps)]).tolist(),
        "reads a copy of the run, not the run it was given": _reads_a_copy,
    },
    alternatives={
        "torch.cat by step index": _cat_by_index,
        "a device buffer filled in place": _device_buffer,
    },
)
