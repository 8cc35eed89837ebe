"""The spot-the-bug card (lesson 07): code first, a hypothesis, then choices, then the fix and why.

``card(1)`` (the first drill; ``card("<drill id>")`` also works) displays as a widget: the buggy
code, a *Hypothesis* box whose text must name a line, a name in the code or a symptom before the
choices are enabled, *Run the buggy code* (shows the measured symptom,
to test the hypothesis), *Submit* (grades the choice and records it in progress under "drills"),
and *Reveal* (the fixed code and the explanation with its source), enabled after an answer.
Where widgets do not render, the card is plain text (``text()``, also its text/plain), and
``answer()`` / ``reveal()`` do the same job from code. Lesson 08's timed drills reuse the card. The
drill's id and title appear only after the answer: they would name the bug.
"""

from __future__ import annotations

import html
import textwrap
from types import SimpleNamespace

from course_utils.core.glyphs import glyph
from course_utils.core.questions import as_html, plain
from course_utils.drills import Drill, get, record_answer, taught
from course_utils.drills.hypothesis_gate import hypothesis_problem
from course_utils.learner.code_diff import FixDiff

LETTERS = "ABCDEFGH"
SUBMIT, REVEAL, RUN = "Submit", "Reveal", "Run the buggy code"

# The drills answered on a card in this kernel, and what to do when one is (lesson 07's worked
# answers open then): a worked answer appears only after its card was answered.
_ANSWERED: set[str] = set()
_ON_ANSWER: dict[str, list] = {}


def answered_here(drill_id: str) -> bool:
    """Whether a card of ``drill_id`` was answered in this kernel."""
    return drill_id in _ANSWERED


def when_answered(drill_id: str, callback) -> None:
    """Call ``callback()`` when a card of ``drill_id`` is next answered in this kernel."""
    _ON_ANSWER.setdefault(drill_id, []).append(callback)


def _answered(drill_id: str) -> None:
    _ANSWERED.add(drill_id)
    for callback in _ON_ANSWER.pop(drill_id, []):
        callback()


class BugCard:
    """One drill as a spot-the-bug card."""

    def __init__(self, drill: Drill | str, record: bool = True):
        self.drill = get(drill) if isinstance(drill, str) else drill
        self.record = record  # False: answers are graded but not kept as card answers
        self.answered = False
        self.controls: SimpleNamespace | None = None  # the widgets of the last widget() call

    # --- plain text ------------------------------------------------------------------------------
    def text(self, reveal: bool = False) -> str:
        """The card as text: title, code, question and lettered choices (and the fix if asked)."""
        d, q = self.drill, self.drill.question
        lines = [self.heading(shown=reveal or self.answered), "",
                 textwrap.indent(d.buggy_code.rstrip("\n"), "    "), "", f"Q: {plain(q.prompt)}"]
        lines += [f"  {LETTERS[i]}) {plain(choice)}" for i, choice in enumerate(q.choices)]
        if reveal:
            lines += ["", self.reveal()]
        else:
            lines += ["", "Write down your hypothesis first (a line, a name in the code or a symptom), "
                          "then answer: .answer('A', 'your hypothesis') on this card, or use the widget."]
        return "\n".join(lines)

    def heading(self, shown: bool) -> str:
        """'Spot the bug · category', and the drill's id and title once ``shown`` (after the answer)."""
        d = self.drill
        return f"Spot the bug · {d.category}" + (f" · {d.id} · {d.title}" if shown else "")

    def __repr__(self) -> str:
        return self.text()

    # --- answering from code ---------------------------------------------------------------------
    def _index(self, choice: int | str) -> int:
        n = len(self.drill.question.choices)
        if isinstance(choice, str) and len(choice) == 1 and choice.upper() in LETTERS[:n]:
            return LETTERS.index(choice.upper())
        if isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < n:
            return choice
        raise ValueError(f"choice must be a letter A-{LETTERS[n - 1]} or an index 0-{n - 1}, "
                         f"got {choice!r}")

    def answer(self, choice: int | str, hypothesis: str) -> str:
        """Grade a choice (letter or index) given a written hypothesis; record it; return the
        feedback line. An empty hypothesis is refused: form one before looking at the choices."""
        problem = hypothesis_problem(self.drill.buggy_code, hypothesis)
        if problem:
            raise ValueError(problem)
        index = self._index(choice)
        q = self.drill.question
        right = index == q.answer
        if self.record:
            record_answer(self.drill.id, right, hypothesis)
        self.answered = True
        _answered(self.drill.id)
        if right:
            return f"{glyph('right')} Right: {LETTERS[index]}) {plain(q.choices[index])}"
        return (f"{glyph('wrong')} Not quite: you chose {LETTERS[index]}; the answer is {LETTERS[q.answer]}) "
                f"{plain(q.choices[q.answer])}")

    def reveal(self) -> str:
        """The fix as a diff against the buggy code, and the explanation with its source."""
        parts = ["The fix: a diff against the code above", repr(FixDiff(self.drill)), "",
                 *map(plain, self._after_fix())]
        return "\n".join(parts)

    def _after_fix(self) -> list[str]:
        d = self.drill
        parts = [f"Why: {d.why}"]
        if d.exercise:
            lesson = d.exercise.split(".", 1)[0]
            parts.append(f"Practice: exercise {d.exercise} (run `course start {lesson}`).")
        return parts

    # --- the widget ------------------------------------------------------------------------------
    def widget(self):
        """The card as ipywidgets; its controls stay reachable as ``self.controls``."""
        import ipywidgets as w

        d, q = self.drill, self.drill.question
        hypothesis = w.Textarea(description="Hypothesis", layout={"width": "95%"},
                                placeholder="What is wrong, and what would you measure to be sure?")
        choices = w.RadioButtons(options=[f"{LETTERS[i]}) {plain(c)}" for i, c in enumerate(q.choices)],
                                 value=None, disabled=True, layout={"width": "auto"})
        submit = w.Button(description=SUBMIT, button_style="primary", disabled=True)
        run = w.Button(description=RUN, layout={"width": "max-content"})
        reveal = w.Button(description=REVEAL, disabled=True)
        feedback = w.HTML()
        symptom = w.Output()
        fix = w.HTML()

        gate = w.HTML()

        def refresh(_=None):
            problem = hypothesis_problem(d.buggy_code, hypothesis.value) if hypothesis.value else None
            ready = bool(hypothesis.value.strip()) and problem is None
            gate.value = f"<i>{html.escape(problem)}</i>" if problem else ""
            choices.disabled = not ready
            submit.disabled = not ready or choices.index is None

        def on_submit(_):
            feedback.value = f"<b>{html.escape(self.answer(choices.index, hypothesis.value))}</b>"
            title.value = self._title_html(shown=True)
            reveal.disabled = False

        def on_run(_):
            symptom.outputs = ()
            symptom.append_stdout(f"symptom: {d.symptom()}\n")

        def on_reveal(_):
            fix.value = ("<b>The fix:</b> a diff against the code above" + FixDiff(d)._repr_html_()
                         + "".join(f"<p>{as_html(p)}</p>" for p in self._after_fix()))

        hypothesis.observe(refresh, names="value")
        choices.observe(refresh, names="index")
        submit.on_click(on_submit)
        run.on_click(on_run)
        reveal.on_click(on_reveal)
        self.controls = SimpleNamespace(hypothesis=hypothesis, choices=choices, submit=submit,
                                        run=run, reveal=reveal, feedback=feedback,
                                        symptom=symptom, fix=fix, gate=gate)
        title = w.HTML(self._title_html(shown=self.answered))
        self.controls.title = title
        code = w.HTML(f"<pre>{html.escape(d.buggy_code)}</pre>")
        prompt = w.HTML(f"<b>Q.</b> {as_html(q.prompt)}")
        return w.VBox([title, code, hypothesis, gate, run, symptom, prompt, choices,
                       w.HBox([submit, reveal]), feedback, fix])

    def _title_html(self, shown: bool) -> str:
        d = self.drill
        after = f" · <code>{d.id}</code> · {html.escape(d.title)}" if shown else ""
        return f"<b>Spot the bug</b> · {html.escape(d.category)}{after}"

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.learner.widgets import bundle

        return bundle(self.widget(), self.text(), **kwargs)


def card(drill: int | str) -> BugCard:
    """The spot-the-bug card of a drill, by its number among the drills lesson 07 works through
    (1 = the first category's, so the cell does not name the bug) or by its id; display it as a
    cell's last expression."""
    if isinstance(drill, int) and not isinstance(drill, bool):
        drills = taught()
        if not 1 <= drill <= len(drills):
            raise ValueError(f"card number must be 1-{len(drills)}, got {drill}")
        return BugCard(drills[drill - 1])
    return BugCard(drill)
