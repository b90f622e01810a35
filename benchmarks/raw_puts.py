"""What a raw ``store.put`` of a fact costs through the write pipeline, against a plain upsert.

Both sides run in one process on one store, put by put, alternating (which side goes first
alternates too), so a slow moment of a shared machine falls on both alike: the *plain* side
puts with no pipeline installed (``store.put_pipeline = None``: LangGraph's upsert, as every
raw put was before the pipeline took them), the *pipeline* side with the engine installed
(validate, duplicate check, conflict check, version, event). Each side writes its own scope
the same facts, a few subjects with several attributes each, so the pipeline's conflict
check has near memories to judge. Reported per side: p50, p95 and mean in milliseconds, and
the median of the per-put ratios pipeline / plain.

Run::

    python -m benchmarks.raw_puts [--backend sqlite|postgres] [--puts 300] [--out raw.json]

Example:
    >>> [fact(i) for i in (0, 1, 3, 12)]  # doctest: +NORMALIZE_WHITESPACE
    ['Person 0 lives in city 0.', 'Person 1 lives in city 1.',
     'Person 0 works at company 3.', 'Person 0 lives in city 12.']
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.store_speed import DEFAULT_POSTGRES_URL, temporary_schema
from langmem_tiers import MemoryEngine, TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings

__all__ = ["fact", "main", "measure"]

_ATTRIBUTES = ("lives in city", "works at company", "plays sport", "drives car")


def fact(i: int) -> str:
    """The ``i``-th fact: three people, four attributes each, a new value every time, so
    each fact from the thirteenth on contradicts one twelve puts earlier."""
    return f"Person {i % 3} {_ATTRIBUTES[i // 3 % 4]} {i}."


def measure(store: TieredMemoryStore, puts: int) -> dict[str, Any]:
    """Time ``puts`` raw puts per side, alternating; the summary of each side and the ratio."""
    engine = MemoryEngine(store)
    times: dict[str, list[float]] = {"plain": [], "pipeline": []}
    for i in range(puts):
        order = ("plain", "pipeline") if i % 2 == 0 else ("pipeline", "plain")
        for side in order:
            store.put_pipeline = engine if side == "pipeline" else None
            namespace = namespace_for(f"{side}-scope", "semantic")
            start = time.perf_counter()
            store.put(namespace, f"f{i}", {"content": fact(i)})
            times[side].append(time.perf_counter() - start)
    store.put_pipeline = engine
    summary: dict[str, Any] = {}
    for side, values in times.items():
        ms = np.array(values) * 1000
        summary[side] = {
            "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p95_ms": round(float(np.percentile(ms, 95)), 3),
            "mean_ms": round(float(ms.mean()), 3),
        }
    ratios = np.array(times["pipeline"]) / np.array(times["plain"])
    summary["median_ratio"] = round(float(np.median(ratios)), 2)
    summary["puts"] = puts
    summary["superseded"] = len(engine.memories("pipeline-scope", statuses=("superseded",)))
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the measurement on one backend; print (and with ``--out`` write) the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--puts", type=int, default=300)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    settings = Settings.from_env(environ={})
    with ExitStack() as stack:
        if args.backend == "sqlite":
            url = f"sqlite:///{Path(stack.enter_context(tempfile.TemporaryDirectory())) / 'raw.db'}"
        else:
            url = stack.enter_context(temporary_schema(args.postgres_url))
        store = stack.enter_context(TieredMemoryStore.from_url(url, settings=settings))
        result = {"backend": args.backend, **measure(store, args.puts)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
