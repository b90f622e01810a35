"""``POST /api/v1/agents/erase``: admin keys only; the agent's data and keys are gone."""

from __future__ import annotations

from pathlib import Path

from langmem_tiers import TieredMemoryStore
from tests.server.conftest import make_api

V1 = "/api/v1"


def test_erase_endpoint_is_admin_only_and_erases(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'api.db'}") as store:
        for api in make_api(store):
            body = {"content": "Agent A's vault code is 5512"}
            assert api.client.post(f"{V1}/memory/semantic", json=body, headers=api.a).is_success
            api.client.post(f"{V1}/memory/semantic", json={"content": "B likes tea"}, headers=api.b)
            refused = api.client.post(
                f"{V1}/agents/erase", json={"agent_id": "agent-a"}, headers=api.a
            )
            assert refused.status_code == 403
            answer = api.client.post(
                f"{V1}/agents/erase", json={"agent_id": "agent-a"}, headers=api.root
            )
            assert answer.status_code == 200, answer.text
            assert answer.json() | {} == {
                "agent_id": "agent-a",
                "items": 1,
                "events": 1,
                "sessions": 0,
                "messages": 0,
                "api_keys": 1,
            }
            # agent-a's key went with its data; agent-b is untouched
            gone = api.client.post(
                f"{V1}/memory/retrieve", json={"query": "vault code"}, headers=api.a
            )
            assert gone.status_code == 401
            found = api.client.post(
                f"{V1}/memory/retrieve",
                json={"query": "vault code", "agent_id": "agent-a"},
                headers=api.root,
            )
            assert found.json()["results"] == []
            kept = api.client.post(f"{V1}/memory/retrieve", json={"query": "tea"}, headers=api.b)
            assert [r["memory"]["content"] for r in kept.json()["results"]] == ["B likes tea"]
            bad = api.client.post(f"{V1}/agents/erase", json={"agent_id": ""}, headers=api.root)
            assert bad.status_code == 422
