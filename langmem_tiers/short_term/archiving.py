"""Consolidation without loss: write to long-term memory first, then remove from the window.

Each step is idempotent, so a retry after any failure converges on one copy:

- A summary's key is derived from the session and the ids it covers,
  ``summary:<session>:m1-m5``. Before summarising, the key is read; when it is already
  there (a crash came between persisting and removing), the summariser is not called again
  and only the removal is retried.
- An archived message's key is ``episode:<session>:<message id>``; keys already stored are
  not written again.
- After a failure (or in a new process), :func:`recover_flow` probes the keys a summary of
  the window's oldest messages could have, ``summary:<session>:<first>-<any>``, and finishes
  the removal of a summary that was persisted but whose messages were not yet removed, even
  when the window has grown since (a reset's summary covers "everything at the time").

If the summariser, the store (or its embedder) or the log fails, nothing was removed: the
window is exactly as it was and the next add tries again.

Memories are written with a :class:`~langmem_tiers.short_term.effects.WriteCall`: through
the memory engine's write pipeline with the package's store (a user fact that contradicts
an older one supersedes it), as plain puts with any other ``BaseStore``.

Memories written (``scope`` is the user or the session, see ``namespace_for``):

- ``(scope, "semantic")``, ``summary:...``: ``{"content", "key_concepts", "session_id",
  "source_message_ids", "category": "conversation_summary", "summary_style",
  "first_message_at", "last_message_at"}``
- ``(scope, "episodic")``, ``episode:...``: ``{"content", "session_id", "actor",
  "message_id", "tier1", "tier2", "event_timestamp"}``
- ``(scope, "semantic")``, ``fact:<session>:<message id>``: what one message stated,
  :func:`fact_value` (the one value of a fact, whoever writes it: the per-user target
  here, the chat graphs' save of a turn): ``{"content", "facts", "category": "user_fact",
  "speaker", "session_id", "source_message_ids"}``. Facts written by earlier releases may
  carry their session as ``source_session_id`` (top level, or under ``metadata``):
  :func:`fact_session_id` reads either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp

from langmem_tiers.errors import ModelError
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.short_term.effects import Flow, LogCall, StoreCall, SummarizeCall, WriteCall
from langmem_tiers.short_term.log import RemoveOp
from langmem_tiers.short_term.policies import ConsolidationPlan
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers.base import Summary
from langmem_tiers.tiers.extraction import parse_tier1
from langmem_tiers.tiers.statements import fact_sentences, stated_facts

__all__ = [
    "FACT_CATEGORY",
    "INDEX_FIELDS",
    "consolidate_flow",
    "episode_key",
    "episode_value",
    "fact_key",
    "fact_session_id",
    "fact_value",
    "fact_write",
    "facts_flow",
    "persist_flow",
    "recover_flow",
    "states_facts",
    "summary_key",
    "summary_value",
]

Scope = str | tuple[str, ...]

INDEX_FIELDS = ["content"]
"""The value fields embedded for search."""

FACT_CATEGORY = "user_fact"
"""The ``category`` of a fact's value (:func:`fact_value`)."""


def summary_key(session_id: str, ids: Sequence[str]) -> str:
    """The key of the summary of messages ``ids`` (oldest first).

    >>> summary_key("s1", ["m1", "m2", "m3"])
    'summary:s1:m1-m3'
    """
    return f"summary:{session_id}:{ids[0]}-{ids[-1]}"


def episode_key(session_id: str, message_id: str) -> str:
    """The key of an archived message: ``episode:<session>:<id>``."""
    return f"episode:{session_id}:{message_id}"


def fact_key(session_id: str, message_id: str) -> str:
    """The key of the facts extracted from one user message: ``fact:<session>:<id>``."""
    return f"fact:{session_id}:{message_id}"


def fact_value(
    session_id: str,
    message_ids: Sequence[str],
    content: str,
    *,
    facts: str,
    speaker: str = "user",
) -> dict[str, Any]:
    """The semantic memory of what one message stated: the one value schema of a fact.

    ``session_id`` is a well-known key of the store (a column, shown by the inspector);
    ``facts`` the message's tier-1 facts ``key=value, ...`` that ``content`` holds;
    ``speaker`` ``user``, or ``assistant`` for a plan or decision it stated.

    >>> fact_value("s1", ["m3"], "The user's name is Jordan.", facts="user_name=Jordan")
    {'content': "The user's name is Jordan.", 'facts': 'user_name=Jordan',
     'category': 'user_fact', 'speaker': 'user', 'session_id': 's1',
     'source_message_ids': ['m3']}
    """
    return {
        "content": content,
        "facts": facts,
        "category": FACT_CATEGORY,
        "speaker": speaker,
        "session_id": session_id,
        "source_message_ids": list(message_ids),
    }


def fact_write(
    scope: Scope,
    session_id: str,
    message_ids: Sequence[str],
    content: str,
    *,
    facts: str,
    speaker: str = "user",
) -> PutOp:
    """The write of one message's facts: :func:`fact_value` at :func:`fact_key` of its
    first message, in the scope's semantic memory (a retry writes the same key)."""
    return PutOp(
        namespace_for(scope, "semantic"),
        fact_key(session_id, message_ids[0]),
        fact_value(session_id, message_ids, content, facts=facts, speaker=speaker),
        index=INDEX_FIELDS,
    )


def fact_session_id(value: Mapping[str, Any]) -> str | None:
    """The session a memory value comes from: ``session_id``, or the ``source_session_id``
    of a fact written by an earlier release (at the top level, or under ``metadata``).

    >>> fact_session_id({"session_id": "s2"}), fact_session_id({"source_session_id": "s1"})
    ('s2', 's1')
    >>> fact_session_id({"metadata": {"source_session_id": "s0"}}), fact_session_id({})
    ('s0', None)
    """
    metadata = value.get("metadata")
    nested = metadata.get("source_session_id") if isinstance(metadata, Mapping) else None
    for found in (value.get("session_id"), value.get("source_session_id"), nested):
        if isinstance(found, str):
            return found
    return None


def summary_value(session_id: str, plan: ConsolidationPlan, summary: Summary) -> dict[str, Any]:
    """The semantic memory of a summary."""
    return {
        "content": summary.text,
        "key_concepts": list(summary.key_concepts),
        "session_id": session_id,
        "source_message_ids": [r.id for r in plan.records],
        "category": "conversation_summary",
        "summary_style": plan.style,
        "first_message_at": plan.records[0].created_at,
        "last_message_at": plan.records[-1].created_at,
    }


def episode_value(session_id: str, record: MessageRecord) -> dict[str, Any]:
    """The episodic memory of one archived message, with its tiers."""
    return {
        "content": record.text,
        "session_id": session_id,
        "actor": record.role,
        "message_id": record.id,
        "tier1": record.tier1,
        "tier2": record.tier2,
        "event_timestamp": record.created_at,
    }


def _checked_summary(summary: object) -> Summary:
    if not isinstance(summary, Summary) or not isinstance(summary.text, str):
        raise ModelError(f"the summariser returned {summary!r:.120}, not a Summary.")
    if not summary.text.strip():
        raise ModelError("the summariser returned an empty summary; nothing was archived.")
    concepts = summary.key_concepts
    if not isinstance(concepts, (list, tuple)) or not all(isinstance(c, str) for c in concepts):
        raise ModelError(
            f"the summariser returned key_concepts {concepts!r:.120}, not a list of strings."
        )
    return Summary(summary.text.strip(), list(concepts))


def persist_flow(plan: ConsolidationPlan, *, session_id: str, scope: Scope) -> Flow[bool]:
    """Write the plan's memories; answers False when they were all there already."""
    if plan.kind == "summary":
        namespace = namespace_for(scope, "semantic")
        ids = [r.id for r in plan.records]
        key = summary_key(session_id, ids)
        (existing,) = yield StoreCall((GetOp(namespace, key),))
        if isinstance(existing, Item) and existing.value.get("source_message_ids") == ids:
            return False  # persisted by an attempt that failed before removing
        raw = yield SummarizeCall(tuple(r.to_message() for r in plan.records))
        value = summary_value(session_id, plan, _checked_summary(raw))
        yield WriteCall((PutOp(namespace, key, value, index=INDEX_FIELDS),))
        return True
    namespace = namespace_for(scope, "episodic")
    keys = [episode_key(session_id, r.id) for r in plan.records]
    found = yield StoreCall(tuple(GetOp(namespace, k) for k in keys))
    puts = tuple(
        PutOp(namespace, key, episode_value(session_id, record), index=INDEX_FIELDS)
        for key, record, item in zip(keys, plan.records, found, strict=True)
        if item is None
    )
    if puts:
        yield WriteCall(puts)
    return bool(puts)


def consolidate_flow(plan: ConsolidationPlan, *, session_id: str, scope: Scope) -> Flow[list[str]]:
    """Persist the plan, then remove its messages; answers the ids removed.

    Any failure propagates with the window untouched (nothing is removed before the
    memories are stored).
    """
    yield from persist_flow(plan, session_id=session_id, scope=scope)
    reason = "consolidated" if plan.kind == "summary" else "archived"
    ids = tuple(r.id for r in plan.records)
    (removed,) = yield LogCall((RemoveOp(session_id, ids, reason),))
    return list(removed)


def recover_flow(
    records: Sequence[MessageRecord], *, session_id: str, scope: Scope
) -> Flow[list[str]]:
    """Finish a consolidation that persisted a summary but did not remove its messages.

    Probes ``summary:<session>:<first>-<id>`` for every id of the window in one store
    batch; the longest summary found has its (still stored) messages removed. Answers the
    ids removed.
    """
    if not records:
        return []
    namespace = namespace_for(scope, "semantic")
    ids = [r.id for r in records]
    keys = [summary_key(session_id, ids[: i + 1]) for i in range(len(ids))]
    found = yield StoreCall(tuple(GetOp(namespace, k) for k in keys))
    for item in reversed(found):
        if not isinstance(item, Item):
            continue
        covered = item.value.get("source_message_ids")
        if not isinstance(covered, list):
            continue
        stored = tuple(i for i in ids if i in set(covered))
        if not stored:
            continue
        (removed,) = yield LogCall((RemoveOp(session_id, stored, "consolidated"),))
        return list(removed)
    return []


def stated_tier1(record: MessageRecord) -> str:
    """A user message's tier-1 facts that it states, ``key=value, ...`` (empty when it
    states none: a question, small talk; see :mod:`~langmem_tiers.tiers.statements`)."""
    facts = [f for f in parse_tier1(record.tier1 or "") if f.key not in {"topic", "note"}]
    kept = stated_facts(record.text, facts)
    if not kept or not fact_sentences(record.text, [f.value for f in kept]):
        return ""
    return ", ".join(f"{f.key}={f.value}" for f in kept)


def _same_facts(tier1: str, stated: str) -> bool:
    return [f for f in parse_tier1(tier1) if f.key not in {"topic", "note"}] == parse_tier1(stated)


def states_facts(record: MessageRecord) -> bool:
    """Whether a user message states facts: tier 1 beyond a topic, held by a sentence that
    is not a question, a hypothetical or small talk."""
    return bool(stated_tier1(record))


def facts_flow(records: Sequence[MessageRecord], *, session_id: str, scope: Scope) -> Flow[int]:
    """Store the tier-1 facts of user messages as semantic memories of the scope.

    Only the facts a message states count: a question, a hypothetical, a greeting or a
    "thanks" is not stored as a fact.

    The per-user target uses this after each exchange so that later sessions of the same
    user see them. Keys are per message, so a retry overwrites. Answers how many were put.
    """
    stated = [(r, stated_tier1(r)) for r in records if r.role == "human"]
    puts = tuple(
        fact_write(
            scope,
            session_id,
            [r.id],
            # The whole tier 1 (its topic too) unless a question's facts are in it.
            (r.tier1 or "") if _same_facts(r.tier1 or "", facts) else facts,
            facts=facts,
        )
        for r, facts in stated
        if facts
    )
    if puts:
        yield WriteCall(puts)
    return len(puts)
