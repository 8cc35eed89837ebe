"""Timed drill rounds kept in the progress file (lesson 08), and read back as text or a figure.

Finished rounds live under their own key, "drill_sessions"::

    "drill_sessions": {"best": 0.8, "categories": {"losses": {"right": 3, "answered": 4, "seconds": 170.2}},
                       "sessions": [{"when": "...", "source": "notebook", "seed": 8, "score": 0.8, ...}]}

``record_session()`` adds a round (other progress keys are kept); ``history()``,
``history_text()`` and ``plot_history()`` read it back.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from course_utils.core import progress
from course_utils.learner.drilling.scoring import Result, per_category

KEY = "drill_sessions"
MAX_SESSIONS = 200  # sessions kept in the history (the oldest are dropped)


def _empty_history() -> dict:
    return {"best": 0.0, "categories": {}, "sessions": []}


def history() -> dict:
    """Every recorded round: best score, accuracy per category, and the sessions in order."""
    data = progress.load().get(KEY)
    return data if isinstance(data, dict) else _empty_history()


def record_session(results: list[Result], seed: int, category: str | None = None,
                   source: str = "notebook") -> dict:
    """Add a finished round to the history (other progress keys are kept); return its entry."""
    if not results:
        raise ValueError("a round with no answered drill is not recorded")
    points = sum(r.points for r in results)
    mean_clock = round(sum(r.limit for r in results) / len(results))
    entry = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "source": source, "seed": seed,
             "category": category, "seconds_per_drill": mean_clock, "count": len(results),
             "right": sum(r.right for r in results), "points": points,
             "score": round(points / len(results), 4), "drills": [asdict(r) for r in results]}
    with progress.update() as data:
        hist = data.get(KEY)
        if not isinstance(hist, dict):
            hist = data[KEY] = _empty_history()
        hist.setdefault("sessions", []).append(entry)
        hist["sessions"] = hist["sessions"][-MAX_SESSIONS:]
        hist["best"] = round(max(hist.get("best", 0.0), entry["score"]), 4)
        totals = hist.setdefault("categories", {})
        for name, counts in per_category(results).items():
            total = totals.setdefault(name, {"right": 0, "answered": 0})
            total["right"] += counts["right"]
            total["answered"] += counts["answered"]
            total["seconds"] = round(total.get("seconds", 0.0) + counts["seconds"], 1)
            for key in ("fix_tried", "fixed"):
                total[key] = total.get(key, 0) + counts[key]
    return entry


def history_text(hist: dict | None = None) -> str:
    """The history in a few lines: rounds, last and best score, accuracy per category."""
    hist = history() if hist is None else hist
    sessions = hist.get("sessions", [])
    if not sessions:
        return ("no timed drill rounds recorded yet: finish a round in the widget, or run "
                "course drill in a terminal")
    last = sessions[-1]
    lines = [f"{len(sessions)} round(s); last {last['score']:.0%} ({last['source']}), "
             f"best {hist.get('best', 0.0):.0%}"]
    cats = hist.get("categories", {})
    if cats:
        lines.append("per category (diagnoses right, mean time per drill, fixes accepted): " + ", ".join(
            f"{c} {v['right']}/{v['answered']}{mean_time(v)}{fix_text(v)}" for c, v in sorted(cats.items())))
    return "\n".join(lines)


def mean_time(totals: dict) -> str:
    """' in 42 s' (mean seconds per answered drill), or '' for a history recorded without times."""
    if "seconds" not in totals or not totals.get("answered"):
        return ""
    return f" in {totals['seconds'] / totals['answered']:.0f} s"


def fix_text(totals: dict) -> str:
    """', fixes 2/3' (fix-it edits accepted / tried), or '' when no fix was tried."""
    tried = totals.get("fix_tried", 0)
    return f", fixes {totals.get('fixed', 0)}/{tried}" if tried else ""


def plot_history(hist: dict | None = None):
    """A small figure: each round's score and the best so far; accuracy per category beside it."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    hist = history() if hist is None else hist
    sessions = hist.get("sessions", [])
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.5, 3.2), dpi=100,
                                      gridspec_kw={"width_ratios": (3, 2)})
    scores = [100 * s["score"] for s in sessions]
    rounds = range(1, len(scores) + 1)
    if scores:
        best = [max(scores[:i]) for i in rounds]
        left.plot(rounds, scores, "o-", label="round")
        left.plot(rounds, best, "--", color="gray", label="best so far")
        left.legend(fontsize=9, loc="lower right")
        # whole rounds only: one round must not get an axis from 0.96 to 1.04
        left.set_xlim(0.5, len(scores) + 0.5)
        left.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    else:
        left.text(0.5, 0.5, "no rounds yet", ha="center", va="center", transform=left.transAxes)
    left.set(ylim=(-5, 105), xlabel="round", ylabel="score (%)", title="timed drills")
    cats = sorted(hist.get("categories", {}).items())
    if cats:
        bars = right.barh([c for c, _ in cats], [100 * v["right"] / max(v["answered"], 1) for _, v in cats])
        right.bar_label(bars, labels=[mean_time(v).strip().removeprefix("in ") for _, v in cats],
                        fontsize=9, padding=2)
    right.set(xlim=(0, 115), xlabel="right (%), mean time per drill", title="per category")
    right.tick_params(labelsize=9)
    left.tick_params(labelsize=9)
    fig.tight_layout()
    return fig
