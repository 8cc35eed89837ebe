"""The edit's side of fix-it mode: judge one edited drill in a fresh, limited process.

Started by the supervisor (``supervise.py``) as ``python -m course_utils.grader.drill_fix_runner
WORKDIR``, like ``runner.py`` for ``course grade``: the audit guard is installed before anything of
the edit runs (no bank, no course checkout), and it waits for the supervisor's "go". ``plan.json``
holds the drill, its form and the edited code (as the only cell); the verdict of
``course_utils.drills.fixit.judge_edit`` is written as one JSON line to the results descriptor the
grader handed over (``plan["results_fd"]``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from course_utils.grader.guard import forget_checkout, install_guard


def main(workdir: str) -> None:
    """Judge the edit ``plan.json`` in ``workdir`` describes; write the verdict."""
    plan = json.loads(Path(workdir, "plan.json").read_text(encoding="utf-8"))
    install_guard(plan["blocked_dirs"], plan.get("allowed_dirs", ()))
    forget_checkout(plan["blocked_dirs"], plan.get("allowed_dirs", ()))
    # the verdict goes to the descriptor the grader handed over, as for course grade's runner
    results = os.fdopen(plan["results_fd"], "w", encoding="utf-8", buffering=1)
    if sys.stdin.buffer.read(2) != b"go":
        os._exit(71)
    from course_utils import drills
    from course_utils.drills.fixit import judge_edit

    target = plan["exercises"][0]
    drill = drills.get(target["drill"]).variant(int(target["form"]))
    verdict = judge_edit(drill, plan["cells"][0])
    results.write(json.dumps({"event": "verdict", **verdict.as_dict()}) + "\n")
    results.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
