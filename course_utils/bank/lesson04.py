"""Lesson 04's exercises: count backend switches, find the op that falls back in a trace, and rewrite
an unsupported op (``aten::cumsum``, emulated) with supported primitives."""

from __future__ import annotations

import copy
import random

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.toolkit.emulate.mps_fallback import op_matches

# --- 04.count_switches --------------------------------------------------------------------------
# A path is a list of steps (op, device, mps_kernel): the op, the device its tensors are on, and
# whether MPS has a kernel for it. A step runs on the cpu when its tensors are on the cpu or when
# MPS has no kernel (a fallback); otherwise on mps.

# Seed 003's five stages: host batch -> mps forward -> fallback op -> mps classifier -> host log.
SEED_PATH = [
    ("aten::lift_fresh", "cpu", False), ("aten::_to_copy", "mps", True),
    ("aten::embedding", "mps", True), ("aten::cumsum", "mps", False),
    ("aten::addmm", "mps", True), ("aten::_to_copy", "cpu", True),
]


def _runs_on(device: str, kernel: bool) -> str:
    return "cpu" if device == "cpu" or not kernel else device


def count_switches(path: list[tuple[str, str, bool]]) -> int:
    """Reference: places each step runs on, then count changes between neighbours."""
    places = [_runs_on(device, kernel) for _, device, kernel in path]
    return sum(a != b for a, b in zip(places, places[1:], strict=False))


def _switch_fixed() -> list[Case]:
    mps = [("aten::addmm", "mps", True), ("aten::relu", "mps", True)]
    return [
        Case("seed 003's five-stage path", (SEED_PATH,)),
        Case("an empty path", ([],)),
        Case("all on mps", (mps,)),
        Case("tokenizing on the cpu first (no MPS kernel needed there)",
             ([("aten::lift_fresh", "cpu", False), ("aten::_unique2", "cpu", False), *mps],)),
        Case("two fallbacks in a row",
             ([mps[0], ("aten::cumsum", "mps", False), ("aten::col2im", "mps", False), mps[1]],)),
        Case("the path starts with a fallback", ([("aten::embedding_renorm_", "mps", False), *mps],)),
        Case("a fallback, then the host", ([mps[0], ("aten::linalg_svd", "mps", False),
                                             ("aten::_to_copy", "cpu", True)],)),
    ]


OPS = ("aten::addmm", "aten::relu", "aten::cumsum", "aten::embedding", "aten::col2im", "aten::mean")


def _switch_random(rng: random.Random) -> Case:
    path = [(rng.choice(OPS), rng.choice(("mps", "mps", "cpu")), rng.random() < 0.7)
            for _ in range(rng.randint(0, 12))]
    return Case(f"random path of {len(path)} steps", (path,))


def _switch_ignores_kernels(path):
    return count_switches([(op, device, True) for op, device, _ in path])


def _switch_two_per_fallback(path):
    fallbacks = sum(device != "cpu" and not kernel for _, device, kernel in path)
    return _switch_ignores_kernels(path) + 2 * fallbacks


def _switch_distinct_places(path):
    return max(len({_runs_on(device, kernel) for _, device, kernel in path}) - 1, 0)


def _switch_counts_cpu_steps(path):
    return sum(_runs_on(device, kernel) == "cpu" for _, device, kernel in path)


# --- 04.find_fallbacks --------------------------------------------------------------------------
# A trace is a list of dicts: op, inputs (devices of its tensor inputs), outputs, mps_kernel.


def find_fallbacks(events: list[dict]) -> list[str]:
    """Reference: ops whose tensors are on mps but MPS has no kernel; each once, in order."""
    found: list[str] = []
    for e in events:
        on_mps = "mps" in (e["inputs"] or e["outputs"])
        if on_mps and not e["mps_kernel"] and e["op"] not in found:
            found.append(e["op"])
    return found


def _event(op: str, inputs: tuple, outputs: tuple, kernel: bool) -> dict:
    return {"op": op, "inputs": inputs, "outputs": outputs, "mps_kernel": kernel}


HOST_STEPS = [_event("aten::lift_fresh", ("cpu",), ("cpu",), False),
              _event("aten::_unique2", ("cpu",), ("cpu", "cpu"), False),
              _event("aten::_to_copy", ("cpu",), ("mps",), True)]
DEVICE_STEPS = [_event("aten::embedding", ("mps", "mps"), ("mps",), True),
                _event("aten::addmm", ("mps", "mps", "mps"), ("mps",), True),
                _event("aten::relu", ("mps",), ("mps",), True)]
FALLBACK_STEPS = [_event("aten::embedding_renorm_", ("mps", "mps"), ("mps",), False),
                  _event("aten::cumsum", ("mps",), ("mps",), False),
                  _event("aten::col2im", ("mps",), ("mps",), False),
                  _event("aten::add.Tensor", ("mps", "cpu"), ("mps",), False),  # a 0-dim cpu scalar
                  _event("aten::randperm", (), ("mps",), False)]  # a factory asked for mps


def _find_fixed() -> list[Case]:
    emb, cumsum, col2im, add, randperm = FALLBACK_STEPS
    read = _event("aten::_local_scalar_dense", ("mps",), (), True)
    return [
        Case("the lesson's classifier", ([*HOST_STEPS[2:], emb, *DEVICE_STEPS, read],)),
        Case("no fallback, host steps only on the cpu", ([*HOST_STEPS, *DEVICE_STEPS],)),
        Case("one op falling back three times", ([*HOST_STEPS, cumsum, DEVICE_STEPS[0], cumsum,
                                                  cumsum],)),
        Case("two different ops", ([*DEVICE_STEPS, col2im, DEVICE_STEPS[2], emb, col2im],)),
        Case("a mixed mps/cpu-scalar op and a factory on mps", ([HOST_STEPS[0], add, randperm],)),
        Case("an empty trace", ([],)),
    ]


def _find_random(rng: random.Random) -> Case:
    pool = HOST_STEPS + DEVICE_STEPS * 2 + FALLBACK_STEPS
    events = [dict(rng.choice(pool)) for _ in range(rng.randint(0, 14))]
    return Case(f"random trace of {len(events)} ops", (events,))


def _find_no_kernel(events):
    return list(dict.fromkeys(e["op"] for e in events if not e["mps_kernel"]))


def _find_every_time(events):
    return [e["op"] for e in events if "mps" in (e["inputs"] or e["outputs"]) and not e["mps_kernel"]]


def _find_first_only(events):
    return find_fallbacks(events)[:1]


def _find_inputs_only(events):
    return list(dict.fromkeys(e["op"] for e in events if "mps" in e["inputs"] and not e["mps_kernel"]))


# --- 04.prefix_sum ------------------------------------------------------------------------------
# Rewrite torch.cumsum(x, dim=-1) with ops MPS supports. aten::cumsum counts as unsupported here
# (emulated). The inputs record, at the dispatcher, every aten op run on them, so the check sees a
# fallback even when it hides inside another function.

UNSUPPORTED = ("aten::cumsum", "aten::cumsum_")
_seen: list[str] = []  # ops recorded since the last case's inputs were copied


class _Log(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        _seen.append(func.name())
        return func(*args, **(kwargs or {}))


class Watched(torch.Tensor):
    """A tensor whose every torch call is recorded at the dispatcher (see ``ops_seen()``)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with _Log():
            return super().__torch_function__(func, types, args, kwargs or {})

    def __deepcopy__(self, memo):
        _seen.clear()  # check() copies a case's inputs right before each call: a new record starts
        return copy.deepcopy(self.as_subclass(torch.Tensor), memo).as_subclass(Watched)


def ops_seen() -> list[str]:
    """The aten ops run on watched tensors since their last copy."""
    return list(_seen)


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    """Reference: y[..., j] = x[..., 0] + ... + x[..., j], as a matmul with an upper-triangular
    matrix of ones (matmul and triu have MPS kernels)."""
    n = x.shape[-1]
    ones = torch.ones(n, n, dtype=x.dtype, device=x.device).triu()
    return x @ ones


def _watched(base: torch.Tensor) -> Watched:
    return base.as_subclass(Watched)


def _layout(kind: str, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """A float32 tensor of ``shape`` with the given memory layout."""
    if kind == "transposed":
        return torch.randn(*shape[:-2], shape[-1], shape[-2], generator=gen).transpose(-1, -2)
    if kind == "every other column":
        return torch.randn(*shape[:-1], 2 * shape[-1], generator=gen)[..., ::2]
    if kind == "permuted batch":
        return torch.randn(shape[-2], *shape[:-2], shape[-1], generator=gen).movedim(0, -2)
    return torch.randn(*shape, generator=gen)


def _describe(x: torch.Tensor, kind: str) -> str:
    return f"{kind} {tuple(x.shape)} float32, stride {x.stride()}"


def _prefix_fixed() -> list[Case]:
    gen = torch.Generator().manual_seed(4)
    cases = []
    for kind, shape in [("contiguous", (4, 6)), ("contiguous", (7,)), ("contiguous", (3, 1)),
                        ("transposed", (5, 8)), ("every other column", (3, 5)),
                        ("permuted batch", (2, 3, 4)), ("contiguous", (3, 0))]:
        x = _layout(kind, shape, gen)
        cases.append(Case(_describe(x, kind), (_watched(x),)))
    big = torch.full((2, 40), 100.0)
    cases.append(Case("large values (100.0 everywhere)", (_watched(big),)))
    return cases


def _prefix_random(rng: random.Random) -> Case:
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    kind = rng.choice(("contiguous", "transposed", "every other column", "permuted batch"))
    dims = 3 if kind == "permuted batch" else rng.choice((2, 2, 3))
    shape = tuple(rng.randint(1, 6) for _ in range(dims - 1)) + (rng.randint(1, 48),)
    x = _layout(kind, shape, gen)
    return Case(_describe(x, kind), (_watched(x),))


def _prefix_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    from course_utils.core.compare import mismatch

    used = [op for op in ops_seen() if op_matches(op, UNSUPPORTED)]
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if used:
        return (f"your function still runs {used[0]}, which has no MPS kernel here (emulated): on a Mac "
                "it would fall back to the CPU on every call. Build the sum from other ops.")
    return mismatch(expected.value, got.value, atol=1e-4, rtol=1e-4)


def _prefix_calls_cumsum(x):
    return torch.cumsum(x, dim=-1)


def _prefix_views(x):
    n = x.shape[-1]
    ones = torch.ones(n, n, dtype=x.dtype).triu()
    return (x.view(-1, n) @ ones).view(x.shape)


def _prefix_bfloat16(x):
    n = x.shape[-1]
    ones = torch.ones(n, n, dtype=torch.bfloat16).triu()
    return (x.to(torch.bfloat16) @ ones).to(x.dtype)


def _prefix_exclusive(x):
    n = x.shape[-1]
    return x @ torch.ones(n, n, dtype=x.dtype).triu(diagonal=1)


def _prefix_reversed(x):
    n = x.shape[-1]
    return x @ torch.ones(n, n, dtype=x.dtype).tril()


EXERCISES = [
    Exercise(
        id="04.count_switches",
        title="Count the backend switches of a path",
        reference=count_switches,
        fixed=_switch_fixed,
        random=_switch_random,
        hints=(
            "First decide where each step runs: on the cpu if its tensors are on the cpu or if MPS "
            "has no kernel for it (a fallback), otherwise on mps.",
            "Then count neighbouring steps that run in different places: "
            "sum(a != b for a, b in zip(places, places[1:])).",
            "A fallback is not always two switches: two fallbacks in a row, or one at the start, "
            "change place fewer times.",
        ),
        mutants={
            "ignores missing MPS kernels": _switch_ignores_kernels,
            "adds two switches per fallback": _switch_two_per_fallback,
            "counts distinct places minus one": _switch_distinct_places,
            "counts the steps on the cpu": _switch_counts_cpu_steps,
        },
    ),
    Exercise(
        id="04.find_fallbacks",
        title="Find the ops that fall back in a trace",
        reference=find_fallbacks,
        fixed=_find_fixed,
        random=_find_random,
        hints=(
            "An op falls back when its tensors are on mps and MPS has no kernel for it. An op on cpu "
            "tensors (tokenizing, collating) is host work, not a fallback, kernel or not.",
            "Look at the inputs; an op with no tensor inputs (a factory) is where its outputs are.",
            "Return each op once, in the order it first appears.",
        ),
        mutants={
            "every op without an MPS kernel, host work included": _find_no_kernel,
            "lists an op every time it runs": _find_every_time,
            "stops at the first fallback": _find_first_only,
            "misses factories (looks at inputs only)": _find_inputs_only,
        },
    ),
    Exercise(
        id="04.prefix_sum",
        title="Rewrite cumsum with ops MPS supports",
        reference=prefix_sum,
        fixed=_prefix_fixed,
        random=_prefix_random,
        judge=_prefix_judge,
        in_process_only="its check watches which ops the answer runs (no cumsum), which only the "
                        "answer's own process can see, and a submission could forge a report of",
        atol=1e-4,
        rtol=1e-4,
        hints=(
            "A running sum is a matrix product: y[..., j] = sum over i <= j of x[..., i], so "
            "y = x @ U where U[i, j] = 1 when i <= j.",
            "torch.ones(n, n).triu() builds U; give it x's dtype and device.",
            "Do not flatten with .view(): the inputs include transposed and sliced tensors. "
            "x @ U works on any layout and any number of leading dimensions.",
        ),
        mutants={
            "still calls torch.cumsum": _prefix_calls_cumsum,
            "flattens with .view() (fails on non-contiguous input)": _prefix_views,
            "sums in bfloat16 (numerically different)": _prefix_bfloat16,
            "leaves out the diagonal (exclusive sum)": _prefix_exclusive,
            "triangle the wrong way round": _prefix_reversed,
        },
    ),
]

QUIZ = Quiz("04", [
    Question(
        "You add os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a notebook cell after "
        "`import torch`. An unsupported op then runs on mps. What happens?",
        ("It falls back to the CPU with a warning", "It still raises NotImplementedError: the "
         "variable was read when torch loaded, so restart the kernel and set it first",
         "It runs on MPS more slowly", "It falls back silently"),
        1, "the variable is read in a static initializer when the MPS library registers (facts §4)."),
    Question(
        "A training script printed the MPS fallback warning once, for aten::col2im. How many "
        "different ops fell back?",
        ("Exactly one", "At least one: the warning is printed once per process, so later "
         "fallbacks are silent unless torch.set_warn_always(True)", "None: it was only a warning",
         "One per training step"),
        1, "TORCH_WARN_ONCE at a single call site reports only the first fallback (facts §4)."),
    Question(
        "Your tokenizer and collate function run on the CPU before batch.to('mps'). Is that CPU "
        "fallback?",
        ("Yes, every CPU op is a fallback", "No: fallback means an op on mps tensors that has no "
         "MPS kernel; host work before the move is normal", "Only if the variable is set",
         "Only for integer tensors"),
        1, "tokenization and batch assembly normally happen on the CPU (seed 003)."),
    Question(
        "host batch -> mps forward -> fallback op -> mps classifier -> host log. How many backend "
        "switches?",
        ("2", "3", "4", "5"),
        2, "each neighbouring pair in a different place is one switch: cpu|mps|cpu|mps|cpu (seed 003)."),
    Question(
        "Without PYTORCH_ENABLE_MPS_FALLBACK, which op still runs (on the CPU) instead of raising?",
        ("aten::addmm", "aten::linalg_svd", "aten::relu", "aten::cumsum"),
        1, "a few ops are registered to always fall back: embedding_renorm_, linalg_svd, col2im, "
        "upsample_nearest3d.vec (facts §4)."),
    Question(
        "Seed 001 suggests `return self.norm(x.cpu()).to(device)` for a 'safe' LayerNorm. After "
        "model.to('mps'), what is wrong with it?",
        ("Nothing, it is the recommended fix", "It copies x both ways on every call (two switches) "
         "and, as written, fails: the LayerNorm weights are on mps while x is on the cpu",
         "LayerNorm has no CPU kernel", "It only works in float64"),
        1, "a hand-made round trip costs what a fallback costs, and the module's parameters moved "
        "with model.to() (seed 001; lesson 04 measures it)."),
])
