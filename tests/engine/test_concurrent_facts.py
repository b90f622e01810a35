"""Concurrent contradicting facts about one subject end as some sequential order would.

Six threads, each on its own pooled connection, add a different value of the same
attribute of a subject that has no fact yet (strategy ``supersede``). Run one after
another, each fact supersedes the previous one: exactly one stays active, and every
other is superseded by a fact that exists. Without a lock per (scope, subject), every
writer sees no earlier fact and all six stay active on PostgreSQL.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.models import Memory

from .fakes import DIMS, WordEmbeddings

THREADS = 6
CITIES = ["Berlin", "Paris", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo", "Rome"]


def _race(engine: MemoryEngine, texts: list[str], subject: str | None) -> list[BaseException]:
    start = threading.Barrier(len(texts))
    failures: list[BaseException] = []

    def add(text: str) -> None:
        start.wait(30)
        try:
            engine.add_semantic("alice", text, subject=subject, strategy="supersede")
        except BaseException as err:
            failures.append(err)

    threads = [threading.Thread(target=add, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return failures


def _check_sequential(engine: MemoryEngine, texts: list[str]) -> None:
    facts = engine.memories("alice", kinds="semantic", statuses=None)
    assert sorted(m.content for m in facts) == sorted(texts)
    active = [m for m in facts if m.status == "active"]
    assert len(active) == 1, [m.content for m in active]
    by_id: dict[str, Memory] = {m.id: m for m in facts}
    for m in facts:
        if m.status == "superseded":
            assert m.value["superseded_by"] in by_id
    # A chain: following superseded_by from any fact ends at the active one.
    for m in facts:
        seen = 0
        while m.status != "active":
            m = by_id[m.value["superseded_by"]]
            seen += 1
            assert seen <= len(facts)


@pytest.mark.parametrize("subject", ["alice", None], ids=["subject", "no-subject"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_concurrent_first_facts_about_a_subject_leave_one_active(
    backend: str,
    subject: str | None,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path / 'facts.db'}"
    )
    index = {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["content"]}
    texts = [f"Alice lives in {city}" for city in CITIES[:THREADS]]
    with TieredMemoryStore.from_url(
        url, index=index, settings=Settings.from_env(environ={}), pool_size=THREADS
    ) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        assert _race(engine, texts, subject) == []
        _check_sequential(engine, texts)


def test_facts_about_other_subjects_do_not_wait_for_each_other(
    postgres_url: str,
) -> None:
    index = {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["content"]}
    with TieredMemoryStore.from_url(
        postgres_url, index=index, settings=Settings.from_env(environ={}), pool_size=THREADS
    ) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        failures: list[BaseException] = []
        start = threading.Barrier(THREADS)

        def add(n: int) -> None:
            start.wait(30)
            try:
                engine.add_semantic("alice", f"Pet{n} lives in {CITIES[n]}", subject=f"pet{n}")
            except BaseException as err:
                failures.append(err)

        threads = [threading.Thread(target=add, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert failures == []
        facts = engine.memories("alice", kinds="semantic")
        assert len(facts) == THREADS, "facts of different subjects replaced each other"
