"""The result of a predict-then-run experiment, held back until the prediction is locked in.

A lesson's prompt (``predict("05.view_of_T")``) is followed by the experiment, written as::

    with after_predicting("05.view_of_T"):
        t.T.view(-1)

What the block prints (and an error it raises, as one line) is shown at once when the learner
has locked in that prediction in this kernel. Otherwise (Run All) it is held behind a note and a
*Show the result* button, and opens by itself when the prediction is locked in. The text stays the
output's text/plain, so nbval compares it and a terminal prints it.
"""

from __future__ import annotations

import contextlib
import html
import io
import sys

SHOW = "Show the result"

_LOCKED: set[str] = set()
_ON_LOCK: dict[str, list] = {}


def lock(key: str) -> None:
    """Mark prediction ``key`` locked in (``Predict.lock_in`` calls it); open its held results."""
    _LOCKED.add(key)
    for callback in _ON_LOCK.pop(key, []):
        callback()


def locked(key: str) -> bool:
    """Whether prediction ``key`` was locked in in this kernel."""
    return key in _LOCKED


class Held:
    """A result held until prediction ``key`` is locked in (display it as an output)."""

    def __init__(self, key: str, text: str):
        self.key, self.text = key, text

    def note(self) -> str:
        """What the learner sees in place of the result until then."""
        return (f"The result is held until you lock in your prediction above ({self.key}); "
                f"it opens then, or when you press '{SHOW}'.")

    def widget(self):
        """The note and the button; the result replaces them when pressed or when locked in."""
        import ipywidgets as w

        from course_utils.course.widgets import row

        note = w.HTML(f"<i>{html.escape(self.note())}</i>")
        press = w.Button(description=SHOW, layout={"width": "max-content"})
        result = w.HTML()

        def reveal(_=None) -> None:
            result.value = f"<pre>{html.escape(self.text)}</pre>"
            note.layout.display = press.layout.display = "none"

        press.on_click(reveal)
        _ON_LOCK.setdefault(self.key, []).append(reveal)
        self.controls = (note, press, result)
        return w.VBox([row([note, press]), result])

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.course.widgets import bundle

        return bundle(self.widget(), self.text.rstrip("\n"), **kwargs)


@contextlib.contextmanager
def after_predicting(key: str):
    """Run the block, keeping what it prints (and an error it raises, as one line); show it now
    if prediction ``key`` is locked in, else held (``Held``)."""
    from IPython.display import display

    from course_utils.bank.predictions import get

    get(key)  # an unknown key is an error before anything runs
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            yield
    except Exception as err:  # noqa: BLE001 - the experiment's error is its result
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        captured.write(f"{type(err).__name__}: {first}\n")
    if locked(key):
        sys.stdout.write(captured.getvalue())
    else:
        display(Held(key, captured.getvalue()))
