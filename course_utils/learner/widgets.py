"""Small helpers shared by the course's widgets: their display bundle, the style that makes them
fit a laptop screen, and wrapping rows (the predict-then-run prompt is ``reveal.predict``)."""

from __future__ import annotations

FIT_CLASS = "mpsd-fit"
CODE_CLASS = "mpsd-code"  # a text box holding code: monospace, its lines never wrapped
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
.{FIT_CLASS} .{CODE_CLASS} textarea {{ font-family: var(--jp-code-font-family, monospace);
    font-size: var(--jp-code-font-size, 13px); line-height: 1.4; white-space: pre; word-break: normal;
    overflow-wrap: normal; overflow-x: auto; tab-size: 4; }}
</style>"""

# The same wrapping for everything a lesson prints (reports, tables) is the page's CSS in a lab the
# course starts: course_utils/jupyter/lab_config/custom/custom.css.


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
