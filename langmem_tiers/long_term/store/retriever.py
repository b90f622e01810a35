"""``TieredMemoryRetriever``: a scope's long-term memory as a LangChain retriever.

:meth:`TieredMemoryStore.as_retriever <langmem_tiers.TieredMemoryStore.as_retriever>`
builds one. It searches the scope's namespaces with the store's hybrid ranking and
answers LangChain ``Document`` objects: the memory's text as ``page_content``, and in
``metadata`` its ``key``, ``namespace``, ``kind``, stored ``value``, combined ``score``
and the score's components (``scores``: semantic, recency, frequency, confidence).

Example:
    >>> from langmem_tiers import TieredMemoryStore, namespace_for
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(namespace_for("alice", "semantic"), "f1", {"content": "Alice lives in Oslo"})
    ...     store.put(namespace_for("bob", "semantic"), "f2", {"content": "Bob lives in Rome"})
    ...     docs = store.as_retriever("alice", k=3).invoke("where does Alice live?")
    >>> [(d.page_content, d.metadata["kind"]) for d in docs]
    [('Alice lives in Oslo', 'semantic')]
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.store.base import SearchItem, SearchOp
from pydantic import ConfigDict

from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.store.scope import MEMORY_KINDS, namespace_for

if TYPE_CHECKING:
    from langmem_tiers.long_term.store.store import TieredMemoryStore

__all__ = ["TieredMemoryRetriever"]

_MAX_K = 1000
# Pages of a search for two of the three kinds; a scope where the third kind crowds out
# the other two beyond this answers fewer than k documents.
_MAX_PAGES = 10


class TieredMemoryRetriever(BaseRetriever):
    """Retrieves the memories of one scope that best match a query, best first.

    Args:
        store: the store to search.
        scope: the agent or user id (or a tuple of ids for a nested scope).
        kinds: only these kinds (``episodic``, ``semantic``, ``procedural``); ``None``
            searches everything under the scope.
        filter: a filter on the stored values (the store's ``search`` filter syntax).
        k: documents at most.
        min_score: leave out results whose combined score is below this (in [0, 1]).

    Raises:
        ValidationError: an invalid ``k``, ``min_score`` or ``kinds``;
            ``InvalidNamespaceError`` for an invalid ``scope``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    scope: str | tuple[str, ...]
    kinds: tuple[str, ...] | None = None
    filter: dict[str, Any] | None = None
    k: int = 4
    min_score: float | None = None

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)  # pydantic checks the types
        # Checked after pydantic, which would wrap this package's errors in its own.
        self._check()

    def _check(self) -> None:
        if isinstance(self.k, bool) or not 1 <= self.k <= _MAX_K:
            raise ValidationError(f"k must be a whole number from 1 to {_MAX_K}, got {self.k!r}.")
        if self.min_score is not None and not 0.0 <= self.min_score <= 1.0:
            raise ValidationError(
                f"min_score must be in [0, 1] (the hybrid score's range), got {self.min_score!r}."
            )
        if self.kinds is not None:
            unknown = [kind for kind in self.kinds if kind not in MEMORY_KINDS]
            if unknown or not self.kinds:
                raise ValidationError(
                    f"kinds must be a non-empty list of {', '.join(MEMORY_KINDS)}, "
                    f"got {list(self.kinds)!r}."
                )
        self.prefixes()  # an invalid scope fails here, not at the first query

    def prefixes(self) -> list[tuple[str, ...]]:
        """The namespace prefix searched: the scope's, or one kind's."""
        kinds = self._wanted()
        if kinds is not None and len(kinds) == 1:
            return [namespace_for(self.scope, kinds[0])]  # type: ignore[arg-type]
        return [namespace_for(self.scope, "semantic")[:-1]]

    def _wanted(self) -> list[str] | None:
        """The kinds to keep, or None for all of them."""
        if self.kinds is None:
            return None
        wanted = list(dict.fromkeys(self.kinds))
        return None if len(wanted) == len(MEMORY_KINDS) else wanted

    def _search(self, query: str) -> Generator[SearchOp, list[SearchItem], list[Document]]:
        """The searches to run, as a generator the sync and async methods drive.

        One kind, or all of them, is one search. Scores are relative to the candidates
        of one search, so two kinds are not two searches merged: the scope is searched
        page by page and the other kind left out, until ``k`` are found.
        """
        prefix = self.prefixes()[0]
        wanted = self._wanted()
        page = self.k if wanted is None or len(wanted) == 1 else max(3 * self.k, 30)
        items: list[SearchItem] = []
        for number in range(_MAX_PAGES):
            found = yield SearchOp(
                prefix, filter=self.filter, limit=page, offset=number * page, query=query
            )
            items.extend(item for item in found if wanted is None or _kind(item) in wanted)
            if len(items) >= self.k or len(found) < page:
                break
        if self.min_score is not None:
            floor = self.min_score
            items = [item for item in items if (item.score or 0.0) >= floor]
        return [_document(item) for item in items[: self.k]]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        store: TieredMemoryStore = self.store
        flow = self._search(query)
        try:
            op = next(flow)
            while True:
                op = flow.send(cast(list[SearchItem], store.batch([op])[0]))
        except StopIteration as done:
            documents: list[Document] = done.value
            return documents

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        store: TieredMemoryStore = self.store
        flow = self._search(query)
        try:
            op = next(flow)
            while True:
                op = flow.send(cast(list[SearchItem], (await store.abatch([op]))[0]))
        except StopIteration as done:
            documents: list[Document] = done.value
            return documents


def _kind(item: SearchItem) -> str | None:
    namespace = item.namespace
    return namespace[-1] if namespace and namespace[-1] in MEMORY_KINDS else None


def _document(item: SearchItem) -> Document:
    value = item.value
    content = value.get("content")
    text = content if isinstance(content, str) else json.dumps(value, ensure_ascii=False)
    namespace = tuple(item.namespace)
    return Document(
        id=item.key,
        page_content=text,
        metadata={
            "key": item.key,
            "namespace": list(namespace),
            "kind": _kind(item),
            "value": value,
            "score": item.score,
            "scores": dict(getattr(item, "scores", {}) or {}),
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
        },
    )
