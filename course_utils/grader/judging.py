"""Judge what a submission's process returned, in the grading process (``course grade``).

The cases are drawn here from the run's seed and the references run here; the submission's
process only ever receives the inputs. Each exercise gets one verdict: pass, fail (the first case
whose value the judge rejects), error (an exception where a value was expected, a cell that broke
the definition, a crashed process), timeout, missing (no such function) or malformed (the
notebook could not be read). Cases are judged in order, like ``check()``.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from course_utils.core.exercise import Case, Exercise, Outcome, run
from course_utils.core.judgement import Failure, UnreadableValue, case_problem, first_failure, judge_of
from course_utils.grader import wire
from course_utils.grader.sandbox import RunStatus
from course_utils.grader.text import clean, shown

STATUSES = ("pass", "fail", "error", "timeout", "missing", "malformed")


@dataclass(frozen=True)
class Verdict:
    """One exercise's result for one submission."""

    status: str
    detail: str = ""
    case: str | None = None
    expected: str | None = None
    got: str | None = None
    reason: str = ""  # short, for "most common failure" in the class report

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (empty fields left out)."""
        return {k: v for k, v in vars(self).items() if v not in (None, "")}


@dataclass(frozen=True)
class Prepared:
    """An exercise ready to grade: its cases and the reference's outcome on each."""

    exercise: Exercise
    cases: list[Case]
    expected: list[Outcome]

    @property
    def judge(self):
        return judge_of(self.exercise)

    @property
    def answer_name(self) -> str:
        """The function name learners define: the reference's own name in the bank module."""
        return self.exercise.reference.__name__


def lesson_exercises(lesson: str) -> list[Exercise]:
    """The lesson's exercises, importing only its own part of the bank (another lesson's cannot
    break us)."""
    from course_utils import bank

    return bank.for_lesson(lesson)


def _encoded(outcome: Outcome) -> dict:
    if outcome.error is not None:
        return {"error": wire.encode_error(outcome.error)}
    return {"value": wire.encode(outcome.value)}


def _read_all(fd: int, deadline_s: float) -> bytes:
    chunks, end = [], time.monotonic() + deadline_s
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"no answer within {deadline_s:g} s")
        data = os.read(fd, 1 << 16)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _unpickled_cases(prep: Prepared, blob: bytes) -> list[Case]:
    """The cases as a submission's process loads them from ``pickle_cases``'s bytes."""
    from course_utils.grader.runner import load_cases

    inputs = load_cases(blob)[prep.exercise.id]
    return [Case(c.label, args, kwargs) for c, (args, kwargs) in zip(prep.cases, inputs, strict=True)]


def _in_copy(prep: Prepared, blob: bytes) -> dict:
    """What a forked copy computes: the reference's outcomes, and per mutant whether ``check()``
    would reject it there (reference and mutant called in turn per case until one is rejected, as
    ``check`` does) and the outcomes a submission's process would send for it. Those run on the
    inputs unpickled from ``blob``, so an input the pickle loses part of (a stale ``.grad``, say)
    shows here."""
    ex, judge = prep.exercise, prep.judge
    sent_cases = _unpickled_cases(prep, blob)
    found = {"reference": [_encoded(run(ex.reference, c)) for c in sent_cases], "mutants": {}}
    for name, mutant in ex.mutants.items():
        caught, sent = False, []
        for case, sent_case in zip(prep.cases, sent_cases, strict=True):
            caught = caught or _rejected(judge, run(ex.reference, case), run(mutant, case), case)
            sent.append(_encoded(run(mutant, sent_case)))
        found["mutants"][name] = {"caught": caught, "outcomes": sent}
    return found


def in_a_fork(work, deadline_s: float = 60.0) -> Any:
    """``work()`` in a forked copy of this process; its JSON result. Side effects stay there."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: compute, send, and leave without running any exit handler
        try:
            os.close(read)
            torch.set_num_threads(1)  # the parent's OpenMP pool does not survive a fork
            with os.fdopen(write, "wb") as fh:
                fh.write(json.dumps(work()).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        raw = _read_all(read, deadline_s)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return json.loads(raw)


def _received(raw: Any) -> Outcome | wire.WireError:
    try:
        return _decode(raw)
    except wire.WireError as err:
        return err


def _rejected(judge, expected: Outcome, got: Any, case: Case) -> bool:
    if isinstance(got, wire.WireError):
        return True  # the grader would give an error verdict
    return case_problem(judge, expected, got, case) is not None


def batch_problem(prep: Prepared) -> str | None:
    """Why this exercise cannot be graded faithfully across processes, or None.

    Its inputs must reach the submission's process without the bank. Then, in a forked copy of
    this process, the reference and every mutant run on the inputs as that process unpickles them
    and their results make the trip back, as a submission's would: the reference must still pass
    here, and every mutant ``check()`` rejects must still be rejected here (a judge that reads
    state the call leaves behind in its own process, or an input or a value the trip loses, would
    otherwise pass a known wrong answer).
    """
    ex, judge = prep.exercise, prep.judge
    if ex.in_process_only:
        return ex.in_process_only
    try:
        from course_utils.grader.sandbox import pickle_cases

        blob = pickle_cases({ex.id: [(c.args, c.kwargs) for c in prep.cases]})
    except Exception as err:  # noqa: BLE001 - PicklingError, AttributeError, ValueError...
        text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(err))[:160]
        return f"its inputs cannot be sent to a submission's process ({text})"
    try:
        found = in_a_fork(lambda: _in_copy(prep, blob))
    except (OSError, ValueError, TimeoutError) as err:
        return f"its self-test in a separate process failed ({type(err).__name__}: {err})"
    pairs = list(zip(prep.cases, prep.expected, strict=True))
    for (case, expected), raw in zip(pairs, found["reference"], strict=True):
        if _rejected(judge, expected, _received(raw), case):
            return f"the reference's result on '{case.label}' does not survive the trip back"
    for name, mutant in found["mutants"].items():
        sent = [_received(raw) for raw in mutant["outcomes"]]
        if mutant["caught"] and not any(
                _rejected(judge, e, g, c) for (c, e), g in zip(pairs, sent, strict=True)):
            return f"the known wrong answer '{name}' would pass in batch grading"
    return None


def prepare(lesson: str, seed: int) -> tuple[list[Prepared], dict[str, str]]:
    """Draw the cases of ``lesson``'s exercises from ``seed`` and run the references on them.

    Returns the exercises to grade and, by id, those left out with the reason (``batch_problem``).
    """
    ready, skipped = [], {}
    for exercise in lesson_exercises(lesson):
        cases = exercise.cases(seed)
        prep = Prepared(exercise, cases, [run(exercise.reference, c) for c in cases])
        problem = batch_problem(prep)
        if problem:
            skipped[exercise.id] = problem
        else:
            ready.append(prep)
    return ready, skipped


def _shown(outcome: Outcome) -> str:
    return shown(outcome.error if outcome.error is not None else outcome.value)


def _inputs(raw: dict, reference: Outcome | None) -> tuple[tuple, dict] | None:
    """The call's inputs as it left them, or None (not sent: nothing to compare). An argument the
    wire carries only as a stand-in (an optimizer, an object of the course's) is taken as the
    reference left it: what cannot be seen is not judged."""
    if "inputs" not in raw:
        return None
    encoded = raw["inputs"]
    found = wire.decode(encoded)
    if not (isinstance(found, list) and len(found) == 2 and isinstance(found[0], list)
            and isinstance(found[1], dict)):
        raise wire.WireError("bad inputs")
    args, kwargs = found
    if any(_opaque_inside(part) for part in (*encoded["v"][0]["v"], *encoded["v"][1]["v"])):
        if reference is None or reference.inputs is None:
            return None
        ref_args, ref_kwargs = reference.inputs
        sent_args = encoded["v"][0]["v"]
        args = [ref_args[i] if i < len(ref_args) and _opaque_inside(sent_args[i]) else a
                for i, a in enumerate(args)]
        kwargs = {k: ref_kwargs[k] if k in ref_kwargs and any(
            _opaque_inside(v) for kk, v in encoded["v"][1]["v"] if kk == k) else v for k, v in kwargs.items()}
    return tuple(args), kwargs


def _opaque_inside(encoded: Any, depth: int = 0) -> bool:
    """Whether an encoded value holds a part the wire sends only as a stand-in (its state lost)."""
    if depth > wire.MAX_DEPTH + 2:
        return True
    if isinstance(encoded, list):
        return any(_opaque_inside(v, depth + 1) for v in encoded)
    if isinstance(encoded, dict):
        return encoded.get("t") == "opaque" or any(_opaque_inside(v, depth + 1) for v in encoded.values())
    return False


def _decode(raw: Any, reference: Outcome | None = None) -> Outcome:
    if not isinstance(raw, dict):
        raise wire.WireError("bad outcome")
    if "error" in raw:
        return Outcome(error=wire.decode_error(raw["error"]), inputs=_inputs(raw, reference))
    return Outcome(value=wire.decode(raw.get("value")), inputs=_inputs(raw, reference))


def _received_outcome(raw: Any, reference: Outcome | None = None) -> Outcome:
    """A returned value as the judge sees it; one that cannot be read stands as an error."""
    try:
        return _decode(raw, reference)
    except Exception as err:  # noqa: BLE001 - WireError, RecursionError, MemoryError: unreadable
        return Outcome(error=UnreadableValue(clean(err, 300) if isinstance(err, wire.WireError)
                                             else type(err).__name__))


def _as_judged(outcomes: list, expected: list[Outcome]) -> Iterator[Outcome]:
    """Each received outcome, with the grading thread's gradient mode as the answer left its own
    while the judge looks at it (a judge asks ``grad_mode_left_off()``, as in ``check()``)."""
    try:
        for raw, reference in zip(outcomes, expected, strict=False):
            torch.set_grad_enabled(not (isinstance(raw, dict) and raw.get("grad_off") is True))
            yield _received_outcome(raw, reference)
            torch.set_grad_enabled(True)
    finally:
        torch.set_grad_enabled(True)


def _failure_verdict(failure: Failure) -> Verdict:
    case, expected, got = failure.case, failure.expected, failure.got
    if isinstance(got.error, UnreadableValue):
        detail = f"the value returned for case '{case.label}' could not be read ({got.error})"
        return Verdict("error", clean(detail, 2000), case=case.label, reason="unreadable return value")
    both = {"case": case.label, "expected": _shown(expected), "got": _shown(got)}
    if got.error is not None and expected.error is None:
        kind = type(got.error).__name__
        message = clean(got.error, 2000)
        if failure.unsolved:
            return Verdict("error", f"not solved yet: {kind}: {message}", reason="not solved", **both)
        return Verdict("error", f"{kind}: {message}", reason=clean(f"raises {kind}", 80), **both)
    return Verdict("fail", clean(failure.problem, 2000), reason=f"wrong on '{case.label}'", **both)


def _no_record(status: RunStatus) -> Verdict:
    if status.timed_out:
        return Verdict("timeout", "the submission ran past the time limit before this exercise "
                       "finished", reason="timeout")
    if status.returncode == -signal.SIGXCPU:
        return Verdict("timeout", "the submission used up its CPU-time limit", reason="timeout")
    if status.supervisor_died:
        return Verdict("error", "the grading supervisor was killed while this submission ran "
                       "(it kills its parent?)", reason="killed the supervisor")
    if status.problem:
        return Verdict("error", clean(status.problem, 2000), reason="no result")
    return Verdict("error", f"the submission's process ended ({status.exit_text()}) before this "
                   "exercise ran", reason=f"process ended ({status.exit_text()})")


def verdict(prep: Prepared, record: dict | None, status: RunStatus, step_timeout: float) -> Verdict:
    """Judge one exercise from the runner's record (None when it never reported on it).

    Never raises: a record or a value the grader cannot judge is this exercise's error."""
    try:
        return _verdict(prep, record if isinstance(record, dict) or record is None else {}, status,
                        step_timeout)
    except Exception as err:  # noqa: BLE001 - RecursionError, MemoryError, a judge's own bug...
        return Verdict("error", f"the grader could not judge this result ({type(err).__name__}: "
                       f"{clean(err, 300)})", reason="could not be judged")


def _text_field(record: dict, key: str, default: str, limit: int) -> str:
    value = record.get(key, default)
    return clean(value, limit) if isinstance(value, str) else default


def _verdict(prep: Prepared, record: dict | None, status: RunStatus, step_timeout: float) -> Verdict:
    if record is None:
        return _no_record(status)
    state, detail = record.get("state"), _text_field(record, "detail", "", 2000)
    if state == "missing":
        return Verdict("missing", detail, reason="missing")
    if state == "error":
        return Verdict("error", detail, reason=_text_field(record, "kind", "error", 80))
    outcomes = record.get("outcomes")
    if state != "ran" or not isinstance(outcomes, list) or len(outcomes) > len(prep.cases):
        return Verdict("error", "the submission's result is unreadable", reason="unreadable result")
    failure = first_failure(prep.exercise, prep.cases, prep.expected, _as_judged(outcomes, prep.expected))
    if failure is not None:
        return _failure_verdict(failure)
    stopped = record.get("timeout_at")
    if stopped is not None and stopped is not False and len(outcomes) < len(prep.cases):
        label = prep.cases[len(outcomes)].label
        return Verdict("timeout", f"case '{label}' ran out of time ({step_timeout:g} s per exercise)",
                       case=label, reason="timeout")
    if len(outcomes) < len(prep.cases):
        return Verdict("error", "the submission stopped before every case ran", reason="incomplete")
    return Verdict("pass")
