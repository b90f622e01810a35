"""Stores for the long-term memory spec, one per backend.

Every test that takes ``store``, ``twin`` or ``make_store`` runs once per backend in
``BACKENDS``. ``"reference"`` is LangGraph's own ``InMemoryStore``: the spec must pass
on it for every test that does not use the ``ours`` fixture, which marks behaviour
langmem_tiers adds on top of LangGraph's contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.base import NOT_PROVIDED, BaseStore, IndexConfig, NotProvided
from langgraph.store.memory import InMemoryStore

from .fakes import default_index

if TYPE_CHECKING:
    from conftest import Twin

BACKENDS = ["reference", "sqlite", "sqlite+qdrant", "postgres", "postgres+qdrant"]

# The root conftest is found through pytest, not by import: several test folders
# have a module called "conftest" and which one sys.modules holds depends on order.
_ROOT_CONFTEST = Path(__file__).resolve().parent.parent / "conftest.py"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test."""
    return str(request.param)


@pytest.fixture
def make_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., BaseStore]]:
    """A factory of set-up stores of ``backend``, all closed after the test.

    ``make_store()`` uses the default test index (fake keyword embeddings over the
    whole value), ``make_store(index=None)`` builds a store without vector search.
    """
    opened: list[BaseStore] = []
    stack = ExitStack()
    # Resolved now, so the schema outlives the stores (teardown runs in reverse order).
    new_schema = request.getfixturevalue("postgres_schemas") if "postgres" in backend else None

    def make(index: IndexConfig | NotProvided | None = NOT_PROVIDED) -> BaseStore:
        config = default_index() if isinstance(index, NotProvided) else index
        store: BaseStore
        if backend == "reference":
            store = InMemoryStore(index=config)
        elif backend == "sqlite":
            store = _open(stack, f"sqlite:///{tmp_path / f'store{len(opened)}.db'}", config)
        elif backend == "sqlite+qdrant":
            url = f"sqlite:///{tmp_path / f'store{len(opened)}.db'}"
            store = _open(stack, url, config, qdrant=":memory:")
        elif backend == "postgres":
            assert new_schema is not None
            store = _open(stack, new_schema(), config)
        elif backend == "postgres+qdrant":
            assert new_schema is not None
            store = _open(stack, new_schema(), config, qdrant=":memory:")
        else:
            raise ValueError(f"unknown backend {backend!r}")
        opened.append(store)
        return store

    with stack:
        yield make


def _open(stack: ExitStack, url: str, index: IndexConfig | None, **kwargs: Any) -> BaseStore:
    from langmem_tiers import TieredMemoryStore

    return stack.enter_context(TieredMemoryStore.from_url(url, index=index, **kwargs))


@pytest.fixture
def store(make_store: Callable[..., BaseStore]) -> BaseStore:
    """A store of the backend under test, with the default test index."""
    return make_store()


@pytest.fixture
def twin_of(mode: str, request: pytest.FixtureRequest) -> Callable[[Any], Twin]:
    """Wraps any object (a store built in the test, a tool, a graph) in a Twin of ``mode``."""
    root = request.config.pluginmanager.get_plugin(str(_ROOT_CONFTEST))
    assert root is not None, f"{_ROOT_CONFTEST} was not loaded"
    twin_class: type[Twin] = root.Twin
    return lambda obj: twin_class(obj, mode)


@pytest.fixture
def twin(store: BaseStore, twin_of: Callable[[Any], Twin]) -> Twin:
    """``store`` driven through its sync or its async methods."""
    return twin_of(store)


@pytest.fixture
def ours(backend: str) -> None:
    """Marks a langmem_tiers extension of the BaseStore contract: skipped on the reference."""
    if backend == "reference":
        pytest.skip("langmem_tiers extension; LangGraph's InMemoryStore does not promise it")
