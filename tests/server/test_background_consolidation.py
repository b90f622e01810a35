"""The server consolidates off the request path: an episodic add that makes its scope due
answers before the consolidation it started, and nothing is lost when that fails."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import BaseMessage

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.server import ApiKeys, create_app
from langmem_tiers.server.app import ServerState
from langmem_tiers.server.consolidation import BackgroundConsolidation
from langmem_tiers.tiers.base import Summarizer
from langmem_tiers.tiers.summarizer import OfflineSummarizer

V1 = "/api/v1"
THRESHOLD = 3


class GatedSummarizer(Summarizer):
    """The offline summary, once the test opens the gate; fails when told to."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.fail = False
        self.calls = 0

    def summarize(self, messages: Sequence[BaseMessage]) -> Any:
        self.calls += 1
        self.started.set()
        if not self.gate.wait(30):
            raise TimeoutError("the test never opened the gate")
        if self.fail:
            raise RuntimeError("summariser down")
        return OfflineSummarizer().summarize(messages)


class Served:
    def __init__(self, client: TestClient, state: ServerState, key: str) -> None:
        self.client = client
        self.state = state
        self.headers = {"Authorization": f"Bearer {key}"}

    def add(self, n: int) -> dict[str, Any]:
        response = self.client.post(
            f"{V1}/memory/episodic",
            json={"content": f"Maya booked room {n} for the offsite"},
            headers=self.headers,
        )
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    def kinds(self) -> dict[str, int]:
        assert self.state.engine is not None
        counts: dict[str, int] = {}
        for memory in self.state.engine.memories("agent-a", statuses=None, limit=1_000):
            counts[memory.kind] = counts.get(memory.kind, 0) + 1
        return counts

    def settle(self) -> None:
        deadline = time.monotonic() + 30
        while self.state.consolidation.running:
            assert time.monotonic() < deadline, "the background consolidation never ended"
            time.sleep(0.01)


@pytest.fixture
def summarizer() -> GatedSummarizer:
    return GatedSummarizer()


@pytest.fixture
def served(store_url: str, summarizer: GatedSummarizer) -> Iterator[Served]:
    settings = Settings(consolidation_threshold=THRESHOLD)
    with TieredMemoryStore.from_url(store_url, settings=settings) as store:
        key = ApiKeys(store.db).create(scope="agent-a").key
        app = create_app(store)
        state: ServerState = app.state.langmem_tiers
        # The app's own engine, with a summariser the test holds back.
        state.engine = MemoryEngine(
            store,
            settings=settings,
            summarizer=summarizer,
            consolidation_due=state.consolidation.due,
        )
        with TestClient(app) as client:
            served = Served(client, state, key)
            yield served
            summarizer.gate.set()
            served.settle()


def test_the_add_that_makes_a_scope_due_answers_before_its_consolidation(
    served: Served, summarizer: GatedSummarizer
) -> None:
    added = [served.add(n) for n in range(THRESHOLD)]

    # The consolidation started and waits on the summariser; the add has answered.
    assert summarizer.started.wait(10)
    assert served.state.consolidation.running == {"agent-a"}
    assert all(memory["consolidated_into_id"] is None for memory in added)
    # Adds meanwhile answer too, and leave the scope to the consolidation running.
    served.add(THRESHOLD)
    assert summarizer.calls == 1

    summarizer.gate.set()
    served.settle()
    assert served.kinds() == {"episodic": THRESHOLD + 1, "semantic": 1}


def test_a_failed_background_consolidation_loses_no_episode(
    served: Served, summarizer: GatedSummarizer, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer.fail = True
    summarizer.gate.set()
    for n in range(THRESHOLD):
        served.add(n)
    served.settle()
    assert "consolidating scope 'agent-a' in the background failed" in caplog.text
    assert served.kinds() == {"episodic": THRESHOLD}

    # The next add over the threshold consolidates them all.
    summarizer.fail = False
    served.add(THRESHOLD)
    served.settle()
    assert served.kinds() == {"episodic": THRESHOLD + 1, "semantic": 1}


def test_without_the_apps_loop_an_add_consolidates_itself(store_url: str) -> None:
    settings = Settings(consolidation_threshold=THRESHOLD)
    with TieredMemoryStore.from_url(store_url, settings=settings) as store:
        state = ServerState()
        state.attach(store, None, None)
        assert state.engine is not None
        last = None
        for n in range(THRESHOLD):
            last = state.engine.add_episodic("agent-a", f"Maya booked room {n}")
        assert last is not None
        assert last.consolidated_into_id is not None


async def test_adds_arriving_within_the_delay_are_consolidated_together(tmp_path: Path) -> None:
    settings = Settings(consolidation_threshold=THRESHOLD)
    async with TieredMemoryStore.afrom_url(
        f"sqlite:///{tmp_path / 'delay.db'}", settings=settings
    ) as store:
        background = BackgroundConsolidation(delay=1.0)
        engine = MemoryEngine(store, settings=settings, consolidation_due=background.due)
        background.start(engine)
        for n in range(3 * THRESHOLD):
            await engine.aadd_episodic("alice", f"Alice booked room {n}", session_id="s")
        assert background.running == {"alice"}
        await background.stop(wait=True)
        (summary,) = await engine.amemories("alice", kinds="semantic")
        assert len(summary.value["source_episodic_ids"]) == 3 * THRESHOLD


@pytest.mark.parametrize("delay", [-1, float("nan"), "1", True])
def test_a_bad_delay_is_refused(delay: Any) -> None:
    with pytest.raises(ConfigurationError, match="delay must be a number of seconds >= 0"):
        BackgroundConsolidation(delay=delay)
