"""Small helpers shared by the course's widgets: their display bundle, the style that makes them
fit a laptop screen, wrapping rows, and the predict-then-run prompt."""

from __future__ import annotations

import html

FIT_CLASS = "mpsd-fit"
# JupyterLab sets ``word-break: break-all`` on every <pre> of an output, which splits words
# mid-way; inside the course's widgets text wraps at word boundaries instead (a word longer than
# the line still breaks, rather than widening the page). Rows wrap, buttons keep their label,
# pictures keep their aspect.
STYLE = f"""<style>
.{FIT_CLASS}, .{FIT_CLASS} * {{ word-break: normal; overflow-wrap: anywhere; }}
.jp-OutputArea-output .{FIT_CLASS} pre, .{FIT_CLASS} .jp-OutputArea-output pre
    {{ white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }}
.{FIT_CLASS} .widget-hbox {{ flex-wrap: wrap; max-width: 100%; }}
.{FIT_CLASS} .widget-vbox {{ max-width: 100%; min-width: 0; }}
.{FIT_CLASS} .jupyter-button {{ flex-shrink: 0; min-width: max-content; }}
.{FIT_CLASS} .widget-radio-box label {{ white-space: normal; height: auto; line-height: 1.35;
    min-height: var(--jp-widgets-radio-item-height); padding: 2px 0; display: flex;
    align-items: flex-start; }}
.{FIT_CLASS} .widget-radio-box input {{ float: none; order: -1; flex-shrink: 0; height: 1.35em;
    margin: 0 6px 0 1px; }}
.{FIT_CLASS} .widget-html, .{FIT_CLASS} .widget-html-content {{ height: auto; }}
.{FIT_CLASS} .widget-html-content {{ line-height: 1.45; padding: 3px 0; }}
.{FIT_CLASS} img {{ max-width: 100%; height: auto; object-fit: contain; }}
.{FIT_CLASS} .widget-text, .{FIT_CLASS} .widget-dropdown, .{FIT_CLASS} .widget-textarea
    {{ max-width: 100%; }}
</style>"""

# The same wrapping for everything a lesson prints (reports, tables) is the page's CSS in a lab the
# course starts: course_utils/course/lab_config/custom/custom.css.


def fitted(widget):
    """``widget`` inside a box that carries the course's style (see ``STYLE``)."""
    import ipywidgets as w

    box = w.VBox([w.HTML(STYLE, layout={"display": "none"}), widget],
                 layout={"width": "100%", "max_width": "100%"})
    box.add_class(FIT_CLASS)
    return box


def row(children, **layout):
    """A horizontal row of widgets that wraps onto the next line when the page is narrow."""
    import ipywidgets as w

    return w.HBox(children, layout={"flex_flow": "row wrap", "align_items": "center", **layout})


def bundle(widget, text: str, **kwargs) -> dict:
    """A widget's display bundle (fitted to the page, see ``fitted``) with a short, stable
    text/plain (what nbval and terminals see)."""
    data = fitted(widget)._repr_mimebundle_(**kwargs)
    data = dict(data[0] if isinstance(data, tuple) else data)
    data["text/plain"] = text
    return data


class Predict:
    """Predict, then run: the learner picks an answer and locks it in before the next cell shows
    what happens. Nothing waits for the click, so Run All goes on, and the next cell's result
    stays held until the lock-in (``course_utils.course.reveal``); the choice, and whether it was
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
        from course_utils.course.reveal import lock

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
