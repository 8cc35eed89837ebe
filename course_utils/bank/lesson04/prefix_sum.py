"""Rewrite torch.cumsum(x, dim=-1) with ops MPS supports. ``aten::cumsum`` counts as unsupported
here (emulated). The inputs are ``case_inputs.Watched`` tensors, which record every aten op run on
them at the dispatcher, so the check sees a fallback even when it hides inside another function."""

from __future__ import annotations

import random

import torch

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs
from course_utils.labs.case_inputs import Watched, ops_seen
from course_utils.toolkit.emulate.mps_fallback import op_matches

UNSUPPORTED = ("aten::cumsum", "aten::cumsum_")


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    """Reference: y[..., j] = x[..., 0] + ... + x[..., j], as a matmul with an upper-triangular
    matrix of ones (matmul and triu have MPS kernels)."""
    n = x.shape[-1]
    ones = torch.ones(n, n, dtype=x.dtype, device=x.device).triu()
    return x @ ones


def _layout(kind: str, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """A float32 tensor of ``shape`` with the given memory layout."""
    if kind == "transposed":
        return torch.randn(*shape[:-2], shape[-1], shape[-2], generator=gen).transpose(-1, -2)
    if kind == "every other column":
        return torch.randn(*shape[:-1], 2 * shape[-1], generator=gen)[..., ::2]
    if kind == "permuted batch":
        return torch.randn(shape[-2], *shape[:-2], shape[-1], generator=gen).movedim(0, -2)
    return torch.randn(*shape, generator=gen)


def _case(x: torch.Tensor, kind: str) -> Case:
    return Case(f"{kind} {tuple(x.shape)} float32, stride {x.stride()}", (x.as_subclass(Watched),))


def _fixed() -> list[Case]:
    gen = torch.Generator().manual_seed(4)
    cases = [_case(_layout(kind, shape, gen), kind)
             for kind, shape in [("contiguous", (4, 6)), ("contiguous", (7,)), ("contiguous", (3, 1)),
                                 ("transposed", (5, 8)), ("every other column", (3, 5)),
                                 ("permuted batch", (2, 3, 4)), ("contiguous", (3, 0))]]
    big = torch.full((2, 40), 100.0).as_subclass(Watched)
    base = torch.randn(4, 9, generator=gen)
    offset = base[1:, 2:]  # shares base's storage, 11 elements in
    return [*cases, Case("large values (100.0 everywhere)", (big,)),
            _case(offset, "a slice at storage offset 11 of a (4, 9) tensor"),
            _case(_layout("contiguous", (1, 5), gen), "a batch of 1"),
            _case(_layout("contiguous", (1, 1), gen), "one element"),
            _case(_layout("contiguous", (0, 6), gen), "no rows")]


def _random(rng: random.Random) -> Case:
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    kind = rng.choice(("contiguous", "transposed", "every other column", "permuted batch"))
    dims = 3 if kind == "permuted batch" else rng.choice((2, 2, 3))
    shape = tuple(rng.randint(1, 6) for _ in range(dims - 1)) + (rng.randint(1, 48),)
    return _case(_layout(kind, shape, gen), kind)


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """The watched input's own record of the ops run on it is the evidence (not the answer's
    word): no cumsum, no read to the host; the input left as it was; the values the reference's."""
    seen = ops_seen()
    used = [op for op in seen if op_matches(op, UNSUPPORTED)]
    reads = [op.split(": ", 1)[1] for op in seen if op.startswith("host read: ")]
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if used:
        return (f"your function still runs {used[0]}, which has no MPS kernel here (emulated): on a Mac "
                "it would fall back to the CPU on every call. Build the sum from other ops.")
    if reads:
        return (f"your function read x to the host (.{reads[0]}()): on a Mac that copies it to the "
                "CPU and back, which costs more than the fallback. Build the sum from torch ops on x.")
    return (changed_inputs(case, got, ("x",))
            or mismatch(expected.value, got.value, atol=1e-4, rtol=1e-4))


def _masked_sum(x: torch.Tensor) -> torch.Tensor:
    """An alternative answer: broadcast x against a lower-triangular mask and sum each row."""
    n = x.shape[-1]
    mask = torch.ones(n, n, dtype=x.dtype, device=x.device).tril()  # mask[j, i] = 1 when i <= j
    return (x.unsqueeze(-2) * mask).sum(-1)


def _doubling_scan(x: torch.Tensor) -> torch.Tensor:
    """An alternative answer from the rule: a Hillis-Steele scan, adding a copy shifted by 1, 2, 4..."""
    out, shift, n = x.clone(), 1, x.shape[-1]
    while shift < n:
        shifted = torch.nn.functional.pad(out[..., :n - shift], (shift, 0))
        out = out + shifted
        shift *= 2
    return out


def in_place(x: torch.Tensor) -> torch.Tensor:
    """A wrong answer only check() can see: it writes the sums into its input (tests/test_bank)."""
    n = x.shape[-1]
    return x.copy_(x @ torch.ones(n, n, dtype=x.dtype).triu())


def via_numpy(x: torch.Tensor) -> torch.Tensor:
    """A wrong answer only check() can see: NumPy's cumsum, on the host (tests/test_bank)."""
    import numpy as np

    return torch.from_numpy(np.cumsum(x.detach().numpy(), axis=-1))


EXERCISE = Exercise(
    id="04.prefix_sum",
    title="Rewrite cumsum with ops MPS supports",
    reference=prefix_sum,
    fixed=_fixed,
    random=_random,
    judge=_judge,
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
        "still calls torch.cumsum": lambda x: torch.cumsum(x, dim=-1),
        "flattens with .view() (fails on non-contiguous input)": patched(prefix_sum, (
            "return x @ ones", "return (x.view(-1, n) @ ones).view(x.shape)")),
        "sums in bfloat16 (numerically different)": patched(
            prefix_sum, ("dtype=x.dtype", "dtype=torch.bfloat16"),
            ("return x @ ones", "return (x.to(torch.bfloat16) @ ones).to(x.dtype)")),
        "leaves out the diagonal (exclusive sum)": patched(prefix_sum, (".triu()", ".triu(diagonal=1)")),
        "triangle the wrong way round": patched(prefix_sum, (".triu()", ".tril()")),
        "cumsum on a plain copy of x, out of the record": lambda x: torch.cumsum(
            x.as_subclass(torch.Tensor), dim=-1),
    },
    equivalent={
        "contiguous added: `return x @ ones` -> `return (x @ ones).contiguous()`":
            "x @ ones is a new tensor in row-major order: .contiguous() returns it unchanged",
    },
    alternatives={
        "a lower-triangular mask, broadcast and summed": _masked_sum,
        "a Hillis-Steele doubling scan with F.pad": _doubling_scan,
    },
)
