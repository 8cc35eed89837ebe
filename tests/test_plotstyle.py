"""Are the course's pictures legible on a laptop: dpi >= 100 and no text under 9 pt?"""

import io
import warnings

import matplotlib
import pytest
import torch

from course_utils.toolkit.plotstyle import DPI, SMALL, readable, too_small

matplotlib.use("Agg", force=True)


def storage_picture():
    from course_utils.toolkit.layout import plot_storage

    t = torch.arange(12.).reshape(3, 4)
    return plot_storage(t, t.T, t[1:, ::2])


def memory_pictures():
    from course_utils.toolkit.memory import draw_memory_models

    return draw_memory_models().figure


def fallback_timeline():
    from course_utils.toolkit.emulate.mps_fallback import emulate_fallback
    from course_utils.toolkit.optrace import trace

    with emulate_fallback({"aten::cumsum"}, device=torch.device("cpu")), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace(lambda x: x.cumsum(0) * 2, torch.ones(3)).timeline()


def sweep_heatmap():
    from course_utils.toolkit.difftest import sweep

    return sweep(["mul", "addcmul"], device="cpu").heatmap()


def explorer_picture():
    from matplotlib.figure import Figure

    from course_utils.toolkit.layout import draw_storage

    fig = Figure(figsize=(4.2, 3.4), dpi=DPI, layout="constrained")
    draw_storage(fig, [torch.arange(12.).reshape(3, 4).T], ["numbers = storage positions"])
    return fig


@pytest.mark.parametrize("draw", [storage_picture, memory_pictures, fallback_timeline, sweep_heatmap,
                                  explorer_picture])
def test_every_toolkit_picture_is_drawn_at_100_dpi_with_text_of_9_pt_or_more(draw):
    import matplotlib.pyplot as plt

    fig = draw()
    try:
        assert too_small(fig) == []
    finally:
        plt.close(fig)


def test_the_explorer_png_is_drawn_at_100_dpi():
    from PIL import Image

    from course_utils.learner.stride_explorer import render_png

    image = Image.open(io.BytesIO(render_png(torch.arange(6.).reshape(2, 3), "t")))
    assert image.size == (420, 340)  # 4.2 x 3.4 inches at 100 dpi


def test_readable_raises_small_text_and_a_low_dpi_to_the_floors():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2), dpi=72)
    ax = fig.subplots()
    ax.set_title("tiny", fontsize=6)
    ax.text(0, 0, "big", fontsize=14)
    assert too_small(fig) == ["dpi 72", "'tiny' at 6 pt"]
    readable(fig)
    assert too_small(fig) == [] and fig.get_dpi() == DPI
    sizes = {t.get_text(): t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)}
    assert sizes["tiny"] == SMALL and sizes["big"] == 14  # larger text is left alone


def test_no_lesson_or_solution_asks_for_less_than_100_dpi_or_9_pt():
    import re
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[1]
    small = re.compile(r"\b(dpi=(\d+)|fontsize=(\d+(?:\.\d+)?)|labelsize=(\d+(?:\.\d+)?))")
    found = []
    for path in sorted([*root.glob("notebooks/*.ipynb"), *root.glob("solutions/*.ipynb")]):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for match in small.finditer(cell.source if cell.cell_type == "code" else ""):
                dpi, *fonts = match.groups()[1:]
                font = next((float(f) for f in fonts if f), None)
                if (dpi and int(dpi) < DPI) or (font is not None and font < SMALL):
                    found.append(f"{path.name} cell {i}: {match.group(0)}")
    assert found == []
