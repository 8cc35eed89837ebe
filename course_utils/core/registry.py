"""One registry type for everything the course looks up by id: exercises and drills.

A registry is filled once, on first use, by a loader that returns ``(id, item)`` pairs in their
natural order; a second item with the same id is an authoring error. A lookup with a typo
suggests the closest ids.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownId(KeyError):
    """No item with that id; the message suggests close ids."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0])


class Registry(Generic[T]):
    """Items of one kind ("exercise", "drill") by id, loaded lazily by ``loader``."""

    def __init__(self, kind: str, loader: Callable[[], Iterable[tuple[str, T]]]):
        self.kind, self._loader, self._items = kind, loader, None

    def _all(self) -> dict[str, T]:
        if self._items is None:
            found: dict[str, T] = {}
            for key, item in self._loader():
                if key in found:
                    raise ValueError(f"{self.kind} id {key} declared twice")
                found[key] = item
            self._items = found
        return self._items

    def get(self, key: str) -> T:
        """The item with this id; ``UnknownId`` (a KeyError) names close ids for a typo."""
        try:
            return self._all()[key]
        except (KeyError, TypeError):
            close = difflib.get_close_matches(str(key), list(self._all()), n=3)
            tip = f" Did you mean {', '.join(close)}?" if close else ""
            raise UnknownId(f"no {self.kind} '{key}'.{tip}") from None

    def ids(self) -> list[str]:
        """Every id, in the loader's order."""
        return list(self._all())

    def items(self) -> list[T]:
        """Every item, in the loader's order."""
        return list(self._all().values())

    def __contains__(self, key: object) -> bool:
        return key in self._all()
