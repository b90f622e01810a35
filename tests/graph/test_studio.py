"""The Studio entry points: loaded from their files as ``langgraph dev`` loads them, and served."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.graph.studio import studio_options
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.short_term.sql_log import SqlMessageLog

from .fakes import FACTS

ROOT = Path(__file__).resolve().parents[2]
TURNS = [FACTS, "I prefer tea over coffee.", "When is the deadline for RAI Chat?"]
RAW_ANSWER = "The deadline for RAI Chat is March 1, 2026, and the budget is 40,000 euros."


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"studio_{name}", ROOT / "graphs" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored(url: str, session_id: str) -> list[MessageRecord]:
    """A session's messages, read from the database by a log of our own."""
    log = SqlMessageLog.from_url(url)
    try:
        return log.read(session_id)
    finally:
        log.close()


def _user_turn(text: str) -> Any:  # the SDK's Input type: JSON
    return {
        "messages": [{"role": "user", "content": text}],
        "session_id": "studio-1",
        "user_id": "u1",
    }


def test_langgraph_json_serves_both_graphs_and_their_store() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert config["graphs"] == {
        "tiered_chat": "./graphs/tiered_chat.py:graph",
        "consolidation": "./graphs/consolidation.py:graph",
    }
    assert config["store"] == {"path": "./graphs/store.py:store"}


def test_the_server_store_is_the_graphs_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.base import BaseStore

    monkeypatch.setenv("LANGMEM_TIERS_URL", f"sqlite:///{tmp_path / 'studio.db'}")
    store = _load("store").store
    assert isinstance(store, BaseStore)
    chat = _load("tiered_chat").graph
    chat.invoke({"messages": [("user", TURNS[1])], "session_id": "s1", "user_id": "u1"})
    assert [item.value["content"] for item in store.search(("u1", "procedural"))] == [
        "The user prefers tea."
    ]


def test_options_from_the_environment() -> None:
    options = studio_options(
        {"LANGMEM_TIERS_PRESET": "reset", "LANGMEM_TIERS_MAX_REGENERATIONS": "1"}
    )
    assert (options.preset, options.mode, options.settings.max_regenerations) == (
        "reset",
        "markers",
        1,
    )
    with pytest.raises(ConfigurationError, match="LANGMEM_TIERS_CHAT_MODE"):
        studio_options({"LANGMEM_TIERS_CHAT_MODE": "psychic"})
    with pytest.raises(ConfigurationError, match="preset"):
        studio_options({"LANGMEM_TIERS_PRESET": "forgetful"})


def test_entry_points_default_to_the_offline_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'studio.db'}"
    monkeypatch.setenv("LANGMEM_TIERS_URL", url)
    # The seed's eager view, so the three turns show the request loop.
    monkeypatch.setenv("LANGMEM_TIERS_CONTEXT_POLICY", "eager")
    chat = _load("tiered_chat").graph  # no model set: the offline model answers
    answers = [
        chat.invoke({"messages": [("user", text)], "session_id": "s1", "user_id": "u1"})["answer"]
        for text in TURNS
    ]
    assert answers[-1] == RAW_ANSWER
    # Short-term memory lives in the store's database: another process would see it.
    records = _stored(url, "s1")
    assert [r.text for r in records][::2] == TURNS
    assert records[0].required_tier_level == 3
    consolidation = _load("consolidation").graph
    out = consolidation.invoke({"scope": "u1", "force": True})
    assert out["skipped"] == "no unconsolidated episodes"


# -- langgraph dev ----------------------------------------------------------------------

CLI = Path(sys.executable).with_name("langgraph")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(
    url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 90
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer within {seconds}s:\n{log.read_text()[-3000:]}")


def _run(client: Any, thread_id: str, text: str, log: Path) -> dict[str, Any]:
    """One turn through the server; a failure shows the server's log."""
    try:
        result = client.runs.wait(thread_id, "tiered_chat", input=_user_turn(text))
    except Exception as err:
        pytest.fail(f"the run of {text!r} failed: {err!r}\n{log.read_text()[-3000:]}")
    assert isinstance(result, dict)
    return result


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and the workers it started (its own process group)."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


@pytest.mark.slow
@pytest.mark.skipif(
    not CLI.exists(), reason="the langgraph CLI (langgraph-cli[inmem]) is not installed"
)
def test_langgraph_dev_serves_the_tiered_chat(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from langgraph_sdk import get_sync_client

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    database = tmp_path / "studio.db"
    log_path = (
        tmp_path / "langgraph-dev.log"
    )  # outside the project: a log inside reloads it forever
    env = {
        **os.environ,
        "LANGMEM_TIERS_URL": f"sqlite:///{database}",
        "LANGMEM_TIERS_CONTEXT_POLICY": "eager",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }
    with log_path.open("wb") as server_log:
        process = subprocess.Popen(
            [
                str(CLI),
                "dev",
                "--no-browser",
                "--no-reload",
                "--port",
                str(port),
                "--config",
                str(ROOT / "langgraph.json"),
            ],
            cwd=ROOT,
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers are stopped with it below
        )
    try:
        _wait_until_up(url, process, log_path)
        client = get_sync_client(url=url)
        request.addfinalizer(client.close)
        thread = client.threads.create()
        states = [_run(client, thread["thread_id"], text, log_path) for text in TURNS]
        final = states[-1]
        assert final["answer"] == RAW_ANSWER
        assert final["actions"] == ["REQUEST_TIER:3:m1 -> raised"]
        assert [m["content"] for m in final["messages"]][-1] == RAW_ANSWER
        assert len(final["messages"]) == 6
        next_turn = _run(client, thread["thread_id"], "And my name?", log_path)
        # The view starts with its note on tiers, then the messages.
        first = next(m for m in next_turn["context"] if m["type"] != "system")["data"]
        assert first["content"] == f"[m1|t3] {FACTS}"  # the upgrade was kept

        # The server's store is the graphs' store: what the graph wrote is read back
        # through the SDK (as Studio's memory view reads it), hybrid-ranked.
        written = client.store.search_items(["u1"], limit=20)["items"]
        assert {tuple(item["namespace"]) for item in written} == {
            ("u1", "semantic"),
            ("u1", "procedural"),
        }
        assert "The user prefers tea." in [item["value"]["content"] for item in written]
        stated = FACTS.replace("Hi, my name", "The user's name")  # no greeting, third person
        assert stated in [item["value"]["content"] for item in written]
        ranked = client.store.search_items(["u1"], query="what does the user drink?", limit=1)
        assert ranked["items"][0]["value"]["content"] == "The user prefers tea."
        namespaces = client.store.list_namespaces(prefix=["u1"])["namespaces"]
        assert sorted(map(tuple, namespaces)) == [("u1", "procedural"), ("u1", "semantic")]
        # ... and what the SDK writes is memory the graphs' store holds.
        client.store.put_item(["u1", "semantic"], "note-1", {"content": "Jordan likes sailing"})
    finally:
        _stop(process)
    records = _stored(f"sqlite:///{database}", "studio-1")
    assert [r.text for r in records][:6:2] == TURNS
    assert records[0].required_tier_level == 3
    from langmem_tiers import TieredMemoryStore

    with TieredMemoryStore.from_url(f"sqlite:///{database}") as store:
        note = store.get(("u1", "semantic"), "note-1")
        assert note is not None
        assert note.value["content"] == "Jordan likes sailing"
