"""``StrideExplorer``: chain view operations on a small tensor and watch its layout (lesson 05).

Pick a shape, then apply ops one after another (transpose, permute, narrow, slice with a step,
expand, unsqueeze, ``.T``, channels_last, ``.contiguous()``). After each step the widget shows
the chain as code, ``describe()`` of the result (strides, offset, contiguity) and
``plot_storage``'s picture. The same steps can be driven from code (``apply``, ``undo``,
``reset``), which is how the tests and a browser test exercise it.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from course_utils.toolkit.layout import MAX_DRAWN, Layout, describe, draw_storage

Args = tuple[int, ...]


@dataclass(frozen=True)
class Op:
    """One operation the explorer offers: its argument names, default arguments and action."""

    params: str
    default: Callable[[torch.Tensor], str]
    run: Callable[[torch.Tensor, Args], tuple[torch.Tensor, str]]  # -> (result, code)


def _join(values) -> str:
    return ", ".join(str(v) for v in values)


def _step_slice(t: torch.Tensor, a: Args) -> tuple[torch.Tensor, str]:
    dim, step = a
    index = (slice(None),) * dim + (slice(None, None, step),)
    return t[index], f"t[{':, ' * dim}::{step}]"


def _T(t: torch.Tensor, a: Args) -> tuple[torch.Tensor, str]:
    if t.dim() <= 2:
        return t.T, "t.T"
    order = tuple(reversed(range(t.dim())))  # what .T means on N-D (deprecated there)
    return t.permute(order), f"t.permute({_join(order)})  # = t.T, deprecated for {t.dim()}-D"


def _channels_last(t: torch.Tensor, a: Args) -> tuple[torch.Tensor, str]:
    if t.dim() != 4:
        raise ValueError(f"channels_last needs a 4-D (N, C, H, W) tensor, this one is {t.dim()}-D")
    return t.contiguous(memory_format=torch.channels_last), (
        "t = t.contiguous(memory_format=torch.channels_last)")


def _expand_default(t: torch.Tensor) -> str:
    return _join(3 if size == 1 else -1 for size in t.shape)


OPS: dict[str, Op] = {
    "transpose": Op("dim0, dim1", lambda t: "0, 1",
                    lambda t, a: (t.transpose(*a), f"t.transpose({_join(a)})")),
    "permute": Op("dims", lambda t: _join(reversed(range(t.dim()))),
                  lambda t, a: (t.permute(a), f"t.permute({_join(a)})")),
    "narrow": Op("dim, start, length", lambda t: f"0, 1, {max(t.shape[0] - 1, 0)}",
                 lambda t, a: (t.narrow(*a), f"t.narrow({_join(a)})")),
    "slice with step": Op("dim, step", lambda t: f"{t.dim() - 1}, 2", _step_slice),
    "expand": Op("sizes (-1 keeps a size)", _expand_default,
                 lambda t, a: (t.expand(a), f"t.expand({_join(a)})")),
    "unsqueeze": Op("dim", lambda t: "0", lambda t, a: (t.unsqueeze(*a), f"t.unsqueeze({_join(a)})")),
    ".T": Op("(none)", lambda t: "", _T),
    "channels_last": Op("(none)", lambda t: "", _channels_last),
    ".contiguous()": Op("(none)", lambda t: "", lambda t, a: (t.contiguous(), "t.contiguous()")),
}


def parse_ints(text: str) -> Args:
    """'2, 3, 4' -> (2, 3, 4); also accepts '(2, 3, 4)' (the explorer's text boxes, lesson 05)."""
    cleaned = text.replace("(", " ").replace(")", " ").replace(",", " ").split()
    try:
        return tuple(int(part) for part in cleaned)
    except ValueError:
        raise ValueError(f"expected whole numbers separated by commas, got {text!r}") from None


def storage_figure(t: torch.Tensor, title: str | None = None):
    """plot_storage's picture of ``t`` as the explorer draws it: a matplotlib Figure, no pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2, 3.4), dpi=100, layout="constrained")
    draw_storage(fig, [t], [title] if title else None)
    return fig


def render_png(t: torch.Tensor, title: str | None = None) -> bytes:
    """plot_storage's picture of ``t`` as PNG bytes, without pyplot (the explorer's image, lesson 05)."""
    fig = storage_figure(t, title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class StrideExplorer:
    """Chain view ops on ``torch.arange(n).reshape(shape)`` and see strides, offset and storage.

    Widgets (stable descriptions, for tests and browser tests): ``shape_box`` ("shape"),
    ``op_box`` ("op"), ``args_box`` ("args"), ``apply_button`` ("apply"), ``undo_button``
    ("undo"), ``reset_button`` ("reset"); outputs ``code``, ``info``, ``message``, ``picture``.
    Display the explorer as a cell's last expression (lesson 05).
    """

    def __init__(self, shape: tuple[int, ...] = (3, 4)):
        import ipywidgets as w

        self.shape = self._checked_shape(tuple(shape))
        self.steps: list[tuple[str, Args]] = []
        self.shape_box = w.Text(value=_join(self.shape), description="shape",
                                continuous_update=False)
        self.op_box = w.Dropdown(options=list(OPS), value="transpose", description="op")
        self.args_box = w.Text(description="args", continuous_update=False)
        self.apply_button = w.Button(description="apply", button_style="primary")
        self.undo_button = w.Button(description="undo")
        self.reset_button = w.Button(description="reset")
        self.code, self.info, self.message = w.HTML(), w.HTML(), w.HTML()
        # a fixed width and an automatic height: the picture keeps its aspect at any page width
        self.picture = w.Image(format="png", layout={"width": "336px", "max_width": "100%",
                                                      "height": "auto", "object_fit": "contain",
                                                      "align_self": "flex-start"})
        self._wire()
        self.widget = self._layout(w)
        self._refresh()

    # --- state ----------------------------------------------------------------------------------

    @property
    def base(self) -> torch.Tensor:
        """The starting tensor: storage positions 0, 1, 2, ... in the chosen shape."""
        return torch.arange(float(math.prod(self.shape))).reshape(self.shape).clone()

    @property
    def tensor(self) -> torch.Tensor:
        """The result of applying every step to the base tensor."""
        t = self.base
        for name, args in self.steps:
            t, _ = OPS[name].run(t, args)
        return t

    @property
    def layout(self) -> Layout:
        """describe() of the current tensor."""
        return describe(self.tensor)

    def code_text(self) -> str:
        """The chain as Python code."""
        lines = [f"t = torch.arange({math.prod(self.shape)}.).reshape({_join(self.shape)}).clone()"
                 "  # owns its storage"]
        t = self.base
        for name, args in self.steps:
            t, code = OPS[name].run(t, args)
            lines.append(code if code.startswith("t = ") else f"t = {code}")
        return "\n".join(lines)

    # --- actions (the buttons call these) -------------------------------------------------------

    def apply(self, name: str, *args: int) -> bool:
        """Append op ``name`` with ``args``; on an error keep the state, show why, return False."""
        if name not in OPS:
            return self._fail(f"unknown op {name!r}; choose one of {', '.join(OPS)}")
        try:
            result, _ = OPS[name].run(self.tensor, tuple(args))
        except (RuntimeError, IndexError, ValueError, TypeError) as err:
            return self._fail(f"{name}({_join(args)}) failed: {str(err).splitlines()[0]}")
        if not 0 < result.numel() <= MAX_DRAWN:
            return self._fail(f"{name} would give {result.numel()} elements; the picture "
                              f"shows 1 to {MAX_DRAWN}")
        self.steps.append((name, tuple(args)))
        self._refresh()
        return True

    def undo(self) -> None:
        """Remove the last step."""
        if self.steps:
            self.steps.pop()
        self._refresh()

    def reset(self, shape: tuple[int, ...] | None = None) -> None:
        """Start again from a new tensor (of ``shape`` if given)."""
        if shape is not None:
            self.shape = self._checked_shape(tuple(shape))
        self.steps.clear()
        self._refresh()

    def summary(self) -> str:
        """The short text that stands in for the widget outside a browser (nbval, terminals)."""
        return (f"StrideExplorer on a ({_join(self.shape)}) tensor: choose an op, set its args, "
                "press apply")

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.learner.widgets import bundle

        return bundle(self.widget, self.summary(), **kwargs)

    # --- widget plumbing ------------------------------------------------------------------------

    @staticmethod
    def _checked_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
        if not 1 <= len(shape) <= 4 or any(size < 1 for size in shape):
            raise ValueError(f"shape {shape}: use 1 to 4 dimensions, each at least 1")
        if math.prod(shape) > MAX_DRAWN:
            raise ValueError(f"shape {shape} has {math.prod(shape)} elements; at most {MAX_DRAWN}")
        return shape

    def _fail(self, text: str) -> bool:
        self.message.value = f"<span style='color:#b00'>{html.escape(text)}</span>"
        return False

    def _wire(self) -> None:
        self.shape_box.observe(self._on_shape, names="value")
        self.op_box.observe(lambda change: self._default_args(), names="value")
        self.apply_button.on_click(self._on_apply)
        self.undo_button.on_click(lambda _: self.undo())
        self.reset_button.on_click(lambda _: self.reset())

    def _on_shape(self, change) -> None:
        try:
            self.reset(parse_ints(change["new"]))
        except ValueError as err:
            self._fail(str(err))

    def _on_apply(self, _button) -> None:
        try:
            args = parse_ints(self.args_box.value)
        except ValueError as err:
            self._fail(str(err))
            return
        self.apply(self.op_box.value, *args)

    def _default_args(self) -> None:
        op = OPS[self.op_box.value]
        self.args_box.placeholder = op.params
        self.args_box.value = op.default(self.tensor)

    def _layout(self, w):
        from course_utils.learner.widgets import row

        controls = row([self.op_box, self.args_box, self.apply_button])
        history = row([self.undo_button, self.reset_button])
        left = w.VBox([self.shape_box, controls, history, self.code, self.info, self.message],
                      layout={"flex": "1 1 320px", "min_width": "0"})
        box = row([left, self.picture], align_items="flex-start")  # the picture goes below when narrow
        for widget, name in ((box, "stride-explorer"), (self.picture, "stride-explorer-picture"),
                             (self.info, "stride-explorer-info"), (self.code, "stride-explorer-code")):
            widget.add_class(name)
        return box

    def _refresh(self) -> None:
        t = self.tensor
        self.code.value = f"<pre>{html.escape(self.code_text())}</pre>"
        self.info.value = f"<pre>{html.escape(str(describe(t)))}</pre>"
        self.message.value = ""
        self.picture.value = render_png(t, "numbers = storage positions")
        if self.shape_box.value != _join(self.shape):
            self.shape_box.value = _join(self.shape)
        self._default_args()
