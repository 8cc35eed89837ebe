"""The hypothesis gate of a spot-the-bug card: before the choices, the learner writes what they
think is wrong, and the gate takes it only when it names a line of the snippet, a name from its
code, or a symptom one could measure ("x", "asdf" or "the bug" name none of these)."""

from __future__ import annotations

import io
import keyword
import re
import tokenize

# What one could measure or see; a hypothesis that names one of these is testable.
SYMPTOM_WORDS = frozenset("""
    loss losses gradient gradients grad grads nan nans inf infs overflow overflows underflow
    memory oom accuracy slow slower faster speed hang hangs deadlock error raises exception shape
    shapes broadcast broadcasts device devices plateau plateaus diverge diverges explode explodes
    vanish vanishes zero zeros constant leak leaks stale never update updates learn learns
    learning shuffle shuffled order mask masked norm norms precision probability probabilities
    logits sum mean variance statistics dropout eval train training mode copy copies sync
    bias weight weights step steps epoch batch batches label labels class classes token tokens
""".split())
# Names in almost every snippet say nothing about this one.
COMMON_NAMES = frozenset("import from torch nn as def return self for in range print none true "
                         "false with model optimizer x y".split())
MIN_WORDS = 3


def _code_names(code: str) -> set[str]:
    names = set()
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.NAME and len(tok.string) >= 3 and not keyword.iskeyword(tok.string):
            names.add(tok.string.lower())
    return names - COMMON_NAMES


def hypothesis_problem(code: str, text: str | None) -> str | None:
    """Why ``text`` is not yet a hypothesis about ``code`` (None when it is one)."""
    words = re.findall(r"[a-z_][a-z0-9_]*|\d+", (text or "").lower())
    if len([w for w in words if not w.isdigit()]) < MIN_WORDS:
        return ("write your hypothesis first, in a few words: what is wrong, on which line, and what "
                "would you measure to confirm it?")
    lines = len(code.splitlines())
    named_line = any(1 <= int(n) <= lines for n in re.findall(r"\bline\s*(\d+)", text.lower()))
    if named_line or set(words) & (SYMPTOM_WORDS | _code_names(code)):
        return None
    return ("name what you suspect: a line of the code (\"line 7\"), a name in it, or a symptom you "
            "could measure (the loss, a gradient, the memory, a shape, ...)")
