"""What the MCP tools answer: memories, entities and relations as JSON-ready dicts, each
clipped to its share of the answer's budget (``mcp_answer_chars``), with the way to read
the rest of a clipped one."""

from __future__ import annotations

import json
from typing import Any

from langmem_tiers.long_term.engine.entities import Entity
from langmem_tiers.long_term.engine.models import Memory, ScoredMemory
from langmem_tiers.long_term.engine.plain import plain
from langmem_tiers.long_term.engine.relations import Relation

__all__ = [
    "FRIENDLY",
    "bounded",
    "clip",
    "compact",
    "entity_entry",
    "memory_entry",
    "relation_entry",
    "scored_entry",
    "share_of",
    "without_content",
]

FRIENDLY = {"semantic": "fact", "procedural": "preference", "episodic": "event"}


def memory_entry(memory: Memory) -> dict[str, Any]:
    """A memory as the tools show it: the fields that are set, and the kind's friendly name.

    Its text is ``content`` only: ``value`` leaves out its own copy of it.
    """
    data = {k: v for k, v in memory.to_dict().items() if v is not None}
    data["value"] = without_content(data.get("value"), memory.content)
    for noisy in ("score", "scores", "namespace", "last_accessed_at", "access_count"):
        data.pop(noisy, None)
    data["kind"] = FRIENDLY.get(memory.kind, memory.kind)
    if memory.kind != "procedural":
        data.pop("reinforcement_count", None)
    return data


def scored_entry(item: ScoredMemory) -> dict[str, Any]:
    data = memory_entry(item)
    data["score"] = round(item.score, 6)
    data["scores"] = {k: round(v, 6) for k, v in item.scores.items()}
    return data


def without_content(value: Any, content: str) -> Any:
    if isinstance(value, dict) and value.get("content") == content:
        return {k: v for k, v in value.items() if k != "content"}
    return value


#: However many memories share an answer, each may show this many characters of text.
MIN_SHARE = 200


def share_of(budget: int, count: int) -> int:
    """Characters of text each of ``count`` memories of one answer may show."""
    return max(budget // max(count, 1), MIN_SHARE)


def clip(entry: dict[str, Any], share: int, *, memory_id: str | None = None) -> dict[str, Any]:
    """``entry`` (a memory, a version, a conflict) with its ``content`` and ``value`` cut to
    ``share`` characters each; what was cut is said in ``truncated``, with the
    ``read_memory`` arguments that read the rest."""
    out = dict(entry)
    where = memory_id or out.get("memory_id") or out.get("id")
    version = out.get("version") if "memory_id" in out and memory_id is None else None
    notes: dict[str, Any] = {}
    content = out.get("content")
    if isinstance(content, str) and len(content) > share:
        out["content"] = content[:share]
        notes["content"] = more_entry(where, "content", len(content), share, version)
    if "value" in out and out["value"] is not None:
        text = compact(out["value"])
        if len(text) > share:
            out["value"] = None
            notes["value"] = more_entry(where, "value", len(text), 0, version)
    if notes:
        out["truncated"] = notes
    return out


def more_entry(memory_id: Any, part: str, total: int, shown: int, version: Any) -> dict[str, Any]:
    read: dict[str, Any] = {"memory_id": memory_id, "part": part, "offset": shown}
    if version is not None:
        read["version"] = version
    return {
        "note": f"{part} is {total} characters; {shown} shown. read_memory with these "
        "arguments gives the rest, page by page.",
        "total_chars": total,
        "shown_chars": shown,
        "read_memory": read,
    }


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def bounded(entries: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """``entries`` clipped so that together they show about ``budget`` characters of text."""
    share = share_of(budget, len(entries))
    return [clip(e, share) for e in entries]


def entity_entry(entity: Entity, share: int) -> dict[str, Any]:
    """An entity as the tools show it, its name and aliases within ``share`` characters."""
    data: dict[str, Any] = plain(entity)
    data.pop("scope", None)
    name = entity.name
    if len(name) > share:
        data["name"] = name[:share]
        data["truncated"] = {"name": {"total_chars": len(name), "shown_chars": share}}
    room = share - len(data["name"])
    shown: list[str] = []
    for alias in entity.aliases:
        if len(alias) > room:
            break
        shown.append(alias)
        room -= len(alias)
    data["aliases"] = shown
    if len(shown) < len(entity.aliases):
        data["more_aliases"] = len(entity.aliases) - len(shown)
    return data


def relation_entry(relation: Relation, share: int) -> dict[str, Any]:
    """A relation as the tools show it, its subject and object within ``share`` characters."""
    data: dict[str, Any] = plain(relation)
    cut: dict[str, Any] = {}
    for part in ("subject", "relation", "object"):
        text = data[part]
        if len(text) > share // 3:
            data[part] = text[: share // 3]
            cut[part] = {"total_chars": len(text), "shown_chars": share // 3}
    if cut:
        data["truncated"] = cut
    return data
