"""Long-term store speed: puts, gets and scope-filtered searches against LangGraph's stores.

Every system gets the same workload: ``size`` memories spread over 100 scopes (users),
namespace ``("user-NN", "semantic")``, value ``{"content": text}`` with the text indexed,
written with ``batch([PutOp, ...])`` in batches of 500; then gets of random keys and
searches of one scope (a query, top 10); then 50 rounds of one ``put`` into a scope
searched before and a search of that scope (an agent's turn: the search right after a
write); last, 50 searches while another thread puts batches of 500 into a namespace of
its own (a server answering while an import or a consolidation writes). Texts come from
:class:`~benchmarks.fakes.SyntheticCorpus` and vectors from
:class:`~benchmarks.fakes.SeededEmbeddings` (256 dimensions, a few microseconds a text),
so the store is timed, not an embedding model. Systems:

* ``ours-sqlite``: :class:`~langmem_tiers.TieredMemoryStore` on SQLite (the embedded default);
* ``ours-postgres``: the same on PostgreSQL with pgvector;
* ``ours-postgres-qdrant``: PostgreSQL with vectors in Qdrant's local mode (qdrant-client's
  pure-Python emulation, slow past ~10k points: capped at 10,000 memories);
* ``langgraph-inmemory``: LangGraph's ``InMemoryStore`` with an index;
* ``langgraph-postgres``: LangGraph's ``PostgresStore`` (HNSW, cosine), default settings;
* ``langgraph-sqlite``: LangGraph's ``SqliteStore`` with sqlite-vec (cosine). It needs a
  Python whose ``sqlite3`` can load extensions, which many builds (pyenv's, for one) cannot;
  it therefore runs in a subprocess under a virtual environment made from the system
  Python (``/usr/bin/python3``), created on first use in a cache directory with
  ``langgraph-checkpoint-sqlite``, ``sqlite-vec`` and ``numpy`` from the package index. With
  ``--quick`` (or ``--peer-install never``) a missing environment is not created and the
  system is reported as skipped, with the reason.

What "recall" means here. LangGraph's stores rank by cosine similarity alone, so their
recall@10 is the share of the exact top 10 by cosine (brute force over the scope's
vectors) among the 10 returned. This project's store ranks by a hybrid score (fused
dense+BM25 relevance, recency, frequency, confidence) whose fusion is standardised over
the candidate pool, so an "exact hybrid top 10" depends on the pool and is not
well-defined. For it this benchmark reports (a) the share of searches that returned the
full 10, and (b) the recall of its *dense candidate stage*: the vector index's own
filtered search, called directly with ``k = 10`` and with ``k = limit x
candidate_multiplier`` (the pool the store really asks for), against the exact top ``k``
by cosine over the scope. SQLite's index is exact by construction; pgvector's HNSW is
approximate.

The PostgreSQL server of the benchmark machine runs with autovacuum off, so after the put
phase every PostgreSQL system's tables are vacuumed and analyzed, as autovacuum does on a
production server (untimed; a server with autovacuum on would have done it already).

Each run also records where the time went for this project's store: the wall time of
every SQL statement (and Qdrant call) of the put and search phases, grouped by statement.

Run::

    python -m benchmarks.store_speed [--quick] [--sizes 10000 100000] [--systems ...]

and read ``benchmarks/results/store_speed.json`` and ``benchmarks/results/search_p95.png``.
PostgreSQL runs use a fresh schema per system and size, dropped afterwards.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, PutOp, SearchOp

from benchmarks.fakes import SeededEmbeddings, SyntheticCorpus
from benchmarks.postgres import (
    DEFAULT_POSTGRES_URL,
    postgres_problem,
    temporary_schema,
    vacuum_analyze_schema,
)
from benchmarks.report import machine_info, timing_summary, write_results
from benchmarks.statement_profile import StatementProfile
from benchmarks.store_peer import default_peer_venv, peer_python, run_in_peer
from benchmarks.store_targets import evaluate_targets, plot_p95

__all__ = [
    "SYSTEMS",
    "Workload",
    "main",
]

RESULTS = Path(__file__).resolve().parent / "results"
DIMS = 256
SCOPES = 100
BATCH = 500
LIMIT = 10
#: Rounds of one put into a searched scope followed by a search of it: what an agent does
#: each turn, and what a store that caches a scope pays for at the next search.
WRITE_ROUNDS = 50
#: Searches timed while another thread keeps putting batches.
BESIDE_SEARCHES = 50
#: Scopes searched once each by a process that has read nothing of them.
NEW_PROCESS_SEARCHES = 50
FULL_SIZES = (10_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
#: qdrant-client's local mode scans every point in Python: past this it takes minutes.
QDRANT_LOCAL_CAP = 10_000

SYSTEMS: dict[str, str] = {
    "ours-sqlite": "langmem_tiers SQLite (embedded default)",
    "ours-postgres": "langmem_tiers PostgreSQL+pgvector",
    "ours-postgres-qdrant": "langmem_tiers PostgreSQL+Qdrant local",
    "langgraph-inmemory": "LangGraph InMemoryStore",
    "langgraph-postgres": "LangGraph PostgresStore",
    "langgraph-sqlite": "LangGraph SqliteStore (sqlite-vec)",
}
_POSTGRES_SYSTEMS = {"ours-postgres", "ours-postgres-qdrant", "langgraph-postgres"}
#: Systems run in a subprocess under another Python (see :func:`peer_python`).
_SUBPROCESS_SYSTEMS = {"langgraph-sqlite"}


# -- the SqliteStore peer's side ---------------------------------------------------------


def _peer_run(args: argparse.Namespace) -> dict[str, Any]:
    """What the peer subprocess does: one system, one size, its run written to ``--out``."""
    size = (args.sizes or [FULL_SIZES[0]])[0]
    embeddings = SeededEmbeddings(DIMS, seed=args.seed)
    workload = Workload.build(
        size,
        embeddings=embeddings,
        corpus=SyntheticCorpus(seed=args.seed),
        n_queries=args.queries,
        n_gets=args.gets,
        seed=args.seed,
    )
    run = run_one(args.peer_run, workload, embeddings, args.postgres_url)
    run["python"] = sys.version.split()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(run), encoding="utf-8")
    return run


# -- the workload ---------------------------------------------------------------------------


@dataclass
class Workload:
    """The memories, their vectors and the queries one size's runs share."""

    size: int
    texts: list[str]
    vectors: np.ndarray
    scope_of: np.ndarray
    queries: list[tuple[int, str]]
    query_vectors: np.ndarray
    get_items: list[int]
    members: dict[int, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def namespace(scope: int) -> tuple[str, str]:
        return (f"user-{scope:03d}", "semantic")

    @staticmethod
    def key(item: int) -> str:
        return f"mem-{item:07d}"

    @classmethod
    def build(
        cls,
        size: int,
        *,
        embeddings: SeededEmbeddings,
        corpus: SyntheticCorpus,
        n_queries: int,
        n_gets: int,
        seed: int,
    ) -> Workload:
        scope_of = np.arange(size) % SCOPES
        texts = [corpus.memory(scope=int(s), index=i // SCOPES) for i, s in enumerate(scope_of)]
        vectors = embeddings.embed_array(texts)
        rng = np.random.default_rng(seed)
        scopes = rng.integers(0, min(SCOPES, size), size=n_queries)
        queries = [(int(s), corpus.query(scope=int(s), index=j)) for j, s in enumerate(scopes)]
        query_vectors = embeddings.embed_array([q for _, q in queries])
        get_items = [int(i) for i in rng.integers(0, size, size=n_gets)]
        members = {s: np.flatnonzero(scope_of == s) for s in range(min(SCOPES, size))}
        return cls(size, texts, vectors, scope_of, queries, query_vectors, get_items, members)

    def put_ops(self, start: int, stop: int) -> list[PutOp]:
        return [
            PutOp(self.namespace(int(self.scope_of[i])), self.key(i), {"content": self.texts[i]})
            for i in range(start, min(stop, self.size))
        ]

    def exact_top(self, query: int, k: int) -> list[int]:
        """Items of the query's scope with the ``k`` highest cosine similarities."""
        scope, _ = self.queries[query]
        items = self.members[scope]
        sims = self.vectors[items] @ self.query_vectors[query]
        order = np.argsort(-sims, kind="stable")[:k]
        return [int(items[i]) for i in order]


# -- the systems ----------------------------------------------------------------------------

DenseStage = Callable[[tuple[str, ...], list[float], int], list[str]]
Settle = Callable[[], None]


def _nothing() -> None:
    """What settling a store that needs no upkeep does."""


def _index_config(embeddings: SeededEmbeddings) -> dict[str, Any]:
    return {"dims": DIMS, "embed": embeddings, "fields": ["content"]}


def _dense_stage(store: Any) -> DenseStage:
    """The store's vector index search, as the store itself calls it (private API).

    Builds the same scope filter the store builds for ``search(namespace, query=...)``
    and runs the index's filtered search in one transaction (pgvector's per-query
    settings are transaction-local), returning item ids best first.
    """
    from langmem_tiers.long_term.store.records import join_namespace
    from langmem_tiers.long_term.store.search.prepared import prepare_search
    from langmem_tiers.sql.flow import Transaction

    core = getattr(store, "core", None) or store._core

    def search(namespace: tuple[str, ...], vector: list[float], k: int) -> list[str]:
        prepared = prepare_search(SearchOp(namespace, query="q", limit=LIMIT), core.dialect)
        inner = core.index.search_flow(
            vector,
            prepared.where,
            prepared.params,
            k,
            prefix=join_namespace(prepared.prefix),
            value_filtered=prepared.value_filtered,
        )

        def flow() -> Any:
            return (yield Transaction(inner))

        if hasattr(store, "db"):
            found: dict[str, float] = store.db.run(flow())
        else:  # the store before its database handle existed
            from langmem_tiers.sql.flow import run

            found = run(flow(), store._sync_io)
        return [i for i, _ in sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))]

    return search


@contextmanager
def open_system(
    name: str,
    embeddings: SeededEmbeddings,
    postgres_url: str,
    *,
    scope_cache_items: int | None = None,
    package: str = "langmem_tiers",
) -> Iterator[tuple[BaseStore, DenseStage | None, Settle]]:
    """A fresh, empty store of system ``name``, its dense stage when it has one, and what
    to run after loading it (VACUUM ANALYZE on PostgreSQL). ``scope_cache_items``: this
    project's setting of that name (None: its default); ``package``: the module this
    project's systems are imported from (another revision's, for ``benchmarks.paired``)."""
    if name == "langgraph-inmemory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=_index_config(embeddings)), None, _nothing  # type: ignore[arg-type]
        return
    if name == "langgraph-sqlite":
        # Runs only under a Python whose sqlite3 loads extensions (see run_in_peer).
        from langgraph.store.sqlite import SqliteStore

        config = {**_index_config(embeddings), "distance_type": "cosine"}
        with (
            tempfile.TemporaryDirectory(prefix="langmem-bench-") as directory,
            SqliteStore.from_conn_string(f"{directory}/store.db", index=config) as lite,  # type: ignore[arg-type]
        ):
            lite.setup()
            yield lite, None, _nothing
        return
    if name == "langgraph-postgres":
        from langgraph.store.postgres import PostgresStore

        config = {**_index_config(embeddings), "distance_type": "cosine"}
        with (
            temporary_schema(postgres_url) as url,
            PostgresStore.from_conn_string(url, index=config) as pg_store,  # type: ignore[arg-type]
        ):
            pg_store.setup()
            yield pg_store, None, lambda: vacuum_analyze_schema(url)
        return

    project = importlib.import_module(package)
    index = _index_config(embeddings)
    overrides: dict[str, Any] = (
        {} if scope_cache_items is None else {"scope_cache_items": scope_cache_items}
    )
    settings = project.Settings.from_env(**overrides)
    if name == "ours-sqlite":
        with (
            tempfile.TemporaryDirectory(prefix="langmem-bench-") as directory,
            project.TieredMemoryStore.from_url(
                f"sqlite:///{directory}/memory.db",
                index=index,  # type: ignore[arg-type]
                settings=settings,
            ) as store,
        ):
            yield store, _dense_stage(store), _nothing
        return
    qdrant = ":memory:" if name == "ours-postgres-qdrant" else None
    with (
        temporary_schema(postgres_url) as url,
        project.TieredMemoryStore.from_url(
            url,
            index=index,  # type: ignore[arg-type]
            qdrant=qdrant,
            settings=settings,
        ) as store,
    ):
        yield store, _dense_stage(store), lambda: vacuum_analyze_schema(url)


def _scope_cache_items(asked: int | None) -> int:
    """The ``scope_cache_items`` this project's stores run with."""
    from langmem_tiers import Settings

    return asked if asked is not None else Settings.from_env().scope_cache_items


# -- one run ----------------------------------------------------------------------------------


def _recall(found: Sequence[Any], exact: Sequence[Any]) -> float:
    return len(set(found) & set(exact)) / len(exact) if exact else 1.0


def run_one(
    name: str,
    workload: Workload,
    embeddings: SeededEmbeddings,
    postgres_url: str,
    *,
    scope_cache_items: int | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Load ``workload`` into a fresh ``name`` store and time puts, gets and searches."""
    profile = StatementProfile()
    ours = name.startswith("ours-")
    profiling = profile.active() if ours else nullcontext(profile)
    opened = open_system(name, embeddings, postgres_url, scope_cache_items=scope_cache_items)
    with profiling, opened as (store, dense, settle):
        gc.collect()
        profile.phase = "put"
        batch_seconds, put_seconds = _put_all(store, workload)
        log(f"  {name} @ {workload.size}: put {workload.size / put_seconds:,.0f} items/s")
        profile.phase = "settle"
        settle()

        profile.phase = "warmup"
        _warm_up(store, workload)

        profile.phase = "get"
        get_seconds = _gets(store, workload, name)

        profile.phase = "search"
        search_seconds, quality, search_wall = _searches(store, workload, by_cosine=not ours)
        p95_ms = 1000 * float(np.percentile(search_seconds, 95))
        log(f"  {name} @ {workload.size}: search p95 {p95_ms:.1f} ms")

        profile.phase = "dense-stage"
        dense_recall = None if dense is None else _dense_recall(store, dense, workload)

        # Last: the memories it adds are no part of the searches above.
        profile.phase = "put-then-search"
        single_puts, after_put = _put_then_search(store, workload)

        profile.phase = "search-beside-writes"
        beside, writer_rate = _search_beside_writes(store, workload)

        profile.phase = "new-process-search"
        new_process = _searches_of_a_new_process(store, workload)

    result: dict[str, Any] = {
        "system": name,
        "label": SYSTEMS[name],
        "size": workload.size,
        "put": {
            "items_per_s": round(workload.size / put_seconds, 1),
            "seconds": round(put_seconds, 2),
            "batch": timing_summary(batch_seconds),
        },
        "get": timing_summary(get_seconds),
        "search": {
            **timing_summary(search_seconds),
            **quality,
            "dense_stage": dense_recall,
        },
        "put_then_search": {
            "put": timing_summary(single_puts),
            "search": timing_summary(after_put),
        },
        "search_beside_writes": {
            "search": timing_summary(beside),
            "writer_items_per_s": round(writer_rate, 1),
        },
        "new_process_search": timing_summary(new_process),
    }
    if ours:
        result["profile"] = {
            "put": profile.top("put", put_seconds),
            "search": profile.top("search", search_wall),
            "put_then_search": profile.top("put-then-search", sum(single_puts + after_put)),
        }
    return result


def _put_all(store: BaseStore, workload: Workload) -> tuple[list[float], float]:
    """Put every memory in batches of :data:`BATCH`: the seconds of each batch, and of all."""
    seconds: list[float] = []
    started = time.perf_counter()
    for start in range(0, workload.size, BATCH):
        ops = workload.put_ops(start, start + BATCH)
        t0 = time.perf_counter()
        store.batch(ops)
        seconds.append(time.perf_counter() - t0)
    return seconds, time.perf_counter() - started


def _gets(store: BaseStore, workload: Workload, name: str) -> list[float]:
    """The seconds of each get of the workload (every one must find its item)."""
    seconds: list[float] = []
    for item in workload.get_items:
        namespace = workload.namespace(int(workload.scope_of[item]))
        t0 = time.perf_counter()
        got = store.get(namespace, workload.key(item))
        seconds.append(time.perf_counter() - t0)
        if got is None:
            raise RuntimeError(f"{name}: get of {workload.key(item)} found nothing")
    return seconds


def _warm_up(store: BaseStore, workload: Workload) -> None:
    for scope, query in workload.queries[:10]:
        store.search(workload.namespace(scope), query=query, limit=LIMIT)
    for item in workload.get_items[:10]:
        store.get(workload.namespace(int(workload.scope_of[item])), workload.key(item))


def _searches(
    store: BaseStore, workload: Workload, *, by_cosine: bool
) -> tuple[list[float], dict[str, Any], float]:
    """The seconds of each search, how full the results were (with the recall of the exact
    cosine top 10 for a store that ranks ``by_cosine``), and the seconds of all."""
    seconds: list[float] = []
    started = time.perf_counter()
    full = 0
    recalls: list[float] = []
    for j, (scope, query) in enumerate(workload.queries):
        namespace = workload.namespace(scope)
        t0 = time.perf_counter()
        hits = store.search(namespace, query=query, limit=LIMIT)
        seconds.append(time.perf_counter() - t0)
        expected = min(LIMIT, len(workload.members[scope]))
        full += len(hits) >= expected
        if by_cosine:
            exact = [workload.key(i) for i in workload.exact_top(j, LIMIT)]
            recalls.append(_recall([h.key for h in hits], exact))
    wall = time.perf_counter() - started
    return (
        seconds,
        {
            "full_10_share": round(full / len(workload.queries), 4),
            "recall_at_10": round(float(np.mean(recalls)), 4) if recalls else None,
        },
        wall,
    )


def _dense_recall(store: Any, dense: DenseStage, workload: Workload) -> dict[str, float]:
    """The recall of the store's own vector search, at k = 10 and at its candidate pool."""
    from langmem_tiers.long_term.store.records import item_id

    pool = LIMIT * int(store.settings.candidate_multiplier)
    by_k: dict[int, list[float]] = {LIMIT: [], pool: []}
    for j, (scope, _) in enumerate(workload.queries):
        namespace = workload.namespace(scope)
        vector = workload.query_vectors[j].tolist()
        for k in by_k:
            exact_ids = [item_id(namespace, workload.key(i)) for i in workload.exact_top(j, k)]
            by_k[k].append(_recall(dense(namespace, vector, k), exact_ids))
    return {f"recall_at_{k}": round(float(np.mean(v)), 4) for k, v in by_k.items()}


def _put_then_search(store: BaseStore, workload: Workload) -> tuple[list[float], list[float]]:
    """:data:`WRITE_ROUNDS` rounds of a put into a scope and a search of it: the seconds of
    the puts and of the searches right after them."""
    single_puts: list[float] = []
    after_put: list[float] = []
    for r, (scope, query) in enumerate(workload.queries[:WRITE_ROUNDS]):
        namespace = workload.namespace(scope)
        text = workload.texts[int(workload.members[scope][r % len(workload.members[scope])])]
        t0 = time.perf_counter()
        store.put(namespace, f"new-{r:04d}", {"content": f"{text} {r}"})
        t1 = time.perf_counter()
        store.search(namespace, query=query, limit=LIMIT)
        single_puts.append(t1 - t0)
        after_put.append(time.perf_counter() - t1)
    return single_puts, after_put


def _search_beside_writes(store: BaseStore, workload: Workload) -> tuple[list[float], float]:
    """Search times of the first :data:`BESIDE_SEARCHES` queries while a thread puts
    batches into its own namespace, and the items/s that thread wrote meanwhile."""
    stop = threading.Event()
    writing = threading.Event()
    written = 0
    failures: list[BaseException] = []

    def write() -> None:
        nonlocal written
        batch = 0
        try:
            while not stop.is_set():
                ops = [
                    PutOp(
                        ("bulk-writer",),
                        f"w{batch}-{i}",
                        # Distinct texts: InMemoryStore's batch embeds a repeated one once
                        # but expects a vector per put.
                        {"content": f"{workload.texts[i % len(workload.texts)]} {batch}-{i}"},
                    )
                    for i in range(BATCH)
                ]
                writing.set()
                store.batch(ops)
                written += len(ops)
                batch += 1
        except BaseException as err:  # re-raised in the timing thread
            failures.append(err)
            writing.set()

    writer = threading.Thread(target=write, name="bench-writer", daemon=True)
    started = time.perf_counter()
    writer.start()
    writing.wait()
    seconds: list[float] = []
    try:
        for scope, query in workload.queries[:BESIDE_SEARCHES]:
            t0 = time.perf_counter()
            store.search(workload.namespace(scope), query=query, limit=LIMIT)
            seconds.append(time.perf_counter() - t0)
    finally:
        stop.set()
        writer.join()
    if failures:
        raise failures[0]
    return seconds, written / (time.perf_counter() - started)


def _searches_of_a_new_process(store: BaseStore, workload: Workload) -> list[float]:
    """Search times of one query in each of :data:`NEW_PROCESS_SEARCHES` scopes, as a
    process that has read none of them yet sees them: this project's store forgets what
    it holds of its namespaces first (it holds every namespace it wrote since it was
    empty); LangGraph's stores keep nothing between searches."""
    core = getattr(store, "core", None)
    cache = core.search.scope_cache if core is not None else None
    if cache is not None:
        cache.clear()
    seen: set[int] = set()
    seconds: list[float] = []
    for scope, query in workload.queries:
        if scope in seen:
            continue
        seen.add(scope)
        t0 = time.perf_counter()
        store.search(workload.namespace(scope), query=query, limit=LIMIT)
        seconds.append(time.perf_counter() - t0)
        if len(seconds) == NEW_PROCESS_SEARCHES:
            break
    return seconds


# -- command line ----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--sizes", type=int, nargs="+", help=f"default {FULL_SIZES}")
    parser.add_argument("--systems", nargs="+", choices=list(SYSTEMS), default=list(SYSTEMS))
    parser.add_argument("--queries", type=int, default=200, help="searches per run (>= 200)")
    parser.add_argument("--gets", type=int, default=500, help="gets per run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument(
        "--qdrant-cap", type=int, default=None, help=f"default {QDRANT_LOCAL_CAP:,}, quick 2,000"
    )
    parser.add_argument(
        "--scope-cache-items",
        type=int,
        default=None,
        help="this project's scope_cache_items setting (default: the setting's default)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "store_speed.json")
    parser.add_argument("--plot", type=Path, default=RESULTS / "search_p95.png")
    parser.add_argument(
        "--peer-venv",
        type=Path,
        default=None,
        help=f"the SqliteStore peer's environment (default {default_peer_venv()})",
    )
    parser.add_argument(
        "--peer-install",
        choices=("auto", "never"),
        default=None,
        help="create the peer's environment when missing (default: auto, never with --quick)",
    )
    parser.add_argument("--peer-run", choices=sorted(_SUBPROCESS_SYSTEMS), help=argparse.SUPPRESS)
    return parser


def _measure(
    args: argparse.Namespace,
    sizes: Sequence[int],
    qdrant_cap: int,
    embeddings: SeededEmbeddings,
    pg_problem: str | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every system at every size: the runs, and the systems skipped with the reason."""
    corpus = SyntheticCorpus(seed=args.seed)
    runs: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    peer, peer_problem = None, None
    if _SUBPROCESS_SYSTEMS.intersection(args.systems):
        install = (args.peer_install or ("never" if args.quick else "auto")) == "auto"
        peer, peer_problem = peer_python(args.peer_venv or default_peer_venv(), install=install)
    for size in sizes:
        print(f"store_speed: {size:,} memories", flush=True)
        workload = Workload.build(
            size,
            embeddings=embeddings,
            corpus=corpus,
            n_queries=args.queries,
            n_gets=args.gets,
            seed=args.seed,
        )
        for name in args.systems:
            if name in _POSTGRES_SYSTEMS and pg_problem is not None:
                skipped.append({"system": name, "size": size, "reason": pg_problem})
                continue
            if name == "ours-postgres-qdrant" and size > qdrant_cap:
                skipped.append(
                    {
                        "system": name,
                        "size": size,
                        "reason": f"Qdrant local mode capped at {qdrant_cap:,} memories "
                        "(a pure-Python scan: searches take seconds at 100k)",
                    }
                )
                continue
            if name in _SUBPROCESS_SYSTEMS and peer is None:
                skipped.append({"system": name, "size": size, "reason": peer_problem})
                continue
            try:
                if name in _SUBPROCESS_SYSTEMS:
                    assert peer is not None
                    runs.append(run_in_peer(peer, name, size, args, log=print))
                else:
                    runs.append(
                        run_one(
                            name,
                            workload,
                            embeddings,
                            args.postgres_url,
                            scope_cache_items=args.scope_cache_items,
                        )
                    )
            except Exception as err:  # a broken backend is a result to report, not a crash
                print(f"  {name} @ {size}: failed: {type(err).__name__}: {err}", flush=True)
                skipped.append(
                    {"system": name, "size": size, "reason": f"failed: {type(err).__name__}: {err}"}
                )
        del workload
        gc.collect()
    return runs, skipped


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, write the JSON and the plot, and return the results."""
    args = _parser().parse_args(argv)
    if args.peer_run:
        return _peer_run(args)

    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    qdrant_cap = args.qdrant_cap or (2_000 if args.quick else QDRANT_LOCAL_CAP)
    embeddings = SeededEmbeddings(DIMS, seed=args.seed)
    pg_problem = (
        postgres_problem(args.postgres_url)
        if _POSTGRES_SYSTEMS.intersection(args.systems)
        else None
    )
    started = time.perf_counter()
    runs, skipped = _measure(args, sizes, qdrant_cap, embeddings, pg_problem)

    results: dict[str, Any] = {
        "benchmark": "store_speed",
        "machine": machine_info(args.postgres_url),
        "config": {
            "sizes": list(sizes),
            "scopes": SCOPES,
            "dims": DIMS,
            "batch": BATCH,
            "limit": LIMIT,
            "queries": args.queries,
            "gets": args.gets,
            "seed": args.seed,
            "embeddings": repr(embeddings),
            "qdrant_local_cap": qdrant_cap,
            "scope_cache_items": _scope_cache_items(args.scope_cache_items),
        },
        "runs": runs,
        "skipped": skipped,
        "targets": evaluate_targets(runs),
        "seconds": round(time.perf_counter() - started, 1),
        "notes": [
            "recall_at_10: share of the exact cosine top 10 of the scope among the results; "
            "only for systems that rank by cosine (LangGraph's).",
            "dense_stage: this project's vector index search called directly, against the exact "
            "cosine top k of the scope (k = 10 and the candidate pool the store asks for).",
            "Times include embedding with SeededEmbeddings (about 70k texts/s), the same for all.",
        ],
    }
    write_results(results, args.out)
    if runs:
        plot_p95(runs, args.plot, SYSTEMS)
    for target in results["targets"]:
        print(f"  target: {target['target']}: {target['measured']} (met: {target['met']})")
    return results


if __name__ == "__main__":
    main()
