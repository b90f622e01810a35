"""The ``langmem-tiers`` command line: the parser, the error rule and shared helpers.

Every command takes ``--url`` (the embedded SQLite file when left out) and exits 0 on
success, or non-zero with one line on standard error: ``langmem-tiers: error: ...``
(2 for a bad command line, 1 for anything else). ``--json`` prints what a program would
read.

Example:
    >>> main(["search", "launch date"])
    2
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, NoReturn, TextIO

from langmem_tiers.config import Settings
from langmem_tiers.errors import LangmemTiersError
from langmem_tiers.long_term.engine.plain import plain

__all__ = [
    "PROG",
    "CommandError",
    "build_parser",
    "count",
    "main",
    "open_store",
    "parse_time",
    "print_json",
    "settings_for",
]

PROG = "langmem-tiers"

Command = Callable[[argparse.Namespace], int]


class CommandError(LangmemTiersError):
    """A command cannot do what was asked (the message is printed as the error line)."""


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error rule (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        hint = f"{self.prog} --help"
        self.exit(2, f"{PROG}: error: {_one_line(message)} (see {hint})\n")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def parse_time(text: str) -> datetime:
    """An ISO-8601 instant for the command line; no offset means UTC.

    >>> parse_time("2026-03-01T12:00:00").isoformat()
    '2026-03-01T12:00:00+00:00'
    """
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO-8601 time; use e.g. 2026-03-01T12:00:00+00:00"
        ) from err
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from err
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _unit(text: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from err
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within 0 and 1, got {value}")
    return value


def settings_for(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings from the environment, with the command line's ``--url`` and ``overrides``."""
    if getattr(args, "url", None) is not None:
        overrides["url"] = args.url
    return Settings.from_env(**overrides)


@contextmanager
def open_store(args: argparse.Namespace, settings: Settings | None = None) -> Iterator[Any]:
    """The store of ``--url`` (schema set up), closed at the end."""
    from langmem_tiers.long_term.store.store import TieredMemoryStore

    settings = settings if settings is not None else settings_for(args)
    with TieredMemoryStore.from_url(settings.url, settings=settings) as store:
        yield store


def count(n: int, word: str, many: str | None = None) -> str:
    """``n`` with ``word`` in the singular or plural.

    >>> count(1, "memory", "memories"), count(3, "session"), count(0, "message")
    ('1 memory', '3 sessions', '0 messages')
    """
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def print_json(value: Any, out: TextIO | None = None) -> None:
    """Print ``value`` as indented JSON (records as objects, datetimes as ISO-8601)."""
    print(
        json.dumps(plain(value), ensure_ascii=False, indent=2),
        file=out or sys.stdout,
    )


# -- the parser --------------------------------------------------------------------------


def _common() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log warnings (-v) or everything the package does (-vv) to standard error",
    )
    common.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help="store URL: sqlite:///path.db or postgresql://user@host/db "
        "(default: LANGMEM_TIERS_URL, else the embedded SQLite file)",
    )
    return common


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for programs")


def _scope(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--scope", required=required, help="the agent or user id whose memory to use"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    from langmem_tiers.cli import demo, ingest, inspector, memory

    common = _common()
    parser = _Parser(
        prog=PROG,
        description="Tiered short- and long-term memory for LangChain and LangGraph.",
        parents=[common],
        epilog="Start with: langmem-tiers demo",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, run: Command, help_text: str, description: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=description, parents=[common])
        command.set_defaults(run=run)
        return command

    p = add(
        "demo",
        demo.run,
        "run the shipped multi-session conversation through the tiered chat graph",
        "Runs a multi-session project conversation through the tiered chat graph (offline "
        "unless --model is given), printing pruning and consolidation events, tier requests "
        "and episodic searches, and for each question what memory put in the prompt; then "
        "the memory beside two baselines (full history, last N messages): prompt tokens, "
        "model calls, evidence in the prompt; and what long-term memory holds. Each run "
        "uses a fresh scope.",
    )
    p.add_argument(
        "--model",
        default=None,
        help="chat model as a provider string, e.g. openai:gpt-4o-mini "
        "(default: LANGMEM_TIERS_MODEL, else the offline model)",
    )
    p.add_argument("--turns", type=_positive, default=None, help="only the first N user turns")
    p.add_argument("--scope", default=None, help="the demo user's id (default: a fresh demo-<id>)")
    p.add_argument(
        "--reset",
        action="store_true",
        help="first delete what earlier demo runs left in this database (scopes demo-*)",
    )
    p.add_argument(
        "--budget",
        type=_positive,
        default=demo.DEFAULT_BUDGET,
        help="token budget of the tiered window: over it the oldest messages are tiered, then "
        "archived (small, so pruning shows; default %(default)s)",
    )
    p.add_argument(
        "--soft-budget",
        type=_positive,
        default=None,
        help="tokens the window may take raw before its oldest messages are tiered "
        "(default: --budget)",
    )
    p.add_argument(
        "--window",
        type=_positive,
        default=demo.DEFAULT_WINDOW,
        help="messages of the plain-window baseline (default %(default)s)",
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="PATH",
        help="draw prompt tokens per turn for the memory and the baselines to PATH (a .png; "
        "needs matplotlib)",
    )
    p.add_argument("--rows", type=_positive, default=12, help="rows of the token table")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    _json_flag(p)

    p = add(
        "ingest",
        ingest.run,
        "load a conversation (JSONL messages or LoCoMo) into short- and long-term memory",
        "Loads messages into a session of short-term memory (in the store's database) and "
        "long-term memory, as a live conversation would: the tiered window archives what "
        "overflows to episodic memory, the user's facts and preferences become semantic and "
        "procedural memories. JSONL: one {'role', 'content'} per line ('session' optional); "
        "LoCoMo: the dataset's JSON.",
    )
    p.add_argument("file", help="the JSONL or LoCoMo JSON file")
    _scope(p, required=False)
    p.add_argument("--session", default=None, help="session id (default: the file's name)")
    p.add_argument(
        "--format", choices=["auto", "jsonl", "locomo"], default="auto", help="input format"
    )
    p.add_argument("--limit", type=_positive, default=None, help="only the first N messages")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _json_flag(p)

    p = add(
        "search",
        memory.search,
        "hybrid-ranked search of long-term memory",
        "Searches a scope's long-term memory; prints each memory with its score and the "
        "score's components (semantic, recency, frequency, confidence).",
    )
    p.add_argument("query", help="what to look for")
    _scope(p)
    p.add_argument(
        "--kind",
        action="append",
        choices=["episodic", "semantic", "procedural"],
        help="only this kind (repeat for several)",
    )
    p.add_argument("--limit", type=_positive, default=10, help="results (default %(default)s)")
    p.add_argument("--all", action="store_true", help="include superseded, decayed, deleted")
    p.add_argument(
        "--min-score",
        type=_unit,
        default=None,
        help="only memories at least this relevant (0-1, an absolute relevance)",
    )
    _json_flag(p)

    p = add(
        "context",
        memory.context,
        "show the model's view of a session (tiered messages and memories)",
        "Prints the context a model is given for a session: long-term summaries and each "
        "message at its tier ([m12|t1] ...).",
    )
    p.add_argument("session", help="the session id")
    p.add_argument(
        "--scope",
        default=None,
        help="the user id (default: the user the session's messages were saved for, as "
        "ingest --scope saved them; else the session id)",
    )
    _json_flag(p)

    p = add(
        "consolidate",
        memory.consolidate,
        "turn episodic memories into semantic ones (idempotent)",
        "Consolidates a scope's episodic memories into semantic summaries; --due does it "
        "for every scope over the threshold.",
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--scope", help="the agent or user id")
    group.add_argument("--due", action="store_true", help="every scope over the threshold")
    _json_flag(p)

    p = add(
        "decay",
        memory.decay,
        "apply importance decay (memories below the threshold become decayed)",
        "Lowers the importance of memories not used for a while; those below the threshold "
        "become 'decayed'.",
    )
    _scope(p)
    p.add_argument("--now", type=parse_time, default=None, help="decay as of this ISO time")
    _json_flag(p)

    p = add(
        "forget",
        memory.forget,
        "forget a memory (soft: status deleted; --hard: rows removed)",
        "Forgets one memory of a scope by its id.",
    )
    p.add_argument("memory_id", help="the memory's id")
    _scope(p)
    p.add_argument("--hard", action="store_true", help="remove the rows, not just the status")
    _json_flag(p)

    p = add(
        "replay",
        memory.replay,
        "memory as it was at an instant, rebuilt from the event log",
        "Replays a scope's events up to --at and prints the memories as they were.",
    )
    _scope(p)
    p.add_argument("--at", type=parse_time, required=True, help="the ISO-8601 instant")
    _json_flag(p)

    p = add(
        "timeline",
        memory.timeline,
        "the event log of a scope",
        "Prints a scope's memory events (created, updated, superseded, ...) in order.",
    )
    _scope(p)
    p.add_argument("--since", type=parse_time, default=None, help="from this ISO time")
    p.add_argument("--until", type=parse_time, default=None, help="up to this ISO time")
    p.add_argument("--type", action="append", dest="types", help="only this event type")
    p.add_argument("--limit", type=_positive, default=100, help="events (default %(default)s)")
    _json_flag(p)

    p = add(
        "stats",
        memory.stats,
        "counts of memories by kind and status",
        "Prints memory counts for one scope, or for the whole database.",
    )
    _scope(p, required=False)
    _json_flag(p)

    p = add(
        "keys",
        memory.keys,
        "manage API keys of the HTTP server",
        "Creates, lists and revokes API keys. A key is bound to one scope or is an admin "
        "key; only its hash is stored, so it is shown once.",
    )
    keys = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    k = keys.add_parser(
        "create", help="create a key (printed once)", parents=[common], description="Create a key."
    )
    group = k.add_mutually_exclusive_group(required=True)
    group.add_argument("--scope", help="the agent or user id the key may use")
    group.add_argument("--admin", action="store_true", help="an admin key (every scope)")
    k.add_argument("--name", default=None, help="a note to tell keys apart")
    _json_flag(k)
    k = keys.add_parser(
        "list",
        help="list keys (never the keys themselves)",
        parents=[common],
        description="List keys.",
    )
    _scope(k, required=False)
    _json_flag(k)
    k = keys.add_parser(
        "revoke", help="revoke a key by id", parents=[common], description="Revoke a key."
    )
    k.add_argument("key_id", help="the key's id (the 12 characters after 'lmt_')")
    _json_flag(k)

    _portability_commands(add)

    p = add(
        "serve",
        memory.serve,
        "run the HTTP API (needs the 'server' extra)",
        "Serves the memory engine's HTTP API with uvicorn; OpenAPI docs at /docs.",
    )
    p.add_argument("--host", default="127.0.0.1", help="interface (default %(default)s)")
    p.add_argument("--port", type=int, default=8080, help="port (default %(default)s)")
    p.add_argument(
        "--max-body-bytes",
        type=_positive,
        default=None,
        help="largest request body accepted (default 1 MiB)",
    )
    p.add_argument(
        "--model", default=None, help="chat model for conflict checks (default: offline)"
    )
    p.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="server processes on the port (default %(default)s; one per CPU serves the most)",
    )
    p.add_argument(
        "--pool-size",
        type=_positive,
        default=None,
        help="PostgreSQL connections per process (default 10)",
    )
    p.add_argument("--log-level", default="info", help="uvicorn log level (default %(default)s)")

    p = add(
        "inspect",
        inspector.run,
        "open the memory inspector in the browser (needs the 'server' extra)",
        "Serves the read-only memory inspector on 127.0.0.1 over the store of --url and "
        "prints a link that signs in (valid while the command runs): scopes, memories, "
        "search with score components, versions, time travel, sessions.",
    )
    p.add_argument("--port", type=_port, default=8090, help="port (default %(default)s)")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (default %(default)s)")

    p = add(
        "mcp",
        memory.mcp,
        "run the MCP server (needs the 'mcp' extra)",
        "Serves long-term memory to MCP clients: tools remember, recall, forget, history, "
        "read_memory, entities and relations, resources memory://facts, memory://preferences "
        "and memory://entities. Over stdio (the default) for the "
        "one scope of --scope; with --http over streamable HTTP at http://HOST:PORT/mcp, "
        "where each caller sends an API key (Authorization: Bearer <key>, see 'keys create') "
        "and works in the key's scope.",
    )
    p.add_argument("--scope", default=None, help="the agent or user id (stdio; required there)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument(
        "--host", default="127.0.0.1", help="interface with --http (default %(default)s)"
    )
    p.add_argument(
        "--port", type=_port, default=8765, help="port with --http (default %(default)s)"
    )
    p.add_argument(
        "--model", default=None, help="chat model for conflict checks (default: offline)"
    )
    p.add_argument(
        "--log-level", default="warning", help="uvicorn log level with --http (default %(default)s)"
    )
    return parser


def _portability_commands(add: Callable[..., argparse.ArgumentParser]) -> None:
    """``export``, ``import``, ``migrate`` and ``erase`` (cli/portability.py)."""
    from langmem_tiers.cli import portability

    p = add(
        "export",
        portability.export,
        "export memory as versioned JSON Lines (every scope, or --scope)",
        "Writes memories with their versions, statuses, counts and TTLs, the event log and "
        "short-term sessions with their tiers, one JSON record per line (see the README's "
        "'Your data' section).",
    )
    p.add_argument("--scope", action="append", help="only this scope (repeat for several)")
    p.add_argument("--out", default=None, help="the file to write (default: standard output)")
    p.add_argument("--embeddings", action="store_true", help="include the vectors")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = add(
        "import",
        portability.import_,
        "import an export (idempotent, one transaction per scope)",
        "Reads a file written by 'export' into the store of --url; records already there "
        "are left alone, so importing twice changes nothing.",
    )
    p.add_argument("file", help="the export file ('-': standard input)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _json_flag(p)

    p = add(
        "migrate",
        portability.migrate,
        "copy the store of --url into another (e.g. SQLite to PostgreSQL)",
        "Exports the store of --url and imports it into --to as it streams: memories, "
        "versions, events, sessions and vectors. Idempotent; re-run it after an interruption.",
    )
    p.add_argument("--to", required=True, help="the target store URL (postgresql://...)")
    p.add_argument("--scope", action="append", help="only this scope (repeat for several)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _json_flag(p)

    p = add(
        "erase",
        portability.erase,
        "remove every trace of a scope (asks for the scope id again)",
        "Removes a scope's memories, versions, vectors, terms, access counts, short-term "
        "sessions and API keys, and empties its events (content-free tombstones keep their "
        "sequence numbers). Re-run an interrupted erase to finish it.",
    )
    _scope(p)
    p.add_argument("--yes", action="store_true", help="do not ask for the scope id again")
    _json_flag(p)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from err
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be 1-65535, got {value}")
    return value


def _configure_logging(verbose: int) -> None:
    # Library warnings (a refused tier request, a bounded regeneration) are details a
    # command's output already reports; show them only when asked.
    level = {0: logging.ERROR, 1: logging.WARNING}.get(verbose, logging.INFO)
    # A no-op when the host already configured logging (an embedding program, pytest).
    logging.basicConfig(level=level, format=f"{PROG}: %(levelname)s: %(name)s: %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; answers the exit code (0 on success)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    if not hasattr(args, "url"):
        args.url = None
    _configure_logging(getattr(args, "verbose", 0))
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except (LangmemTiersError, OSError, ValueError) as err:
        print(f"{PROG}: error: {_one_line(err) or type(err).__name__}", file=sys.stderr)
        return 1
    except Exception as err:  # a bug: still one line, with the type to report it by
        print(f"{PROG}: error: unexpected {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        return 1
