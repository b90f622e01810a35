"""Serving under concurrency: reads that never queue for SQLite's write lock, the
PostgreSQL pool the app opens, and several worker processes on one port."""

from __future__ import annotations

import gc
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from langmem_tiers import MemoryEngine, TieredMemoryStore
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.server import ApiKeys, create_app, serve
from langmem_tiers.server.app import OPTIONS_ENV, create_app_from_environment
from tests.conftest import Twin
from tests.server.processes import free_port

V1 = "/api/v1"


@contextmanager
def _writer_holding_the_lock(path: Path) -> Iterator[None]:
    """Another connection in the middle of a write transaction (the write lock held)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE lmt_meta SET value = value WHERE name = 'dims'")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _no_waiting(store: TieredMemoryStore) -> None:
    # A read that wanted the write lock now fails at once instead of after 30 s.
    store.db.conn.execute("PRAGMA busy_timeout = 0")


async def test_a_key_is_verified_while_another_connection_writes(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "keys.db"
    with TieredMemoryStore.from_url(f"sqlite:///{path}") as store:
        keys = Twin(ApiKeys(store.db), mode)
        created = await keys.create(scope="agent-a")
        assert await keys.verify(created.key) is not None  # writes the last-use time
        _no_waiting(store)
        with _writer_holding_the_lock(path):
            found = await keys.verify(created.key)
            wrong = await keys.verify(created.key[:-1] + ("A" if created.key[-1] != "A" else "B"))
        assert found is not None
        assert found.scope == "agent-a"
        assert wrong is None


async def test_a_search_does_not_take_the_write_lock(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "search.db"
    with TieredMemoryStore.from_url(f"sqlite:///{path}") as store:
        engine = Twin(MemoryEngine(store), mode)
        stored = await engine.add_episodic("agent-a", "Dana adopted a grey cat named Miso")
        _no_waiting(store)
        with _writer_holding_the_lock(path):
            found = await engine.retrieve("agent-a", "Dana's cat", limit=5)
        assert [m.id for m in found] == [stored.id]
    # The access the search buffered is written when the store closes.
    with TieredMemoryStore.from_url(f"sqlite:///{path}") as store:
        memory = MemoryEngine(store).get("agent-a", stored.id)
        assert memory is not None
        assert memory.access_count >= 1


def test_the_api_authenticates_and_retrieves_while_another_connection_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "api.db"
    with TieredMemoryStore.from_url(f"sqlite:///{path}") as store:
        key = ApiKeys(store.db).create(scope="agent-a").key
        headers = {"Authorization": f"Bearer {key}"}
        with TestClient(create_app(store)) as client:
            stored = client.post(
                f"{V1}/memory/episodic", json={"content": "Ravi moved to Lisbon"}, headers=headers
            )
            assert stored.status_code == 201, stored.text
            _no_waiting(store)
            with _writer_holding_the_lock(path):
                found = client.post(
                    f"{V1}/memory/retrieve", json={"query": "where is Ravi"}, headers=headers
                )
        assert found.status_code == 200, found.text
        assert [r["memory"]["content"] for r in found.json()["results"]] == ["Ravi moved to Lisbon"]


def test_the_app_opens_a_postgres_pool_of_pool_size_without_jit(postgres_url: str) -> None:
    app = create_app(postgres_url, pool_size=3)
    with TestClient(app) as client:
        assert client.get(f"{V1}/health").json()["status"] == "ok"
        store = app.state.langmem_tiers.store
        assert store.db.conn.max_size == 3

        async def jit() -> str:
            async with store.db.conn.connection() as conn:
                cur = await conn.execute("SHOW jit")
                row = await cur.fetchone()
                return str(row[0])

        portal = client.portal
        assert portal is not None  # set while the client is open
        assert portal.call(jit) == "off"


@pytest.mark.parametrize(
    ("option", "value"), [("pool_size", 0), ("workers", 0), ("max_body_bytes", -1)]
)
def test_serve_refuses_bad_counts_before_starting(option: str, value: int) -> None:
    with pytest.raises(ConfigurationError, match=f"{option} must be a whole number >= 1"):
        serve("sqlite:///:memory:", **{option: value})  # type: ignore[arg-type]


def test_a_worker_without_the_options_of_serve_says_how_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(OPTIONS_ENV, raising=False)
    with pytest.raises(ConfigurationError, match="langmem-tiers serve"):
        create_app_from_environment()


@pytest.fixture
def unfrozen_heap() -> Iterator[None]:
    """The collector's view of the heap restored after the test (freezing is process-wide)."""
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


@pytest.mark.parametrize("freeze", [False, True])
def test_a_served_app_hides_its_startup_heap_from_the_collector(
    tmp_path: Path, freeze: bool, unfrozen_heap: None
) -> None:
    app = create_app(f"sqlite:///{tmp_path / 'heap.db'}", freeze_startup_heap=freeze)
    assert gc.get_freeze_count() == 0  # not before start-up
    with TestClient(app) as client:
        assert client.get(f"{V1}/health").status_code == 200
        frozen = gc.get_freeze_count()
    if freeze:
        assert frozen > 10_000  # the modules, classes and functions loaded
    else:
        assert frozen == 0


def test_the_app_of_a_worker_process_freezes_its_startup_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unfrozen_heap: None
) -> None:
    options = {"url": f"sqlite:///{tmp_path / 'worker.db'}", "model": None}
    monkeypatch.setenv(
        OPTIONS_ENV, json.dumps({**options, "max_body_bytes": 1_000_000, "pool_size": 1})
    )
    with TestClient(create_app_from_environment()) as client:
        assert client.get(f"{V1}/health").status_code == 200
        assert gc.get_freeze_count() > 10_000


def _workers(pid: int) -> list[int]:
    """Child processes of ``pid`` started by multiprocessing's spawn (uvicorn's workers)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            command = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in text and b"spawn_main" in command:
            found.append(int(status.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="counts worker processes in /proc")
def test_serve_runs_several_worker_processes_on_one_port(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    with TieredMemoryStore.from_url(url) as store:
        key = ApiKeys(store.db).create(scope="agent-a").key
    headers = {"Authorization": f"Bearer {key}"}
    port = free_port()
    command = [
        sys.executable, "-m", "langmem_tiers", "--url", url, "serve",
        "--port", str(port), "--workers", "2", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                if httpx.get(f"{base}{V1}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not answer within 60 s"
            time.sleep(0.2)
        assert len(_workers(process.pid)) == 2
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            for n in range(6):
                response = client.post(
                    f"{V1}/memory/episodic", json={"content": f"visit {n} to the museum"}
                )
                assert response.status_code == 201, response.text
            found = client.post(f"{V1}/memory/retrieve", json={"query": "museum", "limit": 10})
            assert found.status_code == 200, found.text
            assert len(found.json()["results"]) == 6
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    assert process.returncode == 0
