"""What searches read off memories' values, kept by item and value.

A search reads something of each candidate that could reach its page (the author of a
turn, whether a text says when): reading a value (JSON) costs more than the rest of the
ranking. Such a reading depends on the value alone, so ``(item id, hash of its stored JSON
text)`` keys it for as long as this process runs, whoever wrote the item and however (an
update that leaves ``updated_at`` alone included).

Example::

    >>> seen = ValueReadings[int]()
    >>> seen.get("m1", hash('{"content": "hi"}'), lambda: 2)
    2
    >>> seen.get("m1", hash('{"content": "hi"}'), lambda: 3)  # kept
    2
    >>> seen.get("m1", hash('{"content": "bye"}'), lambda: 3)  # another value
    3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ValueReadings"]

T = TypeVar("T")


class ValueReadings(Generic[T]):
    """One reading of memories' values, by item and version of the value. At
    :data:`MAX_ENTRIES` it starts over."""

    MAX_ENTRIES = 100_000

    def __init__(self) -> None:
        self._read: dict[tuple[str, object], T] = {}

    def get(self, item_id: str, version: object, read: Callable[[], T]) -> T:
        """The reading of ``item_id`` at ``version`` (of its value); ``read`` makes it on a
        miss."""
        key = (item_id, version)
        try:
            return self._read[key]
        except KeyError:
            if len(self._read) >= self.MAX_ENTRIES:
                self._read = {}
            found = self._read[key] = read()
            return found
