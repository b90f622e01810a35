"""One search of the store: BM25 with feedback over the filtered set, dense candidates, fusion,
hybrid ranking.

:func:`~langmem_tiers.long_term.store.search.prepared.prepare_search` validates a
``SearchOp`` into SQL conditions (pure). :class:`StoreSearch` runs it inside the caller's
transaction, reading the filtered set through a
:class:`~langmem_tiers.long_term.store.search.lexical_sets.LexicalSet`:

1. BM25 over the filtered set (one round trip for the set's statistics and the query terms'
   postings, one more for pseudo-relevance feedback);
2. dense candidates from the vector index, which also scores the lexical candidates;
3. fusion of both into one relevance; the best candidates lift the memories written next to
   them in the same conversation (``neighbours.py``, read with the candidates' rows in one
   round trip);
4. the hybrid rank with recency, frequency (access counts, buffered ones included) and
   confidence.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import Item, SearchItem

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.access import AccessBuffer
from langmem_tiers.long_term.store.records import (
    join_namespace,
    memory_text,
    split_namespace,
)
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.authors import author_terms, by_author
from langmem_tiers.long_term.store.search.fusion import smooth_neighbours
from langmem_tiers.long_term.store.search.lexical_sets import (
    CachedSet,
    LexicalSet,
    Postings,
    SqlSet,
    best_first,
    scores_of,
    top_scores,
)
from langmem_tiers.long_term.store.search.neighbours import (
    NEIGHBOUR_KIND,
    conversation_neighbours,
    rows_with_neighbours_sql,
)
from langmem_tiers.long_term.store.search.prepared import (
    PreparedSearch,
    query_weights,
)
from langmem_tiers.long_term.store.search.ranking import Candidate, Ranked, boost_reachable, rank
from langmem_tiers.long_term.store.search.readings import ValueReadings
from langmem_tiers.long_term.store.search.relevance import (
    DEFAULT_COSINE_CURVE,
    absolute_relevance,
    idf_mass,
)
from langmem_tiers.long_term.store.search.scope_cache import Guess, ScopeCache
from langmem_tiers.long_term.store.search.scope_data import Members, ScopeData
from langmem_tiers.long_term.store.search.time import (
    WHEN_BOOST,
    says_when,
    time_boosts,
    when_boosts,
)
from langmem_tiers.long_term.store.vectors import VectorIndex
from langmem_tiers.sql.dialect import ACCESS_COUNT_SQL, ITEMS, TERMS, Dialect
from langmem_tiers.sql.flow import Flow, Sql

__all__ = ["ITEM_COLS", "RankedItem", "StoreSearch", "item_from_row"]


#: The item columns every read selects, in the order :func:`item_from_row` expects.
ITEM_COLS = "i.prefix, i.key, i.value, i.created_at, i.updated_at, i.id"

#: What a search reads of its candidates: :data:`ITEM_COLS` (the value as JSON text on every
#: backend: only the page's values are decoded), then what ranking needs.
_CANDIDATE_COLUMNS = (
    *ITEM_COLS.replace("i.value", "CAST(i.value AS TEXT)").split(", "),
    "i.event_at",
    ACCESS_COUNT_SQL,
    "i.confidence",
    "i.ttl_minutes",
    "i.session_id",
)
#: Where the rows statement of a search puts the check of its guessed members (1 when they
#: held), and after it the candidate's neighbours (see ``rows_with_neighbours_sql``).
_CHECK = len(_CANDIDATE_COLUMNS)

#: How the stored namespace of an episodic memory ends (the kind whose memories have an
#: author, see ``authors.py``).
_EPISODIC_SUFFIX = join_namespace(("", NEIGHBOUR_KIND))


class RankedItem(SearchItem):
    """A search result with the components of its hybrid score.

    ``score`` is the combined score; ``scores`` maps ``semantic``, ``recency``,
    ``frequency`` and ``confidence`` to their values in [0, 1].
    """

    __slots__ = ("scores",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float,
        scores: dict[str, float],
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.scores = scores

    def dict(self) -> dict[str, Any]:
        out = super().dict()
        out["scores"] = dict(self.scores)
        return out


def item_from_row(dialect: Dialect, row: Sequence[Any], value: Any = None) -> Item:
    """An :class:`Item` from a row selected with :data:`ITEM_COLS` (``value``: the row's
    value when already decoded)."""
    return Item(
        value=dialect.json_value(row[2]) if value is None else value,
        key=row[1],
        namespace=split_namespace(row[0]),
        created_at=dialect.ts_value(row[3]),  # type: ignore[arg-type]
        updated_at=dialect.ts_value(row[4]),  # type: ignore[arg-type]
    )


class StoreSearch:
    """Runs prepared searches over the items table, the terms table and a vector index."""

    def __init__(
        self,
        dialect: Dialect,
        index: VectorIndex,
        settings: Settings,
        access: AccessBuffer,
        *,
        dense_weight: float = 1.0,
        cosine_curve: tuple[float, float] = DEFAULT_COSINE_CURVE,
    ) -> None:
        self.dialect = dialect
        self.index = index
        self.settings = settings
        self.access = access
        self.dense_weight = dense_weight
        self.cosine_curve = cosine_curve
        self.authors = ValueReadings[frozenset[str]]()
        self.told_when = ValueReadings[bool]()
        # Where the database counts changes per namespace and holds the vectors in a
        # table a statement can read, a namespace's terms and vectors are kept between
        # searches and scored in process (an index elsewhere keeps its own path).
        self.scope_cache: ScopeCache | None = (
            ScopeCache(dialect, max_items=settings.scope_cache_items)
            if dialect.counts_scope_changes
            and index.in_vectors_table
            and settings.scope_cache_items > 0
            else None
        )

    def nearest_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int,
        *,
        prefix: str,
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        """The ``k`` items most similar to ``vector`` among items matching ``where``.

        ``candidates``, when known, is how many items match ``where`` (lets an index pick
        an exact scan for small scopes). ``include`` are items known to match ``where``
        whose similarity is wanted too (those with vectors are added to the result).
        ``members``, when known, are all the items matching ``where`` (an index that
        scores every item can then skip evaluating ``where``).

        An index outside the database (Qdrant) filters by namespace only; the SQL
        condition (statuses, scope, ...) is checked afterwards, so items it drops would
        shorten the list. Ask the index for more until ``k`` items pass or it has no more.
        """
        if self.index.in_database:
            return (
                yield from self.index.search_flow(
                    vector,
                    where,
                    params,
                    k,
                    prefix=prefix,
                    value_filtered=value_filtered,
                    candidates=candidates,
                    include=include,
                    members=members,
                )
            )
        hits = yield from self.index.search_flow(
            vector, where, params, k, prefix=prefix, value_filtered=value_filtered
        )
        if not value_filtered:
            ask = k
            passing = yield from self.passing_flow(hits, where, params)
            while len(passing) < k and ask < 256 * k:
                ask *= 4
                more = yield from self.index.search_flow(vector, where, params, ask, prefix=prefix)
                exhausted = len(more) <= len(hits)
                hits = more
                passing = yield from self.passing_flow(hits, where, params)
                if exhausted:
                    break  # the index has nothing more under this prefix
            best = sorted(passing, key=lambda i: (-hits[i], i))[:k]
            hits = {i: hits[i] for i in best}
        missing = [i for i in include if i not in hits]
        if missing:
            hits.update((yield from self.index.score_flow(vector, missing)))
        return hits

    def passing_flow(self, ids: Iterable[str], where: str, params: Sequence[Any]) -> Flow[set[str]]:
        ids = list(ids)
        if not ids:
            return set()
        in_ids, id_params = self.dialect.in_list("i.id", ids)
        rows = yield Sql(
            f"SELECT i.id FROM {ITEMS} i WHERE {in_ids} AND {where}", [*id_params, *params]
        )
        return {r[0] for r in rows}

    def list_flow(
        self, search: PreparedSearch, with_ttl: list[str] | None = None
    ) -> Flow[list[SearchItem]]:
        """A page of the filtered set, newest first; ids of its items with a TTL go to ``with_ttl``."""
        rows = yield Sql(
            f"SELECT {ITEM_COLS}, i.ttl_minutes FROM {ITEMS} i WHERE {search.where}"
            # Ties in byte order, so every backend pages the same way.
            f" ORDER BY i.updated_at DESC, {self.dialect.bytewise('i.prefix')},"
            f" {self.dialect.bytewise('i.key')} LIMIT ? OFFSET ?",
            [*search.params, search.limit, search.offset],
        )
        if with_ttl is not None:
            with_ttl.extend(row[5] for row in rows if row[6] is not None)
        out = []
        for row in rows:
            item = item_from_row(self.dialect, row)
            out.append(
                SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at)
            )
        return out

    def postings_flow(
        self,
        search: PreparedSearch,
        terms: Iterable[str],
        *,
        like_items: Sequence[str] = (),
        members: bool = False,
        vector: Sequence[float] | None = None,
    ) -> Flow[Postings]:
        """The filtered set's statistics and the postings of ``terms`` within it, one statement.

        With ``members``, also every item of the set (for an index that scores them all).
        With ``vector``, also every item's similarity to it, where the vector index can
        score the set inside the statement (PostgreSQL: no separate dense round trip).
        With ``like_items``, the terms are instead those of these items (less ``terms``):
        what pseudo-relevance feedback needs, the feedback items' full term frequencies and
        the document frequencies of their terms, in the same single round trip.
        """
        wanted = sorted(set(terms))
        scope = (
            f"WITH c AS MATERIALIZED (SELECT {self.dialect.postings_scope_columns}"
            f" FROM {ITEMS} i WHERE {search.where})"
        )
        marks = ", ".join("?" for _ in wanted)
        branch = None
        if like_items:
            exclude = f" AND x.term NOT IN ({marks})" if wanted else ""
            in_items, item_params = self.dialect.in_list("x.item_id", like_items)
            rows = yield Sql(
                f"{scope}, f AS MATERIALIZED (SELECT DISTINCT x.term FROM {TERMS} x"
                f" WHERE {in_items}{exclude})"
                f" {self.dialect.scope_postings_sql('(SELECT f.term FROM f)')}",
                [*search.params, *item_params, *wanted],
            )
        else:
            parts = [
                # Items without terms have no postings; they are not BM25 documents either.
                "SELECT NULL, NULL, count(CASE WHEN c.doc_len > 0 THEN 1 END),"
                " CAST(avg(CASE WHEN c.doc_len > 0 THEN c.doc_len END) AS DOUBLE PRECISION)"
                " FROM c"
            ]
            if members:
                parts.append("SELECT c.id, NULL, NULL, NULL FROM c")
            if wanted:
                parts.append(self.dialect.scope_postings_sql(f"({marks})"))
            branch = self.index.similarity_sql(vector) if vector is not None else None
            if branch is not None:
                parts.append(branch[0])
            rows = yield Sql(
                f"{scope} {' UNION ALL '.join(parts)}",
                [*search.params, *wanted, *(branch[1] if branch else ())],
            )
        n_docs, avgdl = 0, 0.0
        tf: dict[str, dict[str, int]] = {}
        doc_len: dict[str, int] = {}
        found: set[str] | None = set() if members else None
        similarity: dict[str, float] | None = {} if branch is not None else None
        for item, term, count, length in rows:
            if item is None:
                n_docs, avgdl = int(count or 0), float(length or 0.0)
            elif term is not None:
                tf.setdefault(term, {})[item] = int(count)
                doc_len[item] = int(length)
            elif count is not None:  # a similarity (best of the item's vectors)
                assert similarity is not None
                similarity[item] = max(float(count), similarity.get(item, -2.0))
            else:
                assert found is not None
                found.add(item)
        if similarity is not None and len(similarity) > self.index.similarity_rows:
            similarity = None  # more than the bound: the index searches the set instead
        return Postings(n_docs, avgdl, dict(tf), doc_len, found, similarity)

    def lexical_flow(
        self,
        weights: Mapping[str, float],
        search: PreparedSearch,
        scope: tuple[ScopeData, Members] | None = None,
        vector: Sequence[float] | None = None,
    ) -> Flow[tuple[Mapping[str, float], LexicalSet]]:
        """BM25 with pseudo-relevance feedback: expand the query with its best hits' terms.

        ``weights`` are the search's lexical query (:func:`query_weights`). Returns the BM25
        score of every item of the filtered set that has a term of the expanded query (the
        others score 0) and the set as read (its statistics, and its members when the
        vector index wants them). Read from a cached namespace when ``scope`` is given,
        else from SQL in two round trips at most: the query's postings with the
        statistics, then the feedback items' terms.
        """
        found: LexicalSet
        if scope is not None:
            found = CachedSet(*scope)
        else:
            postings = yield from self.postings_flow(
                search,
                weights,
                members=self.index.in_database and self.index.scans_members,
                vector=vector,
            )
            found = SqlSet(
                postings, lambda items: self.postings_flow(search, weights, like_items=items)
            )
        if not weights or found.n_docs == 0 or found.avgdl <= 0:
            return {}, found
        first = found.score(weights)
        feedback = (
            [(i, s) for i, s in top_scores(first, bm25.PRF_DOCS) if s > 0]
            if found.n_docs >= bm25.PRF_MIN_DOCS
            else []
        )
        if not feedback:
            return first, found
        ids = [i for i, _ in feedback]
        tfs = yield from found.feedback_flow(ids)
        candidates = {term for tf in tfs for term in tf if term not in weights}
        expanded = bm25.expand_query(
            weights,
            tfs,
            [s for _, s in feedback],
            doc_frequencies=found.document_frequencies(candidates),
            n_docs=found.n_docs,
        )
        return found.score(expanded), found

    def relevance_flow(
        self,
        search: PreparedSearch,
        vector: list[float],
        scope: tuple[ScopeData, Members] | None,
        pool: int,
    ) -> Flow[dict[str, float]]:
        """The fused relevance of the lexical and dense candidates (``pool`` of each), read
        from ``scope`` when given (a cached namespace and the search's members)."""
        assert search.query is not None
        weights = query_weights(search.query, search)
        scores, found = yield from self.lexical_flow(
            weights, search, scope, None if scope is not None else vector
        )
        # The first read holds the postings of every query term: their document frequencies.
        mass = idf_mass(weights, found.document_frequencies(weights), found.n_docs)
        lex = dict(top_scores(scores, pool))
        # Complete both score maps over the union, so fusion compares like with like: the
        # index scores the lexical candidates in the same call, and every item's BM25 is
        # already known.
        if scope is not None:
            dense = scope[0].dense(vector, pool, list(lex), scope[1])
        elif found.similarity is not None:
            sims = found.similarity
            dense = dict(top_scores(sims, pool))
            dense.update((i, sims[i]) for i in lex if i in sims)
        else:
            dense = yield from self.nearest_flow(
                vector,
                search.where,
                search.params,
                pool,
                prefix=join_namespace(search.prefix),
                value_filtered=search.value_filtered,
                candidates=found.n_docs or None,
                include=list(lex),
                members=found.members,
            )
        lex.update(scores_of(scores, dense))
        if not dense and not lex:
            return {}
        return absolute_relevance(
            dense, lex, idf_mass=mass, weight=self.dense_weight, curve=self.cosine_curve
        )

    def ranked_flow(
        self,
        search: PreparedSearch,
        vector: list[float],
        now: datetime,
        with_ttl: list[str] | None = None,
    ) -> Flow[tuple[list[SearchItem], list[str]]]:
        """The ranked page and its item ids; ids of its items with a TTL go to ``with_ttl``."""
        assert search.query is not None
        want = search.offset + search.limit
        if want == 0:
            return [], []
        found = yield from self._candidates_flow(search, vector, want)
        if found is None:
            return [], []
        relevance, rows, anchors = found
        by_id = {row[5]: row for row in rows}
        # A memory's time: its event time, else its last update.
        when: dict[str, datetime] = {
            i: self.dialect.ts_value(row[6]) or self.dialect.ts_value(row[4])  # type: ignore[misc]
            for i, row in by_id.items()
        }
        if anchors:
            relevance = self._with_neighbours(relevance, anchors, by_id, when)
        ranked = self._ranked(search, relevance, by_id, when, search.reference or now)
        values: dict[str, Any] = {}
        ranked = self._preferred(search, ranked, rows, by_id, values, want)
        page = ranked[search.offset : search.offset + search.limit]
        if with_ttl is not None:
            with_ttl.extend(r.id for r in page if by_id[r.id][9] is not None)
        out: list[SearchItem] = []
        for r in page:
            item = item_from_row(self.dialect, by_id[r.id], _value_of(by_id, values, r.id))
            out.append(
                RankedItem(
                    item.namespace,
                    item.key,
                    item.value,
                    item.created_at,
                    item.updated_at,
                    r.score,
                    r.components._asdict(),
                )
            )
        return out, [r.id for r in page]

    def _candidates_flow(
        self, search: PreparedSearch, vector: list[float], want: int
    ) -> Flow[tuple[dict[str, float], list[Sequence[Any]], list[str]] | None]:
        """The candidates' relevance, their rows (with their anchors' neighbours') and the
        anchors (the best ``want`` that may have neighbours); None if nothing is relevant.

        The members come from the namespace cache's guess where it has one, checked by
        the rows' statement itself; a wrong guess reads the members and starts again.
        """
        pool = want * self.settings.candidate_multiplier
        prefix = join_namespace(search.prefix)
        scope: tuple[ScopeData, Members] | None = None
        guess: Guess | None = None
        # The members' rows, when the namespace was read for this search and has few
        # members (not in process, where the candidates' own statement costs less than
        # reading every member's row; see scope_cache.MEMBER_ROWS_MAX).
        loaded: dict[str, Sequence[Any]] = {}
        if self.scope_cache is not None:
            guess = self.scope_cache.guess(
                prefix,
                search.members_key,
                search.instants,
                # Every item is a member of most searches without a value filter.
                "" if search.value_filtered else search.where,
                search.params,
            )
            if guess is not None:
                scope = guess.data, guess.members
            else:
                scope = yield from self._members_flow(self.scope_cache, search, prefix, loaded)
        neighbour_weight = self.settings.neighbour_weight
        while True:
            relevance = yield from self.relevance_flow(search, vector, scope, pool)
            if relevance:
                anchors = (
                    [i for i, _ in heapq.nsmallest(want, relevance.items(), key=best_first)]
                    if neighbour_weight > 0
                    else []
                )
                if scope is not None:
                    # Memories of other kinds have no neighbours: none to look for.
                    anchors = [i for i in anchors if i in scope[0].episodic]
                if loaded and not anchors:
                    # Read with the namespace, in the members' own snapshot.
                    return relevance, [loaded[i] for i in sorted(relevance) if i in loaded], []
                text, params = rows_with_neighbours_sql(
                    self.dialect,
                    f"{', '.join(_CANDIDATE_COLUMNS)}, {guess.check if guess is not None else '1'}",
                    guess.params if guess is not None else [],
                    sorted(relevance),
                    anchors,
                    search.where,
                    search.params,
                    neighbour_where=search.item_where,
                    neighbour_params=search.item_params,
                    row_where=search.row_where,
                    row_params=search.row_params,
                )
                # Binary results: PostgreSQL's candidates' times and numbers arrive as
                # they are stored, not spelled out for the client to parse again.
                rows = yield Sql(text, params, binary=True)
                # Every row carries the guess's check; a right guess has candidates' rows.
                if guess is None or (rows and rows[0][_CHECK]):
                    return relevance, rows, anchors
            elif guess is None:
                return None
            # The members taken from the cache were not this search's: ask the database.
            assert self.scope_cache is not None
            guess = None
            scope = yield from self._members_flow(self.scope_cache, search, prefix, loaded)

    def _members_flow(
        self,
        cache: ScopeCache,
        search: PreparedSearch,
        prefix: str,
        loaded: dict[str, Sequence[Any]],
    ) -> Flow[tuple[ScopeData, Members] | None]:
        """The database's members of ``search``, and their rows (into ``loaded``) when the
        namespace is (re)loaded."""
        in_process = self.dialect.in_process
        return (
            yield from cache.members_flow(
                prefix,
                search.where,
                search.params,
                key=search.members_key,
                instants=search.instants,
                columns=() if in_process else _CANDIDATE_COLUMNS,
                member_rows=None if in_process else loaded,
            )
        )

    def _with_neighbours(
        self,
        relevance: dict[str, float],
        anchors: list[str],
        by_id: Mapping[str, Sequence[Any]],
        when: Mapping[str, datetime],
    ) -> dict[str, float]:
        """``relevance`` smoothed over the conversation neighbours of the ``anchors``."""
        anchored = set(anchors)
        pairs = {row[5]: tuple(row[_CHECK + 1 :]) for row in by_id.values() if row[5] in anchored}
        neighbours = conversation_neighbours(pairs, when, {i: row[10] for i, row in by_id.items()})
        # A neighbour that was no candidate matched nothing of the query itself.
        for item_id in neighbours:
            relevance.setdefault(item_id, 0.0)
        return smooth_neighbours(relevance, neighbours, weight=self.settings.neighbour_weight)

    def _ranked(
        self,
        search: PreparedSearch,
        relevance: Mapping[str, float],
        by_id: Mapping[str, Sequence[Any]],
        when: Mapping[str, datetime],
        now: datetime,
    ) -> list[Ranked]:
        """The candidates ranked at ``now``: above the search's floor, boosted where their
        time fits the query's."""
        candidates = [
            Candidate(
                id=item_id,
                relevance=relevance.get(item_id, 0.0),
                time=when[item_id],
                access_count=int(row[7]) + self.access.pending(item_id),
                confidence=float(row[8]),
            )
            for item_id, row in by_id.items()
        ]
        ranked = rank(
            candidates,
            self.settings.weights,
            self.settings.recency_half_life_days,
            now,
            self.settings.ranking,
        )
        floor = search.options.min_score
        if floor is not None:
            ranked = [r for r in ranked if r.components.semantic >= floor]
        if search.time_query is not None:
            boosts = time_boosts({c.id: c.time for c in candidates}, search.time_query)
            if boosts:
                ranked = sorted(
                    (r._replace(score=r.score * boosts[r.id]) for r in ranked),
                    key=lambda r: (-r.score, r.id),
                )
        return ranked

    def _preferred(
        self,
        search: PreparedSearch,
        ranked: list[Ranked],
        rows: list[Sequence[Any]],
        by_id: Mapping[str, Sequence[Any]],
        values: dict[str, Any],
        want: int,
    ) -> list[Ranked]:
        """``ranked`` with memories that tell when preferred for a query asking when, and
        those of the query's authors for one naming them (``values``: the values read)."""
        assert search.query is not None

        def tells_when(item_id: str) -> bool:
            def read() -> bool:
                value = _value_of(by_id, values, item_id)
                return isinstance(value, dict) and says_when(memory_text(value))

            return self.told_when.get(item_id, hash(by_id[item_id][2]), read)

        def read_author(item_id: str) -> frozenset[str]:
            if not by_id[item_id][0].endswith(_EPISODIC_SUFFIX):
                return frozenset()
            value = _value_of(by_id, values, item_id)
            return author_terms(value) if isinstance(value, dict) else frozenset()

        def authors_of(item_id: str) -> frozenset[str]:
            return self.authors.get(item_id, hash(by_id[item_id][2]), lambda: read_author(item_id))

        if search.time_query is not None and search.time_query.asks_when:
            ranked = boost_reachable(
                ranked,
                want,
                WHEN_BOOST,
                lambda head: when_boosts({r.id: tells_when(r.id) for r in head}),
            )
        # Only episodic memories have authors: among others there is nobody to prefer.
        if search.options.authors != "off" and any(
            row[0].endswith(_EPISODIC_SUFFIX) for row in rows
        ):
            ranked = by_author(ranked, want, frozenset(bm25.analyze(search.query)), authors_of)
        return ranked


def _value_of(by_id: Mapping[str, Sequence[Any]], values: dict[str, Any], item_id: str) -> Any:
    """The value of ``item_id``: JSON text on every backend, read once (into ``values``),
    and only where needed."""
    if item_id not in values:
        values[item_id] = json.loads(by_id[item_id][2])
    return values[item_id]
