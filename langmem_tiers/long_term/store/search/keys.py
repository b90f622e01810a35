"""The index terms a memory gets beside its text: its time and its facts.

* the time terms of its event time (:func:`~langmem_tiers.long_term.store.search.time.time_terms`),
  so "May 2023" finds the memories of May 2023, and of the times its text names relative
  to it (:func:`~langmem_tiers.long_term.store.search.time.mentioned_time_terms`), so
  "yesterday I went bowling", said on 17 March, is found by "on March 16";
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
from langmem_tiers.long_term.store.search.time import mentioned_time_terms, time_terms

__all__ = ["extra_terms"]


def extra_terms(record: ItemRecord) -> list[str]:
    """Time terms of the record's event time and of the times its text names, then the
    analysed terms of its facts.

    Memory kinds only: a plain document (no memory namespace) is indexed as it is.
    """
    if record.kind is None:
        return []
    out: list[str] = []
    if record.event_at is not None:
        out = time_terms(record.event_at)
        out.extend(mentioned_time_terms(record.text, record.event_at, out))
    facts = fact_text(record.value)
    if facts:
        out.extend(bm25.analyze(facts))
    return out
