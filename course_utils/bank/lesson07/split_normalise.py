"""Normalise with training statistics only."""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson07._shared import gen, value_judge
from course_utils.core.exercise import Case, Exercise, patched


def normalise(train, test):
    """Reference: per-feature mean and std of the training rows, applied to both splits."""
    mean, std = train.mean(0), train.std(0)
    return (train - mean) / std, (test - mean) / std


def _case(label: str, seed: int, n_train: int, n_test: int, d: int, shift: float,
          column_major: bool = False, one_storage: bool = False) -> Case:
    """With ``one_storage``, train and test are two row slices of ONE tensor (the test rows at a
    storage offset): an answer that normalises in place would write into both."""
    g = gen(seed)
    train = torch.randn(n_train, d, generator=g) * 3 + 5
    test = torch.randn(n_test, d, generator=g) * 3 + 5 + shift
    if column_major:
        train = train.t().contiguous().t()  # same values, non-contiguous layout
    if one_storage:
        both = torch.cat([train, test])
        train, test = both[:n_train], both[n_train:]
    return Case(label, (train, test))


def _fixed() -> list[Case]:
    return [
        _case("800 train rows, 200 test rows from a shifted period", 61, 800, 200, 3, 3.0),
        _case("a column-major (non-contiguous) training tensor", 62, 50, 10, 4, 1.0, column_major=True),
        _case("one feature, small test split", 63, 20, 3, 1, -2.0),
        _case("train and test: row slices of one tensor (test at an offset), one test row", 64, 9, 1,
              3, 1.5, one_storage=True),
        _case("two training rows, an odd number of test rows", 65, 2, 5, 2, 0.0),
    ]


def _random(rng: random.Random) -> Case:
    n, m, d = rng.randint(2, 60), rng.randint(1, 20), rng.randint(1, 5)
    shift = rng.choice((0.0, 1.5, -4.0))
    return _case(f"{n} train, {m} test rows, {d} features, test shift {shift}",
                 rng.randint(66, 10**6), n, m, d, shift, rng.random() < 0.3, rng.random() < 0.2)


def _by_hand(train, test):
    """An alternative answer: the sums written out (n - 1 in the variance, as torch.std)."""
    n = train.shape[0]
    mean = train.sum(dim=0) / n
    std = (((train - mean) ** 2).sum(dim=0) / (n - 1)).sqrt()
    return (train - mean) / std, (test - mean) / std


def _std_mean(train, test):
    """An alternative answer: torch.std_mean, then one function for both splits."""
    std, mean = torch.std_mean(train, dim=0, keepdim=True)
    return tuple((split - mean) / std for split in (train, test))


EXERCISE = Exercise(
    id="07.split_normalise",
    title="Normalise with training statistics only",
    reference=normalise,
    fixed=_fixed,
    random=_random,
    atol=1e-4,
    rtol=1e-4,
    judge=value_judge("train", "test", atol=1e-4, rtol=1e-4),
    hints=("Which rows may the statistics see? Only the training rows.",
           "Per feature: mean(0) and std(0) of train, applied unchanged to both splits."),
    mutants={
        "statistics of all rows (the leak)": patched(normalise, (
            "mean, std = train.mean(0), train.std(0)",
            "both = torch.cat([train, test])\n    mean, std = both.mean(0), both.std(0)")),
        "each split with its own statistics":
            lambda train, test: (normalise(train, train)[0], normalise(test, test)[0]),
        "one global mean and std instead of per feature":
            patched(normalise, ("train.mean(0), train.std(0)", "train.mean(), train.std()")),
    },
    equivalent={},
    alternatives={
        "the sums written out": _by_hand,
        "torch.std_mean, one function for both splits": _std_mean,
    },
)
