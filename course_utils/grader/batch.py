"""Grade a whole class: ``grade(paths, options)`` behind ``course grade`` (instructors).

Cases are drawn once per lesson from the run's seed and the references run here, in the grading
process; each submission then runs in its own sandboxed process (``sandbox``), ``--jobs`` at a
time, and its return values are judged here as they come back. Every submission path gets a row,
whatever it did: each failure of one submission (a file that cannot be read, a process that
crashes, a result the grader cannot judge, a fault of the grader itself on that submission) is
that submission's error, never the run's. ``progress`` is told the whole table as rows finish,
so a gradebook on disk is never older than the last finished row; Ctrl-C stops the run, keeps
the rows already graded and marks the others "not graded".
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_utils.core.errors import CourseError
from course_utils.grader import judging
from course_utils.grader.gradebook import Row
from course_utils.grader.judging import Prepared, Verdict
from course_utils.grader.sandbox import Limits, RunStatus, Sandbox, pickle_cases
from course_utils.grader.submissions import Submission, find, flag_copies, load
from course_utils.grader.text import clean, name_text

PENDING = "not graded yet: the run is in progress (or the grader was stopped before this row)"
INTERRUPTED = "not graded: the run was interrupted (Ctrl-C) before this submission finished"
STOP_WAIT_S = 10.0  # after Ctrl-C: how long the submissions still running get to be cleaned up
TICK_S = 1.0  # how often the run wakes to write progress held back by its throttle


@dataclass(frozen=True)
class Options:
    """How to grade (the ``course grade`` options)."""

    limits: Limits = field(default_factory=Limits)
    jobs: int = 1
    seed: int | None = None
    lesson: str | None = None
    progress: bool = True
    reap_orphans: bool = True  # adopt orphans during the run (see sandbox); off again after it
    isolation: str = "auto"  # "auto", "namespaces" or "guards" (see isolation.py)
    flag_copies: bool = True  # a submission whose code is exactly a course notebook's is not graded
    private: tuple[str, ...] = ()  # files written while submissions run (the gradebook): out of their reach


@dataclass
class Graded:
    """A graded class: the rows (sorted by submission), the exercise columns and the run facts."""

    rows: list[Row]
    ids: list[str]
    seed: int
    elapsed_s: float
    leftovers_killed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # exercise id -> why batch cannot grade it
    status: str = "complete"  # "in progress", "complete" or "interrupted"
    isolation: str = ""

    @property
    def graded(self) -> int:
        """Rows the run finished."""
        return sum(r.graded for r in self.rows)

    def meta(self, options: Options) -> dict:
        """Run facts for the JSON and the HTML page."""
        lim = options.limits
        meta = {"tool": "course grade", "status": self.status, "seed": self.seed,
                "notebooks": len(self.rows), "submissions_graded": self.graded,
                "timeout_s": lim.timeout, "step_timeout_s": lim.step_timeout,
                "memory_mb": lim.memory_mb, "jobs": options.jobs, "elapsed_s": round(self.elapsed_s, 2)}
        if self.isolation:
            meta["isolation"] = self.isolation
        if self.skipped:
            meta["not_graded"] = self.skipped
        return meta


def _notes(sub: Submission, *more: str | None) -> str:
    return clean("; ".join(n for n in (sub.link, sub.note, *more) if n), 2000)


def _whole_row(sub: Submission, preps: list[Prepared], status: str, detail: str, reason: str = "") -> Row:
    reason = reason or {"malformed": "malformed notebook", "missing": "missing"}.get(status, status)
    verdicts = {p.exercise.id: Verdict(status, clean(detail, 2000), reason=reason) for p in preps}
    shown = detail if status == "malformed" or not verdicts else None
    return Row(sub.name, sub.lesson, verdicts, note=_notes(sub, shown))


def _cell_problems(records: list[dict]) -> list[dict]:
    """The runner's cell problems, as plain data of bounded size (a forged record may hold anything)."""
    found = next((r.get("problems") for r in records if r.get("event") == "cells"), None)
    problems = []
    for item in found[:50] if isinstance(found, list) else []:
        if not isinstance(item, dict) or type(item.get("cell")) is not int:
            continue
        err = item.get("error") if isinstance(item.get("error"), dict) else {}
        problems.append({"cell": item["cell"], "timeout": item.get("timeout") is True,
                         "error": {"type": clean(err.get("type", ""), 80),
                                   "message": clean(err.get("message", ""), 500)} if err else None})
    return problems


def _judge_row(sub: Submission, preps: list[Prepared], status: RunStatus, step: float) -> Row:
    records = {r["exercise"]: r for r in status.records if isinstance(r.get("exercise"), str)}
    verdicts = {p.exercise.id: judging.verdict(p, records.get(p.exercise.id), status, step)
                for p in preps}
    notes = [clean(status.problem, 500)] if status.problem else []
    if status.supervisor_died:
        notes.append("the supervisor was killed")
    elif status.timed_out:
        notes.append("stopped at the time limit")
    elif status.returncode is not None and not any(r.get("event") == "done" for r in status.records):
        notes.append(f"process ended early: {status.exit_text()}")
    run = asdict(status)
    run.pop("records")
    run["cell_problems"] = _cell_problems(status.records)
    return Row(sub.name, sub.lesson, verdicts, note=_notes(sub, *notes), run=run)


def _safe_row(sub: Submission, preps: list[Prepared], status: RunStatus, step: float) -> Row:
    """``_judge_row``, and whatever goes wrong judging it is this submission's error."""
    try:
        return _judge_row(sub, preps, status, step)
    except Exception as err:  # noqa: BLE001 - one submission's trouble never ends the run
        return _whole_row(sub, preps, "error", f"the grader failed on this submission "
                          f"({type(err).__name__}: {clean(err, 300)})", reason="grader error")


def _exercise_plan(preps: list[Prepared]) -> list[dict]:
    return [{"id": p.exercise.id, "name": p.answer_name} for p in preps]


def _prepare(lessons: list[str], seed: int) -> tuple[dict, dict, dict, dict]:
    """Cases, references and pickled inputs per lesson; a lesson that cannot be prepared is noted."""
    preps, skipped, blobs, broken = {}, {}, {}, {}
    for lesson in lessons:
        try:
            preps[lesson], left_out = judging.prepare(lesson, seed)
            blobs[lesson] = pickle_cases({p.exercise.id: [(c.args, c.kwargs) for c in p.cases]
                                          for p in preps[lesson]})
            skipped.update(left_out)
        except Exception as err:  # noqa: BLE001 - the course's own fault: say so on each row
            preps[lesson] = []
            broken[lesson] = (f"lesson {lesson} could not be prepared "
                              f"({type(err).__name__}: {clean(err, 200)})")
    return preps, skipped, blobs, broken


def grade(paths: list[str | Path], options: Options = Options(),
          progress: Callable[[Graded], None] | None = None) -> Graded:
    """Grade every notebook under ``paths``; one row per notebook path, however it behaves.

    ``progress`` gets the table (unfinished rows marked) before the first submission runs and after
    each row. Ctrl-C ends the run with ``status`` "interrupted" instead of raising."""
    if os.name != "posix":
        raise CourseError("course grade needs Linux or macOS (process groups and resource limits)")
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbits(32)
    unsearched: list = []
    found = find(paths, unsearched)
    subs = [load(f.path, f.name, options.lesson, f.root) for f in found]
    roots = sorted({f.root for f in found})
    graded = Graded([Row(s.name, s.lesson, note=PENDING, graded=False) for s in subs], [], seed, 0.0,
                    status="in progress")
    graded.rows += _unsearched_rows(unsearched, found)
    try:
        if options.flag_copies:
            flag_copies(subs, roots)
        lessons = sorted({s.lesson for s in subs if s.lesson})
        preps, graded.skipped, blobs, broken = _prepare(lessons, seed)
        graded.ids = [p.exercise.id for lesson in lessons for p in preps[lesson]]
        if subs:
            _report(progress, graded)
        _grade_all(subs, preps, blobs, broken, graded, options, roots, progress)
    except KeyboardInterrupt:
        graded.status = "interrupted"
    for row in graded.rows:
        if not row.graded:
            row.note = INTERRUPTED
    if graded.status == "in progress":
        graded.status = "complete"
    graded.rows.sort(key=lambda r: r.name)
    graded.elapsed_s = time.monotonic() - started
    return graded


UNSEARCHED = "folder not searched: {why}; a notebook in it has no row of its own"


def _unsearched_rows(unsearched: list, found: list) -> list[Row]:
    """One row per folder the walk did not (fully) search (``walk``): named like the notebooks'
    rows, ending in ``/``, with the reason in its note."""
    base = os.path.commonpath([str(f.path.parent) for f in found]) if found else None
    rows = []
    for part in unsearched:
        where = os.path.relpath(part.path, base) if base else str(part.path)
        rows.append(Row(name_text(Path(where).as_posix()) + "/", None,
                        note=clean(UNSEARCHED.format(why=part.why), 500)))
    return rows


def _report(progress, graded: Graded) -> None:
    if progress is not None:
        try:
            progress(graded)
        except Exception:  # noqa: BLE001, S110 - a failed progress write must not stop grading
            pass


def _grade_all(subs, preps, blobs, broken, graded: Graded, options: Options, roots, progress) -> None:
    def done(index: int, row: Row) -> None:
        graded.rows[index] = row
        _report(progress, graded)

    to_run = []
    for index, sub in enumerate(subs):
        lesson_preps = preps.get(sub.lesson, [])
        if sub.malformed:
            done(index, _whole_row(sub, lesson_preps, "malformed", sub.malformed))
        elif sub.lesson in broken:
            done(index, Row(sub.name, sub.lesson, note=_notes(sub, broken[sub.lesson])))
        elif not lesson_preps:
            no_exercises = f"lesson {sub.lesson} has no exercises to grade here" if sub.lesson else None
            done(index, Row(sub.name, sub.lesson, note=_notes(sub, no_exercises)))
        elif sub.copy_of:
            done(index, _whole_row(sub, lesson_preps, "error", f"its code is exactly the course's "
                                   f"{sub.copy_of}: not graded as the learner's work",
                                   reason="copy of a course notebook"))
        elif not sub.cells:
            done(index, _whole_row(sub, lesson_preps, "missing", "the notebook has no code"))
        else:
            to_run.append(index)
    if to_run:
        sandbox = Sandbox(options.limits, reap_orphans=options.reap_orphans, isolate=options.isolation,
                          class_roots=[str(r) for r in roots], private=options.private)
        graded.isolation = sandbox.isolation.describe()
        try:
            _run_all([(i, subs[i]) for i in to_run], preps, blobs, sandbox, options, done,
                     lambda: _report(progress, graded))
        finally:
            graded.leftovers_killed = sandbox.close()


def _run_all(subs, preps, blobs, sandbox: Sandbox, options: Options, done, tick) -> None:
    from tqdm.auto import tqdm

    step = options.limits.step_timeout
    bar = tqdm(total=len(subs), desc="grading", unit="nb", disable=not options.progress or None)
    pool = ThreadPoolExecutor(max_workers=max(1, options.jobs))
    futures = {}
    try:
        futures = {pool.submit(sandbox.run, s.cells, _exercise_plan(preps[s.lesson]),
                               blobs[s.lesson]): (i, s) for i, s in subs}
        pending = set(futures)
        while pending:  # wake at least once a second, so progress deferred by its throttle is written
            finished, pending = wait_for(pending, timeout=TICK_S, return_when=FIRST_COMPLETED)
            for future in finished:
                index, sub = futures[future]
                try:
                    status = future.result()
                except Exception as err:  # noqa: BLE001 - a grader fault becomes this row's error
                    status = RunStatus(problem=f"grader error: {type(err).__name__}: {clean(err, 300)}")
                done(index, _safe_row(sub, preps[sub.lesson], status, step))
                bar.update(1)
            if not finished:
                tick()
    except BaseException:
        sandbox.interrupt()  # every supervisor stops its submission and cleans up
        pool.shutdown(wait=False, cancel_futures=True)
        try:
            wait_for(futures, timeout=STOP_WAIT_S)
        except BaseException:  # noqa: BLE001, S110 - a second Ctrl-C: the final sweep still runs
            pass
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
