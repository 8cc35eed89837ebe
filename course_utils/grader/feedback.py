"""Feedback for every learner from a graded run: ``course grade ... --feedback DIR``.

One page per learner, as HTML (opens in JupyterLab and in a browser) and as a Markdown twin:
each exercise of each of their notebooks with its verdict (pass / fail / error / timeout /
missing), for a failure the case, the expected and the submitted value, the exercise's first hint
(never the reference), the lesson to reread and a link to their own notebook, and their result
beside the class's pass rate per exercise. ``DIR/feedback.json`` lists the pages by learner for
``course feedback release``. A re-grade writes new, timestamped pages beside the old ones.

Every text a submission controls (values, messages, names) is escaped for the page it lands in:
HTML-escaped in the HTML page, in a code fence longer than any run of backticks it holds in the
Markdown twin. The pages hold no script.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path

from course_utils.core.files import write_atomically
from course_utils.learner.lessons import LESSONS

STATUS_WORDS = {"pass": "passed", "fail": "failed", "error": "raised an error",
                "timeout": "ran out of time", "missing": "not found in your notebook",
                "malformed": "could not be read"}
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def folder_name(learner: str) -> str:
    """A file-system-safe, distinct folder name for a learner's pages."""
    safe = _SAFE.sub("_", learner).strip(".") or "learner"
    digest = hashlib.sha256(learner.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return safe if safe == learner else f"{safe}-{digest}"


def _lesson_title(lesson: str | None) -> str:
    for item in LESSONS:
        if item.number == lesson:
            return f"lesson {item.number}, {item.title}"
    return f"lesson {lesson}" if lesson else "its lesson"


def _first_hint(exercise_id: str) -> str:
    from course_utils import bank

    try:
        hints = bank.get(exercise_id).hints
    except Exception:  # an id the bank no longer has: no hint rather than no page
        return ""
    return re.sub(r"\\([*_`])", r"\1", hints[0]) if hints else ""


def class_rates(doc: Mapping) -> dict[str, float]:
    """Exercise id -> the share of the class's graded notebooks that pass it."""
    passed: dict[str, int] = {}
    seen: dict[str, int] = {}
    for sub in doc.get("submissions", []):
        for ex_id, result in sub.get("results", {}).items():
            seen[ex_id] = seen.get(ex_id, 0) + 1
            passed[ex_id] = passed.get(ex_id, 0) + (result.get("status") == "pass")
    return {ex_id: passed[ex_id] / seen[ex_id] for ex_id in seen}


def items_of(sub: Mapping, rates: Mapping[str, float]) -> list[dict]:
    """The feedback items of one graded notebook, in the run's exercise order."""
    items = []
    for ex_id, result in sub.get("results", {}).items():
        status = str(result.get("status", "error"))
        items.append({
            "exercise": ex_id, "status": status, "says": STATUS_WORDS.get(status, status),
            "case": result.get("case"), "expected": result.get("expected"),
            "got": result.get("got"), "detail": result.get("detail") if status != "pass" else None,
            "hint": _first_hint(ex_id) if status != "pass" else "",
            "class_rate": rates.get(ex_id, 0.0)})
    return items


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _md_text(text: str) -> str:
    """Plain text made inert in Markdown: HTML escaped, every Markdown mark backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|>~])", r"\\\1", html.escape(text, quote=True))


def markdown(learner: str, notebooks: list[dict], seed) -> str:
    """The Markdown twin of a learner's page."""
    lines = [f"# Feedback for {_md_text(learner)}", ""]
    for nb in notebooks:
        lines += [f"## {_md_text(nb['name'])}: {nb['total']} of {nb['out_of']} exercises pass",
                  f"Reread {_md_text(nb['lesson_title'])}. Reproduce these verdicts with "
                  f"`course check {Path(nb['name']).name} --seed {seed}`.", ""]
        for item in nb["items"]:
            lines.append(f"### {_md_text(item['exercise'])}: {item['says']} "
                         f"(class: {item['class_rate']:.0%} pass)")
            for key in ("case", "expected", "got", "detail"):
                if item.get(key):
                    lines += [f"{key}:", "", _fence(str(item[key])), ""]
            if item["hint"]:
                lines += [f"> hint: {_md_text(item['hint'])}", ""]
        lines.append("")
    return "\n".join(lines)


def html_page(learner: str, notebooks: list[dict], seed) -> str:
    """The HTML page of a learner's feedback (escaped throughout, no script)."""
    esc = lambda value: html.escape(str(value), quote=True)  # noqa: E731
    parts = [f"<!doctype html><meta charset='utf-8'><title>Feedback for {esc(learner)}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
             "pre{white-space:pre-wrap;background:#f4f4f4;padding:.4em}"
             ".pass{color:#176317}.fail,.error,.timeout,.missing,.malformed{color:#a11}</style>",
             f"<h1>Feedback for {esc(learner)}</h1>"]
    for nb in notebooks:
        parts.append(f"<h2>{esc(nb['name'])}: {nb['total']} of {nb['out_of']} exercises pass</h2>"
                     f"<p>Reread {esc(nb['lesson_title'])}. Open <a href='../{esc(Path(nb['name']).name)}'>"
                     f"your notebook</a>; <code>course check {esc(Path(nb['name']).name)} --seed "
                     f"{esc(seed)}</code> reproduces these verdicts.</p>")
        for item in nb["items"]:
            parts.append(f"<h3>{esc(item['exercise'])}: <span class='{esc(item['status'])}'>"
                         f"{esc(item['says'])}</span> (class: {item['class_rate']:.0%} pass)</h3>")
            for key in ("case", "expected", "got", "detail"):
                if item.get(key):
                    parts.append(f"<p>{key}:</p><pre>{esc(item[key])}</pre>")
            if item["hint"]:
                parts.append(f"<p><b>hint:</b> {esc(item['hint'])}</p>")
    return "\n".join(parts) + "\n"


def _unused(folder: Path, stem: str) -> str:
    """``stem``, or ``stem-2``, ... : a name no page in ``folder`` has yet (never overwrite)."""
    name, n = stem, 1
    while (folder / f"{name}.html").exists() or (folder / f"{name}.md").exists():
        n += 1
        name = f"{stem}-{n}"
    return name


def write_pages(doc: Mapping, learner_of: Mapping[str, str], out: Path,
                stamp: str | None = None) -> dict[str, list[str]]:
    """Write each learner's pages under ``out/<learner>/``; returns learner -> pages written."""
    rates, seed = class_rates(doc), doc.get("seed")
    by_learner: dict[str, list[dict]] = {}
    for sub in doc.get("submissions", []):
        name = str(sub.get("submission", ""))
        learner = learner_of.get(name) or name.split("/")[0]
        by_learner.setdefault(learner, []).append({
            "name": name, "total": sub.get("total", 0), "out_of": sub.get("out_of", 0),
            "lesson_title": _lesson_title(sub.get("lesson")), "items": items_of(sub, rates)})
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    index_path = out / "feedback.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {"learners": {}}
    written: dict[str, list[str]] = {}
    for learner, notebooks in sorted(by_learner.items()):
        folder = out / folder_name(learner)
        folder.mkdir(parents=True, exist_ok=True)
        stem = _unused(folder, f"feedback-{stamp}")
        write_atomically(folder / f"{stem}.html", html_page(learner, notebooks, seed))
        write_atomically(folder / f"{stem}.md", markdown(learner, notebooks, seed))
        pages = [f"{folder.name}/{stem}.html", f"{folder.name}/{stem}.md"]
        index["learners"].setdefault(learner, []).extend(pages)
        written[learner] = pages
    write_atomically(index_path, json.dumps(index, indent=1, ensure_ascii=False) + "\n")
    return written
