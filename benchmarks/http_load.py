"""HTTP API under a bounded load: requests/s, p50/p99 latency and errors, on loopback.

The server is the real one (``python -m langmem_tiers serve``, uvicorn) on 127.0.0.1, with
one process and, where the machine has several CPUs, one process per CPU (``--workers``);
the load generator is this process: ``--concurrency`` clients (asyncio + httpx), each
sending its next request as soon as the previous one is answered (a closed loop, so the
load is bounded by the number of clients, never by a queue that grows). Two endpoints are
measured, each for ``--duration`` seconds:

* ``retrieve``: ``POST /api/v1/memory/retrieve`` (hybrid search, top 10) over a seeded
  preload of ``--memories`` events of one agent (10,000; 200 with ``--quick``), stored
  through the same endpoint; the engine's auto-consolidation adds semantic memories
  from them, and the results record the scope's counts by kind;
* ``episodic_store``: ``POST /api/v1/memory/episodic`` (a new event each time).

Texts come from :class:`~benchmarks.fakes.SyntheticCorpus` (a made-up language of 6,000
words with topics and a Zipf-like skew), so lexical and dense search see realistic term
statistics; retrieval runs first, so it searches exactly the preload, once the
consolidations the preload started have finished (they run after the adds are answered).

Both run against the embedded backend (an SQLite file) and PostgreSQL (a fresh schema,
dropped afterwards, vacuumed and analyzed after the preload as autovacuum would). Texts are seeded; nothing touches the network beyond loopback. An
"error" is any answer that is not 2xx, or no answer; 5xx answers are also counted apart.
Client and server share the machine's cores, so the figures are a floor, not a ceiling.

Run::

    python -m benchmarks.http_load            # 60 s per endpoint and backend
    python -m benchmarks.http_load --quick    # 10 s each
    python -m benchmarks.http_load --duration 15 --memories 1000 --workers 2

and read ``benchmarks/results/http_load.json`` (``--quick`` writes
``benchmarks/results/quick/http_load.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.fakes import SyntheticCorpus
from benchmarks.postgres import postgres_problem, temporary_schema, vacuum_analyze_schema
from benchmarks.report import machine_info, write_results

__all__ = ["LoadResult", "main", "run_load", "served"]

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
API = "/api/v1"
SCOPE = "bench-agent"

_CORPUS_SEED = 7
#: Seconds between two clients' first requests.
JOIN_INTERVAL = 0.1


@dataclass
class LoadResult:
    """What one endpoint did under load for one backend."""

    backend: str
    endpoint: str
    seconds: float
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    failures: int = 0
    """Requests that got no answer (connection errors, timeouts)."""

    def summary(self) -> dict[str, Any]:
        ms = np.asarray(self.latencies, dtype=np.float64) * 1000.0
        requests = len(self.latencies) + self.failures
        ok = sum(n for status, n in self.statuses.items() if 200 <= status < 300)
        return {
            "backend": self.backend,
            "endpoint": self.endpoint,
            "seconds": round(self.seconds, 2),
            "requests": requests,
            "requests_per_s": round(requests / self.seconds, 1) if self.seconds else None,
            "p50_ms": round(float(np.percentile(ms, 50)), 2) if len(ms) else None,
            "p99_ms": round(float(np.percentile(ms, 99)), 2) if len(ms) else None,
            "mean_ms": round(float(ms.mean()), 2) if len(ms) else None,
            "errors": requests - ok,
            "server_errors": sum(n for status, n in self.statuses.items() if status >= 500),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
        }


# -- the server -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _make_keys(url: str) -> tuple[str, str]:
    from langmem_tiers.config import Settings
    from langmem_tiers.long_term.store.store import TieredMemoryStore
    from langmem_tiers.server import ApiKeys

    with TieredMemoryStore.from_url(url, settings=Settings()) as store:
        keys = ApiKeys(store.db)
        return (
            keys.create(scope=SCOPE, name="http_load").key,
            keys.create(admin=True, name="http_load counts").key,
        )


@contextmanager
def served(
    url: str, *, log: Path, workers: int = 1, pool_size: int | None = None
) -> Iterator[tuple[str, str, str]]:
    """Start ``langmem-tiers serve`` on ``url``; yields (base URL, agent key, admin key)."""
    key, admin = _make_keys(url)
    port = _free_port()
    command = [
        sys.executable, "-m", "langmem_tiers", "--url", url, "serve",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
        "--workers", str(workers),
        *(["--pool-size", str(pool_size)] if pool_size is not None else []),
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with open(log, "ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}; see {log}")
            try:
                if httpx.get(base + API + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within 60 s; see {log}")
            time.sleep(0.1)
        yield base, key, admin
    finally:
        process.send_signal(signal.SIGTERM)  # uvicorn shuts down gracefully on SIGTERM
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# -- the load ---------------------------------------------------------------------------------


async def _preload(
    client: httpx.AsyncClient, headers: dict[str, str], count: int, concurrency: int
) -> None:
    corpus = SyntheticCorpus(seed=_CORPUS_SEED)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(n: int) -> None:
        async with semaphore:
            body = {"content": corpus.memory(scope=0, index=n), "session_id": f"s{n % 20}"}
            response = await client.post(API + "/memory/episodic", json=body, headers=headers)
            response.raise_for_status()

    await asyncio.gather(*(one(n) for n in range(count)))


async def _counts(client: httpx.AsyncClient, admin: str) -> dict[str, int]:
    """The benchmark scope's memories by kind, as the server counts them."""
    response = await client.get(API + "/agents", headers={"Authorization": f"Bearer {admin}"})
    response.raise_for_status()
    for agent in response.json()["agents"]:
        if agent["agent_id"] == SCOPE:
            return {k: agent[k] for k in ("episodic", "semantic", "procedural", "total")}
    return {"episodic": 0, "semantic": 0, "procedural": 0, "total": 0}


async def _settled_counts(
    client: httpx.AsyncClient, admin: str, *, every: float = 2.0, limit: float = 120.0
) -> dict[str, int]:
    """The scope's counts once the consolidations the preload started have finished (the
    server runs them after answering): the same counts ``every`` seconds apart. A load
    measured while they run would measure them too."""
    counts = await _counts(client, admin)
    give_up = time.perf_counter() + limit
    while time.perf_counter() < give_up:
        await asyncio.sleep(every)
        again = await _counts(client, admin)
        if again == counts:
            break
        counts = again
    return counts


async def _settle(base: str, admin: str) -> None:
    """Wait for the consolidations the server still runs (see :func:`_settled_counts`)."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await _settled_counts(client, admin)


async def run_load(
    base: str,
    key: str,
    *,
    backend: str,
    endpoint: str,
    duration: float,
    concurrency: int,
    seed: int,
) -> LoadResult:
    """``concurrency`` closed-loop clients on one endpoint for ``duration`` seconds."""
    headers = {"Authorization": f"Bearer {key}"}
    corpus = SyntheticCorpus(seed=_CORPUS_SEED)
    result = LoadResult(backend, endpoint, 0.0)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        stop_at = time.perf_counter() + duration

        async def worker(number: int) -> None:
            rng = random.Random(seed * 1000 + number)
            # Clients join one by one, as a pool grows under load: connections opened in
            # one burst would all be taken by one server process (uvicorn's processes
            # share the socket and asyncio accepts every waiting connection at once).
            await asyncio.sleep(number * JOIN_INTERVAL)
            while time.perf_counter() < stop_at:
                index = rng.randrange(1_000_000)
                if endpoint == "episodic_store":
                    path = API + "/memory/episodic"
                    body: dict[str, Any] = {
                        "content": corpus.memory(scope=0, index=1_000_000 + index),
                        "session_id": f"load-{number}",
                    }
                else:
                    path = API + "/memory/retrieve"
                    body = {"query": corpus.query(scope=0, index=index), "limit": 10}
                started = time.perf_counter()
                try:
                    response = await client.post(path, json=body, headers=headers)
                except httpx.HTTPError:
                    result.failures += 1
                    continue
                result.latencies.append(time.perf_counter() - started)
                result.statuses[response.status_code] = (
                    result.statuses.get(response.status_code, 0) + 1
                )

        began = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(concurrency)))
        result.seconds = time.perf_counter() - began
    return result


@contextmanager
def _database(backend: str, postgres_url: str, workdir: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{workdir / 'http_load.db'}"
        return
    with temporary_schema(postgres_url) as url:
        yield url


def _run_backend(backend: str, args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Preload one database, then each endpoint under each of ``args.workers``'s server
    process counts (a fresh server per run; every retrieve run before any episodic
    store, so each retrieves over exactly the preload). An episodic run's server answers
    before it consolidates; it stays up until its consolidations have settled, as the
    preload's does, so the next run measures its own adds and not the consolidation of
    the last run's (about 12,000 events, started by the next server's first add)."""
    summaries = []
    log = workdir / f"server-{backend}.log"
    with _database(backend, args.postgres_url, workdir) as url:
        with served(url, log=log, workers=max(args.workers), pool_size=args.pool_size) as (
            base,
            key,
            admin,
        ):

            async def preload() -> tuple[float, dict[str, int]]:
                headers = {"Authorization": f"Bearer {key}"}
                async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                    began = time.perf_counter()
                    await _preload(client, headers, args.memories, args.concurrency)
                    loaded = time.perf_counter() - began
                    return loaded, await _settled_counts(client, admin)

            loaded, counts = asyncio.run(preload())
        print(
            f"http_load: {backend} stored {args.memories:,} events in {loaded:.0f} s; "
            f"the scope holds {counts['total']:,} memories {counts}",
            flush=True,
        )
        for endpoint in ("retrieve", "episodic_store"):
            for workers in args.workers:
                if backend == "postgres":
                    # This machine's server runs without autovacuum: do what it would have
                    # done since the preload or the last run (untimed): the statistics the
                    # planner needs, and the old row versions of the last run's updates
                    # (a retrieve counts an access of each memory it returns), which every
                    # later run would otherwise walk past.
                    vacuum_analyze_schema(url)
                with served(url, log=log, workers=workers, pool_size=args.pool_size) as (
                    base,
                    key,
                    admin,
                ):
                    print(
                        f"http_load: {backend} {endpoint}, {workers} server process(es), "
                        f"for {args.duration:g} s",
                        flush=True,
                    )
                    result = asyncio.run(
                        run_load(
                            base,
                            key,
                            backend=backend,
                            endpoint=endpoint,
                            duration=args.duration,
                            concurrency=args.concurrency,
                            seed=args.seed,
                        )
                    )
                    if endpoint == "episodic_store":
                        asyncio.run(_settle(base, admin))
                summary = {**result.summary(), "workers": workers, "memories": counts}
                print(
                    f"  {summary['requests_per_s']} req/s, p50 {summary['p50_ms']} ms, "
                    f"p99 {summary['p99_ms']} ms, {summary['errors']} errors",
                    flush=True,
                )
                summaries.append(summary)
    return summaries


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the load against each backend and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10 s per endpoint and backend")
    parser.add_argument("--duration", type=float, help="seconds per endpoint (default 60)")
    parser.add_argument("--concurrency", type=int, default=8, help="clients (default 8)")
    parser.add_argument(
        "--memories",
        "--preload",
        dest="memories",
        type=int,
        help="events stored before the load (default 10000; 200 with --quick)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help="server process counts to measure, each in its own run (default: 1, and one per "
        "CPU when there are several)",
    )
    parser.add_argument(
        "--pool-size", type=int, help="PostgreSQL connections per process (server default)"
    )
    parser.add_argument("--backends", nargs="+", choices=["sqlite", "postgres"],
                        default=["sqlite", "postgres"])  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--out", type=Path, help="default benchmarks/results/http_load.json")
    args = parser.parse_args(argv)
    args.duration = args.duration or (10.0 if args.quick else 60.0)
    args.memories = args.memories if args.memories is not None else (200 if args.quick else 10_000)
    cpus = os.cpu_count() or 1
    args.workers = sorted(set(args.workers or [1, cpus]))
    if args.workers[0] < 1:
        parser.error(f"--workers must be positive counts, got {args.workers}")
    out = args.out or (RESULTS / "quick" if args.quick else RESULTS) / "http_load.json"

    runs: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="http_load_") as tmp:
        workdir = Path(tmp)
        for backend in args.backends:
            problem = postgres_problem(args.postgres_url) if backend == "postgres" else None
            if problem is not None:
                skipped.append({"backend": backend, "reason": problem})
                continue
            runs.extend(_run_backend(backend, args, workdir))
    results: dict[str, Any] = {
        "benchmark": "http_load",
        "machine": machine_info(args.postgres_url),
        "config": {
            "duration_s": args.duration,
            "concurrency": args.concurrency,
            "join_interval_s": JOIN_INTERVAL,
            "preload": args.memories,
            "workers": args.workers,
            "pool_size": args.pool_size,
            "corpus": f"SyntheticCorpus(seed={_CORPUS_SEED}), scope 0",
            "seed": args.seed,
            "server": "python -m langmem_tiers serve --workers N (uvicorn, loopback)",
            "client": f"httpx {httpx.__version__}, asyncio, closed loop, same machine",
            "cpu_count": os.cpu_count(),
        },
        "runs": runs,
        "skipped": skipped,
    }
    write_results(results, out)
    print(f"http_load: wrote {out}", flush=True)
    return results


if __name__ == "__main__":
    main()
