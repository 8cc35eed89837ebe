"""One plot style for the course's pictures: legible on a laptop and on a Retina screen.

Every figure is drawn at ``DPI`` or more with no text under ``SMALL`` points; each picture
chooses its own size. ``readable(fig)`` is the last step of a picture: it raises the dpi and any
smaller text to those floors, so a dense heat map keeps readable labels wherever it is drawn.
"""

from __future__ import annotations

DPI = 100  # the floor for every course figure (matplotlib's own default)
SMALL = 9  # points: the smallest text in a figure (legends, ticks, heat-map cells)
NORMAL = 10  # points: titles and axis labels


def readable(fig):
    """Raise ``fig``'s dpi to ``DPI`` and every text under ``SMALL`` points to ``SMALL``; return
    ``fig``. Call it once the figure is drawn, before it is shown or saved."""
    from matplotlib.text import Text

    if fig.get_dpi() < DPI:
        fig.set_dpi(DPI)
    for text in fig.findobj(Text):
        if text.get_fontsize() < SMALL:
            text.set_fontsize(SMALL)
    return fig


def too_small(fig) -> list[str]:
    """What in ``fig`` falls below the floors: its dpi, or text under ``SMALL`` points (tests)."""
    from matplotlib.text import Text

    found = [f"dpi {fig.get_dpi():g}"] if fig.get_dpi() < DPI else []
    found += [f"{t.get_text()!r} at {t.get_fontsize():g} pt" for t in fig.findobj(Text)
              if t.get_text().strip() and t.get_fontsize() < SMALL]
    return found
