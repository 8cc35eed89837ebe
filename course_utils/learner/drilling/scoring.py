"""Timed drill mode's rules (lesson 08): which drills a round serves, and what an answer is worth.

``pick(seed, category, count)`` draws the drills in an order fixed by the seed; ``Result`` is one
answered drill (1 point in time, ½ late, 0 wrong); ``score_table`` prints a round. Used by the
notebook widget (``drill_mode``), the terminal (``drill_cli``) and the history (``drill_history``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from course_utils.drills import CATEGORIES, TAUGHT, Drill, timed_pool

SECONDS = 300  # the longest clock a drill gets
LETTERS = "ABCDEFGH"

# A drill's clock fits its length. The estimate: writing the hypothesis (45 s), reading the code
# carefully (6 s a non-blank line) and the question and choices (3 words a second), with half as
# much again for running the buggy code or a second look; rounded up to 15 s, between 1:30 and 5:00.
HYPOTHESIS_S, CODE_LINE_S, WORDS_PER_S, MARGIN = 45, 6, 3, 1.5
MIN_SECONDS = 90


# --- choosing drills ---------------------------------------------------------------------------------


def category_name(name: str | None) -> str | None:
    """The bank's category for ``name`` (case-insensitive; a unique prefix such as "seed" works)."""
    if name is None:
        return None
    wanted = name.strip().lower()
    exact = [c for c in CATEGORIES if c == wanted]
    found = exact or [c for c in CATEGORIES if c.startswith(wanted)]
    if len(found) != 1:
        raise ValueError(f"no drill category {name!r}; choose one of: {', '.join(CATEGORIES)}")
    return found[0]


def pick(seed: int, category: str | None = None, count: int | None = 5) -> list[Drill]:
    """``count`` drills of the timed pool (all when None or more than there are) in an order
    fixed by ``seed``, each in one of its forms (a drill lesson 07 showed: never as shown there)."""
    pool = timed_pool(category_name(category))
    if count is not None and count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    k = len(pool) if count is None else min(count, len(pool))
    rng = random.Random(f"drill-mode:{seed}")
    return [_form(drill, rng) for drill in rng.sample(pool, k)]


def time_limit(drill: Drill) -> int:
    """Seconds on the clock for ``drill``: the reading estimate above, from its code and question."""
    lines = sum(1 for line in drill.buggy_code.splitlines() if line.strip())
    q = drill.question
    words = len(" ".join((q.prompt, *q.choices)).split())
    estimate = MARGIN * (HYPOTHESIS_S + CODE_LINE_S * lines + words / WORDS_PER_S)
    return int(min(SECONDS, max(MIN_SECONDS, -(-estimate // 15) * 15)))


def _form(drill: Drill, rng: random.Random) -> Drill:
    first = 1 if drill.id in TAUGHT.values() and drill.variants else 0
    return drill.variant(rng.randrange(first, drill.forms))


# --- one answer and its points -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One answered drill: which, the choice (a letter), right or not, the seconds it took."""

    drill_id: str
    category: str
    choice: str
    right: bool
    seconds: float
    late: bool
    limit: float = SECONDS  # the clock this drill had
    fixed: bool | None = None  # fix-it mode: the edit was accepted (None: no fix tried)

    @property
    def points(self) -> float:
        """1 for a right answer in time, ½ for a right answer after the clock ran out, else 0."""
        return (0.5 if self.late else 1.0) if self.right else 0.0


def drills_text(n: int) -> str:
    """'1 drill', '5 drills'."""
    return f"{n} drill{'' if n == 1 else 's'}"


def clock_text(seconds: float) -> str:
    """Seconds as m:ss."""
    whole = max(0, int(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def letter_index(drill: Drill, choice: int | str) -> int:
    """The index of a choice given as a letter ("b") or an index; a ValueError names what is allowed."""
    n = len(drill.question.choices)
    if isinstance(choice, str) and len(choice.strip()) == 1 and choice.strip().upper() in LETTERS[:n]:
        return LETTERS.index(choice.strip().upper())
    if isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < n:
        return choice
    raise ValueError(f"choice must be a letter A-{LETTERS[n - 1]} or an index 0-{n - 1}, got {choice!r}")


def score_table(results: list[Result]) -> str:
    """The round as a text table, with the total and the accuracy per category."""
    if not results:
        return "no drill answered yet"
    width = max(len(r.drill_id) for r in results) + 2
    lines = [f"  #  {'drill':<{width}}{'category':<13}answer  result  time / clock  points"]
    for i, r in enumerate(results, 1):
        verdict = "right" if r.right else "wrong"
        late = " late" if r.late else ""
        fix = {None: "", True: ", fix accepted", False: ", fix not accepted"}[r.fixed]
        lines.append(f"{i:>3}  {r.drill_id:<{width}}{r.category:<13}{r.choice:<8}{verdict:<8}"
                     f"{clock_text(r.seconds):<5}/ {clock_text(r.limit):<6}{r.points:g}{late}{fix}")
    points = sum(r.points for r in results)
    lines.append(f"score: {points:g} of {len(results)} points ({points / len(results):.0%}); "
                 "each drill's clock fits its length; a late right answer counts half")
    per = per_category(results)
    lines.append("per category: " + ", ".join(f"{c} {v['right']}/{v['answered']}" + (
        f" (fixes {v['fixed']}/{v['fix_tried']})" if v["fix_tried"] else "") for c, v in per.items()))
    return "\n".join(lines)


def per_category(results: list[Result]) -> dict[str, dict[str, float]]:
    """{category: {"right", "answered", "seconds", "fix_tried", "fixed"}} over ``results``,
    categories in order of answer (a diagnosis score and a fix score)."""
    out: dict[str, dict[str, float]] = {}
    for r in results:
        entry = out.setdefault(r.category, {"right": 0, "answered": 0, "seconds": 0.0,
                                            "fix_tried": 0, "fixed": 0})
        entry["answered"] += 1
        entry["right"] += int(r.right)
        entry["fix_tried"] += int(r.fixed is not None)
        entry["fixed"] += int(bool(r.fixed))
        entry["seconds"] = round(entry["seconds"] + r.seconds, 1)
    return out

