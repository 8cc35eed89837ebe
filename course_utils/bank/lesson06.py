"""Lesson 06's exercises: a frozen-parameter detector, the minimal repro, hunting a planted bug with a
differential test, repairing an inherited run, predicting the difftest; and the lesson's quiz.
The objects learners use (the SAE, ``Trainer``, ``inherited_run``, ``Machine``) live outside the
bank, in ``course_utils.labs.sae`` and ``course_utils.toolkit.emulate.inplace``, so graded code
can import them."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.labs.sae import Trainer, continue_training, inherited_run, mlp, small_sae, zero_biases
from course_utils.toolkit.difftest import LAYOUTS, SPECS, VARIANTS, inplace_ops, lay_out, sweep
from course_utils.toolkit.emulate.inplace import (
    ADDC_OPS,
    AFFECTED,
    HEALTHY,
    RANDOM_OPS,
    Machine,
    mps_inplace_bug,
)

# --- machines -------------------------------------------------------------------------------------

STORY = AFFECTED  # the story's machine: torch 2.2.1 on macOS 14 (emulated)
RANDOM_ONLY = Machine("random-op bug only", RANDOM_OPS)
ADDCDIV_ONLY = Machine("only addcdiv_ broken", ("addcdiv_",))


# --- 06.find_frozen -------------------------------------------------------------------------------


def find_frozen(trainer: Trainer, steps: int = 3) -> list[str]:
    """Reference: the parameters with a non-zero gradient in some step that end bit-identical."""
    model = trainer.model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    had_grad: set[str] = set()
    for _ in range(steps):
        trainer.step()
        had_grad |= {n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    return sorted(n for n, p in model.named_parameters() if n in had_grad and torch.equal(p, before[n]))


def _frozen_fixed() -> list[Case]:
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


def _frozen_random(rng: random.Random) -> Case:
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


def _frozen_no_clone(trainer, steps=3):
    model = trainer.model
    before = {n: p.detach() for n, p in model.named_parameters()}  # aliases: sees every update
    had = set()
    for _ in range(steps):
        trainer.step()
        had |= {n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    return sorted(n for n, p in model.named_parameters() if n in had and torch.equal(p, before[n]))


def _frozen_one_step(trainer, steps=3):
    return find_frozen(trainer, steps=1)


def _frozen_allclose(trainer, steps=3):
    model = trainer.model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    had = set()
    for _ in range(steps):
        trainer.step()
        had |= {n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    return sorted(n for n, p in model.named_parameters() if n in had and torch.allclose(p, before[n]))


def _frozen_ignores_grads(trainer, steps=3):
    model = trainer.model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for _ in range(steps):
        trainer.step()
    return sorted(n for n, p in model.named_parameters() if torch.equal(p, before[n]))


# --- 06.minimal_repro -----------------------------------------------------------------------------


def shows_bug(machine: Machine, op: str = "addcmul_") -> bool:
    """Reference: run ``op`` into a non-contiguous output on ``machine``; True when it came out wrong."""
    g = torch.Generator().manual_seed(0)
    out = torch.rand(3, 2, generator=g).t()  # (2, 3) with strides (1, 2): not contiguous
    a, b = torch.rand(2, 3, generator=g), torch.rand(2, 3, generator=g) + 0.5
    expected = getattr(torch, op.removesuffix("_"))(out, a, b)  # out of place: nothing written in place
    with machine:
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


REPRO_MACHINES = (STORY, HEALTHY, RANDOM_ONLY, ADDCDIV_ONLY, Machine("only addcmul_ broken", ("addcmul_",)))


def _repro_fixed() -> list[Case]:
    return [Case(f"{m.name}, {op}", (m, op)) for m in REPRO_MACHINES for op in ADDC_OPS]


def _repro_random(rng: random.Random) -> Case:
    pool = ("addcmul_", "addcdiv_", "lerp_", "mul_", "add_", "normal_")
    ops = tuple(sorted(rng.sample(pool, rng.randint(0, 3))))
    machine = Machine(f"a Mac losing {list(ops) or 'nothing'}", ops)
    op = rng.choice(ADDC_OPS)
    return Case(f"{machine.name}, {op}", (machine, op))


def _repro_contiguous_out(machine, op="addcmul_"):
    out, a, b = torch.rand(2, 3), torch.rand(2, 3), torch.rand(2, 3) + 0.5
    expected = getattr(torch, op.removesuffix("_"))(out, a, b)
    with machine:
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


def _repro_inputs_transposed(machine, op="addcmul_"):
    out = torch.rand(2, 3)  # contiguous output; inputs transposed: input layout does not matter
    a, b = torch.rand(3, 2).t(), torch.rand(3, 2).t() + 0.5
    expected = getattr(torch, op.removesuffix("_"))(out, a, b)
    with machine:
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


def _repro_clone_reference(machine, op="addcmul_"):
    out, a, b = torch.rand(3, 2).t(), torch.rand(2, 3), torch.rand(2, 3) + 0.5
    with machine:
        expected = getattr(out.clone(), op)(a, b)  # clone keeps the layout: the reference breaks too
        getattr(out, op)(a, b)
    return not torch.allclose(out, expected)


def _repro_out_of_place(machine, op="addcmul_"):
    out, a, b = torch.rand(3, 2).t(), torch.rand(2, 3), torch.rand(2, 3) + 0.5
    expected = getattr(torch, op.removesuffix("_"))(out, a, b)
    with machine:
        got = getattr(torch, op.removesuffix("_"))(out, a, b)
    return not torch.allclose(got, expected)


def _repro_always_addcmul(machine, op="addcmul_"):
    return shows_bug(machine, "addcmul_")


# --- 06.hunt --------------------------------------------------------------------------------------

CANDIDATES = inplace_ops()  # the in-place ops the difftest can run on 2-D tensors


def hunt(machine: Machine) -> str | None:
    """Reference: the one candidate in-place op that ``machine`` breaks, found by a difftest; or None."""
    with machine:
        result = sweep(CANDIDATES, layouts=("transposed",), variants=("in-place",), device="cpu")
    found = result.flagged()
    return found[0] if found else None


def _hunt_fixed() -> list[Case]:
    return [Case("a healthy machine", (HEALTHY,))] + [
        Case(f"a machine with the bug planted in {op}", (Machine(f"planted: {op}", (op,)),))
        for op in ("addcdiv_", "lerp_", "relu_")]


def _hunt_random(rng: random.Random) -> Case:
    op = rng.choice(CANDIDATES)
    return Case("a machine with the bug planted in a secret op", (Machine("planted: ?", (op,)),))


def _hunt_contiguous(machine):
    with machine:
        found = sweep(CANDIDATES, layouts=("contiguous",), variants=("in-place",), device="cpu").flagged()
    return found[0] if found else None


def _hunt_out_of_place(machine):
    with machine:
        found = sweep(CANDIDATES, layouts=("transposed",), variants=("out-of-place", "out="),
                      device="cpu").flagged()
    return found[0] if found else None


def _hunt_reference_inside(machine):
    for name in CANDIDATES:
        spec = SPECS[name.removesuffix("_")]
        others = [torch.rand(shape) + 0.5 for shape in spec.arg_shapes(2)[1:]]
        x = lay_out(torch.rand(spec.arg_shapes(2)[0]) + 0.5, "transposed")
        with machine:
            expected = x.clone()  # keeps the layout: the reference breaks along with the test
            spec.call_inplace(expected, *others)
            spec.call_inplace(x, *others)
        if not torch.allclose(x, expected):
            return name
    return None


def _hunt_adam_ops_only(machine):
    with machine:
        found = sweep(("lerp_", "mul_", "addcmul_", "addcdiv_"), layouts=("transposed",),
                      variants=("in-place",), device="cpu").flagged()
    return found[0] if found else None


# --- 06.repair ------------------------------------------------------------------------------------


def repaired_losses(seed: int) -> list[float]:
    """Reference: make every non-contiguous parameter contiguous in place (values kept) and restart
    Adam's state for exactly those parameters (their exp_avg_sq lost every update: it is corrupt,
    whatever its layout); then continue training on the affected Mac."""
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        if not p.is_contiguous():
            p.data = p.data.contiguous()
            optimizer.state.pop(p, None)  # Adam starts this parameter afresh, with contiguous state
    return continue_training(model, optimizer)


def _repair_fixed() -> list[Case]:
    return [Case("the story's SAE after 5 steps with Adam (seed 0)", (0,)),
            Case("seed 1", (1,)), Case("seed 2", (2,))]


def _repair_random(rng: random.Random) -> Case:
    seed = rng.randrange(3, 10_000)
    return Case(f"inherited run, seed {seed}", (seed,))


def _repair_clone(seed):
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        if not p.is_contiguous():
            p.data = p.data.clone()  # preserve_format: still transposed
            optimizer.state.pop(p, None)
    return continue_training(model, optimizer)


def _repair_params_only(seed):
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        p.data = p.data.contiguous()  # Adam's exp_avg_sq stays transposed, still loses its updates
    return continue_training(model, optimizer)


def _repair_state_contiguous(seed):
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        p.data = p.data.contiguous()
    for state in optimizer.state.values():
        for key, value in state.items():
            state[key] = value.contiguous()  # contiguous, but exp_avg_sq is still the lost zeros
    return continue_training(model, optimizer)


def _repair_checks_param(seed):
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        p.data = p.data.contiguous()
    for p in list(optimizer.state):
        if not p.is_contiguous():  # the wrong tensor: p was fixed above, its state was not
            optimizer.state.pop(p)
    return continue_training(model, optimizer)


def _repair_clears_state(seed):
    model, optimizer = inherited_run(seed)
    for p in model.parameters():
        p.data = p.data.contiguous()
    optimizer.state.clear()  # also throws away the healthy parameters' moments
    return continue_training(model, optimizer)


def _repair_new_parameters(seed):
    model, optimizer = inherited_run(seed)
    for module in model.modules():
        if isinstance(module, nn.Linear) and not module.weight.is_contiguous():
            # new Parameters: the optimizer still holds (and updates) the old ones
            module.weight = nn.Parameter(module.weight.detach().contiguous())
    return continue_training(model, optimizer)


def _repair_encoder_only(seed):
    model, optimizer = inherited_run(seed)
    if hasattr(model, "encoder"):
        p = model.encoder.weight
        p.data = p.data.contiguous()
        optimizer.state.pop(p, None)
    return continue_training(model, optimizer)


# --- 06.predict_flag ------------------------------------------------------------------------------

PREDICT_OPS = ("addcmul", "addcdiv", "lerp", "mul", "add", "sqrt", "addmm")


def predict_flag(op: str, layout: str, variant: str) -> bool:
    """Reference (the oracle itself): does a difftest under ``mps_inplace_bug()`` flag this check?"""
    with mps_inplace_bug(device="cpu"):
        return bool(sweep([op], layouts=[layout], variants=[variant], device="cpu").problems)


def _predict_fixed() -> list[Case]:
    picks = [("addcmul", "transposed", "in-place"), ("addcmul", "transposed", "out-of-place"),
             ("addcmul", "transposed", "out="), ("addcmul", "expanded", "in-place"),
             ("addcmul", "contiguous", "in-place"), ("addcdiv", "channels_last", "in-place"),
             ("addcdiv", "narrowed", "in-place"), ("lerp", "transposed", "in-place"),
             ("mul", "stepped", "in-place"), ("addcmul", "permuted 3-D", "in-place"),
             ("addcdiv", "stepped", "in-place"), ("addmm", "transposed", "in-place")]
    return [Case(f"{op} / {layout} / {variant}", (op, layout, variant)) for op, layout, variant in picks]


def _predict_random(rng: random.Random) -> Case:
    op = rng.choice(PREDICT_OPS + ("addcmul", "addcdiv"))
    layout, variant = rng.choice(LAYOUTS), rng.choice(VARIANTS + ("in-place",))
    return Case(f"{op} / {layout} / {variant}", (op, layout, variant))


_BROKEN_LAYOUTS = ("transposed", "stepped", "narrowed", "permuted 3-D", "channels_last")


def _predict_any_variant(op, layout, variant):
    return op in ("addcmul", "addcdiv") and layout in _BROKEN_LAYOUTS


def _predict_expanded_too(op, layout, variant):
    return op in ("addcmul", "addcdiv") and variant == "in-place" and layout != "contiguous"


def _predict_all_adam_ops(op, layout, variant):
    return op in ("addcmul", "addcdiv", "lerp", "mul") and variant == "in-place" and layout in _BROKEN_LAYOUTS


def _predict_out_too(op, layout, variant):
    return op in ("addcmul", "addcdiv") and variant in ("in-place", "out=") and layout in _BROKEN_LAYOUTS


def _predict_narrow_is_offset(op, layout, variant):
    return _predict_any_variant(op, layout, variant) and variant == "in-place" and layout != "narrowed"


def _values_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Lists of losses: same length, each within 1e-4 relative (NaN matches nothing)."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    want, have = expected.value, got.value
    if not isinstance(have, list | tuple) or len(have) != len(want):
        return f"return the list of {len(want)} losses continue_training() gives"
    for i, (a, b) in enumerate(zip(want, have, strict=True)):
        if not (abs(a - b) <= 1e-4 * max(abs(a), 1e-3)):
            return (f"loss {i + 1} is {b:.6g}, a properly repaired run gives {a:.6g}: "
                    + ("the run blows up" if not abs(b) < 1e3 else "a different run"))
    return None


EXERCISES = [
    Exercise(
        id="06.find_frozen",
        title="A frozen-parameter detector",
        reference=find_frozen,
        fixed=_frozen_fixed,
        random=_frozen_random,
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
            "snapshot without clone()": _frozen_no_clone,
            "compares after only one step": _frozen_one_step,
            "allclose instead of bit-identical": _frozen_allclose,
            "ignores gradients": _frozen_ignores_grads,
        },
    ),
    Exercise(
        id="06.minimal_repro",
        title="The minimal repro",
        reference=shows_bug,
        fixed=_repro_fixed,
        random=_repro_random,
        n_random=10,
        hints=(
            "The bug is about the OUTPUT: the tensor the in-place op writes into must be "
            "non-contiguous, e.g. torch.rand(3, 2).t(). The inputs' layout does not matter.",
            "Compute the expected result where no in-place write is involved: the out-of-place "
            "torch.addcmul(out, a, b) (or outside the machine). A reference made with the same "
            "in-place op on out.clone() breaks too: clone() keeps the layout.",
            "Use the op you are given: getattr(out, op)(a, b) runs 'addcmul_' or 'addcdiv_'. "
            "Return not torch.allclose(out, expected).",
        ),
        mutants={
            "contiguous output": _repro_contiguous_out,
            "non-contiguous inputs only": _repro_inputs_transposed,
            "reference from an in-place op on .clone()": _repro_clone_reference,
            "tests the out-of-place op": _repro_out_of_place,
            "always tests addcmul_": _repro_always_addcmul,
        },
    ),
    Exercise(
        id="06.hunt",
        title="Hunt a planted bug with a differential test",
        reference=hunt,
        fixed=_hunt_fixed,
        random=_hunt_random,
        n_random=8,
        hints=(
            "Inside `with machine:`, run every candidate in place on a NON-contiguous tensor and "
            "compare with a result computed out of place (or outside the machine).",
            "course_utils.toolkit.difftest.sweep(inplace_ops(), layouts=('transposed',), "
            "variants=('in-place',), "
            "device='cpu') does exactly that; .flagged() names the ops that went wrong.",
            "Test every candidate, not only the ops Adam uses: the bug is planted anywhere. Return "
            "None when nothing is wrong.",
        ),
        mutants={
            "tests contiguous tensors only": _hunt_contiguous,
            "tests out-of-place and out= only": _hunt_out_of_place,
            "reference computed on the broken machine": _hunt_reference_inside,
            "tests only Adam's ops": _hunt_adam_ops_only,
        },
    ),
    Exercise(
        id="06.repair",
        title="Repair the inherited run so Adam trains on an affected Mac",
        reference=repaired_losses,
        fixed=_repair_fixed,
        random=_repair_random,
        n_random=3,
        judge=_values_judge,
        hints=(
            "audit(optimizer) lists what is non-contiguous: the transposed weights AND their Adam "
            "state (exp_avg and exp_avg_sq were made by zeros_like, which keeps the layout).",
            "Make each non-contiguous parameter contiguous in place, p.data = p.data.contiguous(), so "
            "the optimizer keeps holding the same Parameter; clone() keeps the layout and fixes nothing.",
            "That parameter's Adam state is corrupt (exp_avg_sq lost every update): making it "
            "contiguous is not enough, restart it with optimizer.state.pop(p). Decide which parameters "
            "to restart BEFORE fixing them, and keep the healthy parameters' state.",
        ),
        mutants={
            ".clone() instead of .contiguous()": _repair_clone,
            "fixes the parameters only": _repair_params_only,
            "makes the corrupt state contiguous": _repair_state_contiguous,
            "checks is_contiguous after the fix": _repair_checks_param,
            "clears every parameter's state": _repair_clears_state,
            "new nn.Parameter objects": _repair_new_parameters,
            "fixes encoder.weight only": _repair_encoder_only,
        },
    ),
    Exercise(
        id="06.predict_flag",
        title="Predict what the difftest flags under the emulation",
        reference=predict_flag,
        fixed=_predict_fixed,
        random=_predict_random,
        hints=(
            "The emulated bug loses in-place writes of addcmul_ and addcdiv_ into NON-contiguous "
            "outputs. Out-of-place calls write into a fresh contiguous tensor.",
            "out= is not emulated (the facts only describe the in-place ops); 'expanded' expands the "
            "inputs only, so the written tensor is contiguous.",
            "Narrowing both dimensions of a 2-D tensor leaves gaps: not contiguous. lerp_ and mul_ "
            "work on any layout. A check that is n/a flags nothing.",
        ),
        mutants={
            "any variant on a non-contiguous layout": _predict_any_variant,
            "expanded counts as a non-contiguous output": _predict_expanded_too,
            "all of Adam's in-place ops break": _predict_all_adam_ops,
            "out= breaks too": _predict_out_too,
            "narrowed only shifts the offset": _predict_narrow_is_offset,
        },
    ),
]

QUIZ = Quiz("06", [
    Question(
        "Adam's exp_avg_sq for the encoder was exactly 0 while exp_avg was not. Why?",
        ("The encoder's gradients were zero", "exp_avg_sq is updated with addcmul_, whose write into a "
         "non-contiguous tensor was lost; exp_avg uses lerp_, which worked",
         "float32 underflow of the squared gradients", "Adam skips parameters made with .clone()"),
        1, "Adam updates exp_avg with lerp_ and exp_avg_sq with mul_ then addcmul_; on the affected "
           "Macs addcmul_/addcdiv_ left a non-contiguous output unchanged (facts §1, Elana Simon's post)."),
    Question(
        "With exp_avg_sq stuck at 0, why did the encoder not explode with steps of lr*exp_avg/eps?",
        ("eps is large", "The parameter update itself, param.addcdiv_, was lost too: nothing moved",
         "Gradient clipping", "Adam caps its step size"),
        1, "the masking effect: two lost writes hid each other, so nothing looked wrong (facts §1)."),
    Question(
        "Which line made the encoder weight non-contiguous?",
        ("nn.Linear(d, h)", "encoder.weight.data = decoder.weight.T.clone()",
         "torch.optim.Adam(model.parameters())", "loss.backward()"),
        1, ".T is a stride-only view and clone() defaults to memory_format=torch.preserve_format, so "
           "the copy keeps the transposed strides (facts §1)."),
    Question(
        "Which torch/macOS pair has the addcmul_ bug, per the facts?",
        ("torch 2.4 on macOS 14", "torch 2.3 on macOS 14", "torch 2.3 on macOS 15",
         "torch 2.13 on macOS 14"),
        1, "fixed by PR #124442 in torch 2.4 (issue #118115); macOS 15's native strides avoid the "
           "gathering copy altogether (PR #128393). Affected: torch < 2.4 and macOS < 15 (facts §1)."),
    Question(
        "Switching the model to float64 made training work. What did that really prove?",
        ("Adam needs float64", "Nothing about precision: MPS has no float64, so the run moved to the "
         "CPU, which has no such bug", "float64 tensors are always contiguous",
         "float64 disables addcmul_"),
        1, "the red herring of the story: float32 on the CPU trained as well (facts §1)."),
    Question(
        "You make encoder.weight contiguous AFTER Adam has taken steps on an affected Mac, and change "
        "nothing else. What happens?",
        ("It trains normally", "The encoder takes huge steps: its exp_avg_sq (made by zeros_like, "
         "still transposed) stays 0 while param.addcdiv_ now lands", "Nothing changes: still frozen",
         "PyTorch raises an error"),
        1, "restart that parameter's state too, or fix the layout before creating the optimizer; "
           "zeros_like keeps the layout (facts §1; exercise 06.repair)."),
])
