"""The drill bank: classic training bugs as runnable code with a measured symptom (lesson 07).

Each category module (``gradients``, ``losses``, ...) exports ``DRILLS``, a tuple of ``Drill``.
The modules are imported on first use, so ``import course_utils.drills`` stays cheap (no
matplotlib, no widgets, no worker processes). Lesson 08's timed drills and the terminal
``course drill`` command build on this API:

- ``all_drills()`` every drill in lesson order; ``get(id)`` one drill; ``by_category()`` a dict
  category -> drills; ``CATEGORIES`` the category names in order.
- ``Drill``: ``id``, ``category``, ``title``, ``buggy_code``, ``fixed_code``, ``symptom()``,
  ``fix_check()``, ``question`` (``prompt``, ``choices``, ``answer``, ``why``), ``hints``,
  ``explanation``, ``source``, ``exercise`` (a ``course_utils.bank`` id or None), ``emulated``.
- ``Symptom``: ``summary`` (text), ``buggy`` (bool), ``values``, ``error``, ``figure()``.
- ``record_answer()`` / ``answers()``: card answers kept in progress under the key "drills".
- ``TAUGHT``: the one drill per category lesson 07 works through; ``SHOWN_IN_LESSON_08`` those lesson
  08 solves in the open; ``timed_pool()`` the others, which lesson 08's rounds and ``course drill``
  serve (each drill in one of its ``forms``: ``variant(k)``).
"""

from __future__ import annotations

import dataclasses
import importlib

from course_utils.core.registry import Registry
from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, run_code
from course_utils.drills.record import KEY as PROGRESS_KEY
from course_utils.drills.record import answers, record_answer

# (module, category) in lesson order; a module may hold one category only.
MODULES = (
    ("gradients", "gradients"),
    ("optim_setup", "gradients"),
    ("token_accumulation", "gradients"),
    ("losses", "losses"),
    ("lm_losses", "losses"),
    ("modes", "modes"),
    ("data", "data"),
    ("loaders", "data"),
    ("numerics", "numerics"),
    ("precision", "numerics"),
    ("low_precision", "numerics"),
    ("schedules", "numerics"),
    ("devices", "devices"),
    ("placement", "devices"),
    ("memory", "memory"),
    ("attention", "attention"),
    ("attention_shapes", "attention"),
    ("performance", "performance"),
    ("distributed", "distributed"),
    ("sampler", "distributed"),
    ("seed_snippets", "seed advice"),
)
CATEGORIES = tuple(dict.fromkeys(category for _, category in MODULES))

# Lesson 07 works through one drill per category, in the open; the timed pool is the rest, so a
# timed round asks about bugs the learner has not seen solved.
TAUGHT = {
    "gradients": "gradients.missing_zero_grad",
    "losses": "losses.double_softmax",
    "modes": "modes.dropout_at_eval",
    "data": "data.no_shuffle",
    "numerics": "numerics.lr_too_high",
    "devices": "devices.device_mismatch",
    "memory": "memory.training_vs_inference",
    "attention": "attention.mask_after_softmax",
    "performance": "performance.data_loading_bottleneck",
    "distributed": "distributed.rank_skips_batch",
    "seed advice": "seed.retry_yields_twice",
}

# Drills lesson 08 works through in the open (its method example and its worked interview prompts),
# so that a timed round never serves a drill a lesson has shown solved.
SHOWN_IN_LESSON_08 = ("losses.softmax_wrong_dim", "gradients.accumulation_step_mod_4",
                      "numerics.log_of_zero", "numerics.fp16_without_grad_scaler")

__all__ = ["CATEGORIES", "PROGRESS_KEY", "SHOWN_IN_LESSON_08", "TAUGHT", "CodeRun", "Drill", "Symptom",
           "Variant",
           "all_drills", "answers", "by_category", "get", "ids", "record_answer", "run_code",
           "shown_solved", "taught", "timed_pool"]


def _load():
    from course_utils.drills.fixit_cases import FIXIT

    for module_name, category in MODULES:
        module = importlib.import_module(f"course_utils.drills.{module_name}")
        for drill in module.DRILLS:
            if drill.category != category or not drill.id.startswith(category.split()[0] + "."):
                raise ValueError(f"drill {drill.id} is not in category {category!r}")
            yield drill.id, dataclasses.replace(drill, **FIXIT.get(drill.id, {}))


REGISTRY: Registry[Drill] = Registry("drill", _load)
get, ids, all_drills = REGISTRY.get, REGISTRY.ids, REGISTRY.items


def by_category() -> dict[str, list[Drill]]:
    """Drills grouped by category, categories in lesson order."""
    out: dict[str, list[Drill]] = {c: [] for c in CATEGORIES}
    for drill in all_drills():
        out[drill.category].append(drill)
    return out


def taught() -> list[Drill]:
    """The drills lesson 07 shows with their answers, one per category, in lesson order."""
    return [get(TAUGHT[c]) for c in CATEGORIES]


def shown_solved() -> set[str]:
    """The ids of every drill a lesson shows solved: lesson 07's taught ones and lesson 08's."""
    return set(TAUGHT.values()) | set(SHOWN_IN_LESSON_08)


def timed_pool(category: str | None = None) -> list[Drill]:
    """The drills a timed round draws from: every drill no lesson shows solved (of ``category``
    when given). A category with no other drill falls back to its taught one."""
    groups = by_category()
    chosen = [category] if category else list(CATEGORIES)
    shown = shown_solved()
    pool = []
    for name in chosen:
        unseen = [d for d in groups[name] if d.id not in shown]
        pool.extend(unseen or groups[name])
    return pool
