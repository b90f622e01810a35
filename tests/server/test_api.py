"""The HTTP API through the real app, on SQLite and PostgreSQL: every endpoint, auth,
isolation between agents, bad input and oversized bodies."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi.testclient import TestClient

from langmem_tiers import TieredMemoryStore
from langmem_tiers.errors import BackendError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.server import ApiKeys, create_app
from tests.server.conftest import Api, make_api

V1 = "/api/v1"


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _error(response: Any, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["error"] == error
    assert body["message"]
    assert "Traceback" not in response.text
    return body


def _episodic(api: Api, headers: dict[str, str], content: str, **extra: Any) -> Any:
    response = api.client.post(
        f"{V1}/memory/episodic", json={"content": content, **extra}, headers=headers
    )
    return _ok(response, 201)


def _semantic(api: Api, headers: dict[str, str], content: str, **extra: Any) -> Any:
    response = api.client.post(
        f"{V1}/memory/semantic", json={"content": content, **extra}, headers=headers
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


# -- health, OpenAPI, unknown routes -------------------------------------------------------


def test_health_checks_the_database_without_a_key(api: Api) -> None:
    body = _ok(api.client.get(f"{V1}/health"))
    assert body["status"] == "ok"
    assert body["database"] in ("sqlite", "postgres")
    assert body["schema_versions"]["store"] >= 1
    assert body["schema_versions"]["api_keys"] == 1  # the keys the test signs in with


def test_health_is_503_when_the_database_fails(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(flow: Any) -> Any:
        flow.close()
        raise BackendError("the database failed: OperationalError: connection refused")

    monkeypatch.setattr(api.store.db, "arun", broken)
    body = api.client.get(f"{V1}/health").json()
    assert body == {"status": "unavailable", "database": "unreachable"}
    # Any request that needs the database: 503 with a generic message, no driver details.
    response = api.client.post(f"{V1}/memory/retrieve", json={"query": "x"}, headers=api.a)
    body = _error(response, 503, "database_unavailable")
    assert "OperationalError" not in body["message"]


def test_openapi_lists_every_endpoint_and_the_key_schemes(api: Api) -> None:
    schema = _ok(api.client.get("/openapi.json"))
    expected = {
        ("post", "/memory/episodic"),
        ("post", "/memory/semantic"),
        ("put", "/memory/semantic/{memory_id}"),
        ("post", "/memory/procedural"),
        ("get", "/memory/procedural/key/{key}"),
        ("post", "/memory/retrieve"),
        ("get", "/memory/temporal/evolution/{memory_id}"),
        ("post", "/memory/replay"),
        ("get", "/memory/timeline"),
        ("post", "/memory/consolidate"),
        ("post", "/memory/decay"),
        ("post", "/memory/forget"),
        ("get", "/health"),
        ("get", "/agents"),
        ("post", "/agents/erase"),
        ("get", "/agents/{agent_id}/entities"),
        ("get", "/agents/{agent_id}/entities/{name}"),
        ("get", "/agents/{agent_id}/relations"),
    }
    found = {
        (method, path.removeprefix(V1))
        for path, operations in schema["paths"].items()
        for method in operations
    }
    assert found == expected
    assert set(schema["components"]["securitySchemes"]) == {"bearer", "apiKey"}
    strategy = schema["components"]["schemas"]["SemanticIn"]["properties"]["strategy"]
    assert "supersede" in str(strategy)
    assert api.client.get("/docs").status_code == 200


def test_unknown_routes_and_methods_answer_json(api: Api) -> None:
    _error(api.client.get(f"{V1}/nope", headers=api.a), 404, "not_found")
    _error(api.client.delete(f"{V1}/memory/episodic", headers=api.a), 405, "method_not_allowed")


# -- authentication ----------------------------------------------------------------------------

PROTECTED = [
    ("post", "/memory/episodic", {"content": "x"}),
    ("post", "/memory/semantic", {"content": "x"}),
    ("put", "/memory/semantic/some-id", {"content": "x"}),
    ("post", "/memory/procedural", {"key": "k", "value": 1}),
    ("get", "/memory/procedural/key/k", None),
    ("post", "/memory/retrieve", {"query": "x"}),
    ("get", "/memory/temporal/evolution/some-id", None),
    ("post", "/memory/replay", {"at": "2026-01-01T00:00:00Z"}),
    ("get", "/memory/timeline", None),
    ("post", "/memory/consolidate", {}),
    ("post", "/memory/decay", {}),
    ("post", "/memory/forget", {"memory_id": "x"}),
    ("get", "/agents", None),
    ("post", "/agents/erase", {"agent_id": "agent-a"}),
    ("get", "/agents/agent-a/entities", None),
    ("get", "/agents/agent-a/entities/Melanie", None),
    ("get", "/agents/agent-a/relations", None),
]


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED)
def test_every_memory_endpoint_needs_a_valid_key(
    api: Api, method: str, path: str, body: dict[str, Any] | None
) -> None:
    def call(headers: dict[str, str]) -> Any:
        return api.client.request(method.upper(), V1 + path, json=body, headers=headers)

    missing = _error(call({}), 401, "unauthorized")
    assert "keys create" in missing["message"]
    assert call({}).headers["www-authenticate"] == "Bearer"
    wrong = "lmt_0123456789ab_" + "A" * 43
    _error(call({"Authorization": f"Bearer {wrong}"}), 401, "unauthorized")
    _error(call({"X-API-Key": "garbage"}), 401, "unauthorized")
    _error(call({"Authorization": f"Basic {api.key_a}"}), 401, "unauthorized")
    admin_only = path in ("/agents", "/agents/erase")
    assert call(api.a).status_code not in (401, 403) or admin_only


def test_both_headers_work_and_a_revoked_key_stops_at_once(api: Api) -> None:
    query = {"query": "anything"}
    _ok(api.client.post(f"{V1}/memory/retrieve", json=query, headers=api.a))
    _ok(api.client.post(f"{V1}/memory/retrieve", json=query, headers={"X-API-Key": api.key_a}))
    keys = ApiKeys(api.store.db)
    (record,) = keys.list_keys(scope="agent-a")
    keys.revoke(record.id)
    _error(api.client.post(f"{V1}/memory/retrieve", json=query, headers=api.a), 401, "unauthorized")


# -- the endpoints ---------------------------------------------------------------------------------


def test_episodic(api: Api) -> None:
    at = "2026-03-01T09:30:00+00:00"
    body = _ok(
        api.client.post(
            f"{V1}/memory/episodic",
            json={
                "content": "Deployed v2 to staging",
                "session_id": "s1",
                "event_timestamp": at,
                "actor": "ci",
                "action_type": "deploy",
                "entities": ["v2", "staging"],
                "metadata": {"build": 42},
            },
            headers=api.a,
        ),
        201,
    )
    assert body["kind"] == "episodic"
    assert body["scope"] == "agent-a"
    assert body["content"] == "Deployed v2 to staging"
    assert body["session_id"] == "s1"
    assert body["actor"] == "ci"
    assert datetime.fromisoformat(body["event_timestamp"]) == datetime.fromisoformat(at)


def test_semantic_conflicts_duplicates_and_strategies(api: Api) -> None:
    first = _semantic(api, api.a, "Alice lives in Berlin", subject="Alice")
    assert first["action"] == "created"
    moved = api.client.post(
        f"{V1}/memory/semantic",
        json={"content": "Alice lives in Paris", "subject": "Alice", "strategy": "supersede"},
        headers=api.a,
    )
    assert moved.status_code == 201
    moved_body = moved.json()
    assert moved_body["action"] == "superseded"
    assert [c["memory"]["id"] for c in moved_body["conflicts"] if c["conflict"]] == [
        first["memory"]["id"]
    ]
    again = api.client.post(
        f"{V1}/memory/semantic",
        json={"content": "Alice lives in Paris", "subject": "Alice"},
        headers=api.a,
    )
    assert again.status_code == 200
    assert again.json()["action"] == "duplicate"
    assert again.json()["memory"]["id"] == moved_body["memory"]["id"]
    rejected = api.client.post(
        f"{V1}/memory/semantic",
        json={"content": "Alice lives in Rome", "subject": "Alice", "strategy": "reject_new"},
        headers=api.a,
    )
    assert rejected.status_code == 200
    assert rejected.json()["action"] == "rejected"
    assert rejected.json()["memory"]["id"] == moved_body["memory"]["id"]
    both = _semantic(api, api.a, "Alice lives in Madrid", subject="Alice", strategy="keep_both")
    assert both["action"] == "kept_both"


def test_semantic_update_makes_versions(api: Api) -> None:
    created = _semantic(api, api.a, "The launch is on April 20", subject="launch")
    memory_id = created["memory"]["id"]
    updated = _ok(
        api.client.put(
            f"{V1}/memory/semantic/{memory_id}",
            json={"content": "The launch is on May 4", "confidence": 0.9, "reason": "moved"},
            headers=api.a,
        )
    )
    assert updated["version"] == 2
    assert updated["content"] == "The launch is on May 4"
    evolution = _ok(api.client.get(f"{V1}/memory/temporal/evolution/{memory_id}", headers=api.a))
    assert evolution["memory_id"] == memory_id
    assert [(v["version"], v["content"]) for v in evolution["versions"]] == [
        (1, "The launch is on April 20"),
        (2, "The launch is on May 4"),
    ]
    assert evolution["versions"][1]["reason"] == "moved"
    missing = api.client.put(
        f"{V1}/memory/semantic/no-such-id", json={"content": "x"}, headers=api.a
    )
    _error(missing, 404, "not_found")


def test_procedural_reinforces_and_is_found_by_key(api: Api) -> None:
    first = _ok(
        api.client.post(
            f"{V1}/memory/procedural",
            json={"key": "answer_style", "value": {"bullets": True}, "content": "Use bullets"},
            headers=api.a,
        )
    )
    again = _ok(
        api.client.post(
            f"{V1}/memory/procedural",
            json={"key": "answer_style", "value": {"bullets": True}},
            headers=api.a,
        )
    )
    assert (first["reinforcement_count"], again["reinforcement_count"]) == (1, 2)
    found = _ok(api.client.get(f"{V1}/memory/procedural/key/answer_style", headers=api.a))
    assert found["id"] == first["id"]
    assert found["value"]["value"] == {"bullets": True}
    _error(api.client.get(f"{V1}/memory/procedural/key/nothing", headers=api.a), 404, "not_found")


def test_retrieve_returns_component_scores(api: Api) -> None:
    _semantic(api, api.a, "Maya prefers green tea over coffee")
    _semantic(api, api.a, "The database is PostgreSQL")
    _episodic(api, api.a, "Maya ordered tea")
    body = _ok(
        api.client.post(
            f"{V1}/memory/retrieve", json={"query": "what does Maya drink?"}, headers=api.a
        )
    )
    results = body["results"]
    assert results[0]["memory"]["content"] in (
        "Maya prefers green tea over coffee",
        "Maya ordered tea",
    )
    for item in results:
        assert set(item["scores"]) == {"semantic", "recency", "frequency", "confidence"}
        assert all(0.0 <= v <= 1.0 for v in item["scores"].values())
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    only = _ok(
        api.client.post(
            f"{V1}/memory/retrieve",
            json={"query": "Maya tea", "kinds": ["episodic"], "limit": 1},
            headers=api.a,
        )
    )
    assert [r["memory"]["kind"] for r in only["results"]] == ["episodic"]


def test_replay_timeline_consolidate_decay_forget(api: Api) -> None:
    first = _semantic(api, api.a, "The budget is 12,000 euros", subject="budget")
    between = datetime.now(timezone.utc)
    episode = _episodic(api, api.a, "Ruth approved the budget", session_id="s9")
    replayed = _ok(
        api.client.post(f"{V1}/memory/replay", json={"at": between.isoformat()}, headers=api.a)
    )
    assert [m["id"] for m in replayed["memories"]] == [first["memory"]["id"]]
    early = api.client.post(
        f"{V1}/memory/replay", json={"at": "2000-01-01T00:00:00Z"}, headers=api.a
    )
    assert "before this scope's first event" in _error(early, 422, "invalid_input")["message"]

    events = _ok(api.client.get(f"{V1}/memory/timeline", headers=api.a))["events"]
    assert [e["memory_id"] for e in events] == [first["memory"]["id"], episode["id"]]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    none = _ok(
        api.client.get(
            f"{V1}/memory/timeline",
            params={"types": ["memory.forgotten"], "since": between.isoformat()},
            headers=api.a,
        )
    )
    assert none["events"] == []

    consolidated = _ok(api.client.post(f"{V1}/memory/consolidate", json={}, headers=api.a))
    assert consolidated["result"]["episodes"] == 1
    assert consolidated["result"]["memories"][0]["category"] == "episode_summary"
    again = _ok(api.client.post(f"{V1}/memory/consolidate", json={}, headers=api.a))
    assert again["result"]["episodes"] == 0  # idempotent

    later = (datetime.now(timezone.utc) + timedelta(days=3650)).isoformat()
    decayed = _ok(
        api.client.post(
            f"{V1}/memory/decay", json={"now": later, "agent_id": "agent-a"}, headers=api.root
        )
    )
    assert decayed["result"]["examined"] >= 2
    assert first["memory"]["id"] in decayed["result"]["decayed"]

    soft = _ok(
        api.client.post(f"{V1}/memory/forget", json={"memory_id": episode["id"]}, headers=api.a)
    )
    assert soft["memory"]["status"] == "deleted"
    hard = _ok(
        api.client.post(
            f"{V1}/memory/forget",
            json={"memory_id": episode["id"], "hard": True},
            headers=api.a,
        )
    )
    assert hard == {"memory": None, "hard": True}
    gone = api.client.post(f"{V1}/memory/forget", json={"memory_id": episode["id"]}, headers=api.a)
    _error(gone, 404, "not_found")
    types = [
        e["type"] for e in _ok(api.client.get(f"{V1}/memory/timeline", headers=api.a))["events"]
    ]
    # a hard delete erases the memory's events: content-free tombstones stay in their place
    assert "memory.erased" in types
    assert "memory.deleted" not in types


def test_agents_is_admin_only_and_counts_by_kind(api: Api) -> None:
    _semantic(api, api.a, "Alice likes jazz")
    _episodic(api, api.b, "Bob logged in")
    api.client.post(f"{V1}/memory/procedural", json={"key": "lang", "value": "en"}, headers=api.b)
    _error(api.client.get(f"{V1}/agents", headers=api.a), 403, "forbidden")
    agents = {
        a["agent_id"]: a for a in _ok(api.client.get(f"{V1}/agents", headers=api.root))["agents"]
    }
    assert set(agents) == {"agent-a", "agent-b"}
    assert (agents["agent-a"]["semantic"], agents["agent-a"]["total"]) == (1, 1)
    assert (agents["agent-b"]["episodic"], agents["agent-b"]["procedural"]) == (1, 1)


# -- isolation ---------------------------------------------------------------------------------


def test_one_agent_never_reaches_another_agents_memories(api: Api) -> None:
    secret = _semantic(api, api.a, "Agent A's launch code is 4711", subject="code")
    memory_id = secret["memory"]["id"]
    api.client.post(f"{V1}/memory/procedural", json={"key": "code", "value": "4711"}, headers=api.a)
    c = api.client
    # Another scope's memory ids are 404, exactly as ids that do not exist.
    for response in (
        c.put(f"{V1}/memory/semantic/{memory_id}", json={"content": "hacked"}, headers=api.b),
        c.get(f"{V1}/memory/temporal/evolution/{memory_id}", headers=api.b),
        c.post(f"{V1}/memory/forget", json={"memory_id": memory_id}, headers=api.b),
        c.post(f"{V1}/memory/forget", json={"memory_id": memory_id, "hard": True}, headers=api.b),
        c.get(f"{V1}/memory/procedural/key/code", headers=api.b),
    ):
        _error(response, 404, "not_found")
    results = _ok(
        c.post(f"{V1}/memory/retrieve", json={"query": "launch code 4711"}, headers=api.b)
    )
    assert results["results"] == []
    # Naming the other agent is refused, whatever the endpoint.
    for response in (
        c.post(
            f"{V1}/memory/retrieve", json={"query": "code", "agent_id": "agent-a"}, headers=api.b
        ),
        c.post(
            f"{V1}/memory/replay",
            json={"at": "2030-01-01T00:00:00Z", "agent_id": "agent-a"},
            headers=api.b,
        ),
        c.get(f"{V1}/memory/timeline", params={"agent_id": "agent-a"}, headers=api.b),
        c.post(f"{V1}/memory/consolidate", json={"agent_id": "agent-a"}, headers=api.b),
        c.post(f"{V1}/memory/decay", json={"agent_id": "agent-a"}, headers=api.b),
    ):
        _error(response, 403, "forbidden")
    # B's own timeline and replay hold nothing of A's.
    _episodic(api, api.b, "B was here")
    events = _ok(c.get(f"{V1}/memory/timeline", headers=api.b))["events"]
    assert {e["scope"] for e in events} == {"agent-b"}
    later = (datetime.now(timezone.utc) + timedelta(seconds=5)).isoformat()
    replayed = _ok(c.post(f"{V1}/memory/replay", json={"at": later}, headers=api.b))
    assert [m["content"] for m in replayed["memories"]] == ["B was here"]
    # A's memory is untouched.
    evolution = _ok(c.get(f"{V1}/memory/temporal/evolution/{memory_id}", headers=api.a))
    assert [v["content"] for v in evolution["versions"]] == ["Agent A's launch code is 4711"]


def test_admin_keys_name_the_agent(api: Api) -> None:
    secret = _semantic(api, api.a, "Agent A prefers dark mode")
    body = {"query": "dark mode"}
    missing = _error(
        api.client.post(f"{V1}/memory/retrieve", json=body, headers=api.root),
        422,
        "invalid_request",
    )
    assert missing["fields"][0]["field"] == "agent_id"
    found = _ok(
        api.client.post(
            f"{V1}/memory/retrieve", json={**body, "agent_id": "agent-a"}, headers=api.root
        )
    )
    assert [r["memory"]["id"] for r in found["results"]] == [secret["memory"]["id"]]
    evolution = api.client.get(
        f"{V1}/memory/temporal/evolution/{secret['memory']['id']}",
        params={"agent_id": "agent-b"},
        headers=api.root,
    )
    _error(evolution, 404, "not_found")


# -- bad input and sizes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/memory/episodic", {}, "content"),
        ("/memory/episodic", {"content": ""}, "content"),
        ("/memory/episodic", {"content": "x", "event_timestamp": "not a time"}, "event_timestamp"),
        ("/memory/episodic", {"content": "x", "colour": "red"}, "colour"),
        ("/memory/semantic", {"content": "x", "strategy": "yolo"}, "strategy"),
        ("/memory/semantic", {"content": "x", "confidence": 1.5}, "confidence"),
        ("/memory/procedural", {"value": 1}, "key"),
        ("/memory/retrieve", {"query": "x", "limit": 0}, "limit"),
        ("/memory/retrieve", {"query": "x", "limit": 101}, "limit"),
        ("/memory/retrieve", {"query": "x", "kinds": ["dreams"]}, "kinds.0"),
        ("/memory/replay", {}, "at"),
        ("/memory/forget", {"memory_id": 7}, "memory_id"),
    ],
)
def test_bad_bodies_are_422_naming_the_field(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    response = api.client.post(V1 + path, json=body, headers=api.a)
    error = _error(response, 422, "invalid_request")
    assert field in [f["field"] for f in error["fields"]]
    assert field.split(".")[0] in error["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/memory/episodic", {"content": "a\u0000b"}, "content"),
        ("/memory/episodic", {"content": "ok", "session_id": "s\u00001"}, "session_id"),
        ("/memory/episodic", {"content": "ok", "metadata": {"a": [{"b": "x\u0000"}]}}, "metadata"),
        ("/memory/episodic", {"content": "ok", "metadata": {"k\u0000": 1}}, "metadata"),
        ("/memory/semantic", {"content": "lone \ud800 surrogate"}, "content"),
        ("/memory/procedural", {"key": "k", "value": {"deep": "\u0000"}}, "value"),
        ("/memory/replay", {"at": "0001-01-01T00:00:00+05:00"}, "at"),
    ],
)
def test_text_no_backend_can_store_is_422_at_the_edge(
    api: Api, path: str, body: dict[str, Any], field: str
) -> None:
    # Sent as raw JSON: escapes such as \u0000 and \ud800 reach the server as they are.
    response = api.client.post(
        V1 + path,
        content=json.dumps(body, ensure_ascii=True).encode(),
        headers={**api.a, "Content-Type": "application/json"},
    )
    error = _error(response, 422, "invalid_request")
    assert field in [f["field"] for f in error["fields"]]


def test_json_nested_too_deep_is_422(api: Api) -> None:
    deep: Any = "leaf"
    for _ in range(70):
        deep = {"d": deep}
    response = api.client.post(
        f"{V1}/memory/episodic", json={"content": "ok", "metadata": deep}, headers=api.a
    )
    assert "64 levels" in _error(response, 422, "invalid_request")["message"]


def test_path_and_query_texts_are_checked_too(api: Api) -> None:
    response = api.client.get(f"{V1}/memory/temporal/evolution/a%00b", headers=api.a)
    assert "memory_id" in [f["field"] for f in _error(response, 422, "invalid_request")["fields"]]
    response = api.client.get(
        f"{V1}/memory/timeline", params={"types": ["memory.created\x00"]}, headers=api.a
    )
    _error(response, 422, "invalid_request")


def test_malformed_json_and_bad_query_parameters_are_422(api: Api) -> None:
    response = api.client.post(
        f"{V1}/memory/retrieve",
        content=b'{"query": ',
        headers={**api.a, "Content-Type": "application/json"},
    )
    _error(response, 422, "invalid_request")
    response = api.client.get(f"{V1}/memory/timeline", params={"limit": "x"}, headers=api.a)
    assert "limit" in [f["field"] for f in _error(response, 422, "invalid_request")["fields"]]


@pytest.fixture
def small_api(store_url: str) -> Iterator[Api]:
    with TieredMemoryStore.from_url(store_url) as store:
        yield from make_api(store, max_body_bytes=2_000)


def test_bodies_over_the_limit_are_413(small_api: Api) -> None:
    api = small_api
    fits = {"content": "x" * 1_500}
    _ok(api.client.post(f"{V1}/memory/episodic", json=fits, headers=api.a), 201)
    big = {"content": "x" * 5_000}
    body = _error(
        api.client.post(f"{V1}/memory/episodic", json=big, headers=api.a), 413, "payload_too_large"
    )
    assert "2000 bytes" in body["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"content": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    response = api.client.post(
        f"{V1}/memory/episodic",
        content=chunks(),
        headers={**api.a, "Content-Type": "application/json"},
    )
    _error(response, 413, "payload_too_large")
    # Nothing of the refused bodies was stored.
    stored = _ok(api.client.post(f"{V1}/memory/retrieve", json={"query": "x y"}, headers=api.a))
    assert [len(r["memory"]["content"]) for r in stored["results"]] == [1_500]


def test_bad_app_settings_are_refused(tmp_path: Any) -> None:
    from langmem_tiers.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="max_body_bytes"):
        create_app(f"sqlite:///{tmp_path / 'x.db'}", max_body_bytes=0)
    with pytest.raises(ConfigurationError, match="store_or_url"):
        create_app(42)  # type: ignore[arg-type]


# -- an app that opens its own store (async connection on PostgreSQL) ------------------------------


def test_app_from_a_url_opens_and_closes_its_store(store_url: str) -> None:
    with TieredMemoryStore.from_url(store_url) as store:
        key = ApiKeys(store.db).create(scope="agent-a").key
    headers = {"X-API-Key": key}
    app = create_app(store_url)
    with TestClient(app) as client:
        assert _ok(client.get(f"{V1}/health"))["status"] == "ok"
        created = _ok(
            client.post(f"{V1}/memory/semantic", json={"content": "Oslo is cold"}, headers=headers),
            201,
        )
        found = _ok(client.post(f"{V1}/memory/retrieve", json={"query": "Oslo"}, headers=headers))
        assert [r["memory"]["id"] for r in found["results"]] == [created["memory"]["id"]]
    assert app.state.langmem_tiers.store is None  # closed at shutdown


@pytest.mark.parametrize(
    "offset", [timedelta(days=3650), timedelta(days=-3650), timedelta(days=1, minutes=5)]
)
def test_an_agent_key_cannot_decay_far_from_the_server_clock(api: Api, offset: timedelta) -> None:
    fact = _semantic(api, api.a, "The budget is 12,000 euros", subject="budget")
    when = (datetime.now(timezone.utc) + offset).isoformat()
    refused = api.client.post(f"{V1}/memory/decay", json={"now": when}, headers=api.a)
    body = _error(refused, 422, "invalid_input")
    assert "within 1 day of the server's clock" in body["message"]
    assert body["fields"][0]["field"] == "now"
    kept = MemoryEngine(api.store).get("agent-a", fact["memory"]["id"])
    assert kept is not None
    assert (kept.status, kept.importance) == ("active", 1.0)
    # Near the clock it is allowed; an admin key may choose any instant.
    soon = (datetime.now(timezone.utc) + timedelta(hours=20)).isoformat()
    _ok(api.client.post(f"{V1}/memory/decay", json={"now": soon}, headers=api.a))
    _ok(
        api.client.post(
            f"{V1}/memory/decay", json={"now": when, "agent_id": "agent-a"}, headers=api.root
        )
    )


# -- entities ----------------------------------------------------------------------------------


def test_entities_list_pages_and_one_entity_with_its_memories(api: Api) -> None:
    c = api.client
    first = _episodic(api, api.a, "Hey Mel! I went hiking with my sister Anna in Yosemite.")
    second = _episodic(api, api.a, "Melanie said the Acme Corp office in Berlin is nice.")
    _semantic(api, api.b, "Melanie lives in Paris.")

    page = _ok(c.get(f"{V1}/agents/agent-a/entities", headers=api.a))
    found = {e["name"]: e for e in page["entities"]}
    assert set(found) == {"Melanie", "Anna", "Yosemite", "Acme Corp", "Berlin"}
    assert found["Melanie"]["aliases"] == ["Mel"]
    assert found["Melanie"]["mentions"] == 2
    assert found["Melanie"]["kind"] == "person"
    assert {e["agent_id"] for e in page["entities"]} == {"agent-a"}
    assert page["entities"][0]["name"] == "Melanie"  # most mentioned first
    assert (page["limit"], page["offset"]) == (100, 0)
    # Pages follow each other without overlap.
    names = [e["name"] for e in page["entities"]]
    pages = [
        _ok(
            c.get(f"{V1}/agents/agent-a/entities", params={"limit": 2, "offset": o}, headers=api.a)
        )["entities"]
        for o in (0, 2, 4)
    ]
    assert [e["name"] for p in pages for e in p] == names
    assert (
        _ok(c.get(f"{V1}/agents/agent-a/entities", params={"offset": 50}, headers=api.a))[
            "entities"
        ]
        == []
    )

    detail = _ok(c.get(f"{V1}/agents/agent-a/entities/mel", headers=api.a))
    assert detail["entity"]["name"] == "Melanie"
    assert [m["id"] for m in detail["memories"]] == [first["id"], second["id"]]
    # An admin key reads any agent through the path; B's Melanie is B's alone.
    other = _ok(c.get(f"{V1}/agents/agent-b/entities/Melanie", headers=api.root))
    assert [m["content"] for m in other["memories"]] == ["Melanie lives in Paris."]
    own = _ok(c.get(f"{V1}/agents/agent-b/entities", headers=api.b))["entities"]
    assert {e["name"] for e in own} == {"Melanie", "Paris"}

    # A name with a slash in it (one a caller passed with an event) is one path parameter.
    _ok(
        c.post(
            f"{V1}/memory/episodic",
            json={"content": "Played loud tonight.", "entities": ["AC/DC"]},
            headers=api.a,
        ),
        201,
    )
    band = _ok(c.get(f"{V1}/agents/agent-a/entities/AC/DC", headers=api.a))
    assert [m["content"] for m in band["memories"]] == ["Played loud tonight."]
    body = _error(c.get(f"{V1}/agents/agent-a/entities/Nobody", headers=api.a), 404, "not_found")
    assert "Nobody" in body["message"]


def test_entities_of_another_agent_are_refused_and_bad_pages_named(api: Api) -> None:
    c = api.client
    _ok(
        c.post(f"{V1}/memory/episodic", json={"content": "Anna lives in Porto."}, headers=api.a),
        201,
    )
    for response in (
        c.get(f"{V1}/agents/agent-a/entities", headers=api.b),
        c.get(f"{V1}/agents/agent-a/entities/Anna", headers=api.b),
        # The answer is the same whether the agent or the entity exists or not.
        c.get(f"{V1}/agents/nobody/entities/Nobody", headers=api.b),
    ):
        _error(response, 403, "forbidden")
    for params, field in (({"limit": 0}, "limit"), ({"offset": -1}, "offset")):
        body = _error(
            c.get(f"{V1}/agents/agent-a/entities", params=params, headers=api.a),
            422,
            "invalid_request",
        )
        assert field in json.dumps(body["fields"])
    _error(c.get(f"{V1}/agents/agent-a/entities/%20", headers=api.a), 422, "invalid_input")


# -- relations ---------------------------------------------------------------------------------


def _moved_from_berlin_to_munich(api: Api) -> tuple[Any, Any, str]:
    """Agent A lives in Berlin, then moves to Munich; the two facts and an instant between."""
    berlin = _semantic(api, api.a, "I live in Berlin.")["memory"]
    events = _ok(api.client.get(f"{V1}/memory/timeline", headers=api.a))["events"]
    before_move = events[-1]["at"]
    time.sleep(0.01)
    moved = _semantic(api, api.a, "I moved to Munich last month.")
    assert moved["action"] == "superseded"
    return berlin, moved["memory"], before_move


def test_relations_now_and_as_of_before_a_move(api: Api) -> None:
    c = api.client
    berlin, munich, before_move = _moved_from_berlin_to_munich(api)
    _semantic(api, api.a, "My manager is Sarah.")
    _semantic(api, api.b, "I live in Paris.")

    now = _ok(c.get(f"{V1}/agents/agent-a/relations", headers=api.a))
    assert [(r["subject"], r["relation"], r["object"]) for r in now["relations"]] == [
        ("user", "lives_in", "Munich"),
        ("user", "manager", "Sarah"),
    ]
    assert now["relations"][0]["memory_id"] == munich["id"]
    assert now["relations"][0]["valid_until"] is None
    assert (now["as_of"], now["limit"], now["offset"]) == (None, 100, 0)

    then = _ok(
        c.get(f"{V1}/agents/agent-a/relations", params={"as_of": before_move}, headers=api.a)
    )
    assert [(r["relation"], r["object"]) for r in then["relations"]] == [("lives_in", "Berlin")]
    assert then["relations"][0]["memory_id"] == berlin["id"]
    # Ended by the move, as known now.
    assert then["relations"][0]["valid_until"] is not None
    assert datetime.fromisoformat(then["as_of"]) == datetime.fromisoformat(before_move)

    # One subject; pages; an admin key reads B's relations through the path.
    assert (
        _ok(c.get(f"{V1}/agents/agent-a/relations", params={"subject": "Sarah"}, headers=api.a))[
            "relations"
        ]
        == []
    )
    pages = [
        _ok(
            c.get(f"{V1}/agents/agent-a/relations", params={"limit": 1, "offset": o}, headers=api.a)
        )["relations"]
        for o in (0, 1, 2)
    ]
    assert [r["object"] for p in pages for r in p] == ["Munich", "Sarah"]
    other = _ok(c.get(f"{V1}/agents/agent-b/relations", headers=api.root))["relations"]
    assert [r["object"] for r in other] == ["Paris"]


def test_an_entity_as_of_an_instant_has_the_memories_of_then(api: Api) -> None:
    c = api.client
    berlin, munich, before_move = _moved_from_berlin_to_munich(api)

    now = _ok(c.get(f"{V1}/agents/agent-a/entities/Munich", headers=api.a))
    assert [m["id"] for m in now["memories"]] == [munich["id"]]
    then = _ok(
        c.get(f"{V1}/agents/agent-a/entities/Berlin", params={"as_of": before_move}, headers=api.a)
    )
    assert [m["id"] for m in then["memories"]] == [berlin["id"]]
    assert then["memories"][0]["status"] == "active"  # as it was then
    assert then["entity"]["mentions"] == 1
    body = _error(
        c.get(f"{V1}/agents/agent-a/entities/Munich", params={"as_of": before_move}, headers=api.a),
        404,
        "not_found",
    )
    assert "Munich" in body["message"]
    _error(
        c.get(f"{V1}/agents/agent-a/entities/Berlin", params={"as_of": "soon"}, headers=api.a),
        422,
        "invalid_request",
    )
    _error(
        c.get(f"{V1}/agents/agent-a/entities/Berlin", params={"as_of": before_move}, headers=api.b),
        403,
        "forbidden",
    )


def test_relations_of_another_agent_are_refused_and_bad_times_named(api: Api) -> None:
    c = api.client
    _semantic(api, api.a, "I live in Berlin.")
    for response in (
        c.get(f"{V1}/agents/agent-a/relations", headers=api.b),
        c.get(
            f"{V1}/agents/agent-a/relations",
            params={"as_of": "2026-01-01T00:00:00Z", "subject": "user"},
            headers=api.b,
        ),
        c.get(f"{V1}/agents/nobody/relations", headers=api.b),
    ):
        _error(response, 403, "forbidden")
    for params, field in (
        ({"as_of": "last tuesday"}, "as_of"),
        ({"as_of": "2026-13-01T00:00:00Z"}, "as_of"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"subject": ""}, "subject"),
    ):
        body = _error(
            c.get(f"{V1}/agents/agent-a/relations", params=params, headers=api.a),
            422,
            "invalid_request",
        )
        assert field in json.dumps(body["fields"]), body
