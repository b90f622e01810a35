"""The command line's commands other than the demo, through ``main([...])``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.cli import main
from langmem_tiers.cli.ingest import read_locomo
from langmem_tiers.server.keys import ApiKeys

REPO = Path(__file__).resolve().parents[2]
COMMANDS = (
    "demo",
    "ingest",
    "search",
    "context",
    "consolidate",
    "decay",
    "forget",
    "replay",
    "timeline",
    "stats",
    "keys",
    "serve",
)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("langmem-tiers: error: "), err
    assert err.count("\n") == 1, err
    return err


# -- help and command-line errors ----------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: langmem-tiers {command}")
    assert "--url" in out


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nosuchcommand"],
        ["search", "launch"],  # --scope is required
        ["replay", "--scope", "a", "--at", "yesterday"],
        ["demo", "--turns", "0"],
        ["keys", "create"],  # --scope or --admin
        ["keys", "create", "--scope", "a", "--admin"],
    ],
)
def test_command_line_errors_are_one_line_with_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    _one_line_error(capsys)


def test_bad_url_is_one_line_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "list", "--url", "mysql://x/y"]) == 1
    assert "unknown scheme 'mysql'" in _one_line_error(capsys)


def test_url_before_the_command_works_too(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", url, "keys", "create", "--scope", "a", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    with TieredMemoryStore.from_url(url) as store:
        assert [k.id for k in ApiKeys(store.db).list_keys()] == [created["id"]]


# -- ingest and context --------------------------------------------------------------------


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _conversation(path: Path, turns: int) -> Path:
    lines = []
    for i in range(turns):
        lines.append({"role": "user", "content": f"Note {i}: the invoice {1000 + i} is paid."})
        lines.append({"role": "assistant", "content": f"Noted, invoice {1000 + i} is paid."})
    lines.append({"role": "user", "content": "I prefer short answers.", "session": "other"})
    return _jsonl(path, lines)


@pytest.fixture
def small_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """A context of 200 tokens, so an ingest of 40 turns archives most of them."""
    monkeypatch.setenv("LANGMEM_TIERS_CONTEXT_TOKEN_LIMIT", "200")
    monkeypatch.setenv("LANGMEM_TIERS_CONTEXT_TOKEN_BUFFER", "50")


@pytest.mark.usefixtures("small_context")
def test_ingest_jsonl_into_a_session_and_long_term_memory(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _conversation(tmp_path / "chat.jsonl", 40)
    argv = ["ingest", str(path), "--scope", "u1", "--url", url, "--no-progress", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "jsonl"
    assert report["messages"] == 81
    assert report["sessions"] == 2  # the file's name, and the line that names "other"
    assert report["archived_to_episodic"] > 0
    with TieredMemoryStore.from_url(url) as store:
        episodes = store.search(namespace_for("u1", "episodic"), limit=1000)
        facts = store.search(namespace_for("u1", "semantic"), limit=1000)
        preferences = store.search(namespace_for("u1", "procedural"), limit=1000)
    assert len(episodes) == report["archived_to_episodic"]
    assert facts  # the invoice numbers are facts of the user's messages
    assert [p.value["content"] for p in preferences] == ["The user prefers short answers."]

    # The session's window holds the rest: nothing was lost.
    assert main(["context", "chat", "--scope", "u1", "--url", url, "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["messages"] + len(episodes) == 80
    assert view["context"][-1]["content"].endswith("Noted, invoice 1039 is paid.")
    assert main(["context", "chat", "--scope", "u1", "--url", url]) == 0
    assert "session chat (scope u1):" in capsys.readouterr().out


def test_context_after_ingest_uses_the_session_s_scope(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": "I prefer green tea."},
        {"role": "assistant", "content": "Noted."},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert main(["ingest", str(path), "--scope", "frank", "--url", url, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ingested 2 messages in 1 session into scope(s) frank;")
    assert main(["context", "chat", "--url", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "frank"
    assert main(["context", "chat", "--url", url]) == 0
    assert capsys.readouterr().out.startswith("session chat (scope frank): 2 messages in")
    # An explicit --scope still wins.
    assert main(["context", "chat", "--scope", "other", "--url", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "other"


LOCOMO_SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Miso likes tuna."}],
    },
    "qa": [],
}


def test_read_locomo_maps_speakers_sessions_and_captions() -> None:
    rows = list(read_locomo([LOCOMO_SAMPLE]))
    assert [(r.session, r.role, r.content, r.scope) for r in rows] == [
        ("conv-x-session_1", "human", "I adopted a cat named Miso.", "conv-x"),
        ("conv-x-session_1", "ai", "Lovely! [shares a cat]", "conv-x"),
        ("conv-x-session_2", "human", "Miso likes tuna.", "conv-x"),
    ]


def test_ingest_locomo(tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([LOCOMO_SAMPLE]), encoding="utf-8")
    assert main(["ingest", str(path), "--url", url, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ingested 3 messages in 2 sessions into scope(s) conv-x" in out
    assert main(["context", "conv-x-session_1", "--scope", "conv-x", "--url", url]) == 0
    assert "I adopted a cat named Miso." in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n', "line 2"),
        ('{"role": "user", "content": "hi"}\nnot json\n', "line 2 is not JSON"),
        ('{"role": "user", "content": ""}\n', "content must be a non-empty string"),
    ],
)
def test_ingest_bad_lines_are_one_line_errors(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    assert main(["ingest", str(path), "--scope", "u1", "--url", url]) == 1
    assert expected in _one_line_error(capsys)


def test_ingest_missing_file_and_missing_scope(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", str(tmp_path / "nope.jsonl"), "--scope", "u", "--url", url]) == 1
    assert "no such file" in _one_line_error(capsys)
    path = _conversation(tmp_path / "chat.jsonl", 1)
    assert main(["ingest", str(path), "--url", url]) == 1
    assert "--scope is required" in _one_line_error(capsys)


def test_context_of_an_unknown_session(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", "nobody", "--url", url]) == 1
    assert "has no messages" in _one_line_error(capsys)


# -- keys ------------------------------------------------------------------------------------


def test_keys_create_list_revoke(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "create", "--scope", "agent-a", "--name", "ci", "--url", url]) == 0
    out = capsys.readouterr().out.splitlines()
    key = out[0]
    assert key.startswith("lmt_")
    assert "shown once" in out[1]
    assert main(["keys", "create", "--admin", "--url", url, "--json"]) == 0
    admin = json.loads(capsys.readouterr().out)
    assert admin["is_admin"] is True
    assert admin["scope"] is None

    assert main(["keys", "list", "--url", url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(k["scope"], k["is_admin"], k["name"]) for k in listed] == [
        ("agent-a", False, "ci"),
        (None, True, None),
    ]
    assert all("key" not in k and "key_hash" not in k for k in listed)
    assert main(["keys", "list", "--scope", "agent-a", "--url", url]) == 0
    assert "scope=agent-a" in capsys.readouterr().out

    key_id = listed[0]["id"]
    assert main(["keys", "revoke", key_id, "--url", url]) == 0
    assert f"revoked key {key_id}" in capsys.readouterr().out
    with TieredMemoryStore.from_url(url) as store:
        table = ApiKeys(store.db)
        assert table.verify(key) is None
        assert table.verify(admin["key"]) is not None
    assert main(["keys", "revoke", "000000000000", "--url", url]) == 1
    assert "no API key with id" in _one_line_error(capsys)


# -- serve -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_answers_health_and_refuses_requests_without_a_key(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [
        sys.executable,
        "-m",
        "langmem_tiers",
        "serve",
        "--port",
        str(port),
        "--url",
        f"sqlite:///{tmp_path / 'served.db'}",
        "--log-level",
        "warning",
    ]
    with subprocess.Popen(
        command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as server:
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            health = None
            while time.monotonic() < deadline:
                try:
                    health = httpx.get(f"{base}/api/v1/health", timeout=1)
                    break
                except httpx.TransportError:
                    if server.poll() is not None:
                        assert server.stderr is not None
                        pytest.fail(server.stderr.read().decode()[-2000:])
                    time.sleep(0.2)
            assert health is not None
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            refused = httpx.post(f"{base}/api/v1/memory/retrieve", json={"query": "x"}, timeout=5)
            assert refused.status_code == 401
            assert refused.json()["error"] == "unauthorized"
        finally:
            server.terminate()
            server.wait(timeout=10)


@pytest.mark.usefixtures("small_context")
def test_ingest_keeps_each_message_s_own_time(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = []
    for i in range(40):
        at = f"2023-05-{1 + i % 28:02d}T10:00:00+00:00"
        lines.append(
            {"role": "user", "content": f"Note {i}: invoice {1000 + i} is paid.", "at": at}
        )
        lines.append({"role": "assistant", "content": "Noted.", "timestamp": at})
    path = _jsonl(tmp_path / "old.jsonl", lines)
    argv = ["ingest", str(path), "--scope", "u1", "--url", url, "--no-progress", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["archived_to_episodic"] > 0
    with TieredMemoryStore.from_url(url) as store:
        episodes = store.search(namespace_for("u1", "episodic"), limit=1000)
        may = store.search(namespace_for("u1", "episodic"), query="invoice in May 2023")
    assert episodes
    assert all(e.value["event_timestamp"].startswith("2023-05-") for e in episodes)
    assert may
    assert may[0].value["event_timestamp"].startswith("2023-05-")


def test_ingest_refuses_a_bad_time(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi", "at": "yesterday"}) + "\n")
    assert main(["ingest", str(path), "--scope", "u1", "--url", url, "--no-progress"]) == 1
    assert "line 1: at must be an ISO-8601 timestamp" in capsys.readouterr().err


def test_search_min_score_leaves_out_weak_matches(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with TieredMemoryStore.from_url(url) as store:
        store.put(namespace_for("u1", "semantic"), "f", {"content": "Bob likes jazz"})
    assert main(["search", "quantum", "--scope", "u1", "--url", url, "--min-score", "0.3"]) == 0
    assert "nothing found" in capsys.readouterr().out
    assert main(["search", "Bob jazz", "--scope", "u1", "--url", url, "--min-score", "0.3"]) == 0
    assert "Bob likes jazz" in capsys.readouterr().out
