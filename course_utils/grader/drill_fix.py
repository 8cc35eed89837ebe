"""Fix-it mode's judge behind a sandbox: an edited drill runs in a fresh process with limits.

``judge_in_sandbox(drill, code)`` starts ``drill_fix_runner`` through ``course grade``'s sandbox
(``Sandbox``: a supervisor, a new session, CPU time, memory and output limits, a wall-clock
deadline; the package copy without the bank) and returns its ``FixVerdict``. An edit that loops
forever, eats memory or kills its process is a verdict "not accepted", never a hung lesson.
``course_utils`` hands this judge to drill mode (lesson 08's widget, ``course drill``).
"""

from __future__ import annotations

from course_utils.drills import Drill
from course_utils.drills.fixit import TIME_LIMIT_S, FixVerdict
from course_utils.grader.sandbox import Limits, Sandbox

RUNNER = "course_utils.grader.drill_fix_runner"
TIMEOUT_S = TIME_LIMIT_S  # importing torch takes a few seconds; every drill runs in well under one


class FixSandbox(Sandbox):
    """``course grade``'s sandbox, starting the fix-it runner instead of the notebook runner."""

    def _spec(self, workdir, token) -> dict:
        spec = super()._spec(workdir, token)
        spec["cmd"] = [RUNNER if part == "course_utils.grader.runner" else part for part in spec["cmd"]]
        return spec


def judge_in_sandbox(drill: Drill, code: str, timeout: float = TIMEOUT_S) -> FixVerdict:
    """The verdict on ``code``, an edit of ``drill`` (in its form), from a limited process."""
    limits = Limits(timeout=timeout)
    box = FixSandbox(limits, isolate="guards")
    try:  # Ctrl-C, or the kernel interrupted: the sandbox ends the edit's processes, then re-raises
        status = box.run([code], [{"drill": drill.id, "form": drill.variant_index}], b"")
    finally:
        box.close()
    verdict = next((r for r in status.records if r.get("event") == "verdict"), None)
    if verdict is None:
        if status.timed_out:
            why = (f"it was still running at the {timeout:g} s time limit, and was stopped: look for "
                   "a loop that never ends (the drill's fixed code finishes well within the limit)")
        else:
            why = (f"its process ended ({status.exit_text()}) before a verdict: the edit exits, "
                   f"crashes or needs more than {limits.memory_mb} MB of memory")
        return FixVerdict(False, problems=(f"the edit was not judged: {why}",))
    problems = tuple(map(str, verdict.get("problems", [])))
    return FixVerdict(bool(verdict.get("passed")), str(verdict.get("symptom", "")), problems,
                      tuple(map(str, verdict.get("trained", []))))
