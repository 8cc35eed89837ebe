"""Small helpers shared by the course's widgets."""

from __future__ import annotations


def bundle(widget, text: str, **kwargs) -> dict:
    """A widget's display bundle with a short, stable text/plain (what nbval and terminals see)."""
    data = widget._repr_mimebundle_(**kwargs)
    data = dict(data[0] if isinstance(data, tuple) else data)
    data["text/plain"] = text
    return data
