"""A frozen-parameter detector: which parameters received gradients and never moved?"""

from __future__ import annotations

import random

import torch

from course_utils.core.exercise import Case, Exercise, patched
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
    label = f"{kind}, {opt}, lr {lr:g}{', warm-up' if warmup else ''}, {machine.name}"
    return Case(label, (Trainer(model, opt, lr, warmup, machine, d),))


EXERCISE = Exercise(
    id="06.find_frozen",
    title="A frozen-parameter detector",
    reference=find_frozen,
    fixed=_fixed,
    random=_random,
    n_random=10,
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
    },
)
