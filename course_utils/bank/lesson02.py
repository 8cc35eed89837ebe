"""Lesson 02's exercises: optimizer-state bytes, bytes saved for backward, an out-of-memory retry
tested against simulated OOMs, and the largest batch under a memory budget."""

from __future__ import annotations

import math
import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.toolkit.memory.examples import SAVING_EXAMPLES
from course_utils.toolkit.memory.oom import SimulatedOOMStep

# --- 02.state_bytes -----------------------------------------------------------------------------


def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Reference: bytes of per-element state buffers after the first step (step counters ignored)."""
    total = 0
    for group in optimizer.param_groups:
        if isinstance(optimizer, torch.optim.SGD):
            buffers = 1 if group["momentum"] != 0 else 0
        else:  # Adam or AdamW
            buffers = 3 if group["amsgrad"] else 2
        total += sum(buffers * p.numel() * p.element_size() for p in group["params"] if p.requires_grad)
    return total


KINDS = ("sgd", "sgd_momentum", "adam", "adamw", "adam_amsgrad")


def _optimizer(kind: str, params) -> torch.optim.Optimizer:
    return {
        "sgd": lambda: torch.optim.SGD(params, lr=0.1),
        "sgd_momentum": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9),
        "adam": lambda: torch.optim.Adam(params),
        "adamw": lambda: torch.optim.AdamW(params),
        "adam_amsgrad": lambda: torch.optim.Adam(params, amsgrad=True),
    }[kind]()


def _params(*shapes: tuple[int, ...], dtype: torch.dtype = torch.float32) -> list[nn.Parameter]:
    """Zero parameters (no random numbers drawn, so checks leave torch's global RNG alone)."""
    return [nn.Parameter(torch.zeros(shape, dtype=dtype)) for shape in shapes]


def _classifier() -> list[nn.Parameter]:
    return _params((64, 768), (64,), (3, 64), (3,))


def _state_fixed() -> list[Case]:
    frozen = _params((32, 32), (32,), (4, 32), (4,))
    for p in frozen[:2]:
        p.requires_grad_(False)
    cases = [Case(f"{kind} on a two-layer classifier", (_optimizer(kind, _classifier()),))
             for kind in KINDS]
    half = _params((32, 128), (32,), dtype=torch.float16)
    groups = _classifier()
    cases += [
        Case("adam on a float16 layer", (_optimizer("adam", half),)),
        Case("sgd_momentum on a float16 layer", (_optimizer("sgd_momentum", half),)),
        Case("adam with the first layer frozen", (_optimizer("adam", frozen),)),
        Case("two param groups: momentum on one only", (torch.optim.SGD(
            [{"params": groups[:2], "momentum": 0.9}, {"params": groups[2:]}], lr=0.1),)),
    ]
    return cases


def _state_random(rng: random.Random) -> Case:
    dtype = rng.choice((torch.float32, torch.float16, torch.bfloat16, torch.float64))
    shapes = [tuple(rng.randint(1, 9) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4))]
    params = _params(*shapes, dtype=dtype)
    for p in params:
        p.requires_grad_(rng.random() < 0.75)
    kind = rng.choice(KINDS)
    frozen = sum(not p.requires_grad for p in params)
    return Case(f"{kind}, {dtype}, shapes {shapes}, {frozen} frozen", (_optimizer(kind, params),))


def _state_rule(optimizer, *, adam_buffers=2, sgd_buffers=None, size=None, frozen_too=False) -> int:
    """The reference's rule with one piece changed: what a mutant gets wrong."""
    size = size or (lambda p: p.numel() * p.element_size())
    total = 0
    for group in optimizer.param_groups:
        if isinstance(optimizer, torch.optim.SGD):
            buffers = sgd_buffers if sgd_buffers is not None else int(group["momentum"] != 0)
        else:
            buffers = adam_buffers + (1 if group["amsgrad"] else 0)
        total += sum(buffers * size(p) for p in group["params"] if p.requires_grad or frozen_too)
    return total


def _state_adam_one_moment(optimizer):
    return _state_rule(optimizer, adam_buffers=1)


def _state_sgd_always_momentum(optimizer):
    return _state_rule(optimizer, sgd_buffers=1)


def _state_four_bytes(optimizer):
    return _state_rule(optimizer, size=lambda p: p.numel() * 4)


def _state_counts_frozen(optimizer):
    return _state_rule(optimizer, frozen_too=True)


# --- 02.saved_bytes -----------------------------------------------------------------------------


def saved_bytes(fn, x: torch.Tensor) -> int:
    """Reference: bytes of the distinct storages autograd saves while ``fn(x)`` runs."""
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return sum(storages.values())


def _leaf(*shape: int, transposed: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if transposed:
        return torch.randn(*reversed(shape), generator=g).t().detach().requires_grad_()
    return torch.randn(*shape, generator=g, requires_grad=True)


def _saved_fixed() -> list[Case]:
    ops = SAVING_EXAMPLES  # defined outside the bank: `course grade` sends them
    return [Case(f"{name} on a (4, 8) input", (fn, _leaf(4, 8))) for name, fn in ops.items()] + [
        Case("x @ x.T on a transposed (8, 4) input", (ops["x @ x.T"], _leaf(8, 4, transposed=True))),
        Case("a slice's sin on a transposed input", (ops["a slice's sin"], _leaf(6, 8, transposed=True))),
    ]


def _saved_random(rng: random.Random) -> Case:
    name = rng.choice(sorted(SAVING_EXAMPLES))
    rows, cols = rng.randint(1, 9), rng.randint(6, 12)
    transposed = rng.random() < 0.5
    x = _leaf(rows, cols, transposed=transposed, seed=rng.randint(0, 999))
    label = f"{name} on a {'transposed ' if transposed else ''}({rows}, {cols}) input"
    return Case(label, (SAVING_EXAMPLES[name], x))


def _saved_counts_duplicates(fn, x):
    total = 0

    def pack(t):
        nonlocal total
        total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return total


def _saved_view_bytes(fn, x):
    seen = {}

    def pack(t):
        seen[t.untyped_storage().data_ptr()] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return sum(seen.values())


def _saved_output_bytes(fn, x):
    out = fn(x)
    return out.numel() * out.element_size()


# --- 02.retry_halving ---------------------------------------------------------------------------


def retry_halving(step, batch_size: int, min_batch: int) -> tuple:
    """Reference: call step(size), halving on out-of-memory errors, never below min_batch."""
    size = batch_size
    while True:
        try:
            return step(size), size
        except Exception as err:
            oom = isinstance(err, torch.OutOfMemoryError) or (
                isinstance(err, RuntimeError) and "out of memory" in str(err))
            if not oom:
                raise
            if size <= min_batch:
                raise RuntimeError(f"out of memory even at min_batch={min_batch}") from err
        size = max(min_batch, size // 2)


def _retry_fixed() -> list[Case]:
    return [
        Case("fits at once", (SimulatedOOMStep(64), 64, 1)),
        Case("cuda-style OOM until 16 rows", (SimulatedOOMStep(16), 64, 1)),
        Case("mps-style RuntimeError OOM until 8 rows", (SimulatedOOMStep(8, "mps"), 64, 1)),
        Case("halving 100 -> 50 -> 25 -> 12", (SimulatedOOMStep(12), 100, 1)),
        Case("min_batch 20 stops halving at 20", (SimulatedOOMStep(20), 100, 20)),
        Case("min_batch 4 still runs out of memory", (SimulatedOOMStep(2), 64, 4)),
        Case("nothing fits, min_batch 1", (SimulatedOOMStep(0, "mps"), 32, 1)),
        Case("a ValueError must pass through untouched",
             (SimulatedOOMStep(64, other=ValueError("labels out of range")), 64, 1)),
        Case("a non-OOM RuntimeError must pass through",
             (SimulatedOOMStep(64, other=RuntimeError("mat1 and mat2 shapes cannot be multiplied")), 64, 1)),
    ]


def _retry_random(rng: random.Random) -> Case:
    batch, min_batch = rng.randint(1, 256), rng.choice((1, 1, 2, 4, 8))
    fits, kind = rng.randint(0, 300), rng.choice(("cuda", "mps"))
    return Case(f"batch {batch}, {kind} OOM above {fits} rows, min_batch {min_batch}",
                (SimulatedOOMStep(fits, kind), batch, min_batch))


def _retry_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if expected.error is None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return None if got.value == expected.value else f"returned {got.value!r}, expected {expected.value!r}"
    min_batch = case.args[2]
    if case.args[0].other is not None:  # another error: it must come out as it went in
        other = case.args[0].other
        same_kind = isinstance(got.error, type(other)) and type(got.error).__name__ == type(other).__name__
        if not same_kind or str(got.error) != str(other):
            shown = f"{type(got.error).__name__}: {got.error}" if got.error else f"returned {got.value!r}"
            return f"the step's {type(other).__name__}({str(other)!r}) must propagate untouched; {shown}"
        return None
    if not isinstance(got.error, RuntimeError) or isinstance(got.error, RecursionError):
        shown = f"{type(got.error).__name__}: {got.error}" if got.error else f"returned {got.value!r}"
        return f"expected a RuntimeError saying even min_batch={min_batch} runs out of memory; {shown}"
    if str(min_batch) not in str(got.error):
        return f"the final error should name min_batch ({min_batch}); got: {got.error}"
    return None


def _retry_catches_everything(step, batch_size, min_batch):
    size = batch_size
    while True:
        try:
            return step(size), size
        except Exception as err:
            if size <= min_batch:
                raise RuntimeError(f"out of memory even at min_batch={min_batch}") from err
        size = max(min_batch, size // 2)


def _retry_only_oom_class(step, batch_size, min_batch):
    size = batch_size
    while True:
        try:
            return step(size), size
        except torch.OutOfMemoryError as err:
            if size <= min_batch:
                raise RuntimeError(f"out of memory even at min_batch={min_batch}") from err
        size = max(min_batch, size // 2)


def _retry_ignores_min_batch(step, batch_size, min_batch):
    return retry_halving(step, batch_size, 1)


def _retry_once(step, batch_size, min_batch):
    try:  # seed 001's idea: one more try, then give up
        return step(batch_size), batch_size
    except RuntimeError:
        return step(max(min_batch, batch_size // 2)), max(min_batch, batch_size // 2)


def _retry_swallows_final(step, batch_size, min_batch):
    try:
        return retry_halving(step, batch_size, min_batch)
    except RuntimeError as err:
        if "min_batch" in str(err):
            return None, min_batch
        raise


# --- 02.largest_batch ---------------------------------------------------------------------------

STATE_BUFFERS = {"sgd": 0, "sgd_momentum": 1, "adam": 2}


def largest_batch(budget: int, n_params: int, optimizer: str, per_sample: int,
                  bytes_per_value: int = 4) -> int:
    """Reference: the most samples whose activations fit after weights, grads and state."""
    fixed = n_params * bytes_per_value * (2 + STATE_BUFFERS[optimizer])
    return max(0, (budget - fixed) // per_sample)


def _largest_fixed() -> list[Case]:
    gib = 2**30
    return [
        Case("1M params, Adam, 16 MiB budget, 64 KiB/sample", (16 * 2**20, 1_000_000, "adam", 65536)),
        Case("same with SGD", (16 * 2**20, 1_000_000, "sgd", 65536)),
        Case("same with SGD momentum", (16 * 2**20, 1_000_000, "sgd_momentum", 65536)),
        Case("7B params, Adam fp32, 128 GiB, 50 MiB/sample", (128 * gib, 7_000_000_000, "adam", 50 * 2**20)),
        Case("7B params, Adam fp32, 96 GiB: nothing fits", (96 * gib, 7_000_000_000, "adam", 50 * 2**20)),
        Case("budget exactly the fixed part", (16_000_000, 1_000_000, "adam", 1000)),
        Case("fp16 values, 2 bytes each", (10_000_000, 1_000_000, "adam", 1000, 2)),
    ]


def _largest_random(rng: random.Random) -> Case:
    n_params = rng.randint(1, 5_000_000)
    optimizer = rng.choice(sorted(STATE_BUFFERS))
    per_sample = rng.randint(1, 2**20)
    bpv = rng.choice((2, 4))
    budget = rng.randint(0, n_params * bpv * 5 + 100 * per_sample)
    return Case(f"budget {budget:,}, {n_params:,} params, {optimizer}, {per_sample:,} B/sample, "
                f"{bpv} B/value", (budget, n_params, optimizer, per_sample, bpv))


def _largest_no_grads(budget, n_params, optimizer, per_sample, bytes_per_value=4):
    fixed = n_params * bytes_per_value * (1 + STATE_BUFFERS[optimizer])
    return max(0, (budget - fixed) // per_sample)


def _largest_adam_one_moment(budget, n_params, optimizer, per_sample, bytes_per_value=4):
    buffers = min(1, STATE_BUFFERS[optimizer])
    return max(0, (budget - n_params * bytes_per_value * (2 + buffers)) // per_sample)


def _largest_negative(budget, n_params, optimizer, per_sample, bytes_per_value=4):
    return (budget - n_params * bytes_per_value * (2 + STATE_BUFFERS[optimizer])) // per_sample


def _largest_rounds_up(budget, n_params, optimizer, per_sample, bytes_per_value=4):
    fixed = n_params * bytes_per_value * (2 + STATE_BUFFERS[optimizer])
    return max(0, math.ceil((budget - fixed) / per_sample))


EXERCISES = [
    Exercise(
        id="02.state_bytes",
        title="Bytes of optimizer state, per optimizer",
        reference=state_bytes,
        fixed=_state_fixed,
        random=_state_random,
        hints=(
            "Per trainable parameter: SGD keeps nothing, SGD with momentum one buffer, Adam and "
            "AdamW two (exp_avg and exp_avg_sq), three with amsgrad.",
            "Read momentum and amsgrad from each param group: groups may differ. A parameter with "
            "requires_grad=False never gets a gradient, so never gets state.",
            "Each buffer is shaped and typed like its parameter: p.numel() * p.element_size() bytes "
            "(2 per value in float16 or bfloat16, not always 4).",
        ),
        mutants={
            "counts Adam as one moment": _state_adam_one_moment,
            "gives SGD a momentum buffer even when momentum=0": _state_sgd_always_momentum,
            "assumes 4 bytes per value": _state_four_bytes,
            "counts frozen parameters": _state_counts_frozen,
        },
    ),
    Exercise(
        id="02.saved_bytes",
        title="Bytes saved for backward, counted with a hook",
        reference=saved_bytes,
        fixed=_saved_fixed,
        random=_saved_random,
        hints=(
            "torch.autograd.graph.saved_tensors_hooks(pack, unpack) calls pack(t) for every tensor "
            "saved for backward; return t from pack and use lambda t: t as unpack.",
            "The same storage can be saved twice (x * x saves x twice, x @ x.T saves x and a view of "
            "it): key a dict by t.untyped_storage().data_ptr().",
            "A saved view keeps its whole storage alive: count t.untyped_storage().nbytes(), not "
            "t.numel() * t.element_size().",
        ),
        mutants={
            "counts a storage once per save": _saved_counts_duplicates,
            "counts the view, not the storage it keeps alive": _saved_view_bytes,
            "measures the output instead": _saved_output_bytes,
        },
    ),
    Exercise(
        id="02.retry_halving",
        title="Retry on out-of-memory by halving the batch",
        reference=retry_halving,
        fixed=_retry_fixed,
        random=_retry_random,
        judge=_retry_judge,
        hints=(
            "A loop around the call, not a context manager: try step(size); on an out-of-memory "
            "error set size = max(min_batch, size // 2) and go round again.",
            "Out of memory is torch.OutOfMemoryError or, on MPS, a RuntimeError whose message says "
            "'out of memory' (facts §5). Re-raise anything else with a bare `raise`.",
            "When the failing size is already min_batch, raise RuntimeError(f'... min_batch={min_batch}') "
            "from the OOM instead of looping or returning.",
        ),
        mutants={
            "catches every exception": _retry_catches_everything,
            "catches only torch.OutOfMemoryError (misses MPS's RuntimeError)": _retry_only_oom_class,
            "ignores min_batch": _retry_ignores_min_batch,
            "retries once, like seed 001": _retry_once,
            "swallows the final error": _retry_swallows_final,
        },
    ),
    Exercise(
        id="02.largest_batch",
        title="The largest batch under a memory budget",
        reference=largest_batch,
        fixed=_largest_fixed,
        random=_largest_random,
        hints=(
            "Fixed part: weights + gradients + optimizer state, each n_params * bytes_per_value, "
            "with 0 state buffers for sgd, 1 for sgd_momentum, 2 for adam.",
            "What is left over, divided by the bytes per sample, rounded down: a partial sample "
            "does not fit.",
            "When the fixed part alone exceeds the budget, the answer is 0, not a negative number.",
        ),
        mutants={
            "forgets the gradients": _largest_no_grads,
            "counts Adam as one moment": _largest_adam_one_moment,
            "returns a negative batch": _largest_negative,
            "rounds up": _largest_rounds_up,
        },
    ),
]

QUIZ = Quiz("02", [
    Question(
        "How many bytes does one float32 batch of shape (32, 128, 768) take?",
        ("3 MiB", "12 MiB", "96 MiB", "768 KiB"),
        1, "32 × 128 × 768 values × 4 bytes = 12,582,912 bytes = 12 MiB, computed in the lesson "
        "(seed 003's running example)."),
    Question(
        "Training a 7-billion-parameter model in fp32 with Adam: what do weights, gradients and "
        "Adam's two moments alone take?",
        ("28 GB", "56 GB", "112 GB", "84 GB"),
        2, "4 values per parameter × 4 bytes × 7e9 = 112 GB (about 104 GiB), before any activation "
        "(computed in the lesson)."),
    Question(
        "On MPS, torch.mps.current_allocated_memory() and driver_allocated_memory() differ. Why?",
        ("They are the same counter in different units", "current counts live tensors; driver "
         "counts all Metal memory of the process, including the allocator's cache",
         "driver counts only the GPU cores' registers", "current includes the CPU's memory"),
        1, "torch.mps docs (facts §3, seed 003): current_allocated_memory is tensors only; "
        "driver_allocated_memory is every Metal allocation, caches included."),
    Question(
        "Your MPS run hits 'MPS backend out of memory'. What do you try first?",
        ("Set PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0", "Shrink the work: a smaller batch or shorter "
         "sequences", "Switch to float64", "Call torch.mps.empty_cache() in every step"),
        1, "seed 003: reduce the workload before touching allocator variables; a ratio of 0.0 "
        "removes the cap and risks a system-wide OOM (facts §3)."),
    Question(
        "Seed 001's retry helper is a @contextmanager with a second `yield` in its except branch. "
        "What happens when the body runs out of memory?",
        ("The body runs again with the cache emptied", "contextlib raises RuntimeError: "
         "generator didn't stop after throw()", "The OOM is silently ignored",
         "It retries forever"),
        1, "a context manager cannot re-run its with-block; the second yield makes contextlib "
        "raise, as the lesson shows by running it. A retry needs a loop around a function call."),
    Question(
        "In a model with self-attention, which saves more activation memory?",
        ("Halving the batch", "Halving the sequence length", "Both save exactly the same",
         "Neither changes activations"),
        1, "attention scores are (batch, tokens, tokens): halving the length quarters them, halving "
        "the batch only halves them (seed 003; measured in the lesson)."),
])
