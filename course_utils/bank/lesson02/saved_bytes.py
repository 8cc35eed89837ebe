"""Bytes saved for backward, counted with a hook: the learner rebuilds the toolkit's own count.

The reference is ``course_utils.toolkit.memory.saved_bytes`` itself (the course counts memory in one
place); the mutants are the toolkit's record of every save (``SavedTensors.saves``) summed wrongly.
The forwards a case runs are ``case_inputs.SAVING_EXAMPLES``.
"""

from __future__ import annotations

import random

import torch

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.inputs import grad_mode_left_off
from course_utils.labs.case_inputs import SAVING_EXAMPLES
from course_utils.toolkit.memory.saved import SavedTensors, saved_bytes


def _leaf(*shape: int, transposed: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if transposed:
        return torch.randn(*reversed(shape), generator=g).t().detach().requires_grad_()
    return torch.randn(*shape, generator=g, requires_grad=True)


def _rows_of(rows: int, start: int, cols: int = 8, seed: int = 5) -> torch.Tensor:
    """A leaf that is rows ``start:start + rows`` of a bigger tensor: it shares that tensor's whole
    storage, at an offset (a saved view of it keeps all of it alive)."""
    base = torch.randn(start + rows + 3, cols, generator=torch.Generator().manual_seed(seed))
    return base[start:start + rows].detach().requires_grad_()


def _fixed() -> list[Case]:
    ops = SAVING_EXAMPLES
    return [Case(f"{name} on a (4, 8) input", (fn, _leaf(4, 8))) for name, fn in ops.items()] + [
        Case("x @ x.T on a transposed (8, 4) input", (ops["x @ x.T"], _leaf(8, 4, transposed=True))),
        Case("a slice's sin on a transposed input", (ops["a slice's sin"], _leaf(6, 8, transposed=True))),
        Case("exp of rows 2:6 of a (9, 8) tensor (a view at an offset)", (ops["exp"], _rows_of(4, 2))),
        Case("sin then cos of rows 3:5 of an (8, 8) tensor", (ops["sin then cos"], _rows_of(2, 3))),
        Case("x*x on a batch of 1: (1, 8)", (ops["x*x"], _leaf(1, 8))),
        Case("x @ x.T on a single element (1, 1)", (ops["x @ x.T"], _leaf(1, 1))),
    ]


def _random(rng: random.Random) -> Case:
    name = rng.choice(sorted(SAVING_EXAMPLES))
    rows, cols = rng.randint(1, 9), rng.randint(6, 12)
    transposed = rng.random() < 0.5
    x = _leaf(rows, cols, transposed=transposed, seed=rng.randint(0, 999))
    label = f"{name} on a {'transposed ' if transposed else ''}({rows}, {cols}) input"
    return Case(label, (SAVING_EXAMPLES[name], x))


def _default_hooks_registered() -> bool:
    """Whether saved-tensor default hooks are registered, asked through the documented per-tensor
    API (a saved tensor that already has hooks refuses ``register_hooks``), which every torch the
    course supports has; the direct query, ``_top_saved_tensors_default_hooks``, is not in 2.6."""
    try:
        with torch.enable_grad():
            x = torch.ones(1, requires_grad=True)
            y = x * x  # kept alive: torch 2.6 frees a dropped output's saved tensors at once
            y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    except RuntimeError as err:  # "... whose hooks have already been set"
        return "already" in str(err)
    except Exception:  # noqa: BLE001 - a learner's pack hook that raised: hooks are registered
        return True
    return False


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """An int equal to the reference's; no saved-tensor hooks left registered, gradients left on."""
    if _default_hooks_registered():
        while _default_hooks_registered():
            torch._C._autograd._pop_saved_tensors_default_hooks()  # what saved_tensors_hooks' exit calls
        return ("your saved_tensors_hooks were left registered after your function returned: use "
                "them in a `with` block")
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    return grad_mode_left_off() or mismatch(expected.value, got.value)


def _hooks_by_pointer(fn, x) -> int:
    """An alternative answer from the rule: pack hooks keyed by storage pointer."""
    storages: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return sum(storages.values())


def _saved_in_the_graph(fn, x) -> int:
    """An alternative answer that asks the graph: every ``_saved_*`` tensor of every node behind
    the output, each storage once."""
    out = fn(x)
    storages, todo, seen = {}, [out.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            value = getattr(node, name) if name.startswith("_saved_") else None
            for t in value if isinstance(value, tuple) else (value,):
                if isinstance(t, torch.Tensor):
                    storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        todo += [nxt for nxt, _ in node.next_functions]
    return sum(storages.values())


def leaves_hooks_on(fn, x) -> int:
    """A wrong answer only check() can see: the hooks are entered and never left (tests/test_bank)."""
    sizes: dict[int, int] = {}

    def pack(t):
        sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t).__enter__()  # never left
    fn(x)
    return sum(sizes.values())


def _saves(fn, x) -> list:
    with SavedTensors() as saved:
        fn(x)
    return saved.saves


def _output_bytes(fn, x) -> int:
    out = fn(x)
    return out.numel() * out.element_size()


EXERCISE = Exercise(
    id="02.saved_bytes",
    title="Bytes saved for backward, counted with a hook",
    reference=saved_bytes,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "torch.autograd.graph.saved_tensors_hooks(pack, unpack) calls pack(t) for every tensor "
        "saved for backward; return t from pack and use lambda t: t as unpack.",
        "The same storage can be saved twice (x * x saves x twice, x @ x.T saves x and a view of "
        "it): key a dict by t.untyped_storage().data_ptr().",
        "A saved view keeps its whole storage alive: count t.untyped_storage().nbytes(), not "
        "t.numel() * t.element_size().",
    ),
    mutants={
        "counts a storage once per save": lambda fn, x: sum(s.storage_bytes for s in _saves(fn, x)),
        "counts the view, not the storage it keeps alive": lambda fn, x: sum(
            {s.storage: s.view_bytes for s in _saves(fn, x)}.values()),
        "measures the output instead": _output_bytes,
    },
    alternatives={
        "pack hooks keyed by storage pointer": _hooks_by_pointer,
        "the _saved_ tensors of the graph behind the output": _saved_in_the_graph,
    },
)
