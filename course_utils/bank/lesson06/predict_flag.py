"""Predict what the difftest flags under the emulation."""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson06._shared import machine_judge
from course_utils.core.exercise import Case, Exercise
from course_utils.toolkit.difftest import LAYOUT_RANK, LAYOUTS, SPECS, VARIANTS, lay_out, sweep
from course_utils.toolkit.emulate.inplace import mps_inplace_bug

PREDICT_OPS = ("addcmul", "addcdiv", "lerp", "mul", "add", "sqrt", "addmm")


def predict_flag(op: str, layout: str, variant: str) -> bool:
    """Reference (the oracle itself): does a difftest under ``mps_inplace_bug()`` flag this check?"""
    with mps_inplace_bug(device="cpu"):
        return bool(sweep([op], layouts=[layout], variants=[variant], device="cpu").problems)


def _fixed() -> list[Case]:
    picks = [("addcmul", "transposed", "in-place"), ("addcmul", "transposed", "out-of-place"),
             ("addcmul", "transposed", "out="), ("addcmul", "expanded", "in-place"),
             ("addcmul", "contiguous", "in-place"), ("addcdiv", "channels_last", "in-place"),
             ("addcdiv", "narrowed", "in-place"), ("lerp", "transposed", "in-place"),
             ("mul", "stepped", "in-place"), ("addcmul", "permuted 3-D", "in-place"),
             ("addcdiv", "stepped", "in-place"), ("addmm", "transposed", "in-place")]
    return [Case(f"{op} / {layout} / {variant}", (op, layout, variant)) for op, layout, variant in picks]


def _random(rng: random.Random) -> Case:
    op = rng.choice(PREDICT_OPS + ("addcmul", "addcdiv"))
    layout, variant = rng.choice(LAYOUTS), rng.choice(VARIANTS + ("in-place",))
    return Case(f"{op} / {layout} / {variant}", (op, layout, variant))


# Wrong models of the bug, written as rules (the reference asks the emulation itself).
_BROKEN_LAYOUTS = ("transposed", "stepped", "narrowed", "permuted 3-D", "channels_last")


def _any_variant(op, layout, variant):
    return op in ("addcmul", "addcdiv") and layout in _BROKEN_LAYOUTS


def _rules(op, layout, variant):
    """An alternative answer: the rules as the task states them."""
    non_contiguous = ("transposed", "stepped", "narrowed", "permuted 3-D", "channels_last")
    return variant == "in-place" and op in ("addcmul", "addcdiv") and layout in non_contiguous


def _asks_the_layout(op, layout, variant):
    """An alternative answer: lay out a written-to tensor as the sweep does; is it contiguous?"""
    if variant != "in-place" or op not in ("addcmul", "addcdiv"):
        return False
    shape = SPECS[op].arg_shapes(LAYOUT_RANK[layout])[0]
    return not lay_out(torch.zeros(shape), layout, written=True).is_contiguous()


EXERCISE = Exercise(
    id="06.predict_flag",
    title="Predict what the difftest flags under the emulation",
    reference=predict_flag,
    fixed=_fixed,
    random=_random,
    judge=machine_judge(),
    hints=(
        "The emulated bug loses in-place writes of addcmul_ and addcdiv_ into NON-contiguous "
        "outputs. Out-of-place calls write into a fresh contiguous tensor.",
        "out= is not emulated (the facts only describe the in-place ops); 'expanded' expands the "
        "inputs only, so the written tensor is contiguous.",
        "Narrowing both dimensions of a 2-D tensor leaves gaps: not contiguous. lerp_ and mul_ "
        "work on any layout. A check that is n/a flags nothing.",
    ),
    mutants={
        "any variant on a non-contiguous layout": _any_variant,
        "expanded counts as a non-contiguous output": lambda op, layout, variant:
            op in ("addcmul", "addcdiv") and variant == "in-place" and layout != "contiguous",
        "all of Adam's in-place ops break": lambda op, layout, variant: (
            op in ("addcmul", "addcdiv", "lerp", "mul") and variant == "in-place"
            and layout in _BROKEN_LAYOUTS),
        "out= breaks too": lambda op, layout, variant:
            _any_variant(op, layout, variant) and variant in ("in-place", "out="),
        "narrowed only shifts the offset": lambda op, layout, variant:
            _any_variant(op, layout, variant) and variant == "in-place" and layout != "narrowed",
    },
    alternatives={
        "the rules as the task states them": _rules,
        "lays out a written-to tensor and asks is_contiguous()": _asks_the_layout,
    },
)
