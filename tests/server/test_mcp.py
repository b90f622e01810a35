"""The MCP server, driven by the SDK's own client over stdio and streamable HTTP.

Each test launches ``python -m langmem_tiers mcp`` as a real process on a temporary SQLite
file and talks to it with ``ClientSession``: what an MCP client such as a desktop app does.
Every exchange is recorded in a transcript that a failing test prints (``-s`` shows all).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from langmem_tiers import TieredMemoryStore
from langmem_tiers.server import ApiKeys
from tests.server.processes import free_port, server_process

ROOT = Path(__file__).resolve().parents[2]


class Transcript:
    """What the client sent and what the server answered, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, who: str, method: str, payload: Any) -> None:
        text = json.dumps(payload, ensure_ascii=False, default=str, sort_keys=True)
        self.lines.append(f"{who:>5} {method}: {text}")

    def __str__(self) -> str:
        return "\n".join(self.lines)


class Client:
    """A ``ClientSession`` that records each call (as ``scope``) in the transcript."""

    def __init__(self, session: ClientSession, transcript: Transcript, who: str) -> None:
        self.session = session
        self.transcript = transcript
        self.who = who

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """Call a tool that must succeed; its answer (one JSON text, nothing else)."""
        result = await self._call(tool, arguments)
        assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content is None  # the text is sent once, as JSON text
        assert len(result.content) == 1
        answer: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
        return answer

    async def error(self, tool: str, **arguments: Any) -> str:
        """Call a tool that must fail; the error text the client sees."""
        result = await self._call(tool, arguments)
        assert result.is_error, result.content
        text: str = result.content[0].text  # type: ignore[union-attr]
        return text

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        self.transcript.add(self.who, f"tools/call {tool}", _short(arguments))
        result = await self.session.call_tool(tool, arguments)
        text = result.content[0].text if result.content else None  # type: ignore[union-attr]
        answer = {"isError": True, "text": text} if result.is_error else _short(text)
        self.transcript.add("srv", tool, answer)
        return result

    async def resource(self, uri: str) -> Any:
        self.transcript.add(self.who, "resources/read", uri)
        result = await self.session.read_resource(uri)
        data = json.loads(result.contents[0].text)  # type: ignore[union-attr]
        self.transcript.add("srv", uri, _short(result.contents[0].text))  # type: ignore[union-attr]
        return data


def _short(payload: Any) -> Any:
    """``payload`` for the transcript, its long strings cut."""
    if isinstance(payload, str):
        return payload if len(payload) <= 300 else f"{payload[:300]}... ({len(payload)} chars)"
    if isinstance(payload, dict):
        return {k: _short(v) for k, v in payload.items()}
    return payload


@pytest.fixture
def transcript(request: pytest.FixtureRequest) -> Iterator[Transcript]:
    record = Transcript()
    yield record
    print(f"\n--- MCP transcript of {request.node.name} ---\n{record}")


def _env() -> dict[str, str]:
    # The server process imports this tree's package, offline, with no local settings.
    keep = {k: v for k, v in os.environ.items() if not k.startswith("LANGMEM_TIERS_")}
    return {**keep, "PYTHONPATH": str(ROOT)}


@asynccontextmanager
async def stdio_session(url: str, scope: str, transcript: Transcript) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "langmem_tiers", "mcp", "--scope", scope, "--url", url],
        env=_env(),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        transcript.add(scope, "initialize", {"server": info.server_info.name})
        yield Client(session, transcript, scope)


# -- the same conversation over either transport -------------------------------------------


async def _remember_recall_forget_history(alice: Client) -> None:
    berlin_id, paris_id = await _remember(alice)
    await _recall(alice)
    await _history_and_forget(alice, berlin_id, paris_id)


async def _remember(alice: Client) -> tuple[str, str]:
    """Facts, a preference and an event; the ids of the Berlin fact and of the Paris one
    that superseded it."""
    tools = await alice.session.list_tools()
    assert {t.name for t in tools.tools} >= {
        "remember",
        "recall",
        "forget",
        "history",
        "read_memory",
        "entities",
        "relations",
    }

    berlin = await alice.call("remember", content="Alice lives in Berlin", subject="Alice")
    assert berlin["action"] == "created"
    again = await alice.call("remember", content="Alice lives in Berlin", subject="Alice")
    assert again["action"] == "duplicate"  # the engine's duplicate check, not a second copy
    assert again["memory"]["id"] == berlin["memory"]["id"]
    paris = await alice.call("remember", content="Alice lives in Paris", subject="Alice")
    assert paris["action"] == "superseded"
    assert [m["id"] for m in paris["changed"]] == [berlin["memory"]["id"]]
    assert paris["changed"][0]["status"] == "superseded"

    tea = await alice.call(
        "remember", content="Alice drinks tea", kind="preference", key="drink", value="tea"
    )
    assert tea["action"] == "created"
    tea_again = await alice.call(
        "remember", content="Alice drinks tea", kind="preference", key="drink", value="tea"
    )
    assert tea_again["action"] == "reinforced"
    event = await alice.call("remember", content="Alice booked a flight to Oslo", kind="event")
    assert event["memory"]["kind"] == "event"
    return berlin["memory"]["id"], paris["memory"]["id"]


async def _recall(alice: Client) -> None:
    found = await alice.call("recall", query="where does Alice live?", kinds=["fact"])
    hits = found["results"]
    assert [h["content"] for h in hits] == ["Alice lives in Paris"]  # the superseded one left
    assert set(hits[0]["scores"]) == {"semantic", "recency", "frequency", "confidence"}
    assert 0.0 < hits[0]["score"] <= 1.0
    # Only relevant memories: nothing about the weather, the Paris fact still passes.
    strict = await alice.call("recall", query="weather forecast", min_score=0.3)
    assert strict["results"] == []
    relevant = await alice.call(
        "recall", query="where does Alice live?", kinds=["fact"], min_score=0.3
    )
    assert [h["content"] for h in relevant["results"]] == ["Alice lives in Paris"]
    every = await alice.call(
        "recall", query="where does Alice live?", kinds=["fact"], include_inactive=True
    )
    assert {h["content"] for h in every["results"]} == {
        "Alice lives in Paris",
        "Alice lives in Berlin",
    }

    facts = await alice.resource("memory://facts")
    assert [f["content"] for f in facts] == ["Alice lives in Paris"]
    preferences = await alice.resource("memory://preferences")
    assert preferences["drink"]["value"] == "tea"
    assert preferences["drink"]["reinforcement_count"] == 2


async def _history_and_forget(alice: Client, berlin_id: str, paris_id: str) -> None:
    # merge: the existing fact gets a new version instead of a second fact
    merged = await alice.call(
        "remember", content="Alice lives in Lyon", subject="Alice", strategy="merge"
    )
    assert merged["action"] == "merged"
    assert merged["memory"]["id"] == paris_id
    assert merged["memory"]["version"] == 2
    history = await alice.call("history", memory_id=paris_id)
    assert [v["version"] for v in history["versions"]] == [1, 2]
    assert history["versions"][0]["content"] == "Alice lives in Paris"
    assert history["versions"][-1]["content"] == history["memory"]["content"]
    assert "Lyon" in history["memory"]["content"]
    superseded = await alice.call("history", memory_id=berlin_id)
    assert superseded["memory"]["status"] == "superseded"
    assert [v["content"] for v in superseded["versions"]] == ["Alice lives in Berlin"]

    gone = await alice.call("forget", memory_id=paris_id)
    assert gone["memory"]["status"] == "deleted"
    after = await alice.call("recall", query="where does Alice live?", kinds=["fact"])
    assert paris_id not in [h["id"] for h in after["results"]]
    assert paris_id not in [f["id"] for f in await alice.resource("memory://facts")]

    listed = await alice.session.list_resources()
    assert {str(r.uri) for r in listed.resources} == {
        "memory://facts",
        "memory://preferences",
        "memory://entities",
    }


async def _bad_input(alice: Client) -> None:
    empty = await alice.error("remember", content="")
    assert "content" in empty
    nul = await alice.error("remember", content="tea\x00time")
    assert "content" in nul
    assert "NUL" in nul
    no_key = await alice.error("remember", content="likes tea", kind="preference")
    assert "key is required" in no_key
    stray = await alice.error("remember", content="Alice is 30", key="age")
    assert "key is only for kind 'preference'" in stray
    kind = await alice.error("remember", content="x", kind="rumour")
    assert "kind" in kind
    limit = await alice.error("recall", query="tea", limit=0)
    assert "limit" in limit
    assert "min_score" in await alice.error("recall", query="tea", min_score=1.5)
    unknown = await alice.error("forget", memory_id="no-such-memory")
    assert "no-such-memory" in unknown
    history = await alice.error("history", memory_id="no-such-memory")
    assert "memory_id" in history
    # Nothing half-stored by the refused calls.
    assert await alice.resource("memory://facts") == []
    assert await alice.resource("memory://preferences") == {}


async def _entities(alice: Client) -> None:
    first = await alice.call(
        "remember", content="Hey Mel! I went hiking with my sister Anna in Yosemite.", kind="event"
    )
    second = await alice.call(
        "remember", content="Melanie said the Acme Corp office in Berlin is nice.", kind="event"
    )
    listed = await alice.call("entities")
    names = [e["name"] for e in listed["entities"]]
    assert set(names) == {"Melanie", "Anna", "Yosemite", "Acme Corp", "Berlin"}
    assert names[0] == "Melanie"  # most mentioned first
    melanie = listed["entities"][0]
    assert (melanie["aliases"], melanie["mentions"], melanie["kind"]) == (["Mel"], 2, "person")
    assert "scope" not in melanie
    assert listed["next_offset"] is None
    # Pages follow each other to the end.
    paged: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await alice.call("entities", limit=2, offset=offset)
        paged += [e["name"] for e in page["entities"]]
        offset = page["next_offset"]
        assert len(paged) <= len(names)
    assert paged == names

    one = await alice.call("entities", name="mel")
    assert one["entity"]["name"] == "Melanie"
    assert [m["id"] for m in one["memories"]] == [first["memory"]["id"], second["memory"]["id"]]
    assert (one["total_memories"], one["next_offset"]) == (2, None)
    rest = await alice.call("entities", name="Melanie", limit=1)
    assert [m["id"] for m in rest["memories"]] == [first["memory"]["id"]]
    assert rest["next_offset"] == 1
    unknown = await alice.error("entities", name="Nobody")
    assert "Nobody" in unknown
    assert "name" in unknown
    assert "limit" in await alice.error("entities", limit=0)
    resource = await alice.resource("memory://entities")
    assert [e["name"] for e in resource] == names
    assert resource[0]["aliases"] == ["Mel"]


async def _relations(alice: Client) -> None:
    berlin = await alice.call("remember", content="I live in Berlin.")
    await asyncio.sleep(0.05)
    moved = await alice.call("remember", content="I moved to Munich last month.")
    assert moved["action"] == "superseded"
    await alice.call("remember", content="My manager is Sarah.")
    # An instant after Berlin was stored and before the move.
    written = datetime.fromisoformat(berlin["memory"]["created_at"])
    moved_at = datetime.fromisoformat(moved["memory"]["created_at"])
    before_move = (written + (moved_at - written) / 2).isoformat()

    now = await alice.call("relations")
    assert [(r["subject"], r["relation"], r["object"]) for r in now["relations"]] == [
        ("user", "lives_in", "Munich"),
        ("user", "manager", "Sarah"),
    ]
    assert now["relations"][0]["memory_id"] == moved["memory"]["id"]
    assert now["relations"][0]["valid_until"] is None
    assert "scope" not in now["relations"][0]
    assert now["next_offset"] is None

    then = await alice.call("relations", as_of=before_move)
    assert [(r["relation"], r["object"]) for r in then["relations"]] == [("lives_in", "Berlin")]
    assert then["relations"][0]["memory_id"] == berlin["memory"]["id"]
    assert then["relations"][0]["valid_until"] is not None  # ended by the move
    assert (await alice.call("relations", subject="Sarah"))["relations"] == []
    first = await alice.call("relations", limit=1)
    assert [r["object"] for r in first["relations"]] == ["Munich"]
    assert first["next_offset"] == 1
    bad = await alice.error("relations", as_of="last tuesday")
    assert "as_of" in bad
    assert "last tuesday" in bad
    assert "limit" in await alice.error("relations", limit=0)


# -- stdio -----------------------------------------------------------------------------------


async def test_stdio_session(tmp_path: Path, transcript: Transcript) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with stdio_session(url, "alice", transcript) as alice:
        await _remember_recall_forget_history(alice)


async def test_stdio_bad_input_is_a_tool_error_naming_the_field(
    tmp_path: Path, transcript: Transcript
) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with stdio_session(url, "alice", transcript) as alice:
        await _bad_input(alice)


async def test_stdio_entities(tmp_path: Path, transcript: Transcript) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with stdio_session(url, "alice", transcript) as alice:
        await _entities(alice)
    async with stdio_session(url, "bob", transcript) as bob:
        assert (await bob.call("entities"))["entities"] == []
        assert "Melanie" in await bob.error("entities", name="Melanie")


async def test_stdio_relations(tmp_path: Path, transcript: Transcript) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with stdio_session(url, "alice", transcript) as alice:
        await _relations(alice)
    async with stdio_session(url, "bob", transcript) as bob:
        assert (await bob.call("relations"))["relations"] == []
        assert await bob.resource("memory://entities") == []


async def test_stdio_scopes_are_isolated(tmp_path: Path, transcript: Transcript) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with stdio_session(url, "alice@example.com", transcript) as alice:
        secret = await alice.call("remember", content="Alice's door code is 4711")
        secret_id = secret["memory"]["id"]
    async with stdio_session(url, "bob", transcript) as bob:
        found = await bob.call("recall", query="door code", include_inactive=True)
        assert found["results"] == []
        assert await bob.resource("memory://facts") == []
        assert secret_id in await bob.error("forget", memory_id=secret_id)
        assert "memory_id" in await bob.error("history", memory_id=secret_id)
    async with stdio_session(url, "alice@example.com", transcript) as alice:
        facts = await alice.resource("memory://facts")
        assert [f["id"] for f in facts] == [secret_id]  # bob's forget changed nothing
        hard = await alice.call("forget", memory_id=secret_id, hard=True)
        assert hard["memory"] is None
        assert await alice.resource("memory://facts") == []
        assert secret_id in await alice.error("history", memory_id=secret_id)


def test_cli_refuses_missing_scope_and_scope_over_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langmem_tiers.cli import main

    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    assert main(["mcp", "--url", url]) == 1
    assert "--scope is required over stdio" in capsys.readouterr().err
    assert main(["mcp", "--http", "--scope", "alice", "--url", url]) == 1
    assert "--scope is for stdio" in capsys.readouterr().err
    assert main(["mcp", "--http", "--port", "0", "--url", url]) == 2
    assert "--port" in capsys.readouterr().err


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_tiers.errors import MissingDependencyError
    from langmem_tiers.server import mcp as mcp_server

    # A None entry makes the import fail as if the SDK were not installed.
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'langmem-tiers\[mcp\]'"):
        mcp_server._require_sdk()


def test_importing_the_package_does_not_import_the_sdk() -> None:
    code = "import sys, langmem_tiers, langmem_tiers.server; print('mcp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# -- streamable HTTP -------------------------------------------------------------------------


class HttpServer:
    def __init__(self, url: str, keys: dict[str, str], key_ids: dict[str, str]) -> None:
        self.url = url
        self.keys = keys
        self.key_ids = key_ids


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    """``langmem-tiers mcp --http`` on a free loopback port, with keys made beforehand."""
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    with TieredMemoryStore.from_url(url) as store:
        keys = ApiKeys(store.db)
        made = {
            "alice": keys.create(scope="alice"),
            "bob": keys.create(scope="bob"),
            "admin": keys.create(admin=True),
            "revoked": keys.create(scope="alice"),
        }
        keys.revoke(made["revoked"].record.id)
    port = free_port()

    def listening() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    args = ["mcp", "--http", "--port", str(port), "--url", url, "--log-level", "info"]
    with server_process(args, env=_env(), log=tmp_path / "mcp-http.log", ready=listening):
        yield HttpServer(
            f"http://127.0.0.1:{port}/mcp",
            {name: created.key for name, created in made.items()},
            {name: created.record.id for name, created in made.items()},
        )


@asynccontextmanager
async def http_session(
    server: HttpServer, who: str, transcript: Transcript
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {server.keys[who]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        info = await session.initialize()
        transcript.add(who, "initialize", {"server": info.server_info.name})
        yield Client(session, transcript, who)


async def test_http_session(http_server: HttpServer, transcript: Transcript) -> None:
    async with http_session(http_server, "alice", transcript) as alice:
        await _remember_recall_forget_history(alice)


async def test_http_entities(http_server: HttpServer, transcript: Transcript) -> None:
    async with http_session(http_server, "alice", transcript) as alice:
        await _entities(alice)
    async with http_session(http_server, "bob", transcript) as bob:
        assert (await bob.call("entities"))["entities"] == []


async def test_http_relations(http_server: HttpServer, transcript: Transcript) -> None:
    async with http_session(http_server, "alice", transcript) as alice:
        await _relations(alice)
    async with http_session(http_server, "bob", transcript) as bob:
        assert (await bob.call("relations"))["relations"] == []


async def test_http_bad_input(http_server: HttpServer, transcript: Transcript) -> None:
    async with http_session(http_server, "alice", transcript) as alice:
        await _bad_input(alice)


async def test_http_keys_are_isolated(http_server: HttpServer, transcript: Transcript) -> None:
    async with (
        http_session(http_server, "alice", transcript) as alice,
        http_session(http_server, "bob", transcript) as bob,
    ):
        mine = await alice.call("remember", content="Alice's door code is 4711")
        await bob.call("remember", content="Bob's door code is 1234")
        assert [h["content"] for h in (await bob.call("recall", query="door code"))["results"]] == [
            "Bob's door code is 1234"
        ]
        assert mine["memory"]["id"] in await bob.error("forget", memory_id=mine["memory"]["id"])
        assert [f["content"] for f in await alice.resource("memory://facts")] == [
            "Alice's door code is 4711"
        ]
        assert [f["content"] for f in await bob.resource("memory://facts")] == [
            "Bob's door code is 1234"
        ]
    async with http_session(http_server, "admin", transcript) as admin:
        refused = await admin.error("recall", query="door code")
        assert "admin API key" in refused
        assert "keys create --scope" in refused


async def test_http_needs_a_valid_key(http_server: HttpServer) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as http:
        for key in (None, "lmt_000000000000_" + "a" * 43, http_server.keys["revoked"]):
            sent = {**headers, **({"Authorization": f"Bearer {key}"} if key else {})}
            answer = await http.post(http_server.url, json=body, headers=sent)
            assert answer.status_code == 401, (key, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
        ok = await http.post(
            http_server.url,
            json=body,
            headers={**headers, "Authorization": f"Bearer {http_server.keys['alice']}"},
        )
        assert ok.status_code == 200, ok.text


async def test_http_large_memories_fit_the_clients_message_limit(
    http_server: HttpServer, transcript: Transcript
) -> None:
    # The SDK's client refuses a server-sent event over 1 MiB: a memory of 300,000
    # characters (600,000 for the facts) is cut in answers, and read back whole in pages.
    big = "".join(f"Line {i:06d} of the long memory about harbours. " for i in range(13_000))
    assert len(big) > 600_000
    marker = "Line 000123 of the long memory"
    async with http_session(http_server, "alice", transcript) as alice:
        stored = await alice.call("remember", content=big[:300_000], kind="event")
        memory = stored["memory"]
        assert memory["content"] == big[: len(memory["content"])]
        assert memory["truncated"]["content"]["total_chars"] == 300_000
        found = await alice.call("recall", query="long memory about harbours", limit=3)
        hit = found["results"][0]
        assert hit["id"] == memory["id"]
        raw = json.dumps(found)
        assert raw.count(marker) == 1  # each text once per result
        assert len(raw.encode()) < 1_048_576 // 4
        read = hit["truncated"]["content"]["read_memory"]
        pages = [memory["content"][: read["offset"]]]
        while read is not None:
            page = await alice.call("read_memory", **read)
            pages.append(page["text"])
            nxt = page["next_offset"]
            read = None if nxt is None else {"memory_id": memory["id"], "offset": nxt}
            assert len(pages) < 20
        assert "".join(pages) == big[:300_000]
        fact = await alice.call("remember", content=big[:600_000], subject="harbours")
        assert fact["action"] == "created"
        facts = await alice.resource("memory://facts")
        assert [f["id"] for f in facts] == [fact["memory"]["id"]]
        assert facts[0]["truncated"]["content"]["total_chars"] == 600_000
        history = await alice.call("history", memory_id=fact["memory"]["id"])
        assert history["versions"][0]["truncated"]["content"]["read_memory"]["version"] == 1
        whole = await alice.call("read_memory", memory_id=fact["memory"]["id"], offset=599_990)
        assert whole["text"] == big[599_990:600_000]
        assert whole["next_offset"] is None
        past = await alice.error("read_memory", memory_id=fact["memory"]["id"], offset=700_000)
        assert "offset" in past


async def test_an_entity_with_a_huge_name_is_cut_in_answers(tmp_path: Path) -> None:
    # In process: the engine takes entity names a caller passes with an event, of any size.
    from langmem_tiers import MemoryEngine
    from langmem_tiers.server.mcp import build_mcp_server

    huge = "Harbour" + "x" * 300_000
    async with TieredMemoryStore.afrom_url(f"sqlite:///{tmp_path / 'big.db'}") as store:
        engine = MemoryEngine(store)
        await engine.aadd_episodic("alice", "We met at the harbour.", entities=[huge])
        server = build_mcp_server(engine, scope="alice")
        budget = engine.settings.mcp_answer_chars
        result = await server.call_tool("entities", {})
        text = result.content[0].text  # type: ignore[attr-defined]
        assert len(text) < budget + 10_000
        (shown,) = [e for e in json.loads(text)["entities"] if e["name"].startswith("Harbour")]
        assert huge.startswith(shown["name"])
        assert shown["truncated"]["name"]["total_chars"] == len(huge)


async def test_a_relation_with_a_huge_object_is_cut_in_answers(tmp_path: Path) -> None:
    # In process: a statement's object is as long as its text is.
    from langmem_tiers import MemoryEngine
    from langmem_tiers.server.mcp import build_mcp_server

    huge = "Berlin" + "x" * 300_000
    async with TieredMemoryStore.afrom_url(f"sqlite:///{tmp_path / 'big.db'}") as store:
        engine = MemoryEngine(store)
        await engine.aadd_semantic("alice", f"I live in {huge}.")
        server = build_mcp_server(engine, scope="alice")
        budget = engine.settings.mcp_answer_chars
        result = await server.call_tool("relations", {})
        text = result.content[0].text  # type: ignore[attr-defined]
        assert len(text) < budget + 10_000
        (shown,) = json.loads(text)["relations"]
        assert (shown["subject"], shown["relation"]) == ("user", "lives_in")
        assert huge.lower().startswith(shown["object"].lower())
        assert shown["truncated"]["object"]["total_chars"] == len(huge)
