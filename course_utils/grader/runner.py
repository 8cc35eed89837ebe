"""The submission's side of ``course grade``: run its cells, call its functions, report values.

Started by the supervisor as ``python -m course_utils.grader.runner WORKDIR``. Before any of the
submission's code runs it

- installs ``guard.install_guard``'s audit hook (which, unlike an import hook, cannot be removed
  again): no import of ``course_utils.bank``, no opening anything in the bank or the course
  checkout, by any path; and takes the checkout off the import path (``sys.path`` runs from a
  copy of ``course_utils`` without the bank; ``isolation`` says what else keeps it out of reach);
- replaces ``check`` and ``hint`` with no-ops: a notebook's own checks neither run nor print.

It executes the notebook's code cells one by one in a real IPython shell (the same meaning as in
JupyterLab: magics, ``display``; an error or a runaway cell is recorded and the
next cell still runs), finds each exercise's function (the name passed to ``check("ID", name)``,
else the reference's name), calls it on the inputs the grader drew, and writes one JSON line per
exercise with the encoded return values or exceptions (and the inputs as each call left them),
to the descriptor the grader handed over (a file with no name). It never sees an expected value:
the grader judges. A step (a cell, or one exercise's calls) that overruns its time is interrupted.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from course_utils.core.check_calls import check_calls
from course_utils.grader.fair_clock import MAX_STRETCH, FairTimer
from course_utils.grader.guard import forget_checkout, install_guard


class StepTimeout(BaseException):
    """Raised in the submission's code when one step overruns (BaseException: `except Exception`
    in the submission does not swallow it)."""


def _inert(*args, **kwargs) -> None:
    return None


def neutralise_checks() -> None:
    """``check``/``hint`` do nothing here: the grader, not the notebook, decides."""
    import course_utils.learner.checking as grading

    for module in (sys.modules["course_utils"], grading):  # the package, loaded with its checking
        module.check = _inert
        module.hint = _inert


def make_shell(namespace: dict):
    """A real IPython shell over ``namespace``, without a kernel: magics, ``!`` lines, ``display``
    and tracebacks behave as in Jupyter, so a notebook means the same here as in JupyterLab.

    History is off (nothing written to disk) and a GUI event loop is never started
    (``%matplotlib inline`` selects a backend and returns).
    """
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class GradingShell(InteractiveShell):
        def enable_gui(self, gui=None):  # no event loop in a headless run
            return None

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    for klass in GradingShell.mro():  # an earlier shell (tests make several) stays a singleton
        if "_instance" in vars(klass):
            klass._instance = None
    return GradingShell.instance(config=config, user_ns=namespace)


def python_source(source: str) -> str:
    """The cell as plain Python: IPython magics and ``!`` lines become ``get_ipython()`` calls."""
    if not re.search(r"^\s*[%!]", source, re.M):
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    return TransformerManager().transform_cell(source)


# --- soft time limits ---------------------------------------------------------------------------

_armed: list = [None]  # the running step's FairTimer, or None


def _alarm(signum, frame) -> None:
    timer = _armed[0]
    if timer is None:
        return
    left = timer.left()
    if left > 0.01:  # the step waited for a CPU: its own time is not up yet
        signal.setitimer(signal.ITIMER_REAL, left, 0.5)
        return
    raise StepTimeout()


@contextmanager
def time_limit(seconds: float, max_stretch: float = MAX_STRETCH):
    """Raise StepTimeout in the running code once it has had ``seconds`` of its own time (wall
    time less the time spent waiting for a CPU: ``fair_clock``), then every 0.5 s until it stops.

    The previous SIGALRM handler and timer are put back afterwards (tests run this in-process).
    """
    previous = signal.signal(signal.SIGALRM, _alarm)
    was = signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)
    started = time.monotonic()
    _armed[0] = FairTimer(seconds, max_stretch=max_stretch)
    try:
        yield
    finally:
        _armed[0] = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if was[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, was[0] - (time.monotonic() - started)), was[1])


# --- cells and names ----------------------------------------------------------------------------


def _error(err: BaseException) -> dict:
    from course_utils.grader.wire import encode_error

    return encode_error(err)


def run_cells(sources: list[str], namespace: dict, step: float) -> list[dict]:
    """Execute each cell in an IPython shell; return one record per cell that raised or overran."""
    shell = make_shell(namespace)
    problems = []
    for number, source in enumerate(sources, start=1):
        try:
            with time_limit(step):
                result = shell.run_cell(source, store_history=False)
            err = result.error_before_exec or result.error_in_exec
        except BaseException as caught:  # noqa: BLE001 - a timeout raised between two statements
            err = caught
        if isinstance(err, StepTimeout):
            problems.append({"cell": number, "timeout": True})
        elif err is not None:
            problems.append({"cell": number, "error": _error(err)})
    return problems


def answer_names(sources: list[str]) -> dict[str, str]:
    """Exercise id -> the expression the notebook passes to ``check`` (the last call wins)."""
    answers: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(python_source(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        answers.update((c.exercise_id, c.answer) for c in check_calls(tree) if c.exercise_id and c.answer)
    return answers


def defines(source: str, name: str) -> bool:
    """Whether a cell binds ``name`` (a def, class, assignment or import), read without running it."""
    try:
        tree = ast.parse(python_source(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.search(rf"\bdef\s+{re.escape(name)}\b|\b{re.escape(name)}\s*=", source) is not None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
    return False


# --- calling the answers ------------------------------------------------------------------------


def _describe_cell_problem(problem: dict) -> str:
    if problem.get("timeout"):
        return f"code cell {problem['cell']} ran out of time"
    err = problem["error"]
    return f"code cell {problem['cell']} raised {err['type']}: {err['message']}"


def find_answer(expr: str, namespace: dict, sources: list[str], problems: list[dict], step: float):
    """The answer's function, or a record saying why there is none (missing or error)."""
    if expr.isidentifier():
        if expr in namespace:
            fn = namespace[expr]
        else:
            broken = [p for p in problems if defines(sources[p["cell"] - 1], expr)]
            if broken:
                kind = broken[-1]["error"]["type"] if "error" in broken[-1] else "timeout"
                return None, {"state": "error", "detail": _describe_cell_problem(broken[-1]),
                              "kind": f"{kind} in the cell defining it"}
            return None, {"state": "missing", "detail": f"no function named {expr}"}
    else:
        try:
            with time_limit(step):
                fn = eval(expr, namespace)
        except StepTimeout:
            return None, {"state": "error", "detail": f"evaluating {expr} ran out of time",
                          "kind": "timeout finding it"}
        except BaseException as err:  # noqa: BLE001
            e = _error(err)
            return None, {"state": "error", "detail": f"{expr} raised {e['type']}: {e['message']}",
                          "kind": f"{e['type']} finding it"}
    if not callable(fn):
        return None, {"state": "error", "detail": f"{expr} is not a function ({type(fn).__name__})",
                      "kind": "not a function"}
    return fn, None


def call_all(fn, cases: list, step: float) -> dict:
    """Call ``fn`` on every case (fresh copies); encoded outcomes, and where time ran out."""
    from course_utils.grader.wire import encode

    outcomes: list[dict] = []
    try:
        with time_limit(step):
            for args, kwargs in cases:
                args, kwargs = copy.deepcopy((args, kwargs))
                try:
                    outcome = {"value": encode(fn(*args, **kwargs))}
                except StepTimeout:
                    raise
                except BaseException as err:  # noqa: BLE001 - the error is the outcome graded
                    outcome = {"error": _error(err)}
                outcomes.append(_with_state(outcome, args, kwargs))
    except StepTimeout:
        return {"state": "ran", "outcomes": outcomes, "timeout_at": len(outcomes)}
    return {"state": "ran", "outcomes": outcomes, "timeout_at": None}


def _with_state(outcome: dict, args: tuple, kwargs: dict) -> dict:
    """What ``check()`` sees besides the value: the inputs as the call left them (a judge compares
    them with the case's) and whether it left gradients switched off (then switched back on, as
    ``check()``'s judge does)."""
    import torch

    from course_utils.grader.wire import encode

    try:
        outcome["inputs"] = encode([list(args), dict(kwargs)])
    except Exception:  # noqa: BLE001, S110 - inputs that cannot be sent: judged without them
        pass
    if not torch.is_grad_enabled():
        outcome["grad_off"] = True
        torch.set_grad_enabled(True)
    return outcome


def _line(record: dict) -> str:
    try:
        return json.dumps(record) + "\n"
    except (TypeError, ValueError, RecursionError) as err:
        return json.dumps({"state": "error", "exercise": record.get("exercise"), "answer": record.get(
            "answer"), "detail": f"the results could not be written: {type(err).__name__}"}) + "\n"


def load_cases(blob: bytes) -> dict[str, list[tuple[tuple, dict]]]:
    """The inputs the grader drew (``sandbox.pickle_cases``'s bytes), by exercise id."""
    import pickle

    return pickle.loads(blob)  # noqa: S301 - the grader's own bytes, never a submission's


def main(workdir: str) -> None:
    """Run one submission as ``plan.json`` and ``cases.pkl`` in ``workdir`` describe."""
    plan = json.loads(Path(workdir, "plan.json").read_text(encoding="utf-8"))
    install_guard(plan["blocked_dirs"], plan.get("allowed_dirs", ()))
    forget_checkout(plan["blocked_dirs"], plan.get("allowed_dirs", ()))
    import torch

    torch.set_num_threads(1)
    neutralise_checks()
    cases = load_cases(Path(workdir, "cases.pkl").read_bytes())  # written by the grader
    # the results go to the descriptor the grader handed over (a file with no name: nothing another
    # process could find by path, nothing to forge a classmate's results in)
    results = os.fdopen(plan["results_fd"], "w", encoding="utf-8", buffering=1)
    if sys.stdin.buffer.read(2) != b"go":  # the supervisor has not recorded our pid: do nothing
        os._exit(71)
    sources, step = plan["cells"], plan["step_timeout"]
    namespace: dict = {"__name__": "__main__"}
    problems = run_cells(sources, namespace, step)
    results.write(json.dumps({"event": "cells", "problems": problems}) + "\n")
    answers = answer_names(sources)
    for exercise in plan["exercises"]:
        expr = answers.get(exercise["id"], exercise["name"])
        fn, record = find_answer(expr, namespace, sources, problems, step)
        if record is None:
            record = call_all(fn, cases[exercise["id"]], step)
        record.update(exercise=exercise["id"], answer=expr)
        results.write(_line(record))
    results.write(json.dumps({"event": "done"}) + "\n")
    results.flush()
    flush_output(step)
    os._exit(0)  # skip atexit handlers the submission may have registered


def flush_output(step: float) -> None:
    """What the learner printed and Python still buffers reaches the supervisor before exit."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            with time_limit(min(step, 5.0)):
                stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a stream the submission broke: nothing to keep
            pass


if __name__ == "__main__":
    main(sys.argv[1])
