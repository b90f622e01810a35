"""The ``langmem-tiers`` command line.

Every command takes ``--url`` (the embedded default when left out) and exits 0 on
success, or non-zero with a one-line error.

Example:
    $ langmem-tiers demo
    $ langmem-tiers search "what does Jordan drink?" --scope demo-user
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from langmem_tiers.errors import LangmemTiersError

__all__ = ["main"]


def _store(url: str | None) -> Any:
    from langmem_tiers.long_term.store import TieredMemoryStore

    return TieredMemoryStore.from_url(url)


def _cmd_demo(args: argparse.Namespace) -> int:
    from langmem_tiers.long_term.scope import MemoryKind, namespace_for

    facts: list[tuple[MemoryKind, str]] = [
        ("semantic", "Jordan leads the RAI Chat project, due on 2026-03-01."),
        ("semantic", "Jordan prefers green tea over coffee."),
        ("procedural", "Answer Jordan in short bullet points."),
        ("episodic", "Jordan and Sam decided to ship the beta on Friday."),
    ]
    with _store(args.url) as store:
        for i, (kind, text) in enumerate(facts, start=1):
            store.put(namespace_for(args.scope, kind), f"demo-{i}", {"content": text})
            print(f"stored {kind:<10} {text}")
        for question in ("What does Jordan drink?", "When is RAI Chat due?"):
            hits = store.search((namespace_for(args.scope, "semantic")[0],), query=question)
            best = hits[0]
            print(f"\nQ: {question}\nA: {best.value['content']}  (score {best.score:.3f})")
    return 0


def _cmd_search(args: argparse.Namespace) -> int:
    from langmem_tiers.long_term.scope import namespace_for

    prefix = (
        namespace_for(args.scope, args.kind)
        if args.kind
        else (namespace_for(args.scope, "semantic")[0],)
    )
    with _store(args.url) as store:
        hits = store.search(prefix, query=args.query, limit=args.limit)
        rows = [
            {"namespace": list(h.namespace), "key": h.key, "score": h.score, "value": h.value}
            for h in hits
        ]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for row in rows:
            print(
                f"{row['score']:.3f}  {'/'.join(row['namespace'])}/{row['key']}  "
                f"{row['value'].get('content', row['value'])}"
            )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="langmem-tiers",
        description="Tiered short- and long-term memory for LangChain and LangGraph.",
    )
    parser.add_argument("--url", default=None, help="store URL (default: the embedded SQLite file)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="store a few memories and retrieve them")
    demo.add_argument("--scope", default="demo-user", help="the user or agent id")
    demo.set_defaults(run=_cmd_demo)
    search = sub.add_parser("search", help="hybrid-ranked search of long-term memory")
    search.add_argument("query")
    search.add_argument("--scope", required=True, help="the user or agent id")
    search.add_argument("--kind", choices=["episodic", "semantic", "procedural"])
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(run=_cmd_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except LangmemTiersError as err:
        print(f"langmem-tiers: error: {err}", file=sys.stderr)
        return 2
