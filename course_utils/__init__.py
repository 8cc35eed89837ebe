"""MPS Detective: helpers for the course on debugging PyTorch on Apple Silicon.

Import what a lesson needs: ``from course_utils import check, hint``. Heavy modules (plots,
widgets) load only when used, so importing the package costs little beyond ``import torch``.
"""

from course_utils.core import startup as _startup  # noqa: F401  (must run before torch is imported)
from course_utils.course.checking import CheckFailed, check, hint

__all__ = ["CheckFailed", "check", "hint"]
__version__ = "0.1.0"
