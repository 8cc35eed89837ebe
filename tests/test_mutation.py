"""Does the mutant generator make the changes it promises, and does each check kill its mutants?"""

from __future__ import annotations

import pytest
import torch

from course_utils import bank
from course_utils.author import mutation
from course_utils.core.exercise import Case, Exercise


def sample(x: torch.Tensor, n: int, flag: bool = True) -> torch.Tensor:
    """A reference that gives every operator something to change."""
    total = x.sum(dim=0, keepdim=True)
    if n < 2 and flag:
        total = total + 1
    out = torch.where(total > 0, total, x.max(dim=-1, keepdim=True).values)
    out.add_(n * 2)
    with torch.no_grad():
        out = out.detach()
    return out.contiguous()


@pytest.fixture(scope="module")
def keys() -> list[str]:
    return [m.key for m in mutation.mutants_of(sample)]


@pytest.mark.parametrize("expected", [
    "compare: `n < 2` -> `n <= 2`", "compare: `total > 0` -> `total >= 0`",
    "arithmetic: `total + 1` -> `total - 1`", "arithmetic: `n * 2` -> `n / 2`",
    "constant: `1` -> `2`", "constant: `0` -> `1`", "constant: `0` -> `-1`", "constant: `True` -> `False`",
    "dim: `-1` -> `0`", "swapped arguments: `torch.where(total > 0, total",
    "statement dropped: `out.add_(n * 2)` -> `pass`", "early return x", "early return None",
    "early return 0", "out-of-place: `out.add_(n * 2)` -> `out.add(n * 2)`",
    "contiguous dropped: `out.contiguous()` -> `out`", "detach dropped: `out.detach()` -> `out`",
    "no_grad dropped", "no_grad added", "detach added",
    "reduction: `x.sum(dim=0, keepdim=True)` -> `x.mean(dim=0, keepdim=True)`",
    "reduction: `x.max(dim=-1, keepdim=True)` -> `x.amax(dim=-1, keepdim=True)`",
])
def test_every_kind_of_mutant_is_generated(keys, expected):
    assert any(k.startswith(expected) for k in keys), f"no mutant starting {expected!r} in {keys}"


def changes_the_value(fn, inputs) -> bool:
    """Whether ``fn`` returns something other than ``sample`` on one of ``inputs`` (or raises)."""
    for x, n in inputs:
        expected = sample(x.clone(), n)
        try:
            got = fn(x.clone(), n)
        except Exception:  # noqa: BLE001 - raising is a change too
            return True
        if not (isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.equal(got, expected)):
            return True
    return False


def test_mutant_keys_are_unique_and_mutants_really_change_the_function():
    found = mutation.mutants_of(sample)
    assert len({m.key for m in found}) == len(found) > 20
    torch.manual_seed(0)
    inputs = [(torch.randn(3, 4), 1), (torch.randn(3, 4), 3), (-torch.rand(3, 4), 0)]
    changed = [m.key for m in found if changes_the_value(m.fn, inputs)]
    assert len(changed) >= len(found) // 2
    assert all(any(k.startswith(kind) for k in changed) for kind in (
        "arithmetic: `total + 1` -> `total - 1`", "statement dropped: `out.add_(n * 2)`", "early return"))
    # what values cannot show (autograd, layout) never counts as a change: the comparison is real
    assert not any(k.startswith(("detach", "no_grad", "contiguous")) for k in changed)


def test_a_check_that_cannot_see_a_mutant_is_reported_and_a_declared_one_is_not():
    def double(x: int) -> int:
        return x * 2

    weak = Exercise("99.double", "double", double, fixed=lambda: [Case("zero", (0,))])
    assert mutation.score(weak).survivors  # 0 * 2 == 0 + 2? no, but 0 * 2 == 0 / 2 == 0 ** 2
    strong = Exercise("99.double", "double", double, fixed=lambda: [Case("x", (x,)) for x in (0, 3, -5)])
    assert mutation.score(strong).survivors == []
    declared = Exercise("99.double", "double", double, fixed=lambda: [Case("zero", (0,))],
                        equivalent={k: "test" for k in mutation.score(weak).survivors})
    result = mutation.score(declared)
    assert result.survivors == [] and result.equivalent and result.ratio == 1.0


def test_an_endless_mutant_counts_as_killed(monkeypatch):
    monkeypatch.setattr(mutation, "TIME_PER_MUTANT_S", 0.5)

    def spin(x):
        while True:
            pass

    ex = Exercise("99.id", "identity", lambda x: x, fixed=lambda: [Case("one", (1,))])
    assert mutation.is_killed(ex, spin, seeds=(0,))


def test_a_docstring_or_a_parameter_name_does_not_make_arithmetic_about_gradients():
    def budget(total: int, optimizer: str) -> int:
        """Bytes left after weights, grads and optimizer state."""
        return total - 3 * len(optimizer)

    def saved(fn, x) -> int:
        """Bytes autograd saves for backward."""
        return fn(x)

    def trains(model) -> None:
        model.weight.grad = None

    assert not any(m.key.startswith(("no_grad", "detach")) for m in mutation.mutants_of(budget))
    assert any(m.key == "no_grad added" for m in mutation.mutants_of(saved))
    assert any(m.key == "no_grad added" for m in mutation.mutants_of(trains))


# The capstone's four checks each train the haunted run once per mutant and seed (~40 mutants of
# one function): the suite runs every declared equivalent and an even spread of the rest there;
# ``course mutants 08`` runs them all.
SAMPLED = {exercise_id: 16 for exercise_id in bank.ids() if exercise_id.startswith("08.capstone_")}


@pytest.mark.parametrize("exercise_id", bank.ids())
def test_every_check_kills_its_automatic_mutants_and_declares_the_rest(exercise_id):
    """No undeclared survivor, no stale equivalent, at least 90% of the non-equivalent automatic
    mutants killed (``course mutants`` prints the same figures)."""
    result = mutation.score(bank.get(exercise_id), sample=SAMPLED.get(exercise_id))
    assert result.survivors == [], f"undeclared survivors: {result.survivors}"
    assert result.stale == [], f"declared equivalent but killed or gone: {result.stale}"
    assert result.ratio >= 0.9
    assert result.hand_killed == result.hand


def test_every_exercise_has_automatic_mutants():
    for exercise_id in bank.ids():
        ex = bank.get(exercise_id)
        assert mutation.mutants_of(ex.mutation_target or ex.reference), exercise_id


def test_a_sample_always_runs_the_declared_equivalents():
    def double(x):
        return 2 * x

    keys = [m.key for m in mutation.mutants_of(double)]
    declared = {keys[-1]: "declared for the test"}
    ex = Exercise("99.double", "double", double, fixed=lambda: [Case("one", (1,))], equivalent=declared)
    result = mutation.score(ex, sample=2)
    assert result.generated == 2
    assert result.stale == [keys[-1]]  # it ran (and the one case kills it): not skipped by the sample



def slow_identity(x):
    import time

    time.sleep(0.2)
    return x * 1


def test_a_slow_declared_equivalent_is_given_time_and_not_called_stale(monkeypatch):
    """A loaded machine slows a mutant past the limit; a declared equivalent gets more patience."""
    monkeypatch.setattr(mutation, "TIME_PER_MUTANT_S", 0.05)
    keys = [m.key for m in mutation.mutants_of(slow_identity)]
    ex = Exercise("99.slow", "slow identity", slow_identity, fixed=lambda: [Case("one", (1,))],
                  equivalent={k: "declared for the test" for k in keys})
    result = mutation.score(ex, seeds=(0,))
    assert result.equivalent, "a surviving declared mutant was cut off at the base limit"
    assert sorted([*result.equivalent, *result.stale]) == sorted(keys)
