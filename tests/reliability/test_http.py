"""The HTTP API under attack and under a database outage: 401/403/404/413/422, never a 5xx.

A real uvicorn server on a loopback port (see ``live_server.py``), on SQLite and on
PostgreSQL. The attack matrix sends requests without a key, with wrong, revoked and
other agents' keys, with guessed and foreign memory ids, oversize bodies (declared and
chunked), and malformed JSON of every kind; every answer must be the documented status
with a JSON error body, and agent B's memory must be exactly as it was afterwards.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.store import TieredMemoryStore

from .conftest import SEED, with_application_name
from .harness import sql_rows
from .live_server import LiveServer, serve

V1 = "/api/v1"


@pytest.fixture
def live(store_url: str) -> Iterator[LiveServer]:
    with serve(store_url) as server:
        yield server


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class Case:
    """One hostile request and the statuses it may get."""

    name: str
    method: str
    path: str
    expected: set[int]
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None
    content: Any = None


def _chunks(total: int) -> Iterator[bytes]:
    yield b'{"content": "'
    for _ in range(total // 65536):
        yield b"z" * 65536
    yield b'"}'


UNPARSEABLE: dict[str, bytes] = {
    "invalid UTF-8": b'{"content": "caf\xe9 \xff\xfe"}',
    "deep arrays": b"[" * 50_000 + b"]" * 50_000,
    "deep objects": b'{"content": "x", "metadata": ' + b'{"a":' * 5000 + b"1" + b"}" * 5001,
    "huge number": b'{"query": "x", "limit": 1' + b"0" * 5000 + b"}",
}
"""Bodies Python's json cannot decode for other reasons than a syntax error."""


def _attacks(live: LiveServer, b_ids: list[str], a_id: str) -> list[Case]:
    a = _auth(live.key_a)
    json_type = {"Content-Type": "application/json"}
    endpoints: list[tuple[str, str, Any]] = [
        ("POST", "/memory/episodic", {"content": "x"}),
        ("POST", "/memory/semantic", {"content": "x"}),
        ("POST", "/memory/retrieve", {"query": "secret"}),
        ("POST", "/memory/procedural", {"key": "k", "value": "v"}),
        ("GET", "/memory/procedural/key/k", None),
        ("GET", "/memory/timeline", None),
        ("POST", "/memory/replay", {"at": "2030-01-01T00:00:00Z"}),
        ("POST", "/memory/consolidate", {}),
        ("POST", "/memory/decay", {}),
        ("POST", "/memory/forget", {"memory_id": b_ids[0]}),
        ("PUT", f"/memory/semantic/{b_ids[0]}", {"content": "overwritten"}),
        ("GET", f"/memory/temporal/evolution/{b_ids[0]}", None),
        ("GET", "/agents", None),
    ]
    bad_keys = {
        "no key": {},
        "wrong key": _auth("lmt_" + "0" * 40),
        "bearer without a key": {"Authorization": "Bearer"},
        "basic auth": {"Authorization": "Basic YWdlbnQtYjpwYXNzd29yZA=="},
        "8 KB key": {"X-API-Key": "k" * 8192},
        "sql in key": {"X-API-Key": "' OR '1'='1' --"},
        "revoked key": _auth(live.revoked),
    }
    cases = [
        Case(f"{label}: {method} {path}", method, path, {401}, headers, body)
        for label, headers in bad_keys.items()
        for method, path, body in endpoints
    ]
    for method, path, body in endpoints[:10]:
        if body is not None and method == "POST":
            cases.append(
                Case(f"A names B: {path}", method, path, {403}, a, {**body, "agent_id": "agent-b"})
            )
    cases.append(Case("A lists agents", "GET", "/agents", {403}, a))
    cases.append(Case("A names B in a query", "GET", "/memory/timeline?agent_id=agent-b", {403}, a))
    for b_id in b_ids:
        cases += [
            Case("A updates B's memory", "PUT", f"/memory/semantic/{b_id}", {404}, a,
                 {"content": "A was here"}),
            Case("A reads B's history", "GET", f"/memory/temporal/evolution/{b_id}", {404}, a),
            Case("A forgets B's memory", "POST", "/memory/forget", {404}, a,
                 {"memory_id": b_id, "hard": True}),
        ]  # fmt: skip
    rng = random.Random(SEED)
    guesses = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(5)]
    guesses += ["' OR 1=1 --", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "m1", "0", a_id.upper()]
    for guess in guesses:
        cases += [
            Case(f"guessed id {guess!r}", "GET", f"/memory/temporal/evolution/{guess}", {404}, a),
            Case(f"forget guessed {guess!r}", "POST", "/memory/forget", {404}, a,
                 {"memory_id": guess}),
        ]  # fmt: skip
    big = 2 * 1024 * 1024
    cases += [
        Case("2 MiB body", "POST", "/memory/episodic", {413}, a, {"content": "x" * big}),
        Case("2 MiB chunked body", "POST", "/memory/episodic", {413}, {**a, **json_type},
             content=_chunks(big)),
        Case("10 MB message", "POST", "/memory/episodic", {413}, a,
             {"content": "y" * 10_000_000}),
    ]  # fmt: skip
    for name, raw in UNPARSEABLE.items():
        path = "/memory/retrieve" if name == "huge number" else "/memory/episodic"
        cases.append(Case(f"unparseable: {name}", "POST", path, {422},
                          {**a, **json_type}, content=raw))  # fmt: skip
    malformed: dict[str, bytes] = {
        "truncated": b'{"content": ',
        "empty": b"",
        "not JSON": b"content=hello",
        "NaN": b'{"content": NaN}',
        "array": b'["content", "x"]',
        "string": b'"content"',
        "lone surrogate escape": b'{"content": "\\ud800"}',
        "NUL escape": b'{"content": "a\\u0000b"}',
        "unknown field": b'{"content": "x", "admin": true}',
        "wrong type": b'{"content": 42}',
        "duplicate keys": b'{"content": "a", "content": 7}',
    }
    for name, raw in malformed.items():
        cases.append(Case(f"malformed: {name}", "POST", "/memory/episodic", {422},
                          {**a, **json_type}, content=raw))  # fmt: skip
    cases.append(
        Case("JSON sent as text/plain", "POST", "/memory/episodic", {422},
             {**a, "Content-Type": "text/plain"}, content=b'{"content": "x"}')
    )  # fmt: skip
    return cases


def test_unparseable_bodies_are_422_naming_the_body(tmp_path: Path) -> None:
    # Parsing happens before any database work: one backend is enough.
    with serve(f"sqlite:///{tmp_path / 'api.db'}") as live:
        headers = {**_auth(live.key_a), "Content-Type": "application/json"}
        answers: dict[str, tuple[int, str, str]] = {}
        messages: dict[str, str] = {}
        for name, raw in UNPARSEABLE.items():
            path = "/memory/retrieve" if name == "huge number" else "/memory/episodic"
            response = httpx.post(live.base_url + V1 + path, content=raw, headers=headers)
            error = response.json()
            answers[name] = (response.status_code, error["error"], error["fields"][0]["field"])
            messages[name] = error["message"]
    assert answers == dict.fromkeys(UNPARSEABLE, (422, "invalid_request", "body"))
    assert "not valid UTF-8 (byte 0xe9 at offset 16)" in messages["invalid UTF-8"]
    assert "nested too deeply" in messages["deep arrays"]
    assert "nested too deeply" in messages["deep objects"]
    assert "more than 4300 digits" in messages["huge number"]


def _b_state(client: httpx.Client, live: LiveServer) -> Any:
    b = _auth(live.key_b)
    events = client.get(f"{V1}/memory/timeline", headers=b).json()["events"]
    found = client.post(f"{V1}/memory/retrieve", json={"query": "secret plan"}, headers=b).json()
    return len(events), sorted(
        (r["memory"]["id"], r["memory"]["content"], r["memory"]["status"]) for r in found["results"]
    )


def test_attacks_get_the_documented_status_and_never_a_server_error(live: LiveServer) -> None:
    with httpx.Client(base_url=live.base_url, timeout=30) as client:
        b = _auth(live.key_b)
        b_ids = []
        for text in ("The secret plan is to launch on Friday", "B's secret plan: budget 9000"):
            answer = client.post(f"{V1}/memory/semantic", json={"content": text}, headers=b)
            assert answer.status_code == 201, answer.text
            b_ids.append(answer.json()["memory"]["id"])
        mine = client.post(
            f"{V1}/memory/episodic", json={"content": "A's note"}, headers=_auth(live.key_a)
        )
        assert mine.status_code == 201, mine.text
        before = _b_state(client, live)
        statuses: Counter[int] = Counter()
        wrong = []
        for case in _attacks(live, b_ids, mine.json()["id"]):
            response = client.request(
                case.method,
                V1 + case.path,
                headers=case.headers,
                json=case.json,
                content=case.content,
            )
            statuses[response.status_code] += 1
            if response.status_code not in case.expected:
                wrong.append(f"{case.name}: {response.status_code} {response.text[:200]}")
                continue
            body = response.json()
            assert set(body) >= {"error", "message"}, (case.name, body)
        assert _b_state(client, live) == before, "an attack changed agent B's memory"
        assert client.get(f"{V1}/health").status_code == 200
    print(f"attack requests by status: {dict(sorted(statuses.items()))}")
    assert not [s for s in statuses if s >= 500], statuses
    assert wrong == [], "\n".join(wrong)


def test_agents_never_retrieve_each_others_memories_over_http(live: LiveServer) -> None:
    rng = random.Random(SEED)
    pieces = ["%", "_", "'", '"', "--", ";", "\\", "*", "日本", "😀", "OR 1=1", "secret", "plan"]
    with httpx.Client(base_url=live.base_url, timeout=30) as client:
        owners = {live.key_a: "agent-a", live.key_b: "agent-b"}
        tried = 0
        for n in range(30):
            text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) + f" #{n}"
            for key in owners:
                answer = client.post(
                    f"{V1}/memory/episodic", json={"content": text}, headers=_auth(key)
                )
                assert answer.status_code == 201, answer.text
            for key, owner in owners.items():
                found = client.post(
                    f"{V1}/memory/retrieve", json={"query": text, "limit": 100}, headers=_auth(key)
                )
                assert found.status_code == 200, found.text
                scopes = {r["memory"]["scope"] for r in found.json()["results"]}
                assert scopes <= {owner}, f"{owner} retrieved {scopes} for {text!r}"
                tried += 1
    print(f"{tried} retrievals with hostile text, none crossed agents")


# -- the database goes away under the server ------------------------------------------------------


def _terminate(url: str, application: str, *, waiting: bool) -> int:
    # Between requests the call returns once the sessions have ended (connections closed).
    condition = " AND wait_event_type = 'Lock'" if waiting else ""
    wait = "" if waiting else ", 10000"
    with psycopg.connect(url, autocommit=True) as admin:
        return len(
            admin.execute(
                f"SELECT pg_terminate_backend(pid{wait}) FROM pg_stat_activity"
                f" WHERE application_name = %s AND pid <> pg_backend_pid(){condition}",
                [application],
            ).fetchall()
        )


def test_a_database_outage_is_a_503_and_the_server_recovers(postgres_url: str) -> None:
    url, application = with_application_name(postgres_url)
    with serve(url) as live, httpx.Client(base_url=live.base_url, timeout=60) as client:
        a = _auth(live.key_a)
        made = client.post(f"{V1}/memory/semantic", json={"content": "Oslo is cold"}, headers=a)
        assert made.status_code == 201, made.text
        memory_id = made.json()["memory"]["id"]
        # Between requests: the pool replaces the dead connections.
        for _ in range(3):
            assert _terminate(postgres_url, application, waiting=False) >= 1
            found = client.post(f"{V1}/memory/retrieve", json={"query": "Oslo"}, headers=a)
            assert found.status_code == 200, found.text
        # In the middle of a request: the update waits on a row lock, then loses its connection.
        holder = psycopg.connect(postgres_url, autocommit=False)
        holder.execute("SELECT id FROM lmt_items WHERE id = %s FOR UPDATE", [memory_id])
        answers: list[httpx.Response] = []

        def update() -> None:
            answers.append(
                client.put(
                    f"{V1}/memory/semantic/{memory_id}", json={"content": "Oslo is warm"}, headers=a
                )
            )

        worker = threading.Thread(target=update)
        worker.start()
        try:
            deadline = time.monotonic() + 20
            while not _terminate(postgres_url, application, waiting=True):
                assert time.monotonic() < deadline, "the update never waited on the lock"
                time.sleep(0.01)
            worker.join(30)
        finally:
            holder.rollback()
            holder.close()
        (answer,) = answers
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] == "database_unavailable"
        history = client.get(f"{V1}/memory/temporal/evolution/{memory_id}", headers=a)
        assert history.status_code == 200, history.text
        assert [v["content"] for v in history.json()["versions"]] == ["Oslo is cold"]
        retried = client.put(
            f"{V1}/memory/semantic/{memory_id}", json={"content": "Oslo is warm"}, headers=a
        )
        assert retried.status_code == 200, retried.text


def test_concurrent_contradicting_facts_over_http_leave_one_active(
    live: LiveServer, store_url: str
) -> None:
    # Eight clients state where agent A's user lives, all at once, before any fact exists.
    cities = ["Berlin", "Paris", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo", "Rome"]
    start = threading.Barrier(len(cities))
    answers: list[int] = []

    def post(city: str) -> None:
        with httpx.Client(base_url=live.base_url, timeout=120) as client:
            start.wait(30)
            response = client.post(
                f"{V1}/memory/semantic",
                headers=_auth(live.key_a),
                json={"content": f"Alice lives in {city}", "subject": "alice"},
            )
            answers.append(response.status_code)

    threads = [threading.Thread(target=post, args=(c,)) for c in cities]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert sorted(answers) == [201] * len(cities)
    with TieredMemoryStore.from_url(store_url, settings=Settings()) as store:
        rows = sql_rows(
            store,
            "SELECT status, count(*) FROM lmt_items WHERE kind = 'semantic'"
            " GROUP BY status ORDER BY status",
        )
    assert [tuple(r) for r in rows] == [("active", 1), ("superseded", len(cities) - 1)]
