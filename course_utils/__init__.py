"""MPS Detective: helpers for the course on debugging PyTorch on Apple Silicon.

Import what a lesson needs: ``from course_utils import check, hint``. Heavy modules (plots,
widgets) load only when used, so importing the package costs little beyond ``import torch``.
"""

from course_utils.core import startup as _startup  # noqa: F401  (must run before torch is imported)
from course_utils.learner.checking import CheckFailed, check, hint
from course_utils.learner.drilling import fix_entry as _drill_fixit


def _sandboxed_fix(drill, code):
    """Fix-it mode's judge: the edit runs in ``course grade``'s sandbox (grader/drill_fix.py)."""
    from course_utils.grader.drill_fix import judge_in_sandbox

    return judge_in_sandbox(drill, code)


_drill_fixit.set_judge(_sandboxed_fix)

__all__ = ["CheckFailed", "check", "hint"]
__version__ = "0.1.0"
