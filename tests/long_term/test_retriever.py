"""``TieredMemoryStore.as_retriever``: a scope's memories as LangChain documents, in chains."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.errors import InvalidNamespaceError, ValidationError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.retriever import TieredMemoryRetriever


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TieredMemoryStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'retriever.db'}"
    else:
        url = request.getfixturevalue("postgres_schemas")()
    with TieredMemoryStore.from_url(url) as opened:
        engine = MemoryEngine(opened)
        engine.add_semantic("alice", "Alice lives in Berlin", subject="Alice")
        engine.add_semantic("alice", "Alice lives in Paris", subject="Alice")  # supersedes
        engine.add_semantic("alice", "Alice works on the RAI Chat project", category="work")
        engine.set_procedural("alice", "drink", "tea", content="Alice prefers tea to coffee")
        engine.add_episodic("alice", "Alice flew to Lisbon for the RAI Chat launch")
        engine.add_semantic("bob", "Bob lives in Rome", subject="Bob")
        yield opened


def _run(retriever: BaseRetriever, query: str, mode: str) -> list[Document]:
    if mode == "sync":
        return retriever.invoke(query)
    import asyncio

    return asyncio.run(retriever.ainvoke(query))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_documents_carry_value_key_namespace_and_scores(
    store: TieredMemoryStore, mode: str
) -> None:
    retriever = store.as_retriever("alice", kinds=["semantic"], k=5)
    assert isinstance(retriever, BaseRetriever)
    docs = _run(retriever, "where does Alice live?", mode)
    assert docs[0].page_content == "Alice lives in Paris"
    assert "Alice lives in Berlin" not in [d.page_content for d in docs]  # superseded
    assert {d.metadata["kind"] for d in docs} == {"semantic"}
    top = docs[0].metadata
    assert top["namespace"] == ["alice", "semantic"]
    assert docs[0].id == top["key"]
    assert top["value"]["content"] == "Alice lives in Paris"
    assert set(top["scores"]) == {"semantic", "recency", "frequency", "confidence"}
    assert 0 < top["score"] <= 1
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_scope_kinds_k_filter_and_min_score(store: TieredMemoryStore, mode: str) -> None:
    everything = _run(store.as_retriever("alice", k=10), "RAI Chat", mode)
    assert {d.metadata["kind"] for d in everything} == {"semantic", "procedural", "episodic"}
    assert all(d.metadata["namespace"][0] == "alice" for d in everything)  # never bob's

    two_kinds = _run(store.as_retriever("alice", kinds=["procedural", "episodic"]), "tea", mode)
    assert {d.metadata["kind"] for d in two_kinds} == {"procedural", "episodic"}
    assert two_kinds[0].page_content == "Alice prefers tea to coffee"

    assert len(_run(store.as_retriever("alice", k=1), "RAI Chat", mode)) == 1

    work = _run(store.as_retriever("alice", filter={"category": "work"}), "Alice", mode)
    assert [d.page_content for d in work] == ["Alice works on the RAI Chat project"]

    best = everything[0].metadata["score"]
    strict = _run(store.as_retriever("alice", k=10, min_score=best), "RAI Chat", mode)
    assert [d.id for d in strict] == [d.id for d in everything if d.metadata["score"] >= best]
    assert 1 <= len(strict) < len(everything)
    assert _run(store.as_retriever("alice", min_score=1.0), "RAI Chat", mode) == []


def test_in_a_chain(store: TieredMemoryStore) -> None:
    def render(docs: list[Document]) -> str:
        return "\n".join(f"- {d.page_content} ({d.metadata['score']:.2f})" for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "What you know about the user:\n{context}"), ("human", "{question}")]
    )
    retriever = store.as_retriever("alice", kinds=["semantic", "procedural"], k=2)
    chain = {
        "context": retriever | RunnableLambda(render),
        "question": RunnablePassthrough(),
    } | prompt
    value = chain.invoke("where does Alice live?")
    system = value.to_messages()[0].content
    assert "- Alice lives in Paris (" in system
    assert "Bob" not in system

    import asyncio

    async_value = asyncio.run(chain.ainvoke("where does Alice live?"))
    assert async_value.to_messages()[0].content.splitlines()[1] == system.splitlines()[1]

    contents = (retriever | RunnableLambda(lambda docs: [d.page_content for d in docs])).batch(
        ["tea", "where does Alice live?"]
    )
    assert contents[0][0] == "Alice prefers tea to coffee"
    assert contents[1][0] == "Alice lives in Paris"


@pytest.mark.parametrize(
    ("options", "error", "field"),
    [
        ({"k": 0}, ValidationError, "k must"),
        ({"min_score": 1.5}, ValidationError, "min_score"),
        ({"kinds": ["facts"]}, ValidationError, "kinds"),
        ({"kinds": []}, ValidationError, "kinds"),
    ],
)
def test_bad_settings_name_the_field(
    store: TieredMemoryStore, options: dict[str, Any], error: type[Exception], field: str
) -> None:
    with pytest.raises(error, match=field):
        store.as_retriever("alice", **options)


def test_bad_scope(store: TieredMemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="scope"):
        TieredMemoryRetriever(store=store, scope="")
    with pytest.raises(InvalidNamespaceError):
        store.as_retriever("al\x00ice")


def test_scope_ids_are_encoded_like_the_engine_does(store: TieredMemoryStore) -> None:
    store.put(namespace_for("carol@example.com", "semantic"), "c1", {"content": "Carol codes"})
    docs = store.as_retriever("carol@example.com").invoke("who codes?")
    assert [d.metadata["namespace"] for d in docs] == [["carol@example%2Ecom", "semantic"]]
