"""What the four capstone checkpoints share: the reference (the fixed script), the labs they run
in, a judge per checkpoint, and the wrong scripts that more than one checkpoint rejects."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import torch
import torch.nn.functional as F

from course_utils.core.exercise import Case, Outcome, patched
from course_utils.labs.capstone import Lab, TagModel, fixed, haunted


@functools.lru_cache(maxsize=64)
def _fixed_report(settings: tuple) -> dict:
    return fixed(Lab(**dict(settings)))


def train(lab: Lab) -> dict:
    """Reference: the fixed script (deterministic for a lab, so its report is computed once, in a
    lab of the same settings, and filed in this lab as if measured here: the reference is trusted;
    an answer's report is only ever judged on what its own lab measured)."""
    report = _fixed_report(tuple(lab.settings().items()))
    lab._ledger.file(report)
    return dict(report)


def _lab_case(seed: int) -> Case:
    return Case(f"affected Mac (emulated), data seed {seed}, {Lab().steps} steps", (Lab(seed=seed),))


def _fixed_cases() -> list[Case]:
    return [_lab_case(0), _lab_case(1)]


def _random_case(rng: random.Random) -> Case:
    return _lab_case(rng.randrange(2, 100_000))


def judge_with(check: Callable) -> Callable[[Outcome, Outcome, Case], str | None]:
    """A judge that asks a checkpoint of ``course_utils.labs.capstone`` about the answer's run.

    The evidence is what the lab the answer was handed measured (``Outcome.inputs``: check() hands
    each call its own copy of the case's lab), never the report the answer returned: that one must
    only be the measured report, unchanged (``capstone_checks.evidence``)."""
    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        if got.inputs is None:  # never: the capstone is graded in check()'s process only
            return "the lab the answer ran in did not come back: nothing measured to judge"
        return check(got.value, got.inputs[0][0])

    return judge


# Every checkpoint reads the report lab.run() measures inside the answer's process; from another
# process that report is only a claim, and a made-up dict would pass.
_IN_PROCESS = ("its checks read what lab.run(...) measured inside the answer's own process (the loss, "
               "frozen parameters, fallbacks, syncs); a submission could return a made-up report")
# The reference only replays fixed()'s report: the automatic mutants change fixed() itself.
COMMON = {"reference": train, "fixed": _fixed_cases, "random": _random_case, "n_random": 2,
          "in_process_only": _IN_PROCESS, "mutation_target": fixed}


def broken(*edits: tuple[str, str]) -> Callable[[Lab], dict]:
    """The fixed script (``labs.capstone.fixed``) with a bug put back: each ``(old, new)`` pair
    replaces a piece of its source (``core.exercise.patched``)."""
    return patched(fixed, *edits)


HAUNTED = {"the haunted script as given": haunted}

# Automatic mutants of fixed() that are right answers too (every checkpoint declares them).
EQUIVALENT = {
    "statement dropped: `torch.manual_seed(lab.seed)` -> `pass`":
        "the seed only picks the initial weights; the task asks for none, and any start trains",
    "keyword dropped: `torch.randperm(len(ids), generator=order)` -> `torch.randperm(len(ids))`":
        "a shuffle drawn from the global generator is as random: the task fixes no order",
    "detach dropped: `loss.detach()` -> `loss`": "run.log() detaches the tensor it keeps: the same log",
}


def loss_only(checkpoint: str) -> dict[str, str]:
    """The automatic mutants that are checkpoint 1's bugs only: declared by the other checkpoints,
    whose property (``checkpoint``) they keep. Not equivalent to fixed(): capstone_loss kills them."""
    why = f"checkpoint 1's bug, killed by 08.capstone_loss; the run still has {checkpoint}"
    return {
        "statement dropped: `optimizer.zero_grad()` -> `pass`": f"gradients pile up: {why}",
        "arithmetic: `step * lab.batch % len(ids)` -> `step * lab.batch // len(ids)`":
            f"the batches repeat after the first 16 steps: {why}",
    }
CLONE_TIE = {"keeps the .T.clone() tie": broken(("weight.T.contiguous()", "weight.T.clone()"))}


# --- right answers written differently (every checkpoint must pass them) ----------------------------


def _notebook_solution(lab: Lab) -> dict:
    """The solution notebook's answer: a local helper keeps the rows short."""
    torch.manual_seed(lab.seed)
    ids, labels = lab.dataset()
    model = TagModel()
    model.up.weight.data = model.down.weight.T.contiguous()

    @torch.no_grad()
    def keep_rows_short():
        table = model.embed.weight
        table.mul_((1.0 / (table.norm(dim=1, keepdim=True) + 1e-7)).clamp(max=1.0))

    keep_rows_short()
    optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)
    order = torch.Generator().manual_seed(lab.seed)
    with lab.run(model, optimizer) as run:
        for step in range(lab.steps):
            start = step * lab.batch % len(ids)
            if start == 0:
                perm = torch.randperm(len(ids), generator=order)
            pick = perm[start:start + lab.batch]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(ids[pick]), labels[pick])
            loss.backward()
            optimizer.step()
            keep_rows_short()
            run.log(loss.detach())
    return run.report()


def _epochs_and_renorm(lab: Lab) -> dict:
    """Epochs of shuffled chunks until the budget; up copied into its own storage with copy_;
    the rows kept short with torch.renorm; model.zero_grad(); the loss logged as a clone."""
    ids, labels = lab.dataset()
    model = TagModel()
    with torch.no_grad():
        model.up.weight.copy_(model.down.weight.T)  # same Parameter, same row-major storage
        model.embed.weight.copy_(torch.renorm(model.embed.weight, 2, 0, 1.0))
    optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)
    steps = 0
    with lab.run(model, optimizer) as run:
        while steps < lab.steps:
            for chunk in torch.randperm(len(ids)).split(lab.batch):
                if steps == lab.steps:
                    break
                model.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(ids[chunk]), labels[chunk])
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    model.embed.weight.copy_(torch.renorm(model.embed.weight, 2, 0, 1.0))
                run.log(loss.detach().clone())
                steps += 1
    return run.report()


ALTERNATIVES = {
    "the solution notebook's answer": _notebook_solution,
    "epochs of shuffled chunks, copy_ and torch.renorm": _epochs_and_renorm,
}

