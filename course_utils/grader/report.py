"""The class report: which exercises the class passes, and how it fails the others.

Printed as a text table by ``course grade`` and written as an HTML page (a bar chart of pass
rates embedded as a PNG, and the same table) next to the gradebook. Instructors, workshop use.
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter
from dataclasses import dataclass

from course_utils.grader.gradebook import Row
from course_utils.grader.text import clean
from course_utils.toolkit.plotstyle import DPI, SMALL


@dataclass(frozen=True)
class ExerciseStats:
    """One exercise across the class."""

    exercise_id: str
    passed: int
    graded: int
    counts: dict[str, int]
    common_failure: str  # the most frequent reason among non-passing submissions, with its count

    @property
    def rate(self) -> float:
        """Fraction of graded submissions that pass (0 when none was graded)."""
        return self.passed / self.graded if self.graded else 0.0


def summarise(rows: list[Row], ids: list[str]) -> list[ExerciseStats]:
    """Pass rate, status counts and most common failure of every exercise."""
    stats = []
    for ex_id in ids:
        verdicts = [r.verdicts[ex_id] for r in rows if ex_id in r.verdicts]
        counts = Counter(v.status for v in verdicts)
        reasons = Counter(v.reason or v.status for v in verdicts if v.status != "pass")
        common = ""
        if reasons:
            # most frequent first, ties broken alphabetically so the report is stable
            reason, n = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            common = f"{reason} ({n})"
        stats.append(ExerciseStats(ex_id, counts["pass"], len(verdicts), dict(counts), common))
    return stats


def text_table(stats: list[ExerciseStats]) -> str:
    """The report as aligned text."""
    width = max([len(s.exercise_id) for s in stats] + [8])
    lines = [f"{'exercise':<{width}}  {'pass':>9}  {'rate':>5}  most common failure"]
    for s in stats:
        share = f"{s.passed}/{s.graded}"
        lines.append(f"{s.exercise_id:<{width}}  {share:>9}  {s.rate:>5.0%}  {s.common_failure or '-'}")
    return "\n".join(lines)


def chart_png(stats: list[ExerciseStats]) -> bytes:
    """A horizontal bar chart of pass rates, as PNG bytes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 0.5 + 0.4 * max(1, len(stats))), dpi=DPI)
    ax = fig.subplots()
    names = [s.exercise_id for s in stats][::-1]
    rates = [100 * s.rate for s in stats][::-1]
    ax.barh(names, rates, color="#4c72b0")
    ax.set_xlim(0, 100)
    ax.set_xlabel("submissions passing (%)")
    for y, rate in enumerate(rates):
        ax.text(min(rate + 1, 90), y, f"{rate:.0f}%", va="center", fontsize=SMALL)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def html_page(stats: list[ExerciseStats], rows: list[Row], meta: dict, chart: bool = True) -> str:
    """A self-contained page: run facts, the chart, the per-exercise table, the gradebook.

    ``chart=False`` (while the run is in progress) leaves the chart out."""
    def esc(text) -> str:
        return html.escape(clean(text))

    img = ""
    if chart:
        png = base64.b64encode(chart_png(stats)).decode("ascii")
        img = f'<img alt="pass rate per exercise" src="data:image/png;base64,{png}">'
    facts = ", ".join(f"{esc(k)}: {esc(v)}" for k, v in meta.items())
    status = str(meta.get("status", "complete"))
    banner = "" if status == "complete" else (
        f"<p><strong>Run {esc(status)}: this is not a complete gradebook.</strong></p>")
    ex_rows = "".join(
        f"<tr><td>{esc(s.exercise_id)}</td><td>{s.passed}/{s.graded}</td><td>{s.rate:.0%}</td>"
        f"<td>{esc(', '.join(f'{k} {n}' for k, n in sorted(s.counts.items())))}</td>"
        f"<td>{esc(s.common_failure or '-')}</td></tr>" for s in stats)
    ids = [s.exercise_id for s in stats]
    book = "".join(
        f"<tr><td>{esc(r.name)}</td>" + "".join(
            f"<td class='{esc(r.verdicts[i].status) if i in r.verdicts else ''}'>"
            f"{esc(r.verdicts[i].status) if i in r.verdicts else ''}</td>" for i in ids)
        + f"<td>{r.total}/{r.possible}</td><td>{esc(r.note)}</td></tr>" for r in rows)
    heads = "".join(f"<th>{esc(i)}</th>" for i in ids)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Class report</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left}} .pass{{background:#dff0d8}}
.fail,.error,.timeout{{background:#f2dede}} .missing,.malformed{{background:#fcf8e3}}</style></head>
<body><h1>Class report</h1>{banner}<p>{facts}</p>
{img}
<h2>Per exercise</h2><table><tr><th>exercise</th><th>pass</th><th>rate</th><th>statuses</th>
<th>most common failure</th></tr>{ex_rows}</table>
<h2>Gradebook</h2><table><tr><th>submission</th>{heads}<th>total</th><th>note</th></tr>{book}</table>
</body></html>
"""
