"""LangMem's memory tools used directly against the store, on every backend.

``create_manage_memory_tool`` and ``create_search_memory_tool`` speak only ``BaseStore``,
with a namespace templated from the run config (``{langgraph_user_id}``). No LLM is
involved: the tools are invoked with the arguments a model would give them.
"""

from __future__ import annotations

import json
import re
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, SearchItem

with warnings.catch_warnings():
    # LangMem's dependency trustcall imports Send from its pre-1.0 place.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="trustcall")
    from langmem import (  # type: ignore[import-untyped]  # no py.typed
        create_manage_memory_tool,
        create_memory_store_manager,
        create_search_memory_tool,
    )

if TYPE_CHECKING:
    from conftest import Twin

TwinOf = Callable[[Any], "Twin"]

NAMESPACE = ("memories", "{langgraph_user_id}")
_CREATED = re.compile(r"^created memory ([0-9a-f-]{36})$")


def config_for(user: str) -> RunnableConfig:
    """The run config LangMem's namespace template reads the user id from."""
    return {"configurable": {"langgraph_user_id": user}}


async def create(manage: Twin, content: str, user: str) -> str:
    """Create a memory through the tool and return its id."""
    out = await manage.invoke({"content": content}, config=config_for(user))
    match = _CREATED.match(out)
    assert match, out
    return match.group(1)


async def search(search_tool: Twin, user: str, **args: Any) -> list[dict[str, Any]]:
    """Search through the tool and decode its JSON answer."""
    out = await search_tool.invoke(args, config=config_for(user))
    found = json.loads(out)
    assert isinstance(found, list)
    return found


async def test_manage_tool_creates_updates_and_deletes(
    store: BaseStore, twin: Twin, twin_of: TwinOf
) -> None:
    manage = twin_of(create_manage_memory_tool(namespace=NAMESPACE, store=store))
    alice = config_for("alice")
    ns = ("memories", "alice")

    memory_id = await create(manage, "User likes tea", "alice")
    item = await twin.get(ns, memory_id)
    assert item is not None
    assert item.value == {"content": "User likes tea"}

    out = await manage.invoke(
        {"action": "update", "id": memory_id, "content": "User likes coffee"}, config=alice
    )
    assert out == f"updated memory {memory_id}"
    item = await twin.get(ns, memory_id)
    assert item is not None
    assert item.value == {"content": "User likes coffee"}
    assert [i.key for i in await twin.search(ns)] == [memory_id]

    out = await manage.invoke({"action": "delete", "id": memory_id}, config=alice)
    assert out == f"Deleted memory {memory_id}"
    assert await twin.get(ns, memory_id) is None
    assert await twin.search(ns) == []


async def test_search_tool_ranks_memories_by_query(store: BaseStore, twin_of: TwinOf) -> None:
    manage = twin_of(create_manage_memory_tool(namespace=NAMESPACE, store=store))
    search_tool = twin_of(create_search_memory_tool(namespace=NAMESPACE, store=store))
    ids = {
        text: await create(manage, text, "alice")
        for text in ("User likes tea", "User drives a car", "User plays jazz music")
    }

    found = await search(search_tool, "alice", query="jazz music")
    assert found[0]["value"]["content"] == "User plays jazz music"
    assert sorted(f["key"] for f in found) == sorted(ids.values())
    assert all(f["namespace"] == ["memories", "alice"] for f in found)
    scores = [f["score"] for f in found]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)

    top = await search(search_tool, "alice", query="car", limit=1)
    assert [f["key"] for f in top] == [ids["User drives a car"]]
    rest = await search(search_tool, "alice", query="car", limit=5, offset=1)
    assert ids["User drives a car"] not in [f["key"] for f in rest]
    assert len(rest) == 2

    filtered = await search(search_tool, "alice", query="car", filter={"content": "User likes tea"})
    assert [f["key"] for f in filtered] == [ids["User likes tea"]]


async def test_namespace_template_keeps_users_apart(
    store: BaseStore, twin: Twin, twin_of: TwinOf
) -> None:
    manage = twin_of(create_manage_memory_tool(namespace=NAMESPACE, store=store))
    search_tool = twin_of(create_search_memory_tool(namespace=NAMESPACE, store=store))
    alice_id = await create(manage, "Alice keeps a secret about Paris", "alice")
    await create(manage, "Bob likes Berlin", "bob")

    found = await search(search_tool, "bob", query="secret Paris")
    assert [f["value"]["content"] for f in found] == ["Bob likes Berlin"]

    # Bob naming Alice's memory id writes and deletes in Bob's namespace only.
    bob = config_for("bob")
    await manage.invoke({"action": "update", "id": alice_id, "content": "hijacked"}, config=bob)
    await manage.invoke({"action": "delete", "id": alice_id}, config=bob)
    item = await twin.get(("memories", "alice"), alice_id)
    assert item is not None
    assert item.value == {"content": "Alice keeps a secret about Paris"}
    found = await search(search_tool, "alice", query="anything")
    assert [f["key"] for f in found] == [alice_id]


async def test_search_tool_artifact_carries_search_items(
    store: BaseStore, twin_of: TwinOf, mode: str
) -> None:
    manage = twin_of(create_manage_memory_tool(namespace=NAMESPACE, store=store))
    raw_tool = create_search_memory_tool(
        namespace=NAMESPACE, store=store, response_format="content_and_artifact"
    )
    search_tool = twin_of(raw_tool)
    memory_id = await create(manage, "User plays jazz music", "alice")
    call = {
        "name": raw_tool.name,
        "args": {"query": "jazz"},
        "id": f"call_{uuid.uuid4().hex[:8]}",
        "type": "tool_call",
    }
    message = await search_tool.invoke(call, config=config_for("alice"))
    assert isinstance(message, ToolMessage)
    assert isinstance(message.artifact, list)
    assert [type(a) for a in message.artifact] == [type(message.artifact[0])]
    assert isinstance(message.artifact[0], SearchItem)
    assert message.artifact[0].key == memory_id
    assert json.loads(str(message.content))[0]["key"] == memory_id


# -- LangMem's memory store manager, driven by a scripted model ---------------------------
class ScriptedToolModel(GenericFakeChatModel):
    """Answers each call with the next scripted message; accepts ``bind_tools``."""

    disable_streaming: bool = True  # GenericFakeChatModel's stream drops tool calls

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def memory_calls(*texts: str) -> AIMessage:
    """What a model answers LangMem's manager to record memories: one ``Memory`` call each."""
    return AIMessage(
        "",
        tool_calls=[
            ToolCall(name="Memory", args={"content": text}, id=f"call_{i}")
            for i, text in enumerate(texts)
        ],
    )


@pytest.mark.parametrize(
    "template",
    [("memories", "{langgraph_user_id}"), ("{langgraph_user_id}", "semantic")],
    ids=["plain", "semantic"],
)
def test_memory_store_manager_stores_every_memory(
    store: BaseStore, template: tuple[str, ...]
) -> None:
    """Every memory the manager extracts lands, in a plain namespace and in a kind one.

    LangMem puts ``{"kind": "Memory", "content": {"content": ...}}`` from a thread pool
    and never looks at the result: a store that refuses the value loses it silently.
    """
    model = ScriptedToolModel(
        messages=iter(
            [
                memory_calls("User likes tea", "User lives in Lisbon"),
                memory_calls("User plays jazz music"),
            ]
        )
    )
    manager = create_memory_store_manager(model, namespace=template, store=store)
    config = config_for("alice")
    first = manager.invoke(
        {"messages": [{"role": "user", "content": "I like tea and I live in Lisbon."}]},
        config=config,
    )
    second = manager.invoke(
        {"messages": [{"role": "user", "content": "I play jazz on weekends."}]}, config=config
    )
    assert len(first) + len(second) == 3
    namespace = tuple(p.replace("{langgraph_user_id}", "alice") for p in template)
    stored = store.search(namespace, limit=10)
    assert sorted(i.value["content"]["content"] for i in stored) == [
        "User likes tea",
        "User lives in Lisbon",
        "User plays jazz music",
    ]
    assert all(i.value["kind"] == "Memory" for i in stored)  # kept as given

    search_tool = create_search_memory_tool(namespace=template, store=store)
    found = json.loads(search_tool.invoke({"query": "jazz music"}, config=config))
    assert found[0]["value"]["content"] == {"content": "User plays jazz music"}
