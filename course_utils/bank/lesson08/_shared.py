"""Lesson 08's exercises: the capstone's four checkpoints, each graded by behaviour on the lab's
emulated affected Mac; and the lesson's quiz.

The learner writes one function, ``train(lab)``: the haunted script of ``course_utils.labs.capstone``
with its bugs fixed, returning ``run.report()``. Each checkpoint runs it in fresh labs and judges
the report (held-out loss, frozen parameters, fallbacks in the forward, syncs per step). The
mutants are the haunted script itself and the partial repairs learners really write, each fixing
all the other bugs; tests/test_bank.py proves every one of them fails its checkpoint.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.labs.capstone import (
    LOSS_LIMIT,
    SYNCS_PER_STEP,
    Lab,
    TagModel,
    check_fallback,
    check_frozen,
    check_loss,
    check_syncs,
    clip_rows_,
    fixed,
    haunted,
)

# --- the reference and the cases ------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _fixed_report(settings: tuple) -> dict:
    return fixed(Lab(**dict(settings)))


def train(lab: Lab) -> dict:
    """Reference: the fixed script (deterministic for a lab, so its report is computed once)."""
    return dict(_fixed_report(tuple(lab.settings().items())))


def _lab_case(seed: int) -> Case:
    return Case(f"affected Mac (emulated), data seed {seed}, {Lab().steps} steps", (Lab(seed=seed),))


def _fixed_cases() -> list[Case]:
    return [_lab_case(0), _lab_case(1)]


def _random_case(rng: random.Random) -> Case:
    return _lab_case(rng.randrange(2, 100_000))


def _judge(check: Callable) -> Callable[[Outcome, Outcome, Case], str | None]:
    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return check(got.value, case.args[0])

    return judge


# --- mutants: scripts that fix all bugs but one, or fix one the wrong way --------------------------


class _CpuRenormModel(TagModel):
    """A "fix" of the fallback: do max_norm's renorm by hand, on the CPU, inside the forward."""

    def forward(self, ids):
        with torch.no_grad():
            table = self.embed.weight.detach().cpu()
            table = table * (1.0 / (table.norm(dim=1, keepdim=True) + 1e-7)).clamp(max=1.0)
            self.embed.weight.copy_(table.to(self.embed.weight.device))
        return super().forward(ids)


def _script(lab: Lab, broken: frozenset[str]) -> dict:
    """The fixed script with the named bugs (or wrong fixes) put back."""
    torch.manual_seed(lab.seed)
    ids, labels = lab.dataset()
    if "max_norm" in broken:
        model = TagModel(max_norm=1.0)
    else:
        model = _CpuRenormModel() if "cpu renorm" in broken else TagModel()
    tied = model.down.weight.T
    model.up.weight.data = tied.clone() if "clone" in broken else tied.contiguous()
    if "max_norm" not in broken:
        clip_rows_(model.embed.weight)
    optimizer = torch.optim.Adam(model.parameters(), lr=lab.lr)
    if "new parameter" in broken:  # the optimizer still holds (and updates) the old Parameter
        model.up.weight = nn.Parameter(model.down.weight.detach().T.contiguous())
    order = torch.Generator().manual_seed(lab.seed)
    with lab.run(model, optimizer) as run:
        for step in range(lab.steps):
            start = step * lab.batch % len(ids)
            if "no shuffle" in broken:
                pick = torch.arange(start, start + lab.batch)
            else:
                if start == 0:
                    perm = torch.randperm(len(ids), generator=order)
                pick = perm[start:start + lab.batch]
            target = labels[start:start + lab.batch] if "labels unshuffled" in broken else labels[pick]
            if "no zero_grad" not in broken:
                optimizer.zero_grad()
            loss = F.cross_entropy(model(ids[pick]), target)
            loss.backward()
            optimizer.step()
            if "max_norm" not in broken:
                clip_rows_(model.embed.weight)
            if "nan check" in broken and not torch.isfinite(loss):
                raise FloatingPointError(f"the loss is {loss} at step {step}")
            run.log(loss.item() if "item" in broken else loss.detach())
    return run.report()


def _mutant(*broken: str) -> Callable[[Lab], dict]:
    def script(lab: Lab) -> dict:
        return _script(lab, frozenset(broken))

    script.__name__ = "train"
    return script


HAUNTED = {"the haunted script as given": haunted}

# --- the exercises ----------------------------------------------------------------------------------

# Every checkpoint reads the report lab.run() measures inside the answer's process; from another
# process that report is only a claim, and a made-up dict would pass.
_IN_PROCESS = ("its checks read what lab.run(...) measured inside the answer's own process (the loss, "
               "frozen parameters, fallbacks, syncs); a submission could return a made-up report")
_COMMON = {"reference": train, "fixed": _fixed_cases, "random": _random_case, "n_random": 2,
           "in_process_only": _IN_PROCESS}

EXERCISES = [
    Exercise(
        id="08.capstone_loss",
        title="Checkpoint 1: the held-out loss goes down on the affected Mac",
        judge=_judge(check_loss),
        hints=(
            "Plot report['logged'] and report['grad_norms'] against the step: a gradient norm that "
            "keeps growing means each step adds its gradient to the old ones instead of replacing them.",
            "Look at the tags of the first batches: lab.dataset() returns the rows grouped by tag. "
            "Shuffle the row indices every epoch and index the ids AND the tags with the same indices.",
            f"Three bugs keep the held-out loss above {LOSS_LIMIT}: no optimizer.zero_grad() (the "
            "gradients add up), no shuffle, and up.weight frozen on the affected Mac (checkpoint 2).",
        ),
        mutants={**HAUNTED, "forgets optimizer.zero_grad()": _mutant("no zero_grad"),
                 "batches the tag-sorted rows in order": _mutant("no shuffle"),
                 "shuffles the ids but not the tags": _mutant("labels unshuffled"),
                 "keeps the .T.clone() tie": _mutant("clone")},
        **_COMMON,
    ),
    Exercise(
        id="08.capstone_frozen",
        title="Checkpoint 2: no parameter stays frozen on the affected Mac (emulated)",
        judge=_judge(check_frozen),
        hints=(
            "Run with Lab(sentinel=True), or audit(model) before training: which parameter is not "
            "contiguous, and which line made it so?",
            "w.T.clone() keeps the transposed layout (clone preserves the format), so Adam's in-place "
            "addcmul_/addcdiv_ into it are lost on an affected Mac. Use .T.contiguous().",
            "Fix the layout before building the optimizer, in place (p.data = ...): a new "
            "nn.Parameter made afterwards is not the one the optimizer updates.",
        ),
        mutants={**HAUNTED, "keeps the .T.clone() tie": _mutant("clone"),
                 "a new nn.Parameter after the optimizer was built": _mutant("new parameter")},
        **_COMMON,
    ),
    Exercise(
        id="08.capstone_fallback",
        title="Checkpoint 3: the forward stays on the device",
        judge=_judge(check_fallback),
        hints=(
            "Trace one forward under emulate_fallback(device='cpu') (lesson 04): which op has no MPS "
            "kernel, and which argument of the model asks for it?",
            "nn.Embedding(max_norm=...) calls embedding_renorm_, an op MPS always runs on the CPU "
            "(facts §4). Build the model without max_norm.",
            "Keep what max_norm did with ops that have MPS kernels, outside the forward: scale rows "
            "longer than 1 back to norm 1 after each step (norm, clamp, mul_). Moving the table to "
            "the CPU yourself is the same round trip.",
        ),
        mutants={**HAUNTED, "keeps max_norm=1.0": _mutant("max_norm"),
                 "renorms the table on the CPU inside the forward": _mutant("cpu renorm")},
        **_COMMON,
    ),
    Exercise(
        id="08.capstone_syncs",
        title=f"Checkpoint 4: at most {SYNCS_PER_STEP} host syncs per step",
        judge=_judge(check_syncs),
        hints=(
            "find_sync_points(train, Lab(steps=8)) (lesson 03) lists every host read with its line.",
            "loss.item() waits for the device every step. run.log() also takes a tensor: it keeps "
            "it on the device and reads a whole group at once.",
            "Any test of a tensor's value in the loop (if not torch.isfinite(loss): ...) is a read "
            "too; leave such checks to a sentinel that looks every few steps.",
        ),
        mutants={**HAUNTED, "still logs loss.item() every step": _mutant("item"),
                 "checks the loss for NaN every step": _mutant("nan check")},
        **_COMMON,
    ),
]

QUIZ = Quiz("08", [
    Question(
        "An interviewer shows a training loop whose loss plateaus. What do you do first?",
        ("State a hypothesis and the measurement that would confirm or refute it",
         "Lower the learning rate tenfold and rerun: plateaus usually mean overshooting",
         "Rewrite the training loop from scratch so that the bug cannot survive",
         "Switch to float64 to rule out precision before looking at anything else"),
        0, "hypothesis first, then the smallest repro, then a measurement (lesson 08; the post's "
           "float64 red herring shows what tuning without a hypothesis costs, facts §1)."),
    Question(
        "In the haunted script, up.weight = down.weight.T.clone() trains on the CPU but stays frozen "
        "on the affected Mac. Which fix works?",
        ("down.weight.T.contiguous()", "down.weight.T.clone().detach()",
         "nn.Parameter(down.weight.T.clone())", "Set requires_grad=True on up.weight"),
        0, "clone() keeps the transposed layout (preserve_format) and Adam's addcmul_/addcdiv_ into a "
           "non-contiguous tensor were lost on torch < 2.4 with macOS < 15 (facts §1, issue #118115)."),
    Question(
        "trace() shows aten::embedding_renorm_ falling back to the CPU in every forward. Where does it "
        "come from?",
        ("nn.Embedding(..., max_norm=1.0)", "The mean over the sequence", "Adam's state",
         "F.cross_entropy"),
        0, "max_norm makes the embedding renormalise the rows it looks up, in place, with "
           "embedding_renorm_, which MPS always sends to the CPU (facts §4, MPSFallback.mm)."),
    Question(
        "The capstone logs run.log(loss.item()) every step. On an accelerator, what does that cost?",
        ("A host sync every step: the CPU waits for the queued work before it can read the value",
         "Nothing: .item() returns a value cached when the loss was computed",
         "Only memory: each .item() keeps the loss's graph alive until the next step",
         "A copy of the whole model to the host, since the loss depends on every weight"),
        0, ".item() reads a device value on the host, so it waits for every queued kernel (facts §6); "
           "keep losses on the device and read them in groups (lesson 03)."),
    Question(
        "Seed 004's 'model not learning' loop calls optimizer.step() only when step % 4 == 0 and never "
        "zero_grad(). What is wrong?",
        ("Gradients accumulate across every batch and are never cleared; the effective update "
         "keeps growing", "Adam cannot step every 4 batches: its moments need one step per batch",
         "The learning rate is too low for an update that happens only every 4 batches",
         "Nothing: stepping every 4 batches is exactly how gradient accumulation works"),
        0, "backward() adds into .grad; without zero_grad() after each step the sum covers every "
           "past batch (seed 004; lesson 07's drill gradients.accumulation_step_mod_4)."),
    Question(
        "With no TTY, `course drill` refuses to run unless you pass --stdin. Why?",
        ("It reads answers interactively; a pipe without --stdin is more likely a mistake than a "
         "deliberate script", "It needs a GPU to run the buggy code behind the '?' answer",
         "The five-minute clock counts only in a browser, so it needs Jupyter",
         "It writes the answers into the lesson's notebook, which must be open"),
        0, "lesson 08: the terminal drills read your hypothesis and answer from the keyboard; "
           "--stdin makes piping answers deliberate (tests feed a full seeded round that way)."),
])
