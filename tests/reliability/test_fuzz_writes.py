"""Property-based fuzz of every public write path with hostile text.

Store put, engine adds, the agent middleware, the HTTP API, the MCP tools and the CLI's
ingest are each given text with NUL bytes, lone surrogates, numbers and dates far out of
range, megabyte strings and deeply nested JSON. Each must either take the write or refuse
it with the package's own error (a 4xx over HTTP, a tool error over MCP, an exit code from
the CLI), and the next valid write must work: no bare ``ValueError``, ``RecursionError``
or ``OverflowError``, and no session or scope left unable to take a write.

``EXAMPLES`` examples a case keep the whole module to a few seconds; the README's
Reliability section gives the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from langmem_tiers import MemoryEngine, TieredMemoryMiddleware, TieredMemoryStore
from langmem_tiers.cli.main import main
from langmem_tiers.config import Settings
from langmem_tiers.errors import LangmemTiersError
from tests.graph.fakes import ToolCallingFake

#: Examples each case tries (hypothesis' own default is 100).
EXAMPLES = 6

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_FAR_OUT = [
    "The first cities appeared about 6000 years ago in Mesopotamia.",
    "Stars formed 13000000000 years ago, and we met yesterday.",
    "In 99999999999999999999999 days, or next 10000000000000 months.",
    "A number too long to read: " + "9" * 5_000 + " weeks ago.",
    "On 9999-12-31 and 0001-01-01 and 2023-02-30 and May 99999.",
    "the past 100000000000000000 years",
]

_surrogates = st.text(
    alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3
)

hostile_text = st.one_of(
    st.text(max_size=40),  # includes NUL and other control characters
    st.tuples(st.text(max_size=10), _surrogates, st.text(max_size=10)).map("".join),
    st.sampled_from(_FAR_OUT),
    st.tuples(st.sampled_from(_FAR_OUT), st.text(max_size=10)).map(" ".join),
    st.sampled_from(["x" * 1_000_001, "é" * 100_000 + " in 6000 years", "\x00" * 10]),
)


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value


hostile_extra = st.one_of(
    st.none(),
    st.integers(min_value=-(10**400), max_value=10**400).map(lambda n: {"n": n}),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: {"x": f}),
    st.sampled_from([1, 50, 5_000]).map(lambda d: {"deep": _deep(d)}),
    st.sampled_from(["99999-01-01", "-0001-01-01", "2023-13-45", "1e400"]).map(
        lambda t: {"event_timestamp": t}
    ),
    st.dictionaries(hostile_text, st.integers(), max_size=2),
)


#: Tried by every case on every run, before the generated examples.
KNOWN_TEXTS = [*_FAR_OUT, "abc\x00def", "caf\udce9 \udcff", "x" * 1_000_001, ""]
KNOWN_EXTRAS = [
    None,
    {"deep": _deep(5_000)},
    {"n": 10**400},
    {"x": float("inf")},
    {"event_timestamp": "99999-01-01"},
]


def _known(*names: str) -> Any:
    """Decorates a ``@given`` test with :data:`KNOWN_TEXTS` (and, for ``extra``, with
    :data:`KNOWN_EXTRAS`) as explicit examples."""

    def decorate(test: Any) -> Any:
        for i, text in enumerate(KNOWN_TEXTS):
            values: dict[str, Any] = {name: text for name in names if name != "extra"}
            if "extra" in names:
                values["extra"] = KNOWN_EXTRAS[i % len(KNOWN_EXTRAS)]
            test = example(**values)(test)
        return test

    return decorate


def _value(text: str, extra: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"content": text}
    if isinstance(extra, dict):
        value.update(extra)
    return value


@pytest.fixture
def store(store_url: str) -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_url(store_url, settings=Settings()) as opened:
        yield opened


def _still_writes(store: TieredMemoryStore, ns: tuple[str, ...]) -> None:
    key = uuid.uuid4().hex  # the database outlives one example
    store.put(ns, key, {"content": f"A valid note about the harbour {key}."})
    item = store.get(ns, key)
    assert item is not None
    assert key in [i.key for i in store.search(ns, query=f"valid note harbour {key}")]


@FUZZ
@given(text=hostile_text, extra=hostile_extra)
@_known("text", "extra")
def test_store_put_refuses_or_stores(store: TieredMemoryStore, text: str, extra: Any) -> None:
    for ns in [("u1", "episodic"), ("docs",)]:
        before = store.get(ns, "k")
        try:
            store.put(ns, "k", _value(text, extra))
        except LangmemTiersError:
            after = store.get(ns, "k")  # refused: nothing of it stored
            assert (after and after.value) == (before and before.value)
        else:
            item = store.get(ns, "k")
            assert item is not None
        with contextlib.suppress(LangmemTiersError):
            store.search(ns, query=text[:200])
        _still_writes(store, ns)


@FUZZ
@given(text=hostile_text, key=hostile_text)
@_known("text", "key")
def test_engine_adds_refuse_or_store(store: TieredMemoryStore, text: str, key: str) -> None:
    engine = MemoryEngine(store)
    for add in (
        lambda: engine.add_episodic("agent-a", text),
        lambda: engine.add_semantic("agent-a", text),
        lambda: engine.set_procedural("agent-a", key or "k", text, content=text or "x"),
    ):
        with contextlib.suppress(LangmemTiersError):
            add()
    token = uuid.uuid4().hex  # the database outlives one example
    engine.add_episodic("agent-a", f"A valid event at the harbour {token}.")
    engine.add_semantic("agent-a", f"Jo works at the harbour {token}.")
    hits = engine.retrieve("agent-a", f"harbour {token}", limit=10)
    assert {f"A valid event at the harbour {token}.", f"Jo works at the harbour {token}."} <= {
        h.content for h in hits
    }


@FUZZ
@given(text=hostile_text)
@_known("text")
def test_middleware_saves_or_refuses_each_message(tmp_path: Path, text: str) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    with TieredMemoryStore.from_url(url, settings=Settings()) as store:
        middleware = TieredMemoryMiddleware(settings=Settings())
        model = ToolCallingFake(messages=iter(["Noted.", "Fine."]))
        agent = create_agent(
            model, middleware=[middleware], store=store, checkpointer=InMemorySaver()
        )
        thread = uuid.uuid4().hex  # the database outlives one example
        config: Any = {"configurable": {"thread_id": thread, "user_id": "u"}}
        agent.invoke({"messages": [("user", text or " ")]}, config)
        agent.invoke({"messages": [("user", "A valid message.")]}, config)
        stored = [r.text for r in middleware.memory(store).memory(thread, "u").records()]
        assert stored[-2:] == ["A valid message.", "Fine."]
        assert stored[-3] == "Noted."  # the first answer, saved whatever the message was


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Any, dict[str, str]]]:
    from fastapi.testclient import TestClient

    from langmem_tiers.server import ApiKeys, create_app

    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'api.db'}") as store:
        key = ApiKeys(store.db).create(scope="agent-a").key
        with TestClient(create_app(store), raise_server_exceptions=False) as client:
            yield client, {"Authorization": f"Bearer {key}"}


@FUZZ
@given(text=hostile_text, extra=hostile_extra)
@_known("text", "extra")
def test_http_writes_answer_201_or_4xx(
    api: tuple[Any, dict[str, str]], text: str, extra: Any
) -> None:
    client, auth = api
    bodies = [
        ("/api/v1/memory/episodic", {"content": text}),
        ("/api/v1/memory/semantic", {"content": text, **(extra or {})}),
    ]
    for path, body in bodies:
        try:
            raw = json.dumps(body, ensure_ascii=True).encode()
        except (ValueError, RecursionError):
            continue  # not JSON a client could send
        response = client.post(
            path, content=raw, headers={**auth, "content-type": "application/json"}
        )
        assert response.status_code < 500, response.text
    ok = client.post("/api/v1/memory/episodic", json={"content": "A valid visit."}, headers=auth)
    assert ok.status_code == 201, ok.text


@FUZZ
@given(text=hostile_text)
@_known("text")
def test_mcp_tools_answer_or_refuse(tmp_path: Path, text: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from langmem_tiers.server.mcp import build_mcp_server

    async def run() -> None:
        url = f"sqlite:///{tmp_path / 'mcp.db'}"
        async with TieredMemoryStore.afrom_url(url) as store:
            server = build_mcp_server(MemoryEngine(store), scope="alice")
            for arguments in (
                {"content": text or "x"},
                {"content": text or "x", "kind": "event"},
                {"content": "tea", "kind": "preference", "key": text or "k", "value": text},
            ):
                with contextlib.suppress(ToolError):
                    await server.call_tool("remember", arguments)
            with contextlib.suppress(ToolError):
                await server.call_tool("recall", {"query": text or "x"})
            fact = f"Alice rows on the harbour with {uuid.uuid4().hex}."
            await server.call_tool("remember", {"content": fact})
            found = await server.call_tool("recall", {"query": fact, "limit": 3})
            answer = json.loads(found.content[0].text)  # type: ignore[union-attr]
            assert fact in [r["content"] for r in answer["results"]]

    asyncio.run(run())


@FUZZ
@given(text=hostile_text, at=st.sampled_from([None, "99999-01-01", "0001-01-01", "x"]))
@example(text=_FAR_OUT[0], at=None)
@example(text="abc\x00def", at="99999-01-01")
@example(text="caf\udce9", at=None)
def test_cli_ingest_imports_or_exits_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, at: str | None
) -> None:
    url = f"sqlite:///{tmp_path / 'ingest.db'}"
    bad = tmp_path / "bad.jsonl"
    row: dict[str, Any] = {"role": "user", "content": text}
    if at is not None:
        row["at"] = at
    bad.write_text(
        json.dumps(row, ensure_ascii=True)
        + "\n"
        + json.dumps({"role": "assistant", "content": "ok"})
        + "\n",
        encoding="utf-8",
    )
    common = ["--scope", "u1", "--session", "s1", "--url", url, "--no-progress", "--json"]
    assert main(["ingest", str(bad), *common]) in (0, 1, 2)
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"role": "user", "content": "A valid line."}) + "\n", encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["ingest", str(good), *common]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 1
