"""Engines over every backend, driven through their sync or async methods.

``backend`` runs a test on SQLite, PostgreSQL (pgvector) and PostgreSQL with vectors in
Qdrant (local mode). PostgreSQL tests fail instead of skipping when ``CI=true`` and no
server is reachable (see the root conftest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine

from .fakes import DIMS, WordEmbeddings

if TYPE_CHECKING:
    from conftest import Twin

BACKENDS = ["sqlite", "postgres", "postgres+qdrant"]
_ROOT_CONFTEST = Path(__file__).resolve().parent.parent / "conftest.py"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test."""
    return str(request.param)


@pytest.fixture
def make_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., TieredMemoryStore]]:
    """A factory of set-up stores of ``backend`` with word embeddings over ``content``."""
    stack = ExitStack()
    new_schema = request.getfixturevalue("postgres_schemas") if "postgres" in backend else None
    opened: list[TieredMemoryStore] = []

    def make(*, embeddings: WordEmbeddings | None = None, **settings: Any) -> TieredMemoryStore:
        emb = embeddings or WordEmbeddings()
        index = {"dims": DIMS, "embed": emb, "fields": ["content"]}
        options: dict[str, Any] = {
            "index": index,
            "settings": Settings.from_env(environ={}, **settings),
        }
        if backend == "sqlite":
            url = f"sqlite:///{tmp_path / f'engine{len(opened)}.db'}"
        else:
            assert new_schema is not None
            url = new_schema()
            if backend == "postgres+qdrant":
                options["qdrant"] = ":memory:"
        store = stack.enter_context(TieredMemoryStore.from_url(url, **options))
        opened.append(store)
        return store

    with stack:
        yield make


@pytest.fixture
def make_engine(
    make_store: Callable[..., TieredMemoryStore],
) -> Callable[..., MemoryEngine]:
    """``make_engine(**engine_options, settings={...})``: an engine over a new store."""

    def make(*, settings: dict[str, Any] | None = None, **options: Any) -> MemoryEngine:
        store = make_store(**(settings or {}))
        return MemoryEngine(store, **options)

    return make


@pytest.fixture
def engine(make_engine: Callable[..., MemoryEngine]) -> MemoryEngine:
    """An offline engine over a store of the backend under test."""
    return make_engine()


@pytest.fixture
def twin_of(mode: str, request: pytest.FixtureRequest) -> Callable[[Any], Twin]:
    """Wraps an object in the root conftest's Twin, for ``mode``."""
    root = request.config.pluginmanager.get_plugin(str(_ROOT_CONFTEST))
    assert root is not None, f"{_ROOT_CONFTEST} was not loaded"
    twin_class: type[Twin] = root.Twin
    return lambda obj: twin_class(obj, mode)


@pytest.fixture
def twin(engine: MemoryEngine, twin_of: Callable[[Any], Twin]) -> Twin:
    """``engine`` driven through its sync or its async methods."""
    return twin_of(engine)
