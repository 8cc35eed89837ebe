"""Text from a submission, made safe to show and to write (``course grade``, grading process).

Everything a submission controls (its file name, exception messages, values it returns) passes
through here before it reaches a gradebook, a report or the terminal:

- ``clean``: valid Unicode (a lone surrogate, or a file name's non-UTF-8 byte, becomes a visible
  ``\\xNN``/``\\uNNNN`` escape), at most ``limit`` characters;
- ``csv_cell``: ``clean``, control characters escaped, and a cell that a spreadsheet would run as
  a formula (it starts with ``= + - @``, a tab or a carriage return) is prefixed with ``'``;
- ``shown``: a value's description that never raises and never runs long (an integer past
  Python's digit limit, a structure nested past the recursion limit, a hostile ``__repr__``).
"""

from __future__ import annotations

import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # all but tab and newline (which CSV quotes)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
SHOWN_LIMIT = 200


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def clean(text: Any, limit: int | None = None) -> str:
    """``text`` as valid Unicode (surrogates escaped), cut to ``limit`` characters."""
    if not isinstance(text, str):
        try:
            text = str(text)
        except Exception as err:  # noqa: BLE001 - a value that cannot even be turned into text
            text = f"<{type(text).__name__} that cannot be shown ({type(err).__name__})>"
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 3)] + "..."
    return SURROGATE.sub(_escape, text)


def csv_cell(text: Any) -> str:
    """A text cell for the CSV that no spreadsheet reads as a formula (and no control character
    but tab and newline, so every CSV reader reads it back). A cell that starts with the guard
    itself is guarded too: ``=x`` and ``'=x`` stay two cells."""
    text = CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean(text))
    return "'" + text if text.startswith((*FORMULA_START, "'")) else text


def name_text(name: str) -> str:
    """A file name as shown everywhere (CSV, JSON, report): a backslash doubled, then every
    non-UTF-8 byte and control character as ``\\xNN``. Distinct names stay distinct: the
    escape of a byte never equals a name that spells it out."""
    name = name.replace("\\", "\\\\")
    name = SURROGATE.sub(_escape, name)
    return re.sub("[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", name)


def shown(value: Any, limit: int = SHOWN_LIMIT) -> str:
    """A short description of ``value`` for a verdict; never raises (but on Ctrl-C)."""
    from course_utils.core import compare

    describe = getattr(compare, "describe_value", None) or compare.describe
    try:
        if type(value) is int and value.bit_length() > 4000:
            return f"<an integer of {value.bit_length()} bits>"
        text = describe(value)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - RecursionError, ValueError, a hostile __repr__...
        text = f"<{type(value).__name__} that cannot be shown ({type(err).__name__})>"
    return clean(text, limit)
