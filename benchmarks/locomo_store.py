"""LoCoMo retrieval through the store's public API, beside LangGraph's InMemoryStore.

Every turn of a conversation is stored as an episodic memory of one scope, then each question
of categories 1-4 with evidence retrieves the top 20 through ``store.search`` — the hybrid
ranking exactly as a user gets it, access counts included. LangGraph's ``InMemoryStore``
searches the same memories with the same embeddings in the same run.

How a turn is stored (``--store-as``):

* ``event`` (the reported configuration): the way a user stores an event, text
  ``speaker: text`` (plus the image caption) in ``content`` and the session's date in
  ``event_timestamp``, nothing else; the date is not in the text, so finding a turn by
  its time is the store's job.
* ``dated-text``: the LoCoMo papers' layout, ``[date] speaker: text`` in ``content`` plus
  ``event_timestamp``, ``session_id`` and ``actor``.

    python -m benchmarks.locomo_store [--embedder offline|minilm|both] [--backend sqlite|postgres]
                                      [--store-as event|dated-text] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks.locomo_retrieval import (
    RESULTS,
    ConvData,
    _minilm_vectors,
    embedder_names,
    evaluate,
    load_prepared,
    table_cells,
)
from benchmarks.postgres import vacuum_analyze_schema
from langmem_tiers import TieredMemoryStore
from langmem_tiers.embeddings import OfflineEmbeddings

TOP_K = 20
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


class TableEmbeddings(Embeddings):
    """Embeddings looked up from vectors computed once (MiniLM is slow to run per call)."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        # Keyed by the text with its whitespace collapsed: the store embeds content as it
        # keeps it, runs of spaces made one.
        self.table = {_spaced(text): vector for text, vector in table.items()}
        self.dims = len(next(iter(table.values())))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[_spaced(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.table[_spaced(text)]]


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _session_time(date: str) -> str:
    parsed = datetime.strptime(date, "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=timezone.utc).isoformat()


def _event_text(turn: Any) -> str:
    """``speaker: text`` plus the image caption: the turn without its date."""
    body = f"{turn.speaker}: {turn.text}"
    return f"{body} [shares {turn.caption}]" if turn.caption else body


def _ops(c: ConvData, scope: str, store_as: str = "event") -> list[PutOp]:
    if store_as == "event":
        return [
            PutOp(
                (scope, "episodic"),
                turn.dia_id,
                {"content": text, "event_timestamp": _session_time(turn.date)},
            )
            for turn, text in zip(c.conv.turns, c.texts, strict=True)
        ]
    return [
        PutOp(
            (scope, "episodic"),
            turn.dia_id,
            {
                "content": text,
                "event_timestamp": _session_time(turn.date),
                "session_id": f"session_{turn.session}",
                "actor": turn.speaker,
            },
        )
        for turn, text in zip(c.conv.turns, c.texts, strict=True)
    ]


def _ranking_scores(c: ConvData, keys: Sequence[str]) -> np.ndarray:
    """Scores for question_metrics: rank order of the returned keys, the rest last."""
    index = {t.dia_id: i for i, t in enumerate(c.conv.turns)}
    scores = np.full(len(c.texts), -1e9)
    for rank, key in enumerate(keys):
        scores[index[key]] = float(len(keys) - rank)
    return scores


@contextmanager
def _postgres_schema(base_url: str) -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{base_url}?options=-c%20search_path%3D{schema},public"
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _evaluate(
    data: Sequence[ConvData], search: Callable[[ConvData, int], list[str]]
) -> dict[str, Any]:
    """The research harness's metrics, fed with the ranking a store returned."""
    return evaluate(lambda c, qi: _ranking_scores(c, search(c, qi)), data, len(data))


def run_ours(
    data: Sequence[ConvData],
    embeddings: Embeddings | None,
    url_for: Callable[[int], Any],
    store_as: str = "event",
    settle: Callable[[], None] = lambda: None,
) -> tuple[dict[str, Any], float, float]:
    """Our store: returns metrics, puts/s and searches/s; ``settle`` runs (untimed) between
    the puts and the searches."""
    put_time = search_time = 0.0
    n_puts = n_searches = 0
    stores: dict[int, TieredMemoryStore] = {}
    contexts = []
    for i, c in enumerate(data):
        cm = TieredMemoryStore.from_url(url_for(i), embeddings=embeddings)
        stores[i] = cm.__enter__()
        contexts.append(cm)
        start = time.perf_counter()
        stores[i].batch(_ops(c, c.conv.sample_id, store_as))
        put_time += time.perf_counter() - start
        n_puts += len(c.texts)
    settle()

    def search(c: ConvData, qi: int) -> list[str]:
        nonlocal search_time, n_searches
        store = stores[data.index(c)]
        start = time.perf_counter()
        hits = store.search((c.conv.sample_id,), query=c.questions[qi], limit=TOP_K)
        search_time += time.perf_counter() - start
        n_searches += 1
        return [h.key for h in hits]

    try:
        metrics = _evaluate(data, search)
    finally:
        for cm in contexts:
            cm.__exit__(None, None, None)
    return metrics, n_puts / put_time, n_searches / search_time


def run_langgraph(
    data: Sequence[ConvData], embeddings: Embeddings, dims: int, store_as: str = "event"
) -> dict[str, Any]:
    stores: dict[int, BaseStore] = {}
    for i, c in enumerate(data):
        store = InMemoryStore(index={"dims": dims, "embed": embeddings, "fields": ["content"]})
        # InMemoryStore embeds each distinct text of a batch once but expects one vector
        # per put, so a batch must not repeat a text ("ok", "thanks!"): split it there.
        batch: list[PutOp] = []
        texts: set[str] = set()
        for op in _ops(c, c.conv.sample_id, store_as):
            text = (op.value or {}).get("content")
            if text in texts:
                store.batch(batch)
                batch, texts = [], set()
            batch.append(op)
            texts.add(text)
        store.batch(batch)
        stores[i] = store

    def search(c: ConvData, qi: int) -> list[str]:
        store = stores[data.index(c)]
        hits = store.search((c.conv.sample_id,), query=c.questions[qi], limit=TOP_K)
        return [h.key for h in hits]

    return _evaluate(data, search)


def _table_row(name: str, res: dict[str, Any]) -> str:
    metrics = ("R@5", "R@10", "R@20", "any@10", "all@20", "MRR")
    return f"| {name} | {table_cells(res, metrics)} |"


HEADER = (
    "| system | R@5 | R@10 | R@20 | any@10 | all@20 | MRR | R@10 multi-hop | temporal "
    "| open-domain | single-hop | held-out R@10 |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", choices=("offline", "minilm", "both"), default="offline")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument(
        "--store-as",
        choices=("event", "dated-text"),
        default="event",
        help="event: text in content, date in event_timestamp only (reported); "
        "dated-text: '[date] speaker: text'",
    )
    parser.add_argument("--quick", action="store_true", help="2 conversations")
    parser.add_argument("--data", type=Path, default=None, help="path of locomo10.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "locomo_store.json")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)

    data = load_prepared(args.data, quick=args.quick)
    if args.store_as == "event":
        for c in data:
            c.texts = [_event_text(turn) for turn in c.conv.turns]
    embedders = embedder_names(args.embedder)
    results: dict[str, Any] = {}
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in embedders:
            if name == "minilm":
                _minilm_vectors(data)
                table: dict[str, np.ndarray] = {}
                for c in data:
                    turns, questions = c.dense["minilm"]
                    table.update(zip(c.texts, turns, strict=True))
                    table.update(zip(c.questions, questions, strict=True))
                embeddings: Embeddings = TableEmbeddings(table)
                ours_embeddings: Embeddings | None = embeddings
                dims = 384
            else:
                embeddings, ours_embeddings, dims = OfflineEmbeddings(), None, 512

            def url_for(i: int, name: str = name) -> str:
                return f"sqlite:///{tmp}/{name}-{i}.db"

            if args.backend == "postgres":
                with _postgres_schema(args.postgres_url) as url:
                    # This machine's server runs without autovacuum: analyze the loaded
                    # tables as it would have (the planner needs their statistics).
                    ours, puts, searches = run_ours(
                        data,
                        ours_embeddings,
                        lambda i: url,
                        args.store_as,
                        settle=lambda: vacuum_analyze_schema(url),
                    )
            else:
                ours, puts, searches = run_ours(data, ours_embeddings, url_for, args.store_as)
            label = f"langmem-tiers {args.backend} ({name})"
            results[label] = {**ours, "puts_per_s": round(puts), "searches_per_s": round(searches)}
            print(_table_row(label, ours), flush=True)
            peer_label = f"LangGraph InMemoryStore ({name})"
            try:
                peer = run_langgraph(data, embeddings, dims, args.store_as)
            except ValueError as err:
                # InMemoryStore miscounts its embeddings when two items of one batch have
                # the same text (short turns such as "Caroline: Thanks!" repeat once the
                # date is no longer part of the text).
                results[peer_label] = {"error": str(err)}
                print(f"| {peer_label} | failed: {err} |", flush=True)
            else:
                results[peer_label] = peer
                print(_table_row(peer_label, peer), flush=True)
    report = {
        "store_as": args.store_as,
        "protocol": (
            "every turn stored as an episodic memory of the conversation's scope through the "
            "public store API; each question of categories 1-4 with evidence retrieves the top "
            f"{TOP_K} with store.search (hybrid ranking as a user gets it); tune = "
            "conversations 0-4, held_out = 5-9"
        ),
        "questions": sum(len(c.questions) for c in data),
        "conversations": len(data),
        "quick": args.quick,
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
