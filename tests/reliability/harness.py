"""Crash-consistency harness: a child process writes, the test kills it, then checks everything.

A child opens the store and a message log exactly as an application would, then runs a
seeded stream of operations: short-term memory adds with the ``moving_window`` and the
``tiered`` (token budget) presets, batches of store puts, and overwrites of one store item.
After each operation *returns*, it appends an acknowledgement line to a file; nothing is
acknowledged that was not acknowledged to the caller. The test kills the child with
``SIGKILL`` (the process gets no chance to clean up) and checks the survivors with
:func:`verify`.

Kill points come in three kinds, chosen by a seeded generator:

* ``step``: the child kills itself just before its k-th database statement or log write, so
  every boundary (inside a transaction, between "persisted to long-term memory" and
  "removed from the window", between a commit and its acknowledgement) is reachable and a
  failure replays exactly from its seed.
* ``torn``: the child writes part of its k-th JSONL line and kills itself (a crash in the
  middle of ``write``).
* ``timer``: the test kills the child after a seeded delay, wherever it happens to be.

Children are forked from a preloaded fork server (a clean interpreter started once), so a
kill point costs milliseconds instead of an interpreter start.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing
import multiprocessing.context
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import IndexConfig, PutOp, SearchItem

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.events import replay_snapshots
from langmem_tiers.long_term.store.migrations import STORE_SCHEMA
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.context import ContextBuilder
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.presets import build_memory, build_policy
from langmem_tiers.short_term.records import MessageRecord, parse_message_id
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.sql import backends, postgres_io
from langmem_tiers.sql.flow import Flow, Sql
from langmem_tiers.sql.migrations import versions_flow

__all__ = [
    "BACKENDS",
    "DOCS",
    "MW",
    "TB",
    "Acks",
    "CrashFigures",
    "Plan",
    "crash_child",
    "index_config",
    "memory_settings",
    "open_stack",
    "process_context",
    "run_kill_points",
    "sql_rows",
    "verify",
]

Backend = Literal["sqlite", "jsonl", "postgres"]
BACKENDS: tuple[Backend, ...] = ("sqlite", "jsonl", "postgres")
KillMode = Literal["none", "step", "torn", "timer"]

MW = "mw"
"""Session of the ``moving_window`` preset (window of 3: the 4th message summarises 3)."""
TB = "tb"
"""Session of the ``tiered`` preset (a small token budget: exchanges are archived often)."""
DOCS = ("crash", "docs")
"""Namespace of the plain store puts."""
COUNTER_KEY = "counter"
DIMS = 16
OPS_PER_CHILD = 10

_WORDS = (
    "Jordan", "Lisbon", "deadline", "March", "budget", "design", "review", "python",
    "release", "meeting", "coffee", "project", "RAI", "Chat", "ticket", "invoice",
    "garden", "piano", "Berlin", "twelve", "Monday", "report", "server", "backup",
)  # fmt: skip


def memory_settings() -> Settings:
    """Small limits, so consolidation and pruning happen every few operations."""
    return Settings(
        memory_window_limit=3,
        context_token_limit=120,
        context_token_buffer=40,
        min_messages_kept=2,
    )


def index_config() -> IndexConfig:
    """A cheap deterministic embedder (the parent and the children must agree on it)."""
    return {"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["content"]}


@dataclass(frozen=True)
class Plan:
    """What one child does and how it dies."""

    backend: Backend
    url: str
    """The store's URL (the SQL log shares its connection)."""
    workdir: str
    round: int
    seed: int
    mode: KillMode
    kill_at: int = 0
    """``step``: die before the k-th statement or write; ``torn``: tear the k-th write."""
    torn_fraction: float = 0.5
    """``torn``: the part of the line written before dying."""
    delay: float = 0.0
    """``timer``: seconds between the child being ready and the kill."""
    ops: int = OPS_PER_CHILD
    sabotage: bool = False
    """Remove from the window *before* persisting (a planted bug: the checks must see it)."""

    @property
    def ack_path(self) -> Path:
        return Path(self.workdir) / f"acks-{self.round:04d}.jsonl"

    @property
    def sessions_dir(self) -> Path:
        return Path(self.workdir) / "sessions"


@contextmanager
def open_stack(
    backend: Backend, url: str, workdir: str | Path, *, setup: bool = True
) -> Iterator[tuple[TieredMemoryStore, MessageLog]]:
    """The store and the message log, opened as an application opens them."""
    with TieredMemoryStore.from_url(
        url, index=index_config(), settings=memory_settings(), setup=setup
    ) as store:
        log: MessageLog
        if backend == "jsonl":
            log = JsonlMessageLog(Path(workdir) / "sessions")
        else:
            log = SqlMessageLog(store.conn, setup=setup)
        yield store, log


def memories(store: TieredMemoryStore, log: MessageLog) -> dict[str, ShortTermMemory]:
    """The two sessions, built from their presets."""
    settings = memory_settings()
    return {
        MW: build_memory(MW, preset="moving_window", store=store, log=log, settings=settings),
        TB: build_memory(TB, preset="tiered", store=store, log=log, settings=settings),
    }


# What a child needs, imported once by the fork server. (The server does not see the test
# folder on its path, so the package's modules are named, not this one.)
_PRELOAD = [
    "langmem_tiers.long_term.store.store",
    "langmem_tiers.short_term.presets",
    "langmem_tiers.short_term.sql_log",
    "langchain_core.messages",
    "langchain_core.embeddings",
    "psycopg",
    "psycopg_pool",
]


def process_context() -> multiprocessing.context.ForkServerContext:
    """Processes forked from a clean server that has imported the package once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


# -- the child ------------------------------------------------------------------------------


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _Steps:
    """Counts I/O steps (statements, log writes) and kills the process at the chosen one."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.statements = itertools.count(1)
        self.writes = itertools.count(1)
        self.last_statement = 0
        self.last_write = 0

    def statement(self) -> None:
        self.last_statement = next(self.statements)
        if self.plan.mode == "step" and self.last_statement == self.plan.kill_at:
            _die()

    def write(self, path: Path, data: bytes) -> None:
        self.last_write = next(self.writes)
        if self.plan.mode == "torn" and self.last_write == self.plan.kill_at:
            cut = max(1, min(len(data) - 1, int(len(data) * self.plan.torn_fraction)))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, data[:cut])
            _die()
        self.statement()

    def install(self) -> None:
        """Wrap the I/O seams of this (child) process; the package itself is not changed."""
        steps = self
        for cls in (backends.SqliteIO, postgres_io._PgConnIO):
            for name in ("sql", "sql_many"):
                original: Callable[..., Any] = getattr(cls, name)

                def counted(io: Any, request: Any, _original: Callable[..., Any] = original) -> Any:
                    steps.statement()
                    return _original(io, request)

                setattr(cls, name, counted)
        write_bytes: Callable[..., None] = JsonlMessageLog._write_bytes

        def counted_write(log: JsonlMessageLog, path: Path, data: bytes) -> None:
            steps.write(path, data)
            write_bytes(log, path, data)

        JsonlMessageLog._write_bytes = counted_write  # type: ignore[method-assign,assignment]


def _plant_remove_before_persist() -> None:
    """Swap consolidation's two steps in this child, to prove the checks catch a loss."""
    from langmem_tiers.short_term import memory as memory_module
    from langmem_tiers.short_term.archiving import persist_flow
    from langmem_tiers.short_term.effects import Flow as StmFlow
    from langmem_tiers.short_term.effects import LogCall
    from langmem_tiers.short_term.log import RemoveOp
    from langmem_tiers.short_term.policies import ConsolidationPlan

    def remove_then_persist(
        plan: ConsolidationPlan, *, session_id: str, scope: Any
    ) -> StmFlow[list[str]]:
        ids = tuple(r.id for r in plan.records)
        (removed,) = yield LogCall((RemoveOp(session_id, ids, "consolidated"),))
        yield from persist_flow(plan, session_id=session_id, scope=scope)
        return list(removed)

    memory_module.consolidate_flow = remove_then_persist  # type: ignore[attr-defined]


def _text(rng: random.Random, head: str) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14)))
    return f"{head}: {words}."


def crash_child(plan: Plan) -> None:
    """Run ``plan.ops`` seeded operations, acknowledging each after it returned."""
    errors = os.open(Path(plan.workdir) / "children.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(errors, 2)  # tracebacks of a child end up next to its data
    steps = _Steps(plan)
    steps.install()
    if plan.sabotage:
        _plant_remove_before_persist()
    ack = os.open(plan.ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def acknowledge(entry: dict[str, Any]) -> None:
        os.write(ack, (json.dumps(entry) + "\n").encode("utf-8"))

    rng = random.Random(plan.seed)
    started = time.monotonic()
    with open_stack(plan.backend, plan.url, plan.workdir) as (store, log):
        sessions = memories(store, log)
        acknowledge({"t": "ready"})
        ready = time.monotonic()
        for i in range(plan.ops):
            tag = f"r{plan.round} o{i}"
            kind = rng.choices(("mw", "tb", "batch", "counter"), weights=(3, 3, 2, 1))[0]
            if kind in (MW, TB):
                texts = [_text(rng, f"{kind} {tag} user"), _text(rng, f"{kind} {tag} bot")]
                result = sessions[kind].add_messages([HumanMessage(texts[0]), AIMessage(texts[1])])
                if result.error is not None:
                    raise result.error
                acknowledge({"t": "msg", "s": kind, "ids": result.ids, "texts": texts})
            elif kind == "batch":
                batch = f"r{plan.round}-o{i}"
                size = rng.randint(2, 4)
                values = {
                    f"{batch}-{n}": {
                        "content": _text(rng, f"doc {batch} {n}"),
                        "batch": batch,
                        "size": size,
                    }
                    for n in range(size)
                }
                store.batch([PutOp(DOCS, key, value) for key, value in values.items()])
                acknowledge({"t": "batch", "values": values})
            else:
                version = plan.round * 1000 + i
                value = {"content": f"counter at {version}", "v": version}
                store.put(DOCS, COUNTER_KEY, value)
                acknowledge({"t": "counter", "value": value})
    acknowledge(
        {
            "t": "done",
            "statements": steps.last_statement,
            "writes": steps.last_write,
            "seconds": time.monotonic() - ready,
            "total_seconds": time.monotonic() - started,
        }
    )


# -- what the children acknowledged ---------------------------------------------------------


@dataclass
class Acks:
    """Everything acknowledged by every child so far."""

    messages: dict[str, dict[str, str]] = field(default_factory=lambda: {MW: {}, TB: {}})
    """Session -> message id -> text."""
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter: int = -1
    """The highest acknowledged counter version."""
    operations: int = 0

    def read(self, path: Path) -> dict[str, Any] | None:
        """Merge one child's file; answers its ``done`` entry (None when it was killed)."""
        done = None
        if not path.exists():
            return None
        for line in path.read_bytes().split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # an unterminated last line: never acknowledged
            if entry["t"] == "msg":
                self.messages[entry["s"]].update(zip(entry["ids"], entry["texts"], strict=True))
            elif entry["t"] == "batch":
                self.docs.update(entry["values"])
            elif entry["t"] == "counter":
                self.counter = max(self.counter, int(entry["value"]["v"]))
            elif entry["t"] == "done":
                done = entry
            if entry["t"] in ("msg", "batch", "counter"):
                self.operations += 1
        return done


# -- checks ---------------------------------------------------------------------------------


def sql_rows(store: TieredMemoryStore, text: str, params: Sequence[Any] = ()) -> list[Any]:
    """Rows of a read-only statement, through the store's own connection."""

    def flow() -> Flow[list[Any]]:
        rows = yield Sql(text, params)
        return list(rows)

    return store.db.run(flow())


class _State:
    """What survived, read through the public APIs (plus the event table)."""

    def __init__(self, store: TieredMemoryStore, log: MessageLog) -> None:
        self.window = {s: log.read(s) for s in (MW, TB)}
        self.next_seq = {s: parse_message_id(log.next_id(s)) for s in (MW, TB)}
        self.summaries = [
            i for i in _all(store, namespace_for(MW, "semantic")) if i.key.startswith("summary:")
        ]
        self.episodes = _all(store, namespace_for(TB, "episodic"))
        self.docs = {i.key: i.value for i in _all(store, DOCS)}
        self.tb_summaries = _all(store, namespace_for(TB, "semantic"))
        self.mw_episodes = _all(store, namespace_for(MW, "episodic"))

    def archived(self, session: str) -> Counter[str]:
        """How many times each message id is covered by long-term memory."""
        if session == MW:
            return Counter(i for s in self.summaries for i in s.value["source_message_ids"])
        return Counter(e.value["message_id"] for e in self.episodes)


def _all(store: TieredMemoryStore, namespace: tuple[str, ...]) -> list[SearchItem]:
    found: list[SearchItem] = []
    while True:
        page = store.search(namespace, limit=500, offset=len(found))
        found.extend(page)
        if len(page) < 500:
            return found


@dataclass
class CrashFigures:
    """Counts a crash test reports."""

    kill_points: int = 0
    by_mode: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    recoveries: int = 0
    summaries: int = 0
    episodes: int = 0


def verify(
    backend: Backend, url: str, workdir: str | Path, acks: Acks, *, recover: bool
) -> tuple[int, int]:
    """Check the invariants on what a killed child left; answers (summaries, episodes).

    Before recovery, what must hold at every instant: nothing acknowledged is missing,
    nothing left the window without being in long-term memory, no summary overlaps
    another, a store batch is all or nothing, the event log replays to the live items,
    the JSONL files are whole lines, and the schema is at its version. With ``recover``,
    the next interaction's recovery (``consolidate()``) runs and then every message must
    be in exactly one place.
    """
    if backend == "jsonl":
        _check_jsonl_files(Path(workdir) / "sessions")
    with open_stack(backend, url, workdir, setup=False) as (store, log):
        _check_migrations(store)
        state = _State(store, log)
        _check_messages(state, acks, exact=False)
        _check_store(store, state, acks)
        if recover:
            for session, memory in memories(store, log).items():
                result = memory.consolidate()
                assert result.error is None, f"recovery of {session} failed: {result.error!r}"
            state = _State(store, log)
            _check_messages(state, acks, exact=True)
            _check_store(store, state, acks)
        return len(state.summaries), len(state.episodes)


def _check_jsonl_files(directory: Path) -> None:
    if not directory.exists():
        return
    reader = JsonlMessageLog(directory)
    for session in (MW, TB):
        reader.read(session)  # reading repairs a torn tail
    for path in sorted(directory.glob("*.jsonl")):
        data = path.read_bytes()
        assert data.endswith(b"\n"), f"{path.name} does not end with a complete line"
        for number, line in enumerate(data.split(b"\n")[:-1], start=1):
            entry = json.loads(line)
            assert isinstance(entry, dict), f"{path.name}:{number} is not a JSON object"
            assert "op" in entry, f"{path.name}:{number} has no op"


def _check_migrations(store: TieredMemoryStore) -> None:
    d = store.db.dialect
    expected = {c.name: len(c.migrations(d)) for c in STORE_SCHEMA}
    before = {k: v for k, v in store.db.run(versions_flow(d)).items() if k in expected}
    assert before == expected, f"schema at versions {before} after a crash, expected {expected}"
    store.setup()
    store.setup()
    after = {k: v for k, v in store.db.run(versions_flow(d)).items() if k in expected}
    assert after == expected, f"setup() after a crash moved the schema to versions {after}"


def _check_messages(state: _State, acks: Acks, *, exact: bool) -> None:
    assert state.tb_summaries == [], "the tiered preset wrote summaries"
    assert state.mw_episodes == [], "the moving window wrote episodes"
    seen_sources: set[tuple[str, ...]] = set()
    for summary in state.summaries:
        sources = summary.value["source_message_ids"]
        assert summary.key == f"summary:{MW}:{sources[0]}-{sources[-1]}", summary.key
        assert len(sources) == memory_settings().memory_window_limit, summary.value
        assert tuple(sources) not in seen_sources, f"duplicate summary of {sources}"
        seen_sources.add(tuple(sources))
    episode_keys = Counter(e.key for e in state.episodes)
    assert max(episode_keys.values(), default=1) == 1, episode_keys.most_common(3)
    for episode in state.episodes:
        assert episode.key == f"episode:{TB}:{episode.value['message_id']}", episode.key
    for session in (MW, TB):
        window = {r.id: r for r in state.window[session]}
        archived = state.archived(session)
        doubled = [i for i, n in archived.items() if n > 1]
        assert not doubled, f"{session}: covered by more than one memory: {doubled}"
        everything = {f"m{n}" for n in range(1, state.next_seq[session])}
        assert set(window) | set(archived) <= everything, f"{session}: ids beyond the counter"
        left = everything - set(window)
        lost = sorted(left - set(archived), key=parse_message_id)
        assert not lost, f"{session}: left the window without reaching long-term memory: {lost}"
        for message_id, text in acks.messages[session].items():
            assert message_id in window or message_id in archived, (
                f"{session}: acknowledged {message_id} ({text!r}) is gone"
            )
            if message_id in window:
                assert window[message_id].text == text, (window[message_id], text)
        if session == TB:
            for episode in state.episodes:
                wanted = acks.messages[TB].get(episode.value["message_id"])
                assert wanted is None or episode.value["content"] == wanted, episode.value
        if exact:
            both = sorted(set(window) & set(archived), key=parse_message_id)
            assert not both, f"{session}: in the window and in long-term memory: {both}"
    if exact:
        limit = memory_settings().memory_window_limit
        assert len(state.window[MW]) <= limit, [r.id for r in state.window[MW]]
        _check_budget(state.window[TB])


def _check_budget(records: list[MessageRecord]) -> None:
    settings = memory_settings()
    policy = build_policy("token_budget", settings)
    builder = ContextBuilder(budget=settings.context_token_limit)
    assert policy.plan(records, builder.costs) is None, "the tiered window is still over budget"


def _check_store(store: TieredMemoryStore, state: _State, acks: Acks) -> None:
    for key, value in acks.docs.items():
        assert state.docs.get(key) == value, f"acknowledged put {key} is {state.docs.get(key)}"
    batches: dict[str, list[dict[str, Any]]] = {}
    for key, value in state.docs.items():
        if key != COUNTER_KEY:
            batches.setdefault(value["batch"], []).append(value)
    for batch, values in batches.items():
        assert len(values) == values[0]["size"], f"batch {batch} half-written: {len(values)}"
    counter = state.docs.get(COUNTER_KEY)
    if acks.counter >= 0:
        assert counter is not None, "the acknowledged counter is gone"
        assert counter["v"] >= acks.counter, f"counter went back to {counter} from {acks.counter}"
    # Every change is an event in the change's own transaction: replaying the event log
    # gives the live items exactly.
    d = store.db.dialect
    live = {
        row[0]: d.json_value(row[1]) for row in sql_rows(store, "SELECT id, value FROM lmt_items")
    }
    events = sql_rows(store, "SELECT memory_id, after, type FROM lmt_events ORDER BY seq")
    replayed = replay_snapshots(
        (row[0], None if row[1] is None else d.json_value(row[1]), row[2]) for row in events
    )
    assert set(replayed) == set(live), (
        f"event log and items disagree: {len(set(replayed) ^ set(live))} ids differ"
    )
    for memory_id, value in live.items():
        assert replayed[memory_id]["value"] == value, f"event log disagrees on {memory_id}"


# -- the driver -----------------------------------------------------------------------------


def _wait_for_ready(path: Path, process: multiprocessing.process.BaseProcess) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and b'"ready"' in path.read_bytes():
            return True
        if not process.is_alive():
            return False
        time.sleep(0.002)
    raise AssertionError(f"child of {path.name} did not get ready within 60 s")


def _child_failure(workdir: str, plan: Plan, exitcode: int | None) -> str:
    log = Path(workdir) / "children.log"
    tail = log.read_text("utf-8", "replace")[-3000:] if log.exists() else ""
    return f"child {plan} exited with {exitcode}; its log ends with:\n{tail}"


def run_kill_points(
    backend: Backend,
    url: str,
    workdir: str | Path,
    *,
    seed: int,
    kill_points: int,
    sabotage: bool = False,
) -> CrashFigures:
    """Run children until ``kill_points`` of them were killed; check after every one.

    The first children run to their end, to measure how many statements and writes, and how
    much time, a child's work takes once the schema exists; kill points are drawn from
    those ranges.
    """
    workdir = str(workdir)
    context = process_context()
    rng = random.Random(seed)
    acks = Acks()
    figures = CrashFigures()

    def run(plan: Plan) -> dict[str, Any] | None:
        process = context.Process(target=crash_child, args=(plan,), daemon=True)
        process.start()
        if plan.mode == "timer" and _wait_for_ready(plan.ack_path, process):
            time.sleep(plan.delay)
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)  # type: ignore[arg-type]
        process.join(120)
        assert process.exitcode is not None, f"child {plan} hangs"
        killed = process.exitcode == -signal.SIGKILL
        done = acks.read(plan.ack_path)
        assert killed or (process.exitcode == 0 and done is not None), _child_failure(
            workdir, plan, process.exitcode
        )
        if killed:
            figures.kill_points += 1
            figures.by_mode[plan.mode] += 1
        return done

    # Two children run to their end: the first also sets the schema up (its migrations are
    # statements later children never make), the second measures what a child's work takes.
    assert run(Plan(backend, url, workdir, 0, rng.getrandbits(32), "none")) is not None
    verify(backend, url, workdir, acks, recover=True)
    calibration = run(Plan(backend, url, workdir, 1, rng.getrandbits(32), "none"))
    assert calibration is not None
    statements = max(1, int(calibration["statements"]))
    writes = max(1, int(calibration["writes"]))
    seconds = float(calibration["seconds"])
    verify(backend, url, workdir, acks, recover=True)
    modes: tuple[KillMode, ...] = (
        ("step", "step", "torn", "timer") if backend == "jsonl" else ("step", "step", "timer")
    )
    for number in itertools.count(2):
        if figures.kill_points >= kill_points:
            break
        assert number <= 4 * kill_points + 1, (
            f"only {figures.kill_points} of {number - 1} children died"
        )
        mode = rng.choice(modes)
        if mode == "torn":
            plan = Plan(backend, url, workdir, number, rng.getrandbits(32), mode,
                        rng.randint(1, writes), rng.uniform(0.05, 0.95))  # fmt: skip
        elif mode == "timer":
            plan = Plan(backend, url, workdir, number, rng.getrandbits(32), mode,
                        delay=rng.uniform(0.0, seconds))  # fmt: skip
        else:
            plan = Plan(backend, url, workdir, number, rng.getrandbits(32), mode,
                        rng.randint(1, statements))  # fmt: skip
        run(dataclasses.replace(plan, sabotage=sabotage))
        recover = number % 2 == 0  # odd rounds leave recovery to the next child
        try:
            summaries, episodes = verify(backend, url, workdir, acks, recover=recover)
        except AssertionError as err:
            raise AssertionError(f"after kill point {plan} (seed {seed}): {err}") from err
        figures.recoveries += recover
        figures.summaries, figures.episodes = summaries, episodes
    figures.acknowledged = acks.operations
    return figures
