"""Practice that adapts (lesson 08, ``course drill``): the next round, drawn from the learner's
missed drills and weakest categories, each with the reason it was chosen.

The history of timed rounds ("drill_sessions" in the progress file) holds every answered drill
with its date. From it:

- **due**: a drill answered wrong (diagnosis, or a fix tried and not accepted) comes back one day
  later; each right answer after that doubles its interval (1, 2, 4, 8 days; a wrong one resets
  it to 1). A drill past its date is due; the most overdue comes first.
- **weakest categories**: accuracy per category over every round (diagnosis and fix together);
  the lowest first, drills of it the learner has seen least recently first.
- **new ground**: categories never tried, then the rest of the timed pool in the seed's order.

Within a category, a drill that offers fix-it mode comes before the others: an interview asks to
find the bug *and* fix it, and such a drill scores both.

``plan(count, seed, today)`` returns ``[(drill, reason)]``; ``plan_text()`` says it in words
(``course progress`` prints it as the next round's choice).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from course_utils.drills import Drill, get, timed_pool
from course_utils.drills.fixit import has_fixit
from course_utils.learner.drilling.history import history

FIRST_INTERVAL_DAYS = 1


@dataclass
class Memory:
    """One drill's record over the rounds: last date, whether it was right, its interval."""

    last: dt.date
    right: bool
    interval: int

    def due(self) -> dt.date:
        return self.last + dt.timedelta(days=self.interval)


def _date(text: str) -> dt.date:
    return dt.date.fromisoformat(str(text)[:10])


def memories(hist: dict | None = None) -> dict[str, Memory]:
    """Each drill's spaced-repetition state, replayed from the rounds in order."""
    hist = history() if hist is None else hist
    out: dict[str, Memory] = {}
    for session in hist.get("sessions", []):
        when = _date(session.get("when", "1970-01-01"))
        for r in session.get("drills", []):
            ok = bool(r.get("right")) and r.get("fixed") is not False
            before = out.get(r["drill_id"])
            if not ok:
                interval = FIRST_INTERVAL_DAYS
            elif before is not None and not before.right:
                interval = FIRST_INTERVAL_DAYS * 2
            else:
                interval = (before.interval * 2) if before is not None else 4 * FIRST_INTERVAL_DAYS
            out[r["drill_id"]] = Memory(when, ok, interval)
    return out


def category_scores(hist: dict | None = None) -> dict[str, tuple[int, int]]:
    """{category: (right, answered)} over every round, a tried fix that failed counting as wrong."""
    hist = history() if hist is None else hist
    out: dict[str, list[int]] = {}
    for session in hist.get("sessions", []):
        for r in session.get("drills", []):
            entry = out.setdefault(r["category"], [0, 0])
            entry[0] += int(bool(r.get("right")) and r.get("fixed") is not False)
            entry[1] += 1
    return {c: (right, n) for c, (right, n) in out.items()}


def plan(count: int = 5, seed: int = 0, today: dt.date | None = None,
         hist: dict | None = None) -> list[tuple[Drill, str]]:
    """The next round: ``count`` drills of the timed pool, each with why it was chosen."""
    today = today or dt.date.today()
    hist = history() if hist is None else hist
    pool = {d.id: d for d in timed_pool()}
    mem, scores = memories(hist), category_scores(hist)
    chosen: dict[str, str] = {}
    overdue = sorted((m.due(), i) for i, m in mem.items() if i in pool and not m.right and m.due() <= today)
    overdue += sorted((m.due(), i) for i, m in mem.items() if i in pool and m.right and m.due() <= today)
    for due, i in overdue:
        m = mem[i]
        verdict = "missed" if not m.right else "answered right"
        chosen.setdefault(i, f"{verdict} on {m.last}, due again since {due} (interval {m.interval} "
                             f"day{'s' if m.interval != 1 else ''})")
    rng = random.Random(f"drill-plan:{seed}")
    weakest = sorted((right / n, c) for c, (right, n) in scores.items() if n)
    for ratio, category in weakest:
        if ratio >= 1:
            break
        right, n = scores[category]
        fresh = sorted((d for d in pool.values() if d.category == category and d.id not in chosen),
                       key=lambda d: (mem[d.id].last if d.id in mem else dt.date.min, not has_fixit(d),
                                      rng.random()))
        for drill in fresh[:2]:
            chosen.setdefault(drill.id, f"from your weakest category, {category} ({right}/{n} right)")
    untried = [d for d in pool.values() if d.category not in scores]
    rng.shuffle(untried)
    for drill in untried:  # the categories in the seed's order, in each a drill that can be fixed first
        if not any(pool[i].category == drill.category for i in chosen):
            same = [d for d in untried if d.category == drill.category]
            pick = next((d for d in same if has_fixit(d)), drill)
            chosen.setdefault(pick.id, f"a category you have not tried yet: {drill.category}")
    rest = [i for i in pool if i not in chosen and i not in mem]
    rng.shuffle(rest)
    for i in rest:
        chosen.setdefault(i, "new to you, drawn at random")
    return [(get(i), why) for i, why in list(chosen.items())[:count]]


def article(word: str) -> str:
    """'an' before a vowel sound ("an attention drill"), else 'a'."""
    return "an" if word[:1].lower() in "aeio" else "a"


def plan_text(count: int = 5, today: dt.date | None = None) -> str:
    """The next round's choice in words, one drill a line (ids stay hidden: they name the bug)."""
    choice = plan(count, today=today)
    if not history().get("sessions"):
        return "next round: no rounds recorded yet, so a round across all categories"
    lines = ["next round (course drill, or lesson 08's widget), and why:"]
    lines += [f"  {n}. {article(d.category)} {d.category} drill{' (fix-it)' if has_fixit(d) else ''}: "
              f"{why}" for n, (d, why) in enumerate(choice, 1)]
    return "\n".join(lines)
