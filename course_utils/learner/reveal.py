"""Predict, then run: the prompt (``predict``) and the experiment's result, held back until the
prediction is locked in.

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

from course_utils.learner.widgets import bundle, row

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


class Predict:
    """Predict, then run: the learner picks an answer and locks it in before the next cell shows
    what happens. Nothing waits for the click, so Run All goes on, and the next cell's result
    stays held until the lock-in (``course_utils.learner.reveal``); the choice, and whether it was
    right, is kept in progress under ``predictions``. Display it as a cell's last expression."""

    def __init__(self, key: str, question: str, choices: list[str], answer: int):
        if not 0 <= answer < len(choices):
            raise ValueError(f"answer {answer} is not one of the {len(choices)} choices")
        self.key, self.question, self.choices, self.answer = key, question, list(choices), answer

    def lock_in(self, index: int) -> str:
        """Record choice ``index`` and return the line shown under the prompt."""
        from course_utils.core import progress

        right = index == self.answer
        with progress.update() as data:
            entry = data.setdefault("predictions", {}).setdefault(self.key, {"attempts": 0})
            entry.update(attempts=entry["attempts"] + 1, choice=self.choices[index], right=right)
        lock(self.key)  # a result already run below opens now (``after_predicting``)
        return (f"Locked in: {self.choices[index]}. Now run the next cell and compare "
                "(if it ran already, its result is open now).")

    def summary(self) -> str:
        """The stable text that stands in for the widget outside a browser (nbval, terminals)."""
        options = "; ".join(f"{chr(65 + i)}) {c}" for i, c in enumerate(self.choices))
        return f"Predict: {self.question} {options}. Pick one, then run the next cell."

    def widget(self):
        """Radio buttons and a Lock in button; the choice is kept once locked."""
        import ipywidgets as w

        choices = w.RadioButtons(options=self.choices, value=None, layout={"width": "auto"})
        lock = w.Button(description="Lock in", button_style="primary", disabled=True)
        said = w.HTML()

        def on_pick(change):
            lock.disabled = change["new"] is None

        def on_lock(_):
            said.value = html.escape(self.lock_in(choices.index))
            lock.disabled = choices.disabled = True

        choices.observe(on_pick, names="value")
        lock.on_click(on_lock)
        prompt = w.HTML(f"<b>Predict, then run.</b> {html.escape(self.question)}")
        return w.VBox([prompt, choices, row([lock, said])])

    def _repr_mimebundle_(self, **kwargs):
        return bundle(self.widget(), self.summary(), **kwargs)


def predict(key: str) -> Predict:
    """The predict-then-run prompt ``key`` ("05.view_of_T"): its question, choices and answer
    come from the course's bank, so the lesson's cell holds only the id."""
    from course_utils.bank.predictions import get

    found = get(key)
    return Predict(found.key, found.question, list(found.choices), found.answer)
