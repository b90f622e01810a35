"""Export and import speed: a store of N memories moved between SQLite and PostgreSQL.

A SQLite store is filled with N semantic memories (seeded texts of the synthetic corpus,
seeded 256-dimension embeddings, ten scopes, written by ``batch`` in puts of 1,000), then:

* ``export``: ``export_records`` of everything to a JSON Lines file, without and with the
  vectors (file size, records per second);
* ``import-postgres``: that file (with vectors, so nothing is embedded again) into a fresh
  PostgreSQL schema; ``reimport-postgres``: the same file again (idempotent: every record
  is compared and left alone);
* ``import-sqlite``: the file without vectors into a fresh SQLite file (the texts are
  embedded again, as when the target's embedder differs).

Each export and import runs in a fresh process, whose peak resident memory is read at its
end: the export and the import hold one page of rows at a time, so it stays flat as N
grows.

Run::

    python -m benchmarks.portability_speed [--quick] [--memories 100000]

and read ``benchmarks/results/portability_speed.json``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import resource
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp

from benchmarks.fakes import SeededEmbeddings, SyntheticCorpus
from benchmarks.postgres import DEFAULT_POSTGRES_URL, postgres_problem, temporary_schema
from benchmarks.report import machine_info, write_results
from langmem_tiers import TieredMemoryStore
from langmem_tiers.portability import export_records, import_records
from langmem_tiers.portability.format import encode_line

__all__ = ["main", "run"]

RESULTS = Path(__file__).resolve().parent / "results"
SCOPES = 10
BATCH = 1_000


def _peak_rss_mb() -> float:
    """The process's peak resident memory since it started its program (``VmHWM``;
    ``getrusage`` keeps the peak of the parent it was forked from across ``exec``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _store(url: str) -> Any:
    return TieredMemoryStore.from_url(
        url, index={"dims": 256, "embed": SeededEmbeddings(256), "fields": ["content"]}
    )


def _fill(store: TieredMemoryStore, memories: int) -> None:
    corpus = SyntheticCorpus(seed=0)
    # Scopes of this run alone: item ids derive from namespace and key, and PostgreSQL's
    # item locks are advisory locks of the whole database, which another process writing
    # the same ids in another schema would take in its own order.
    run = uuid.uuid4().hex[:8]
    ops = []
    for n in range(memories):
        scope = n % SCOPES
        text = corpus.memory(scope=scope, index=n)
        ops.append(PutOp((f"run-{run}-user-{scope}", "semantic"), f"m{n}", {"content": text}))
        if len(ops) == BATCH:
            store.batch(ops)
            ops = []
    if ops:
        store.batch(ops)


def _export(store: TieredMemoryStore, path: Path, *, embeddings: bool) -> dict[str, Any]:
    started = time.perf_counter()
    records = 0
    with path.open("w", encoding="utf-8") as out:
        for record in export_records(store, embeddings=embeddings):
            out.write(encode_line(record))
            records += 1
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "records": records,
        "records_per_s": round(records / seconds),
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "peak_rss_mb": _peak_rss_mb(),
    }


def _import(store: TieredMemoryStore, path: Path, memories: int) -> dict[str, Any]:
    started = time.perf_counter()
    with path.open(encoding="utf-8") as handle:
        result = import_records(store, (json.loads(line) for line in handle))
    seconds = time.perf_counter() - started
    written = result.items + result.events
    return {
        "seconds": round(seconds, 2),
        "memories_per_s": round(memories / seconds),
        "written": written,
        "unchanged": result.unchanged,
        "embedded": result.embedded,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _export_step(url: str, path: str, embeddings: bool) -> dict[str, Any]:
    with _store(url) as store:
        return _export(store, Path(path), embeddings=embeddings)


def _import_step(url: str, path: str, memories: int) -> dict[str, Any]:
    with _store(url) as store:
        return _import(store, Path(path), memories)


def _in_fresh_process(step: Any, *args: Any) -> dict[str, Any]:
    """``step(*args)`` in a fresh process (its own peak memory); answers its figures."""
    with concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        figures: dict[str, Any] = pool.submit(step, *args).result()
    return figures


def run(
    memories: int, postgres_url: str | None, workdir: Path, *, isolated: bool = True
) -> dict[str, Any]:
    """Every step at ``memories`` memories; PostgreSQL steps when ``postgres_url`` is given.
    ``isolated``: each export and import in a fresh process (False: in this one)."""
    steps: dict[str, Any] = {}

    def _in_child(step: Any, *args: Any) -> dict[str, Any]:
        return _in_fresh_process(step, *args) if isolated else dict(step(*args))

    plain, full = str(workdir / "plain.jsonl"), str(workdir / "with_vectors.jsonl")
    source = f"sqlite:///{workdir / 'source.db'}"
    with _store(source) as store:
        started = time.perf_counter()
        _fill(store, memories)
        steps["fill-sqlite"] = {"seconds": round(time.perf_counter() - started, 2)}
    steps["export"] = _in_child(_export_step, source, plain, False)
    steps["export-with-vectors"] = _in_child(_export_step, source, full, True)
    if postgres_url is not None:
        with temporary_schema(postgres_url) as url:
            with _store(url):
                pass  # the schema set up before the timed steps
            steps["import-postgres"] = _in_child(_import_step, url, full, memories)
            steps["reimport-postgres"] = _in_child(_import_step, url, full, memories)
    target = f"sqlite:///{workdir / 'target.db'}"
    with _store(target):
        pass
    steps["import-sqlite"] = _in_child(_import_step, target, plain, memories)
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; writes the results JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.portability_speed")
    parser.add_argument("--memories", type=int, default=None, help="default 100,000")
    parser.add_argument("--quick", action="store_true", help="2,000 memories")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--out", type=Path, default=RESULTS / "portability_speed.json")
    args = parser.parse_args(argv)
    memories = args.memories or (2_000 if args.quick else 100_000)
    problem = postgres_problem(args.postgres_url)
    if problem is not None:
        print(f"PostgreSQL steps skipped: {problem}")
    with tempfile.TemporaryDirectory() as tmp:
        steps = run(memories, None if problem else args.postgres_url, Path(tmp))
    results = {
        "benchmark": "portability_speed",
        "memories": memories,
        "scopes": SCOPES,
        "machine": machine_info(None if problem else args.postgres_url),
        "steps": steps,
    }
    write_results(results, args.out)
    for name, figures in steps.items():
        print(f"{name:20} {figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
