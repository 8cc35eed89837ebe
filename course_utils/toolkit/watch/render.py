"""``course watch``'s report: a console table, a JSON document and a self-contained HTML page."""

from __future__ import annotations

import json
import textwrap
from html import escape

ORDER = {"bug": 0, "perf": 1, "info": 2}


def _summary(watcher) -> str:
    alarms = watcher.log.alarms()
    notes = len(watcher.findings) - len(alarms)
    return (
        f"course watch: {watcher.step} steps, {watcher.backwards} backward passes, "
        f"{watcher.deep_steps} watched op by op; {len(alarms)} problem{'s' * (len(alarms) != 1)}"
        + (f", {notes} note{'s' * (notes != 1)}" if notes else "")
    )


def _sorted(findings):
    return sorted(findings, key=lambda f: (ORDER.get(f.severity, 3), f.step))


def console(watcher, width: int = 100) -> str:
    """The report at exit: one row per finding, worst first (severity, kind, where, step), then what
    happened and the fix, wrapped under it."""
    findings = _sorted(watcher.findings)
    head = _summary(watcher)
    if not findings:
        return head + " (nothing found)"
    rows = [(f.severity, f.kind, str(f.where) if f.where.line else "-", str(f.step)) for f in findings]
    widths = [max(len(r[i]) for r in [("severity", "kind", "where", "step"), *rows]) for i in range(4)]
    lines = [head, "  ".join(c.ljust(w) for c, w in zip(("severity", "kind", "where", "step"), widths,
                                                         strict=True)).rstrip()]
    for f, row in zip(findings, rows, strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if f.where.code:
            lines.append(f"    | {f.where.code}")
        lines += textwrap.wrap(f.what, width, initial_indent="    ", subsequent_indent="    ")
        if f.fix:
            lines += textwrap.wrap(f"fix: {f.fix}", width, initial_indent="    ", subsequent_indent=" " * 9)
    return "\n".join(lines)


def as_json(watcher, **meta) -> str:
    """Every finding with its what, where, why and fix, and the run's numbers."""
    doc = {
        "summary": _summary(watcher),
        "steps": watcher.step,
        "backward_passes": watcher.backwards,
        "deep_steps": watcher.deep_steps,
        **meta,
        "findings": [f.as_dict() for f in _sorted(watcher.findings)],
    }
    return json.dumps(doc, indent=2, default=str)


def as_html(watcher, title: str = "course watch") -> str:
    """A page to share: the summary and one row per finding (where, what, why, fix)."""
    colors = {"bug": "#fdd", "perf": "#ffe9c4", "info": "#eef"}
    rows = "".join(
        f"<tr style='background:{colors.get(f.severity, '#fff')}'><td>{escape(f.severity)}</td>"
        f"<td>{escape(f.kind)}</td><td><code>{escape(str(f.where))}</code><br>"
        f"<code>{escape(f.where.code)}</code></td><td>{f.step}</td><td>{escape(f.what)}</td>"
        f"<td>{escape(f.why)}</td><td>{escape(f.fix)}</td></tr>"
        for f in _sorted(watcher.findings)
    )
    head = "".join(f"<th>{h}</th>" for h in ("severity", "kind", "where", "step", "what", "why", "fix"))
    return (
        f"<!doctype html><meta charset='utf-8'><title>{escape(title)}</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:4px;"
        "vertical-align:top;text-align:left}table{border-collapse:collapse}</style>"
        f"<h1>{escape(title)}</h1><p>{escape(_summary(watcher))}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
