"""Export, import, migrate and erase on SQLite, PostgreSQL and Qdrant's local mode.

Each test builds a scope the way a user does (``ingest`` of a conversation, engine writes
with versions, supersedes, reinforcements, consolidation, TTLs and access counts, an API
key), then checks what the issue asks of its data: a lossless round trip between
backends, an idempotent import, and erasures that leave nothing of the erased text,
numbers or ids in any column of any table or in Qdrant's payloads.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.cli.main import main
from langmem_tiers.errors import FormatVersionError, ValidationError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.portability import export_records, import_records
from langmem_tiers.portability.format import FORMAT_NAME, encode_line
from langmem_tiers.server.keys import ApiKeys

# What each scope's user tells: a name, a social-security number, a street.
PEOPLE = {
    "dana": ("Whitfield", "078-05-1120", "Quarry Lane"),
    "erin": ("Marlowe", "219-09-9999", "Juniper Court"),
}
CONVERSATION = [
    {"role": "user", "content": "Hi, I am {name}, social security number {number}."},
    {"role": "assistant", "content": "Thanks, noted."},
    {"role": "user", "content": "I live at 42 {street} and I prefer short answers."},
    {"role": "assistant", "content": "Understood."},
]


@pytest.fixture(params=["sqlite", "postgres", "postgres+qdrant"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url_for(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[], str]:
    """New empty databases of ``backend``."""
    made: list[str] = []
    schemas = request.getfixturevalue("postgres_schemas") if "postgres" in backend else None

    def new() -> str:
        url = f"sqlite:///{tmp_path / f'db{len(made)}.db'}" if schemas is None else schemas()
        made.append(url)
        return url

    return new


@pytest.fixture
def opened(backend: str) -> Iterator[Callable[[str], Any]]:
    """Opens stores of ``backend``; with Qdrant, every store of the test shares one
    local-mode client (one collection), as processes share a Qdrant server."""
    client = None
    if backend == "postgres+qdrant":
        from qdrant_client import QdrantClient

        client = QdrantClient(":memory:")

    @contextmanager
    def open_store(url: str) -> Iterator[TieredMemoryStore]:
        with TieredMemoryStore.from_url(url, qdrant=client) as store:
            yield store

    yield open_store
    if client is not None:
        client.close()


def _filled(
    url_for: Callable[[], str], opened: Any, tmp_path: Path, *scopes: str
) -> tuple[str, dict[str, dict[str, Any]]]:
    """A database of the backend holding ``scopes`` as users leave them (with Qdrant: made
    in SQL, then imported into a database whose vectors are in Qdrant)."""
    url = url_for()
    made = {scope: _fill(url, tmp_path, scope) for scope in scopes}
    if opened is None:
        return url, made
    with TieredMemoryStore.from_url(url) as source:
        exported = list(export_records(source, embeddings=True))
    target = url_for()
    with opened(target) as store:
        import_records(store, exported)
    return target, made


def _fill(url: str, tmp_path: Path, scope: str = "dana") -> dict[str, Any]:
    """A scope as a user leaves it; answers the ids a scan must not find after erasure."""
    name, number, street = PEOPLE[scope]
    conversation = tmp_path / f"{scope}.jsonl"
    conversation.write_text(
        "".join(
            json.dumps(
                {**m, "content": m["content"].format(name=name, number=number, street=street)}
            )
            + "\n"
            for m in CONVERSATION
        )
    )
    session = f"{scope}-chat-7"
    assert (
        main(
            [
                "ingest",
                str(conversation),
                "--scope",
                scope,
                "--session",
                session,
                "--url",
                url,
                "--no-progress",
            ]
        )
        == 0
    )
    with TieredMemoryStore.from_url(url) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        home = engine.add_semantic(scope, f"{name} lives in {street}, Springfield").memory
        engine.update_semantic(scope, home.id, f"{name} lives at 42 {street}, Springfield")
        engine.set_procedural(scope, "tone", "brief")
        engine.set_procedural(scope, "tone", "brief")  # a reinforcement
        for n in range(3):
            engine.add_episodic(
                scope, f"{name} asked about the {number} form {n}", session_id=session
            )
        engine.consolidate(scope)
        store.put((scope, "semantic"), "short-lived", {"content": f"{name}'s parcel"}, ttl=60)
        assert engine.retrieve(scope, street)  # access counts
        store.put((scope, "notes"), "n1", {"text": f"{name} keeps notes at {street}"})
        key = ApiKeys(store.db).create(scope=scope, name="dana's key")
        ids = [m.id for m in engine.memories(scope, statuses=None)]
    return {"ids": ids, "session": session, "key_id": key.record.id}


def _records(store: TieredMemoryStore, scopes: list[str] | None = None) -> list[dict[str, Any]]:
    return [r for r in export_records(store, scopes) if r["type"] != "header"]


def test_round_trip_sqlite_postgres_sqlite(tmp_path: Path, postgres_url: str) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    _fill(source, tmp_path)
    _fill(source, tmp_path, scope="erin")
    with TieredMemoryStore.from_url(source) as store:  # an entity with an alias
        engine = MemoryEngine(store, auto_consolidate=False)
        engine.add_episodic("dana", "Hey Mel! I went hiking with my sister Anna in Yosemite.")
        engine.add_episodic("dana", "Melanie said the Acme Corp office in Berlin is nice.")
    back = f"sqlite:///{tmp_path / 'back.db'}"
    with TieredMemoryStore.from_url(source) as store:
        first = _records(store)
    assert {r["type"] for r in first} == {
        *("scope", "item", "event", "entity", "session", "message", "end")
    }
    items = [r for r in first if r["type"] == "item"]
    entities = {(r["scope"], r["name"]): r for r in first if r["type"] == "entity"}
    melanie = entities[("dana", "Melanie")]
    assert melanie["aliases"] == ["Mel"]
    assert melanie["mentions"] == len(melanie["mentioned_by"]) == 2
    assert {m["memory_id"] for m in melanie["mentioned_by"]} <= {
        r["id"] for r in items if r["scope"] == "dana"
    }
    assert ("erin", "Springfield") in entities  # each scope its own
    assert entities[("dana", "Springfield")]["id"] != entities[("erin", "Springfield")]["id"]
    assert any(r["versions"] and r["versions"][-1]["version"] == 2 for r in items)
    assert any(r["reinforcement_count"] == 1 for r in items)
    assert any(r["status"] == "superseded" or r["consolidated_into_id"] for r in items)
    assert any(r["ttl_minutes"] == 60.0 and r["expires_at"] for r in items)
    assert any(r["access"]["count"] > 0 for r in items)
    assert any(r["type"] == "message" and r["tier1"] for r in first)

    assert main(["migrate", "--url", source, "--to", postgres_url, "--no-progress"]) == 0
    with TieredMemoryStore.from_url(postgres_url) as store:
        assert _records(store) == first
    assert main(["migrate", "--url", postgres_url, "--to", back, "--no-progress"]) == 0
    with TieredMemoryStore.from_url(back) as store:
        assert _records(store) == first
    with TieredMemoryStore.from_url(postgres_url) as store:  # a search counts an access
        hits = store.search(("dana",), query="Quarry Lane Springfield")
        assert hits
        assert "Quarry Lane" in hits[0].value["content"]
    with TieredMemoryStore.from_url(back) as store:
        # the events replay the same memories
        engine = MemoryEngine(store, auto_consolidate=False)
        found = engine.entity("dana", "mel")  # by its alias, through its stem, as before
        assert found is not None
        assert found.entity.name == "Melanie"
        assert [m.id for m in found.memories] == [m["memory_id"] for m in melanie["mentioned_by"]]
        assert [(e.name, e.mentions) for e in engine.entities("dana")] == sorted(
            ((n, r["mentions"]) for (sc, n), r in entities.items() if sc == "dana"),
            key=lambda p: (-p[1], p[0]),
        )
        now = datetime.now(timezone.utc) + timedelta(seconds=1)
        assert [m.state() for m in engine.replay("dana", now)] == [
            m.state() for m in engine.state("dana")
        ]


def test_import_is_idempotent_and_seen_by_a_cached_search(
    backend: str, url_for: Callable[[], str], opened: Any, tmp_path: Path
) -> None:
    source = url_for()
    _fill(source, tmp_path)
    with TieredMemoryStore.from_url(source) as store:
        exported = list(export_records(store, embeddings=True))
    target = url_for()
    with opened(target) as reader, opened(target) as writer:
        before = reader.search(("dana",), query="Quarry Lane")  # caches the empty namespace
        assert before == []
        first = import_records(writer, exported)
        assert first.items > 0
        assert first.events > 0
        assert first.messages == 4
        assert first.embedded == 0  # the export's vectors, same embedder
        assert first.entities == sum(r["type"] == "entity" for r in exported) > 0
        snapshot = _records(writer)
        again = import_records(writer, exported)
        assert (again.items, again.events, again.sessions, again.messages) == (0, 0, 0, 0)
        assert again.entities == 0
        assert _records(writer) == snapshot
        assert snapshot == [r for r in _without_vectors(exported) if r["type"] != "header"]
        hits = reader.search(("dana",), query="Quarry Lane")
        assert hits
        assert "Quarry Lane" in hits[0].value["content"]
        if backend == "postgres+qdrant":
            assert "dana.semantic" in _qdrant_payloads(writer)


def _without_vectors(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "vectors"} for r in records]


def test_import_refuses_newer_versions_and_keeps_a_cut_scope_out(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path / 's.db'}"
    _fill(source, tmp_path)
    _fill(source, tmp_path, scope="erin")
    with TieredMemoryStore.from_url(source) as store:
        exported = list(export_records(store))
    newer = [{**exported[0], "version": 2}, *exported[1:]]
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 't.db'}") as target:
        with pytest.raises(FormatVersionError, match="version 2, newer"):
            import_records(target, newer)
        with pytest.raises(ValidationError, match="header"):
            import_records(target, exported[1:])
        # cut inside the second scope: the first is imported, nothing of the second
        second = next(i for i, r in enumerate(exported) if r.get("scope") == "erin")
        with pytest.raises(ValidationError, match="before its end record"):
            import_records(target, exported[: second + 5])
        scopes = {r["scope"] for r in _records(target) if r["type"] == "scope"}
        assert scopes == {"dana", "dana.notes"}
        assert import_records(target, exported).scopes == 4  # dana, its notes, erin, hers
        assert _records(target) == list(exported[1:])


def test_an_edited_entity_replaces_the_stored_one_and_bad_ones_are_named(
    tmp_path: Path,
) -> None:
    source = f"sqlite:///{tmp_path / 's.db'}"
    with TieredMemoryStore.from_url(source) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        first = engine.add_episodic("dana", "Hey Mel! I went hiking with Anna in Yosemite.")
        engine.add_episodic("dana", "Melanie said the Acme Corp office in Berlin is nice.")
        exported = list(export_records(store))
    (at,) = [i for i, r in enumerate(exported) if r.get("name") == "Melanie"]
    melanie = exported[at]
    edited = {**melanie, "aliases": ["Mel", "Mellie"], "mentions": 1}
    edited["mentioned_by"] = [m for m in melanie["mentioned_by"] if m["memory_id"] == first.id]
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 't.db'}") as target:
        assert import_records(target, exported).entities == 5
        changed = import_records(target, [*exported[:at], edited, *exported[at + 1 :]])
        assert (changed.entities, changed.items, changed.events) == (1, 0, 0)
        found = MemoryEngine(target).entity("dana", "Mellie")
        assert found is not None
        assert (found.entity.name, found.entity.mentions) == ("Melanie", 1)
        assert [m.id for m in found.memories] == [first.id]
        for field, value in (("aliases", "Mel"), ("mentioned_by", [{"at": melanie["first_seen"]}])):
            bad = [*exported[:at], {**melanie, field: value}, *exported[at + 1 :]]
            with pytest.raises(ValidationError, match=field):
                import_records(target, bad)
        with pytest.raises(ValidationError, match="scope"):
            import_records(target, [*exported[:at], {**melanie, "scope": "erin"}])


def _text_of_every_table(url: str) -> str:
    """Every value of every column of every lmt_ table, as text."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'lmt%'"
                )
            ]
            parts = []
            for name in names:
                for row in conn.execute(f'SELECT * FROM "{name}"'):
                    parts.extend(
                        v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row
                    )
            return "\n".join(parts)
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema ="
                " current_schema() AND table_name LIKE 'lmt%' AND table_type = 'BASE TABLE'"
            )
        ]
        parts = []
        for name in names:
            for (row,) in conn.execute(f'SELECT CAST(t AS TEXT) FROM "{name}" t'):
                parts.append(row)
        return "\n".join(parts)


def _qdrant_payloads(store: TieredMemoryStore) -> str:
    client = store._qdrant
    if client is None:
        return ""
    points, _ = client.scroll(store.core.index.collection, limit=100_000, with_payload=True)
    return json.dumps([p.payload for p in points])


def _assert_gone(url: str, store: TieredMemoryStore, traces: list[str]) -> None:
    text = _text_of_every_table(url) + _qdrant_payloads(store)
    left = [t for t in traces if t in text]
    assert left == [], f"erased data still stored: {left}"


def test_erase_scope_removes_every_trace(
    backend: str, url_for: Callable[[], str], opened: Any, tmp_path: Path
) -> None:
    url, made = _filled(
        url_for, opened if backend == "postgres+qdrant" else None, tmp_path, "dana", "erin"
    )
    dana = made["dana"]
    traces = [*PEOPLE["dana"], *dana["ids"], dana["session"]]
    if backend != "postgres+qdrant":
        traces.append(dana["key_id"])  # keys are not part of an export
    with opened(url) as store, opened(url) as other:
        engine = MemoryEngine(store, auto_consolidate=False)
        first_at = engine.timeline("dana", limit=1)[0].at
        assert store.search(("dana",), query="Quarry Lane")  # cached in this process
        assert other.search(("dana",), query="Quarry Lane")  # and in another store
        if backend == "postgres+qdrant":
            assert dana["ids"][0] in _qdrant_payloads(store)
        erin_before = _records(store, ["erin"])
        result = engine.erase_scope("dana")
        assert result.items == len(dana["ids"]) + 1  # and the plain document
        assert result.sessions == 1
        assert result.messages == 4
        assert result.api_keys == (0 if backend == "postgres+qdrant" else 1)
        assert store.search(("dana",), query="Quarry Lane") == []
        assert other.search(("dana",), query="Quarry Lane") == []
        assert _records(store, ["erin"]) == erin_before
        erin_text = json.dumps(erin_before)
        assert all(s in erin_text for s in PEOPLE["erin"])
        _assert_gone(url, store, traces)
        timeline = engine.timeline("dana", limit=10_000)
        assert timeline
        assert {e.type for e in timeline} == {"memory.erased"}
        assert all(e.before is None and e.after is None for e in timeline)
        assert {e.memory_id for e in timeline} == {"erased"}
        for at in (first_at, first_at + timedelta(seconds=1), datetime.now(timezone.utc)):
            assert engine.replay("dana", at) == []
        again = engine.erase_scope("dana")  # idempotent
        assert (again.items, again.events, again.sessions) == (0, 0, 0)


def test_forget_hard_purges_the_memory_everywhere(url_for: Callable[[], str], opened: Any) -> None:
    url = url_for()
    with opened(url) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        engine.add_semantic("ann", "Ann likes green tea")
        secret = engine.add_semantic("ann", "Ann's locker code is 4471-9920").memory
        engine.update_semantic("ann", secret.id, "Ann's locker code is 4471-9921")
        assert store.search(("ann",), query="locker code")
        existed = engine.timeline("ann", memory_id=secret.id)[-1].at
        assert engine.forget("ann", secret.id, hard=True) is None
        _assert_gone(url, store, [secret.id, "4471-992", "locker"])
        assert [m.content for m in engine.replay("ann", existed)] == ["Ann likes green tea"]
        hits = store.search(("ann",), query="locker code")
        assert [h.value["content"] for h in hits] == ["Ann likes green tea"]
        assert "memory.erased" in {e.type for e in engine.timeline("ann")}
        assert [m.content for m in engine.memories("ann")] == ["Ann likes green tea"]


def test_cli_export_import_and_erase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    _fill(url, tmp_path)
    out = tmp_path / "dana.jsonl"
    assert main(["export", "--scope", "dana", "--out", str(out), "--url", url]) == 0
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["format"] == FORMAT_NAME
    assert json.loads(lines[-1])["type"] == "end"
    target = f"sqlite:///{tmp_path / 'b.db'}"
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO(out.read_text()))
    assert main(["import", "-", "--url", target, "--json", "--no-progress"]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert (imported["scopes"], imported["messages"]) == (1, 4)
    assert imported["embedded"] == imported["items"]  # no vectors in the file: embedded

    monkeypatch.setattr("sys.stdin", io.StringIO("erin\n"))
    assert main(["erase", "--scope", "dana", "--url", target]) == 1
    assert "nothing was erased" in capsys.readouterr().err
    with TieredMemoryStore.from_url(target) as store:
        assert store.search(("dana",), query="Quarry Lane")
    monkeypatch.setattr("sys.stdin", io.StringIO("dana\n"))
    assert main(["erase", "--scope", "dana", "--url", target, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "dana"
    assert main(["erase", "--scope", "dana", "--yes", "--url", target]) == 0
    with TieredMemoryStore.from_url(target) as store:
        assert store.search(("dana",), query="Quarry Lane") == []
    # a bad line is reported with its number
    bad = tmp_path / "bad.jsonl"
    bad.write_text(encode_line(json.loads(lines[0])) + "{not json\n")
    assert main(["import", str(bad), "--url", target, "--no-progress"]) == 1
    assert "line 2" in capsys.readouterr().err


async def test_async_twins_export_import_and_erase(tmp_path: Path) -> None:
    from langmem_tiers.portability import aexport_records, aimport_records

    source = f"sqlite:///{tmp_path / 's.db'}"
    _fill(source, tmp_path)
    with TieredMemoryStore.from_url(source) as store:
        expected = _records(store, ["dana"])
        exported = [r async for r in aexport_records(store, ["dana"])]
    assert [r for r in exported if r["type"] != "header"] == expected
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 't.db'}") as target:
        result = await aimport_records(target, exported)
        assert result.items == sum(r["type"] == "item" for r in expected)
        assert _records(target) == expected
        erased = await MemoryEngine(target, auto_consolidate=False).aerase_scope("dana")
        assert erased.items == result.items
        assert await target.asearch(("dana",), query="Quarry Lane") == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_events_whose_numbers_are_taken_follow_in_order(
    backend: str, url_for: Callable[[], str], tmp_path: Path
) -> None:
    source = url_for()
    _fill(source, tmp_path, "dana")
    with TieredMemoryStore.from_url(source) as store:
        exported = list(export_records(store))
    source_seqs = [r["seq"] for r in exported if r["type"] == "event"]
    target = url_for()
    _fill(target, tmp_path, "erin")  # erin's events hold the numbers dana's had
    with TieredMemoryStore.from_url(target) as store:
        first = import_records(store, exported)
        assert first.events == len(source_seqs)
        dana = [r for r in _records(store, ["dana"]) if r["type"] == "event"]
        seqs = [r["seq"] for r in dana]
        assert seqs == sorted(seqs)
        assert min(seqs) > max(source_seqs)  # after erin's, in their order
        strip = [{k: v for k, v in r.items() if k != "seq"} for r in dana]
        assert strip == [
            {k: v for k, v in r.items() if k != "seq"}
            for r in exported
            if r["type"] == "event" and r["scope"] == "dana"
        ]
        again = import_records(store, exported)
        assert (again.items, again.events) == (0, 0)
        # the log's own numbering goes on after the imported numbers
        MemoryEngine(store, auto_consolidate=False).add_semantic("dana", "Dana likes chess")
        last = MemoryEngine(store, auto_consolidate=False).timeline("dana", limit=1000)[-1]
        assert last.seq > max(seqs)
    fresh = url_for()
    with TieredMemoryStore.from_url(fresh) as store:
        import_records(store, exported)
        engine = MemoryEngine(store, auto_consolidate=False)
        engine.add_semantic("dana", "Dana likes chess")  # no number taken twice
        assert engine.timeline("dana", limit=1000)[-1].seq == max(source_seqs) + 1


def test_a_target_with_another_embedder_embeds_again(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    source = f"sqlite:///{tmp_path / 's.db'}"
    _fill(source, tmp_path)
    with TieredMemoryStore.from_url(source) as store:
        exported = list(export_records(store, ["dana"], embeddings=True))
    assert all(len(v) == 512 for r in exported for v in r.get("vectors", {}).values())
    other = DeterministicFakeEmbedding(size=64)
    index: Any = {"dims": 64, "embed": other}
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 't.db'}", index=index) as store:
        result = import_records(store, exported)
        assert result.embedded == result.items > 0
        again = list(export_records(store, ["dana"], embeddings=True))
        assert again[0]["embedder"]["dims"] == 64
        assert all(len(v) == 64 for r in again for v in r.get("vectors", {}).values())
        assert _without_vectors(again[1:]) == _without_vectors(exported[1:])


def test_writes_racing_an_erasure_leave_no_half_memory(postgres_url: str) -> None:
    import threading

    with TieredMemoryStore.from_url(postgres_url) as setup:
        engine = MemoryEngine(setup, auto_consolidate=False)
        for n in range(20):
            engine.add_episodic("dana", f"Dana's old note {n}")
    stop = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        with TieredMemoryStore.from_url(postgres_url) as store:
            writer = MemoryEngine(store, auto_consolidate=False)
            n = 0
            while not stop.is_set():
                try:
                    writer.add_episodic("dana", f"Dana's racing note {n}")
                except BaseException as err:  # reported by the test below
                    failures.append(err)
                    return
                n += 1

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    with TieredMemoryStore.from_url(postgres_url) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        for _ in range(3):
            engine.erase_scope("dana")
        stop.set()
        for thread in threads:
            thread.join(30)
        assert failures == []
        # every memory left was written after an erasure, whole: its creation event is there
        alive = {m.id for m in engine.memories("dana", statuses=None, limit=10_000)}
        created = {
            e.memory_id for e in engine.timeline("dana", types=["memory.created"], limit=100_000)
        }
        assert alive <= created
        assert not any("old note" in m.content for m in engine.memories("dana", limit=10_000))
        # and no event of an erased memory kept its content
        erased = engine.timeline("dana", types=["memory.erased"], limit=100_000)
        assert len(erased) >= 20
        assert all(e.after is None and e.before is None for e in erased)
