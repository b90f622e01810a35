"""Long-term memory commands (search, consolidate, decay, forget, replay, timeline, stats)
against a database filled through the memory engine."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.cli import main
from langmem_tiers.long_term.engine.engine import MemoryEngine


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def seeded(url: str) -> dict[str, Any]:
    """Two scopes; agent-a has a superseded fact, a preference and two episodes."""
    with TieredMemoryStore.from_url(url) as store:
        engine = MemoryEngine(store)
        berlin = engine.add_semantic("agent-a", "Alice lives in Berlin", subject="Alice")
        between = datetime.now(timezone.utc)
        paris = engine.add_semantic("agent-a", "Alice lives in Paris", subject="Alice")
        engine.set_procedural("agent-a", "tone", "short")
        episodes = [
            engine.add_episodic("agent-a", text, session_id="s1")
            for text in ("We fly to Oslo on Friday.", "Alice booked the hotel.")
        ]
        engine.add_semantic("agent-b", "Bob lives in Rome")
    return {
        "berlin": berlin.memory.id,
        "paris": paris.memory.id,
        "between": between,
        "episodes": [e.id for e in episodes],
    }


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("langmem-tiers: error: ")
    assert err.count("\n") == 1
    return err


def test_search(url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    hits = _json(
        capsys, ["search", "where does Alice live", "--scope", "agent-a", "--url", url, "--json"]
    )
    assert hits[0]["id"] == seeded["paris"]
    assert set(hits[0]["scores"]) == {"semantic", "recency", "frequency", "confidence"}
    assert seeded["berlin"] not in [h["id"] for h in hits]  # superseded: not active
    everything = _json(
        capsys,
        ["search", "where does Alice live", "--scope", "agent-a", "--all", "--url", url, "--json"],
    )
    assert seeded["berlin"] in [h["id"] for h in everything]
    episodic = _json(
        capsys,
        ["search", "Oslo", "--scope", "agent-a", "--kind", "episodic", "--url", url, "--json"],
    )
    assert {h["kind"] for h in episodic} == {"episodic"}
    assert main(["search", "Alice", "--scope", "agent-a", "--url", url]) == 0
    out = capsys.readouterr().out
    assert "Alice lives in Paris" in out
    assert "sema=" in out
    # Another scope sees none of it.
    other = _json(capsys, ["search", "Alice Paris", "--scope", "agent-b", "--url", url, "--json"])
    assert {h["scope"] for h in other} <= {"agent-b"}
    assert not {seeded["paris"], seeded["berlin"]} & {h["id"] for h in other}


def test_consolidate_and_consolidate_due(
    url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (result,) = _json(capsys, ["consolidate", "--scope", "agent-a", "--url", url, "--json"])
    assert result["episodes"] == 2
    assert result["memories"][0]["category"] == "episode_summary"
    (again,) = _json(capsys, ["consolidate", "--scope", "agent-a", "--url", url, "--json"])
    assert again["episodes"] == 0
    assert _json(capsys, ["consolidate", "--due", "--url", url, "--json"]) == []
    assert main(["consolidate", "--due", "--url", url]) == 0
    assert "no scope is over the consolidation threshold" in capsys.readouterr().out
    assert main(["consolidate", "--scope", "agent-a", "--url", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("consolidated: scope=agent-a")
    # Nothing left to consolidate: the command says why.
    assert "nothing to do: 'agent-a' has no unconsolidated episodic memories" in out
    assert "context_token_limit" in out


def test_decay(url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    later = (datetime.now(timezone.utc) + timedelta(days=3650)).isoformat()
    result = _json(capsys, ["decay", "--scope", "agent-a", "--now", later, "--url", url, "--json"])
    assert seeded["paris"] in result["decayed"]
    assert main(["decay", "--scope", "agent-b", "--url", url]) == 0
    assert capsys.readouterr().out.startswith("decay: scope=agent-b")


def test_forget_soft_hard_and_other_scopes(
    url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    paris = seeded["paris"]
    assert "no memory" in _error(capsys, ["forget", paris, "--scope", "agent-b", "--url", url])
    soft = _json(capsys, ["forget", paris, "--scope", "agent-a", "--url", url, "--json"])
    assert soft["memory"]["status"] == "deleted"
    assert main(["forget", paris, "--scope", "agent-a", "--hard", "--url", url]) == 0
    assert "forgot (removed)" in capsys.readouterr().out
    _error(capsys, ["forget", paris, "--scope", "agent-a", "--url", url])


def test_replay_and_timeline(
    url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    then = seeded["between"].isoformat()
    replayed = _json(capsys, ["replay", "--scope", "agent-a", "--at", then, "--url", url, "--json"])
    assert [(m["id"], m["status"]) for m in replayed["memories"]] == [(seeded["berlin"], "active")]
    assert main(["replay", "--scope", "agent-a", "--at", then, "--url", url]) == 0
    assert "1 memory of 'agent-a'" in capsys.readouterr().out
    # Before the first event the memory was empty: that is the answer, not an error.
    early = ["replay", "--scope", "agent-a", "--at", "2000-01-01T00:00:00", "--url", url]
    assert main(early) == 0
    out = capsys.readouterr().out
    assert out.startswith("0 memories of 'agent-a' at 2000-01-01T00:00:00+00:00:")
    assert "the scope's first event is at " in out
    assert _json(capsys, [*early, "--json"])["memories"] == []
    assert main(["replay", "--scope", "nobody", "--at", then, "--url", url]) == 0
    assert "(the scope has no events)" in capsys.readouterr().out

    events = _json(capsys, ["timeline", "--scope", "agent-a", "--url", url, "--json"])
    assert {e["scope"] for e in events} == {"agent-a"}
    assert "memory.superseded" in [e["type"] for e in events]
    only = _json(
        capsys,
        ["timeline", "--scope", "agent-a", "--type", "memory.superseded", "--url", url, "--json"],
    )
    assert [e["memory_id"] for e in only] == [seeded["berlin"]]
    assert main(["timeline", "--scope", "agent-a", "--limit", "2", "--url", url]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    assert main(["timeline", "--scope", "nobody", "--url", url]) == 0
    assert "no events" in capsys.readouterr().out


def test_stats(url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    one = _json(capsys, ["stats", "--scope", "agent-a", "--url", url, "--json"])
    everything = _json(capsys, ["stats", "--url", url, "--json"])
    assert one["total"] == 5
    assert everything["total"] == 6
    assert main(["stats", "--url", url]) == 0
    assert "total: 6" in capsys.readouterr().out


def test_engine_commands_refuse_bad_input(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "scope" in _error(capsys, ["search", "x", "--scope", "", "--url", url])


def test_search_stats_and_timeline_see_other_namespaces_of_the_scope(
    url: str, seeded: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """What LangMem (``("memories", user)``) or a graph node put elsewhere is shown too."""
    with TieredMemoryStore.from_url(url) as store:
        store.put(
            ("memories", "agent-a"),
            "m1",
            {"kind": "Memory", "content": {"content": "Alice collects jazz records"}},
        )
        store.put(("agent-b", "notes"), "n1", {"text": "Bob's note"})
    hits = _json(capsys, ["search", "jazz records", "--scope", "agent-a", "--url", url, "--json"])
    assert hits[-1]["namespace"] == ["memories", "agent-a"]
    assert hits[-1]["value"]["content"] == {"content": "Alice collects jazz records"}
    assert main(["search", "jazz records", "--scope", "agent-a", "--url", url]) == 0
    assert "memories/agent-a/m1  Alice collects jazz records" in capsys.readouterr().out

    stats = _json(capsys, ["stats", "--scope", "agent-a", "--url", url, "--json"])
    assert stats["other_namespaces"] == {"memories/agent-a": 1}
    everything = _json(capsys, ["stats", "--url", url, "--json"])
    assert everything["other_namespaces"] == {"agent-b/notes": 1, "memories/agent-a": 1}

    events = _json(capsys, ["timeline", "--scope", "agent-a", "--url", url, "--json"])
    assert events[-1]["key"] == "m1"
    assert events[-1]["type"] == "memory.created"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
