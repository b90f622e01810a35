"""Commands over long-term memory and the server: search, context, consolidate, decay, forget,
replay, timeline, stats, keys, serve and mcp.

Each opens the store of ``--url``, calls the memory engine (or the key table), prints a
human table, or JSON with ``--json``. ``search``, ``stats`` and ``timeline`` also show the
scope's items that other tools put in namespaces of their own (LangMem's
``("memories", "<user>")``, a LangGraph node's ``("<user>", "notes")``): every namespace
that names the scope, besides the engine's ``(<scope>, <kind>)``.

Example:
    $ langmem-tiers search "launch date" --scope demo-1a2b3c4d --kind semantic
    $ langmem-tiers replay --scope agent-a --at 2026-03-01T12:00:00Z --json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langmem_tiers.cli.main import CommandError, count, open_store, print_json, settings_for
from langmem_tiers.long_term.engine.plain import plain

__all__ = [
    "consolidate",
    "context",
    "decay",
    "forget",
    "keys",
    "mcp",
    "replay",
    "search",
    "serve",
    "stats",
    "timeline",
]


@contextmanager
def _engine(args: argparse.Namespace) -> Iterator[Any]:
    from langmem_tiers.long_term.engine.engine import MemoryEngine

    settings = settings_for(args)
    with open_store(args, settings) as store:
        yield MemoryEngine(store, settings=settings)


def _clip(text: Any, limit: int = 100) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _memory_line(memory: Any) -> str:
    return (
        f"{memory.id}  {memory.kind:<10} {memory.status:<10} "
        f"{_clip(memory.content or memory.value)}"
    )


def _other_namespaces(
    engine: Any, scope: str | None, kinds: list[str] | None = None
) -> list[tuple[str, ...]]:
    """Namespaces naming ``scope`` (any with no scope) that are not the engine's own.

    With ``kinds``, only namespaces ending in one of them.
    """
    from langmem_tiers.long_term.store.scope import (
        MEMORY_KINDS,
        encode_label,
        parse_memory_namespace,
    )

    label = None if scope is None else encode_label(scope)
    own = set() if label is None else {(label, kind) for kind in MEMORY_KINDS}
    found = []
    for namespace in engine.store.list_namespaces(limit=100_000):
        if namespace in own or (label is not None and label not in namespace):
            continue
        if label is None and len(namespace) == 2 and parse_memory_namespace(namespace).kind:
            continue  # an engine scope's own namespace
        if kinds and namespace[-1] not in kinds:
            continue
        found.append(namespace)
    return sorted(found)


def _all_items(store: Any, namespace: tuple[str, ...]) -> list[Any]:
    items: list[Any] = []
    while True:
        page = store.search(namespace, limit=1000, offset=len(items))
        items.extend(i for i in page if tuple(i.namespace) == namespace)
        if len(page) < 1000:
            return items


def _document(item: Any) -> dict[str, Any]:
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "score": float(item.score or 0.0),
        "scores": dict(getattr(item, "scores", {}) or {}),
    }


def search(args: argparse.Namespace) -> int:
    """``search QUERY --scope ID [--kind K] [--min-score S]``: hybrid-ranked, with components.

    Items of other namespaces naming the scope (see the module docstring) follow the
    engine's memories, ranked among themselves (scores of separate searches are not
    comparable).
    """
    from langmem_tiers.long_term.store.records import memory_text

    with _engine(args) as engine:
        found = engine.retrieve(
            args.scope,
            args.query,
            kinds=args.kind,
            limit=args.limit,
            include_inactive=args.all,
            min_score=getattr(args, "min_score", None),
        )
        documents: list[Any] = []
        for namespace in _other_namespaces(engine, args.scope, args.kind):
            documents.extend(engine.store.search(namespace, query=args.query, limit=args.limit))
        documents.sort(key=lambda item: -float(item.score or 0.0))
        documents = documents[: args.limit]
        if args.json:
            print_json([plain(item) for item in found] + [_document(d) for d in documents])
            return 0
        if not found and not documents:
            print(f"nothing found in scope {args.scope!r}")
        for item in found:
            parts = " ".join(f"{k[:4]}={v:.2f}" for k, v in item.scores.items())
            print(f"{item.score:.3f}  [{parts}]  {_memory_line(item)}")
        if documents:
            print(f"in other namespaces of {args.scope!r}:")
        for doc in documents:
            parts = " ".join(f"{k[:4]}={v:.2f}" for k, v in (doc.scores or {}).items())
            text = _clip(memory_text(doc.value) or doc.value)
            where = f"{'/'.join(doc.namespace)}/{doc.key}"
            print(f"{float(doc.score or 0.0):.3f}  [{parts}]  {where}  {text}")
    return 0


def context(args: argparse.Namespace) -> int:
    """``context SESSION``: the model's view of a session (short-term memory)."""
    from langmem_tiers.conversation import ChatMemory
    from langmem_tiers.short_term.presets import get_preset
    from langmem_tiers.short_term.sql_log import SqlMessageLog

    settings = settings_for(args)
    with open_store(args, settings) as store:
        log = SqlMessageLog(store.conn)
        memory = ChatMemory(
            store, preset=get_preset("tiered").with_changes(log="sql"), settings=settings, log=log
        )
        records = memory.memory(args.session, args.scope).records()
        if not records:
            raise CommandError(
                f"session {args.session!r} has no messages in this database; "
                "ingest some first (langmem-tiers ingest FILE --session ...)"
            )
        # The session's own user (what `ingest --scope` saved it for), unless one is given.
        scope = args.scope or next(
            (r.user_id for r in reversed(records) if r.user_id), args.session
        )
        view = memory.memory(args.session, scope).context()
    if args.json:
        print_json(
            {
                "session": args.session,
                "scope": scope,
                "messages": len(records),
                "context": [{"type": m.type, "content": m.text} for m in view],
            }
        )
        return 0
    print(
        f"session {args.session} (scope {scope}): {count(len(records), 'message')} in the "
        "window; the model sees:"
    )
    for message in view:
        text = message.text if message.type == "system" else _clip(message.text, 160)
        print(f"[{message.type}] {text}")
    return 0


def consolidate(args: argparse.Namespace) -> int:
    """``consolidate --scope ID`` (or ``--due``): episodic -> semantic, idempotent."""
    with _engine(args) as engine:
        progress = sys.stderr.isatty() and not args.json
        if args.due:
            results = engine.consolidate_due(progress=progress)
        else:
            results = [engine.consolidate(args.scope, progress=progress)]
        if args.json:
            print_json([plain(r) for r in results])
            return 0
        if not results:
            print("no scope is over the consolidation threshold")
        for result in results:
            print(_summary_line("consolidated", plain(result)))
            if result.groups == 0 and result.skipped == 0:
                print(f"  {_nothing_to_consolidate(result.scope)}")
    return 0


def _nothing_to_consolidate(scope: str) -> str:
    """Why a consolidation of ``scope`` found nothing to do."""
    return (
        f"nothing to do: {scope!r} has no unconsolidated episodic memories. Episodes are "
        "events written to the scope (the HTTP API, MCP's remember with kind event) and "
        "exchanges archived from a session's window once it passes its token budget "
        "(context_token_limit, 30,000 tokens by default); `langmem-tiers stats --scope "
        f"{scope}` counts them."
    )


def _summary_line(verb: str, data: dict[str, Any]) -> str:
    parts = [
        f"{k}={len(v) if isinstance(v, list) else v}"
        for k, v in data.items()
        if not isinstance(v, dict)
    ]
    return f"{verb}: " + ", ".join(parts)


def decay(args: argparse.Namespace) -> int:
    """``decay --scope ID``: lower importance of unused memories; mark decayed ones."""
    with _engine(args) as engine:
        result = plain(engine.decay(args.scope, now=args.now))
    if args.json:
        print_json(result)
    else:
        print(_summary_line("decay", result))
    return 0


def forget(args: argparse.Namespace) -> int:
    """``forget MEMORY_ID --scope ID [--hard]``; an id not in the scope is an error."""
    with _engine(args) as engine:
        memory = engine.forget(args.scope, args.memory_id, hard=args.hard)
    if args.json:
        print_json({"memory": None if memory is None else plain(memory), "hard": args.hard})
    elif memory is None:
        print(f"forgot (removed): {args.memory_id}")
    else:
        print(f"forgot (marked deleted): {_memory_line(memory)}")
    return 0


def replay(args: argparse.Namespace) -> int:
    """``replay --scope ID --at TIME``: memory as it was, from the event log."""
    with _engine(args) as engine:
        first = engine.timeline(args.scope, limit=1)
        # Before the scope's first event its memory was empty: that is the answer.
        before = not first or args.at < first[0].at
        memories = [] if before else engine.replay(args.scope, args.at)
    if args.json:
        print_json({"at": args.at, "memories": [plain(m) for m in memories]})
        return 0
    when = args.at.isoformat()
    print(f"{count(len(memories), 'memory', 'memories')} of {args.scope!r} at {when}:")
    if before:
        print(
            f"  (the scope's first event is at {first[0].at.isoformat()})"
            if first
            else "  (the scope has no events)"
        )
    for memory in memories:
        print(f"  {_memory_line(memory)}")
    return 0


def timeline(args: argparse.Namespace) -> int:
    """``timeline --scope ID``: the events of a scope (and of its other namespaces), in order."""
    from langmem_tiers.long_term.engine.replay import timeline_flow
    from langmem_tiers.long_term.store.records import join_namespace

    with _engine(args) as engine:
        events = list(
            engine.timeline(
                args.scope, since=args.since, until=args.until, types=args.types, limit=args.limit
            )
        )
        for namespace in _other_namespaces(engine, args.scope):
            events.extend(
                engine.store.db.run(
                    timeline_flow(
                        engine.store.core.dialect,
                        join_namespace(namespace),
                        since=args.since,
                        until=args.until,
                        types=args.types,
                        memory_id=None,
                        limit=args.limit,
                        memories_only=False,
                    )
                )
            )
    events = sorted(events, key=lambda e: e.seq)[: args.limit]
    rows = [plain(e) for e in events]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no events for {args.scope!r}")
    for row in rows:
        after = row.get("after") or row.get("before") or {}
        content = after.get("content") or (after.get("value") or {}).get("content", "")
        print(
            f"{row.get('seq', ''):>6}  {str(row.get('at', ''))[:19]}  {row.get('type', ''):<12} "
            f"{row.get('memory_id', '')}  {_clip(content, 70)}"
        )
    return 0


def stats(args: argparse.Namespace) -> int:
    """``stats [--scope ID]``: counts of memories by kind and status.

    ``other_namespaces`` counts the items of namespaces that name the scope but are not
    the engine's own (every such namespace without ``--scope``).
    """
    with _engine(args) as engine:
        data = plain(engine.stats(args.scope))
        data["other_namespaces"] = {
            "/".join(namespace): len(_all_items(engine.store, namespace))
            for namespace in _other_namespaces(engine, args.scope)
        }
    if args.json:
        print_json(data)
        return 0
    _print_tree(data)
    return 0


def _print_tree(data: Any, indent: int = 0) -> None:
    pad = "  " * indent
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, (dict, list)) and not value:
                print(f"{pad}{key}: none")
            elif isinstance(value, (dict, list)):
                print(f"{pad}{key}:")
                _print_tree(value, indent + 1)
            else:
                print(f"{pad}{key}: {value}")
    elif isinstance(data, list):
        for value in data:
            _print_tree(value, indent)
            if isinstance(value, dict) and indent == 0:
                print()
    else:
        print(f"{pad}{data}")


def keys(args: argparse.Namespace) -> int:
    """``keys create|list|revoke``: API keys of the HTTP server."""
    from langmem_tiers.server.keys import ApiKeys

    with open_store(args) as store:
        table = ApiKeys(store.db)
        if args.keys_command == "create":
            created = table.create(scope=args.scope, admin=args.admin, name=args.name)
            if args.json:
                print_json({"key": created.key, **created.record.to_dict()})
            else:
                bound = "admin (every scope)" if args.admin else f"scope {args.scope!r}"
                print(created.key)
                print(
                    f"# key {created.record.id} for {bound}; shown once: only its hash is "
                    "stored. Send it as 'Authorization: Bearer <key>'."
                )
            return 0
        if args.keys_command == "list":
            found = table.list_keys(scope=args.scope)
            if args.json:
                print_json([k.to_dict() for k in found])
                return 0
            if not found:
                print("no API keys (create one with: langmem-tiers keys create --scope ID)")
            for key in found:
                state = "revoked" if key.revoked_at else "active"
                bound = "admin" if key.is_admin else f"scope={key.scope}"
                print(
                    f"{key.id}  {state:<7} {bound}  created {key.created_at:%Y-%m-%d %H:%M}"
                    + (f"  {key.name}" if key.name else "")
                )
            return 0
        record = table.revoke(args.key_id)
        if args.json:
            print_json(record.to_dict())
        else:
            print(f"revoked key {record.id}")
    return 0


def serve(args: argparse.Namespace) -> int:
    """``serve``: the HTTP API with uvicorn."""
    from langmem_tiers.server import DEFAULT_MAX_BODY_BYTES, DEFAULT_POOL_SIZE
    from langmem_tiers.server import serve as run_server

    settings = settings_for(args)
    run_server(
        settings.url,
        settings=settings,
        model=args.model,
        max_body_bytes=args.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
        pool_size=args.pool_size or DEFAULT_POOL_SIZE,
        workers=args.workers,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
    )
    return 0


def mcp(args: argparse.Namespace) -> int:
    """``mcp --scope ID`` (stdio) or ``mcp --http``: the MCP server."""
    import asyncio

    from langmem_tiers.server.mcp import serve_http, serve_stdio

    settings = settings_for(args)
    if args.http:
        if args.scope is not None:
            raise CommandError(
                "--scope is for stdio; over --http each API key carries its scope "
                "(create one with: langmem-tiers keys create --scope ID)"
            )
        asyncio.run(
            serve_http(
                host=args.host,
                port=args.port,
                settings=settings,
                model=args.model,
                log_level=args.log_level,
            )
        )
        return 0
    if args.scope is None:
        raise CommandError(
            "--scope is required over stdio: name the agent or user whose memory to serve "
            "(or use --http with API keys)"
        )
    asyncio.run(serve_stdio(args.scope, settings=settings, model=args.model))
    return 0
