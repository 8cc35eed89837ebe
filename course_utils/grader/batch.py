"""Grade a whole class: ``grade(paths, options)`` behind ``course grade`` (instructors).

Cases are drawn once per lesson from the run's seed and the references run here, in the grading
process; each submission then runs in its own sandboxed process (``sandbox``), ``--jobs`` at a
time, and its return values are judged here as they come back. Every submission gets a row,
whatever it did.
"""

from __future__ import annotations

import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError
from course_utils.core.files import write_atomically
from course_utils.grader import judging
from course_utils.grader.gradebook import Row
from course_utils.grader.judging import Prepared, Verdict
from course_utils.grader.sandbox import Limits, RunStatus, Sandbox, pickle_cases
from course_utils.grader.submissions import Submission, discover, load


@dataclass(frozen=True)
class Options:
    """How to grade (the ``course grade`` options)."""

    limits: Limits = field(default_factory=Limits)
    jobs: int = 1
    seed: int | None = None
    lesson: str | None = None
    progress: bool = True
    reap_orphans: bool = True  # adopt orphans during the run (see sandbox); off again after it


@dataclass
class Graded:
    """A graded class: the rows (sorted by submission), the exercise columns and the run facts."""

    rows: list[Row]
    ids: list[str]
    seed: int
    elapsed_s: float
    leftovers_killed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # exercise id -> why batch cannot grade it

    def meta(self, options: Options) -> dict:
        """Run facts for the JSON and the HTML page."""
        lim = options.limits
        meta = {"tool": "course grade", "seed": self.seed, "submissions_graded": len(self.rows),
                "timeout_s": lim.timeout, "step_timeout_s": lim.step_timeout,
                "memory_mb": lim.memory_mb, "jobs": options.jobs, "elapsed_s": round(self.elapsed_s, 2)}
        if self.skipped:
            meta["not_graded"] = self.skipped
        return meta


def _whole_row(sub: Submission, preps: list[Prepared], status: str, detail: str) -> Row:
    reason = {"malformed": "malformed notebook", "missing": "missing"}.get(status, status)
    verdicts = {p.exercise.id: Verdict(status, detail, reason=reason) for p in preps}
    return Row(sub.name, sub.lesson, verdicts, note=sub.note or "")


def _judge_row(sub: Submission, preps: list[Prepared], status: RunStatus, step: float) -> Row:
    records = {r.get("exercise"): r for r in status.records if "exercise" in r}
    verdicts = {p.exercise.id: judging.verdict(p, records.get(p.exercise.id), status, step)
                for p in preps}
    cells = next((r.get("problems", []) for r in status.records if r.get("event") == "cells"), [])
    notes = [status.problem] if status.problem else []
    if status.supervisor_died:
        notes.append("the supervisor was killed")
    elif status.timed_out:
        notes.append("stopped at the time limit")
    elif status.returncode is not None and not any(r.get("event") == "done" for r in status.records):
        notes.append(f"process ended early: {status.exit_text()}")
    run = asdict(status)
    run.pop("records")
    run["cell_problems"] = cells
    return Row(sub.name, sub.lesson, verdicts, note="; ".join(notes), run=run)


def _exercise_plan(preps: list[Prepared]) -> list[dict]:
    return [{"id": p.exercise.id, "name": p.answer_name} for p in preps]


def grade(paths: list[str | Path], options: Options = Options()) -> Graded:
    """Grade every notebook under ``paths``; one row per notebook, however it behaves."""
    if os.name != "posix":
        raise CourseError("course grade needs Linux or macOS (process groups and resource limits)")
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    subs = [load(path, name, options.lesson) for path, name in discover(paths)]
    lessons = sorted({s.lesson for s in subs if s.lesson})
    preps, skipped = {}, {}
    for lesson in lessons:
        preps[lesson], left_out = judging.prepare(lesson, seed)
        skipped.update(left_out)
    blobs = {lesson: pickle_cases({p.exercise.id: [(c.args, c.kwargs) for c in p.cases]
                                   for p in preps[lesson]}) for lesson in lessons}
    sandbox = Sandbox(options.limits, reap_orphans=options.reap_orphans)
    try:
        rows = _grade_all(subs, preps, blobs, sandbox, options)
    finally:
        killed = sandbox.close()
    ids = [p.exercise.id for lesson in lessons for p in preps[lesson]]
    rows.sort(key=lambda r: r.name)
    return Graded(rows, ids, seed, time.monotonic() - started, killed, skipped)


def _grade_all(subs, preps, blobs, sandbox: Sandbox, options: Options) -> list[Row]:
    rows: list[Row] = []
    to_run = []
    for sub in subs:
        lesson_preps = preps.get(sub.lesson, [])
        if sub.malformed:
            rows.append(_whole_row(sub, lesson_preps, "malformed", sub.malformed))
        elif not lesson_preps:
            if sub.lesson and not sub.note:
                sub.note = f"lesson {sub.lesson} has no exercises to grade here"
            rows.append(Row(sub.name, sub.lesson, note=sub.note or ""))
        elif not sub.cells:
            rows.append(_whole_row(sub, lesson_preps, "missing", "the notebook has no code"))
        else:
            to_run.append(sub)
    return rows + _run_all(to_run, preps, blobs, sandbox, options)


def _run_all(subs, preps, blobs, sandbox: Sandbox, options: Options) -> list[Row]:
    from tqdm.auto import tqdm

    rows = []
    step = options.limits.step_timeout
    bar = tqdm(total=len(subs), desc="grading", unit="nb", disable=not options.progress or None)
    pool = ThreadPoolExecutor(max_workers=max(1, options.jobs))
    try:
        futures = {pool.submit(sandbox.run, s.cells, _exercise_plan(preps[s.lesson]),
                               blobs[s.lesson]): s for s in subs}
        for future in as_completed(futures):
            sub = futures[future]
            try:
                status = future.result()
            except Exception as err:  # noqa: BLE001 - a grader fault becomes this row's error
                status = RunStatus(problem=f"grader error: {type(err).__name__}: {err}")
            rows.append(_judge_row(sub, preps[sub.lesson], status, step))
            bar.update(1)
    except BaseException:
        sandbox.interrupt()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
    return rows


def publish(graded: Graded, options: Options, out: Path, json_path: Path | None = None) -> str:
    """Write the gradebook (CSV), the HTML report beside it and the JSON; return the text report."""
    from course_utils.grader import gradebook, report

    meta = graded.meta(options)
    stats = report.summarise(graded.rows, graded.ids)
    write_atomically(out, gradebook.csv_text(graded.rows, graded.ids))
    page = out.with_suffix(".html")
    write_atomically(page, report.html_page(stats, graded.rows, meta))
    written = [str(out), str(page)]
    if json_path is not None:
        write_atomically(json_path, gradebook.json_text(graded.rows, graded.ids, meta))
        written.append(str(json_path))
    passed = sum(r.total for r in graded.rows)
    possible = sum(r.possible for r in graded.rows)
    lines = [report.text_table(stats) if stats else "no exercises graded", ""]
    lines += [f"not graded here (check them in the notebook): {ex_id}: {why}"
              for ex_id, why in graded.skipped.items()]
    lines += [f"{len(graded.rows)} submissions, {passed}/{possible} exercises passed, "
              f"{graded.elapsed_s:.1f} s (seed {graded.seed}; --seed {graded.seed} reproduces the cases)",
              "wrote " + ", ".join(written)]
    return "\n".join(lines)
