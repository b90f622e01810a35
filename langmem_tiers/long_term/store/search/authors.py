"""Who said it: a query that names a speaker prefers what that speaker said.

In a conversation both sides talk about the same things, and address each other by name:
"Hey Melanie, how were the kids?" is Caroline's turn, yet it shares more words with "What
do Melanie's kids like?" than Melanie's own answer does. A question about a person is
answered by what that person said, so when a query names the author of some of its
candidates, those by someone else keep ``1 - AUTHOR_BOOST`` of their score
(:func:`author_boosts`). Only episodic memories have an author in this sense: they are what
was said in a conversation. A semantic fact or a procedural preference is about someone,
whoever stated it.

A memory's author is the store's reading of its value, not a field of the schema (values
are any JSON, :func:`author_terms`):

* the ``actor``, ``speaker`` or ``author`` field when it is a string (archived messages
  carry ``actor``: the message's role, ``human`` or ``ai``, which a query names as
  ``user`` or ``assistant``, :data:`ROLE_NAMES`);
* otherwise the label of a transcript line, ``Name: text``, at the start of ``content``:
  one to three words before a colon.

A name matches when a term of it is a term of the query, with the text analyser of BM25
on both sides, so ``Melanie's`` names ``Melanie`` and stop words name no one.

Example::

    >>> author_terms({"content": "Melanie: We went camping at the beach."})
    frozenset({'melani'})
    >>> sorted(author_terms({"content": "ok", "actor": "human"}))
    ['human', 'user']
    >>> author_boosts(
    ...     {"m1": frozenset({"melani"}), "m2": frozenset({"carolin"}), "m3": frozenset()},
    ...     {"melani", "kid", "like"},
    ... )
    {'m1': 1.0, 'm2': 0.67, 'm3': 1.0}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.ranking import Ranked, boost_reachable

__all__ = [
    "AUTHOR_BOOST",
    "AUTHOR_FIELDS",
    "ROLE_NAMES",
    "author_boosts",
    "author_terms",
    "by_author",
]

K = TypeVar("K", bound=Hashable)

#: The share of its score a candidate by someone else loses when the query names the author
#: of another candidate. Chosen on LoCoMo's tuning conversations (0-4) among 0.1-0.5: it
#: raised recall@10 through the store with both embedders, most on multi-hop questions,
#: and the held-out conversations (5-9) moved alike (the figures: docs/changes.md).
AUTHOR_BOOST = 0.33

#: Value fields that name who wrote or said a memory, first found wins.
AUTHOR_FIELDS = ("actor", "speaker", "author")

#: What people call the roles of chat messages (LangChain's message types).
ROLE_NAMES: dict[str, tuple[str, ...]] = {"human": ("user",), "ai": ("assistant",)}

# "Name: text", "Dr. Ana Ruiz: text": one to three words (letters, apostrophes, dots,
# hyphens) before a colon and a space, at the very start.
_LABEL = re.compile(r"([^\W\d_][\w'.\-]*(?: [^\W\d_][\w'.\-]*){0,2}):\s")


def author_terms(value: Mapping[str, Any]) -> frozenset[str]:
    """The analysed terms of a memory's author (empty when the value names none)."""
    for name in AUTHOR_FIELDS:
        author = value.get(name)
        if isinstance(author, str) and author.strip():
            return _role_terms(author)
    content = value.get("content")
    if isinstance(content, str):
        label = _LABEL.match(content)
        if label is not None:
            return _name_terms(label.group(1))
    return frozenset()


# A conversation has few speakers: their names are analysed once, not once a candidate.
@lru_cache(maxsize=4096)
def _name_terms(name: str) -> frozenset[str]:
    return frozenset(bm25.analyze(name))


@lru_cache(maxsize=4096)
def _role_terms(author: str) -> frozenset[str]:
    return _name_terms(" ".join((author, *ROLE_NAMES.get(author.strip().lower(), ()))))


def author_boosts(
    authors: Mapping[K, Collection[str]], query_terms: Collection[str]
) -> dict[K, float]:
    """Score multipliers in (0, 1] for candidates with these author terms (empty: no change).

    Only when the query names the author of some candidates: then those by someone else
    keep ``1 - AUTHOR_BOOST`` of their score, and those without an author all of it (nothing
    says who said them).
    """
    if not query_terms:
        return {}
    named = {key for key, terms in authors.items() if any(t in query_terms for t in terms)}
    others = {key for key, terms in authors.items() if terms and key not in named}
    if not named or not others:
        return {}
    kept = round(1.0 - AUTHOR_BOOST, 6)
    return {key: kept if key in others else 1.0 for key in authors}


def by_author(
    ranked: Sequence[Ranked],
    want: int,
    query_terms: Collection[str],
    authors_of: Callable[[str], Collection[str]],
) -> list[Ranked]:
    """``ranked`` (best first) with :func:`author_boosts` applied; its first ``want`` are
    exact. Only candidates that could still reach them have their authors read
    (``authors_of``; see :func:`~.ranking.boost_reachable`)."""
    if not query_terms:
        return list(ranked)
    return boost_reachable(
        ranked,
        want,
        AUTHOR_BOOST,
        lambda head: author_boosts({r.id: authors_of(r.id) for r in head}, query_terms),
    )
