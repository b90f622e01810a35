"""``export``, ``import``, ``migrate`` and ``erase``: memory its users own.

``export [--scope S ...] [--out FILE] [--embeddings]`` writes the JSON Lines format of
``langmem_tiers/portability/format.py`` (standard output without ``--out``);
``import FILE`` (``-``: standard input) reads it into the store of ``--url``;
``migrate --to URL`` copies everything (or ``--scope``) of ``--url`` into the store of
``URL``; ``erase --scope S`` removes every trace of a scope after asking for its id again
(``--yes`` does not ask). Progress bars go to standard error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

from tqdm import tqdm

from langmem_tiers.cli.main import CommandError, open_store, print_json, settings_for
from langmem_tiers.portability.format import decode_line, encode_line

__all__ = ["erase", "export", "import_", "migrate"]


def _bar(records: Iterator[dict[str, Any]], args: argparse.Namespace, what: str) -> Any:
    return tqdm(
        records, desc=what, unit=" records", file=sys.stderr, disable=args.no_progress, leave=False
    )


def export(args: argparse.Namespace) -> int:
    """``export [--scope S ...] [--out FILE] [--embeddings]``."""
    from langmem_tiers.portability.exporter import export_records

    with open_store(args) as store, ExitStack() as stack:
        out = (
            stack.enter_context(open(args.out, "w", encoding="utf-8"))
            if args.out and args.out != "-"
            else sys.stdout
        )
        written = 0
        for record in _bar(
            export_records(store, args.scope, embeddings=args.embeddings), args, "export"
        ):
            out.write(encode_line(record))
            written += 1
        out.flush()
    if args.out and args.out != "-":
        print(f"exported {written} records to {args.out}", file=sys.stderr)
    return 0


def _lines(handle: Any) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(handle, start=1):
        if line.strip():
            yield decode_line(line, number)


def import_(args: argparse.Namespace) -> int:
    """``import FILE`` (``-``: standard input)."""
    from langmem_tiers.portability.importer import import_records

    with open_store(args) as store, ExitStack() as stack:
        handle = (
            sys.stdin
            if args.file == "-"
            else stack.enter_context(open(args.file, encoding="utf-8"))
        )
        result = import_records(store, _bar(_lines(handle), args, "import"))
    if args.json:
        print_json(result._asdict())
    else:
        print(
            f"imported {result.scopes} scopes: {result.items} memories, {result.events} events, "
            f"{result.sessions} sessions, {result.messages} messages, {result.entities} "
            f"entities written; {result.unchanged} records already there; "
            f"{result.embedded} memories embedded"
        )
    return 0


def migrate(args: argparse.Namespace) -> int:
    """``migrate --to URL [--scope S ...]``."""
    from langmem_tiers.long_term.store.store import TieredMemoryStore
    from langmem_tiers.portability.migrate import migrate as move

    source_settings = settings_for(args)
    target_settings = source_settings.replace(url=args.to)
    if target_settings.url == source_settings.url:
        raise CommandError(f"--to {args.to!r} is the source store itself; give another URL.")
    with (
        open_store(args, source_settings) as source,
        TieredMemoryStore.from_url(target_settings.url, settings=target_settings) as target,
    ):
        result = move(source, target, args.scope, progress=lambda r: _bar(r, args, "migrate"))
    if args.json:
        print_json(result._asdict())
    else:
        print(
            f"migrated {result.scopes} scopes: {result.items} memories, {result.events} events, "
            f"{result.sessions} sessions, {result.messages} messages, {result.entities} "
            f"entities written; {result.unchanged} records already there"
        )
    return 0


def erase(args: argparse.Namespace) -> int:
    """``erase --scope S [--yes]``: asks for the scope id again unless ``--yes``."""
    from langmem_tiers.long_term.engine.engine import MemoryEngine

    if not args.yes:
        print(
            f"This removes every memory, event content, session and API key of scope "
            f"{args.scope!r}; it cannot be undone.\nType the scope id again to erase it: ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        answer = sys.stdin.readline().strip()
        if answer != args.scope:
            raise CommandError(
                f"the scope typed ({answer!r}) is not {args.scope!r}; nothing was erased."
            )
    with open_store(args) as store:
        result = MemoryEngine(store, auto_consolidate=False).erase_scope(args.scope)
    if args.json:
        print_json(result._asdict())
    else:
        print(
            f"erased scope {result.scope!r}: {result.items} memories, {result.events} events "
            f"emptied (tombstones kept), {result.sessions} sessions ({result.messages} messages), "
            f"{result.api_keys} API keys"
        )
    return 0
