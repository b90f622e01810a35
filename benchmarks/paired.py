"""A change's speed, measured apart: old and new code in one process, operation by operation.

Timing the old code and then the new one measures the machine as much as the change where
the machine's speed drifts: on a shared machine two runs of one code a minute apart differ
by a tenth or more. Here both run in one process. The package as it is at a git revision
(``--base``) is extracted under another name (``langmem_tiers_base``), each side loads
the same :mod:`~benchmarks.store_speed` workload into a store of its own (puts in batches
of 500, the batches alternating between the sides), then each scope is searched for the
first time by both sides (what a store that keeps what it read pays once per scope), and
then the searches alternate one by one, each query by both sides; which side goes first
alternates too. A slow moment of the machine falls on both alike, so the median of the
per-search ratios new / old isolates the change. Reported for the put batches, the first
searches and the searches: each side's p50, p95 and mean, and the median ratio.

Run::

    python -m benchmarks.paired --base HEAD~3 [--backend sqlite|postgres] [--size 10000]
                                [--rounds 3] [--out paired.json]

The base must have the store's public surface of today (``TieredMemoryStore.from_url``,
``Settings.from_env``); its schema is its own (each side has its own database or schema).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.fakes import SeededEmbeddings, SyntheticCorpus
from benchmarks.postgres import DEFAULT_POSTGRES_URL
from benchmarks.store_speed import BATCH, LIMIT, Workload, open_system

__all__ = ["BASE_PACKAGE", "extract_base", "main", "paired_summary"]

PACKAGE = "langmem_tiers"
BASE_PACKAGE = "langmem_tiers_base"
_REPO = Path(__file__).resolve().parents[1]
_NAME = re.compile(rf"\b{PACKAGE}\b")


def extract_base(revision: str, into: Path, *, repo: Path = _REPO) -> Path:
    """The package as committed at ``revision``, written under ``into`` as
    :data:`BASE_PACKAGE` (every reference to its own name renamed); answers its folder."""
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", revision, PACKAGE],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # The "data" filter (refuse links and paths out of ``into``) where tarfile has it.
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(into, **safe)  # type: ignore[arg-type]
    package = into / BASE_PACKAGE
    (into / PACKAGE).rename(package)
    for path in package.rglob("*.py"):
        path.write_text(_NAME.sub(BASE_PACKAGE, path.read_text("utf-8")), "utf-8")
    return package


def paired_summary(old: Sequence[float], new: Sequence[float]) -> dict[str, float]:
    """Each side's p50, p95 and mean (ms) and the median of the pairs' ratios new / old.

    Example::

        >>> paired_summary([0.002, 0.004], [0.001, 0.004])["median_ratio"]
        0.75
    """
    a, b = np.asarray(old) * 1000.0, np.asarray(new) * 1000.0
    return {
        "n": len(a),
        "old_p50_ms": round(float(np.median(a)), 3),
        "new_p50_ms": round(float(np.median(b)), 3),
        "old_p95_ms": round(float(np.percentile(a, 95)), 3),
        "new_p95_ms": round(float(np.percentile(b, 95)), 3),
        "old_mean_ms": round(float(a.mean()), 3),
        "new_mean_ms": round(float(b.mean()), 3),
        "median_ratio": round(float(np.median(b / a)), 4),
    }


def _alternating(
    sides: dict[str, Any],
    items: Sequence[Any],
    call: Callable[[Any, Any], object],
    *,
    rounds: int = 1,
) -> dict[str, list[float]]:
    """The seconds of ``call(store, item)`` on each side for every item, ``rounds`` times.
    The side that goes first alternates from item to item and from round to round, so
    neither side always runs on what the other just warmed."""
    seconds: dict[str, list[float]] = {"old": [], "new": []}
    for r in range(rounds):
        for n, item in enumerate(items):
            for name in ("old", "new") if (n + r) % 2 == 0 else ("new", "old"):
                began = time.perf_counter()
                call(sides[name], item)
                seconds[name].append(time.perf_counter() - began)
    return seconds


def _line(s: dict[str, Any]) -> str:
    return (
        f"old p50 {s['old_p50_ms']} p95 {s['old_p95_ms']} ms,"
        f" new p50 {s['new_p50_ms']} p95 {s['new_p95_ms']} ms,"
        f" median ratio new/old {s['median_ratio']} over {s['n']} pairs"
    )


def run(
    base: str,
    *,
    backend: str = "sqlite",
    size: int = 10_000,
    rounds: int = 3,
    queries: int = 1000,
    postgres_url: str = DEFAULT_POSTGRES_URL,
    seed: int = 0,
    scope_cache_items: int | None = None,
    log: Any = print,
) -> dict[str, Any]:
    """Load ``size`` memories into a store of each side and time both, paired.

    ``scope_cache_items``: both sides' setting of that name (None: its default; 0 searches
    in SQL alone)."""
    embeddings = SeededEmbeddings(256, seed=seed)
    workload = Workload.build(
        size,
        embeddings=embeddings,
        corpus=SyntheticCorpus(seed=seed),
        n_queries=queries,
        n_gets=1,
        seed=seed,
    )

    def search(store: Any, scope_query: tuple[str, str]) -> None:
        scope, query = scope_query
        store.search(workload.namespace(scope), query=query, limit=LIMIT)

    with tempfile.TemporaryDirectory(prefix="paired-base-") as root, ExitStack() as stack:
        extract_base(base, Path(root))
        sys.path.insert(0, root)
        try:
            opened = {
                name: stack.enter_context(
                    open_system(
                        f"ours-{backend}",
                        embeddings,
                        postgres_url,
                        scope_cache_items=scope_cache_items,
                        package=package,
                    )
                )
                for name, package in (("old", BASE_PACKAGE), ("new", PACKAGE))
            }
            sides = {name: store for name, (store, _, _) in opened.items()}
            batches = [workload.put_ops(start, start + BATCH) for start in range(0, size, BATCH)]
            puts = _alternating(sides, batches, lambda store, ops: store.batch(ops))
            for _, _, settle in opened.values():
                settle()
            # Each scope's first search: what a store that keeps what it read pays once.
            first_query = dict(reversed(workload.queries))
            firsts = _alternating(sides, sorted(first_query.items()), search)
            for store in sides.values():
                for scope, query in workload.queries[:200]:  # every scope loaded, warm
                    store.search(workload.namespace(scope), query=query, limit=LIMIT)
            searches = _alternating(sides, workload.queries, search, rounds=rounds)
        finally:
            sys.path.remove(root)
            for name in [m for m in sys.modules if m.split(".")[0] == BASE_PACKAGE]:
                del sys.modules[name]
    phases = {
        "put_batches": paired_summary(puts["old"], puts["new"]),
        "first_searches": paired_summary(firsts["old"], firsts["new"]),
        "searches": paired_summary(searches["old"], searches["new"]),
    }
    for phase, summary in phases.items():
        log(f"{backend} {size:,} {phase}: {_line(summary)}")
    return {
        "base": base,
        "backend": backend,
        "size": size,
        "scope_cache_items": scope_cache_items,
        **phases,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paired", description=__doc__)
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument(
        "--scope-cache-items",
        type=int,
        default=None,
        help="both sides' scope cache bound (default: the setting's; 0: searches in SQL alone)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run(
        args.base,
        backend=args.backend,
        size=args.size,
        rounds=args.rounds,
        queries=args.queries,
        postgres_url=args.postgres_url,
        scope_cache_items=args.scope_cache_items,
    )
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
