"""A frozen-parameter detector: which parameters received gradients and never moved?"""

from __future__ import annotations

import copy
import random

import torch

from course_utils.bank.lesson06._shared import machine_judge
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.labs.sae import Trainer, mlp, small_sae, zero_biases
from course_utils.toolkit.emulate.inplace import AFFECTED as STORY  # torch 2.2.1 on macOS 14 (emulated)
from course_utils.toolkit.emulate.inplace import HEALTHY


def find_frozen(trainer: Trainer, steps: int = 3) -> list[str]:
    """Reference: the parameters with a non-zero gradient in some step that end bit-identical."""
    model = trainer.model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    had_grad: set[str] = set()
    for _ in range(steps):
        trainer.step()
        had_grad |= {n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    return sorted(n for n, p in model.named_parameters() if n in had_grad and torch.equal(p, before[n]))


def _fixed() -> list[Case]:
    d = 8
    return [
        Case("the story: tied SAE, Adam (defaults), affected Mac",
             (Trainer(small_sae(0, d), machine=STORY),)),
        Case("tied SAE, Adam foreach=True, affected Mac",
             (Trainer(small_sae(0, d), "adam-foreach", machine=STORY),)),
        Case("tied SAE, SGD, affected Mac", (Trainer(small_sae(0, d), "sgd", machine=STORY),)),
        Case("tied SAE, Adam, healthy Mac", (Trainer(small_sae(0, d)),)),
        Case("warm-up (lr 0 at step 1), healthy", (Trainer(small_sae(1, d), warmup=True),)),
        Case("a layer frozen on purpose (requires_grad=False), transposed, affected Mac",
             (Trainer(mlp(2, d, layout=(1,), frozen=(1,)), machine=STORY),)),
        Case("a parameter never used in forward (no gradient), healthy", (Trainer(mlp(3, d, spare=True)),)),
        Case("tiny learning rate 3e-9, zero biases (it moves, by very little), healthy",
             (Trainer(zero_biases(small_sae(4, d)), lr=3e-9),)),
        Case("MLP with both weights transposed, Adam foreach=False, affected Mac",
             (Trainer(mlp(5, d, layout=(0, 1)), "adam-loop", machine=STORY),)),
        Case("a gate whose gradient is all zeros (not None): it never moves, it is not frozen",
             (Trainer(mlp(6, d, layout=(0,), dead=True), machine=STORY),)),
        Case("steps=1 with a warm-up (lr 0 at step 1): everything that got a gradient is frozen",
             (Trainer(small_sae(7, d), warmup=True),), {"steps": 1}),
        Case("steps=5, tied SAE, SGD, affected Mac", (Trainer(small_sae(8, d), "sgd", machine=STORY),),
             {"steps": 5}),
        Case("steps=2 with a warm-up, healthy: step 2 moves everything",
             (Trainer(small_sae(9, d), warmup=True),), {"steps": 2}),
    ]


def _random(rng: random.Random) -> Case:
    seed, d = rng.randrange(1000), rng.choice((6, 8))
    kind = rng.choice(("tied SAE", "untied SAE", "MLP"))
    if kind == "MLP":
        layout = tuple(i for i in (0, 1) if rng.random() < 0.5)
        frozen = tuple(i for i in (0, 1) if rng.random() < 0.2)
        spare = rng.random() < 0.3
        model = mlp(seed, d, layout, frozen, spare)
        kind = f"MLP transposed {list(layout)} frozen {list(frozen)}{' + spare' if spare else ''}"
    else:
        model = small_sae(seed, d, tied=kind == "tied SAE")
    opt = rng.choice(("adam", "adam-foreach", "adam-loop", "sgd"))
    machine = rng.choice((STORY, STORY, HEALTHY))
    warmup, lr = rng.random() < 0.25, rng.choice((1e-2, 1e-2, 1e-7))
    steps = rng.choice((None, None, 1, 2, 4))
    label = (f"{kind}, {opt}, lr {lr:g}{', warm-up' if warmup else ''}, {machine.name}"
             f"{'' if steps is None else f', steps={steps}'}")
    return Case(label, (Trainer(model, opt, lr, warmup, machine, d),),
                {} if steps is None else {"steps": steps})


def _steps_run(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """The trainer the answer was given must have run exactly ``steps`` steps (in check()'s
    process; after a trip from a submission there is no trainer to ask)."""
    if got.inputs is None:
        return None
    steps = case.kwargs.get("steps", case.args[1] if len(case.args) > 1 else 3)
    taken = got.inputs[0][0].steps_taken
    if taken != steps:
        return f"your function ran trainer.step() {taken} times; it must run exactly steps={steps} steps"
    return None


def _state_dict_snapshot(trainer, steps=3):
    """An alternative answer: a state_dict snapshot; the gradients counted with count_nonzero."""
    model = trainer.model
    before = copy.deepcopy(model.state_dict())
    names = dict(model.named_parameters())
    moved_by_gradient = set()
    for _ in range(steps):
        trainer.step()
        moved_by_gradient.update(n for n, p in names.items()
                                 if p.grad is not None and torch.count_nonzero(p.grad) > 0)
    return sorted(n for n in moved_by_gradient if (names[n].detach() == before[n]).all())


def _per_parameter(trainer, steps=3):
    """An alternative answer: one record per parameter object, compared bit for bit at the end."""
    params = list(trainer.model.named_parameters())
    start = [p.detach().clone() for _, p in params]
    got_gradient = [False] * len(params)
    for _ in range(steps):
        trainer.step()
        for i, (_, p) in enumerate(params):
            got_gradient[i] = got_gradient[i] or (p.grad is not None and bool(p.grad.ne(0).any()))
    frozen = [name for (name, p), s, g in zip(params, start, got_gradient, strict=True)
              if g and torch.equal(p.detach(), s)]
    return sorted(frozen)


EXERCISE = Exercise(
    id="06.find_frozen",
    title="A frozen-parameter detector",
    reference=find_frozen,
    fixed=_fixed,
    random=_random,
    n_random=10,
    judge=machine_judge(_steps_run),
    hints=(
        "Snapshot every parameter before training with p.detach().clone(): without clone() the "
        "snapshot is the parameter itself and always looks unchanged.",
        "Only a parameter that received a non-zero gradient is expected to move: after each "
        "trainer.step(), note the names whose p.grad is not None and has a non-zero element.",
        "Compare after all the steps with torch.equal (bit-identical), not allclose: a tiny "
        "learning rate moves weights by less than allclose's tolerance. One step is not enough: "
        "a warm-up can make the first learning rate 0.",
    ),
    mutants={
        "snapshot without clone()": patched(find_frozen, ("p.detach().clone()", "p.detach()")),
        "compares after only one step": lambda trainer, steps=3: find_frozen(trainer, steps=1),
        "allclose instead of bit-identical": patched(find_frozen, ("torch.equal(", "torch.allclose(")),
        "ignores gradients": patched(find_frozen, ("n in had_grad and ", "")),
        "a gradient that is not None counts, even all zeros": patched(
            find_frozen, ("p.grad is not None and p.grad.any()", "p.grad is not None")),
        "always 3 steps, whatever steps says": lambda trainer, steps=3: find_frozen(trainer),
    },
    equivalent={
        "detach dropped: `p.detach()` -> `p`":
            "p.clone() copies the same values (with a graph nobody uses); only torch.equal reads it",
    },
    alternatives={
        "a state_dict snapshot, gradients counted with count_nonzero": _state_dict_snapshot,
        "one record per parameter object": _per_parameter,
    },
)
