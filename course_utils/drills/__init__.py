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
"""

from __future__ import annotations

import importlib

from course_utils.core.registry import Registry
from course_utils.drills.core import CodeRun, Drill, Symptom, run_code
from course_utils.drills.record import KEY as PROGRESS_KEY
from course_utils.drills.record import answers, record_answer

# (module, category) in lesson order; a module may hold one category only.
MODULES = (
    ("gradients", "gradients"),
    ("losses", "losses"),
    ("modes", "modes"),
    ("data", "data"),
    ("numerics", "numerics"),
    ("precision", "numerics"),
    ("devices", "devices"),
    ("memory", "memory"),
    ("attention", "attention"),
    ("performance", "performance"),
    ("distributed", "distributed"),
    ("seed_snippets", "seed advice"),
)
CATEGORIES = tuple(dict.fromkeys(category for _, category in MODULES))

__all__ = ["CATEGORIES", "PROGRESS_KEY", "CodeRun", "Drill", "Symptom", "all_drills", "answers",
           "by_category", "get", "ids", "record_answer", "run_code"]


def _load():
    for module_name, category in MODULES:
        module = importlib.import_module(f"course_utils.drills.{module_name}")
        for drill in module.DRILLS:
            if drill.category != category or not drill.id.startswith(category.split()[0] + "."):
                raise ValueError(f"drill {drill.id} is not in category {category!r}")
            yield drill.id, drill


REGISTRY: Registry[Drill] = Registry("drill", _load)
get, ids, all_drills = REGISTRY.get, REGISTRY.ids, REGISTRY.items


def by_category() -> dict[str, list[Drill]]:
    """Drills grouped by category, categories in lesson order."""
    out: dict[str, list[Drill]] = {c: [] for c in CATEGORIES}
    for drill in all_drills():
        out[drill.category].append(drill)
    return out
