"""Moving a store's memory to another backend: its export imported there, as it streams.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as source, \\
    ...         TieredMemoryStore.from_url("sqlite:///:memory:") as target:
    ...     source.put(("ann", "semantic"), "f1", {"content": "Ann likes tea"})
    ...     moved = migrate(source, target)
    ...     [i.key for i in target.search(("ann",))]
    ['f1']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langmem_tiers.portability.exporter import export_records
from langmem_tiers.portability.importer import ImportResult, import_records

__all__ = ["migrate"]


def migrate(
    source: Any,
    target: Any,
    scopes: Sequence[str] | None = None,
    *,
    progress: Callable[[Iterator[dict[str, Any]]], Iterator[dict[str, Any]]] | None = None,
) -> ImportResult:
    """Copy ``scopes`` (None: everything) of the ``source`` store into ``target``, with the
    vectors (used as they are when both stores embed alike, embedded again otherwise).
    ``progress`` wraps the stream of records (a progress bar). Idempotent, one transaction
    per scope on the target."""
    records = export_records(source, scopes, embeddings=True)
    return import_records(target, progress(records) if progress else records)
