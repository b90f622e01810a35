"""The index terms a memory gets beside its text: its time and its facts.

* the time terms of its event time (:func:`~langmem_tiers.long_term.store.search.time.time_terms`),
  so "May 2023" finds the memories of May 2023;
* the terms of its extracted facts
  (:func:`~langmem_tiers.long_term.store.search.facts.fact_text`), so a question in the
  words of a fact's key finds the message the fact came from.

Example::

    >>> from datetime import datetime, timezone
    >>> from langmem_tiers.long_term.store.records import validate_value
    >>> record = validate_value(("u", "episodic"), "m1", {
    ...     "content": "I can't stand cilantro", "tier1": "dislikes=cilantro",
    ...     "event_timestamp": "2023-05-08T13:56:00+00:00"}, max_chars=10_000)
    >>> extra_terms(record)
    ['@2023', '@2023-05', '@may', '@2023-05-08', '@monday', 'dislik', 'dislik', 'hate', 'avoid', 'cilantro']
"""

from __future__ import annotations

from langmem_tiers.long_term.store.records import ItemRecord
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.facts import fact_text
from langmem_tiers.long_term.store.search.time import time_terms

__all__ = ["extra_terms"]


def extra_terms(record: ItemRecord) -> list[str]:
    """Time terms of the record's event time, then the analysed terms of its facts.

    Memory kinds only: a plain document (no memory namespace) is indexed as it is.
    """
    if record.kind is None:
        return []
    out = time_terms(record.event_at) if record.event_at is not None else []
    facts = fact_text(record.value)
    if facts:
        out.extend(bm25.analyze(facts))
    return out
