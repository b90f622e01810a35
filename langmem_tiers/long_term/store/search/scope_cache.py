"""What a search reads of a namespace, kept in process and checked against the database.

A search reads, for the items it may return, their BM25 terms and their vectors. None of
that depends on the search's time: which items may be returned does (validity intervals,
``as_of``, time windows, expiry, statuses, value filters), and that is the database's to
answer, with the search's full condition. So the cache keeps, per searched namespace
prefix, the terms, lengths and vectors of *every* item under the prefix, whatever its
status or validity, as arrays (items are rows; a term's postings are rows and
frequencies), and each search restricts them to the members the database selected for it.

Freshness: the database counts the changes of every namespace (``lmt_scope_changes``, kept
by triggers on the items table, see ``search/migrations.py``). The members and
the sum of the counters under the prefix are read in one statement, inside the search's
transaction; counters only grow, so any insert or delete of an item under the prefix, or a
change of its id, namespace, value or length (by this process, another process, or
SQL of the engine) moves the sum. Terms and vectors are only ever written together with
such a change of their item (the store's writer, and compression, which zeroes the
length). Access counts and the other usage columns do not move the counter: they are read
with the result rows, never cached.

Changes: every count is logged with its item (``lmt_item_changes``, see
``search/migrations.py``), numbered by the count it brought its namespace to. An
entry keeps each namespace's count; when the sum moved, one statement reads the log above
those counts and the items it names, and the entry takes them in
(:meth:`ScopeData.changed`). Where the log was cut below an entry's counts (it keeps the
last :data:`~langmem_tiers.sql.dialect.CHANGES_KEPT` changes of a namespace), the rows
found are fewer than the counters moved, and the namespace is read again.

Members: the database also counts the updates that may change membership (``moves``:
statuses, scopes, kinds and the times a search compares), so an entry remembers the
members of recent searches with their counters and the next time of any of its items
after the search's instants. A later search with the same condition, at instants no
earlier and before that time, while neither counter moved, selects exactly those items.
In process (SQLite) it reads the two counters and nothing else first; over a connection
(PostgreSQL) it takes the members at once and has the statement that reads its result
rows check the counters (:meth:`ScopeCache.guess`): one statement in all while they hold.

Own writes: a write of this process reads, inside its transaction, the counts of the
namespaces it writes just before and just after its changes (``writes.OwnWrite``), and
after its commit the cache takes in what it wrote instead of reading it back: an entry
that held a namespace at the first count holds it at the second; a namespace whose count
was 0 starts a seed, every item this process wrote there since, which becomes the entry
of the namespace's first search without reading it (:meth:`ScopeCache.written`).

Example::

    >>> from langmem_tiers.sql.dialect import SqliteDialect
    >>> cache = ScopeCache(SqliteDialect(), max_items=1_000)
    >>> cache.max_items
    1000
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from langmem_tiers.long_term.store.search.scope_cache_sql import (
    changes_request,
    changes_sql,
    counters_sql,
    horizon_sql,
    items_sql,
    under_sql,
    vector_matrix,
    vectors_sql,
)
from langmem_tiers.long_term.store.search.scope_data import (
    MAX_CHANGED_NAMESPACES,
    TOO_MANY,
    Members,
    ReadRows,
    RememberedMembers,
    ScopeData,
    read_rows,
)
from langmem_tiers.long_term.store.search.scope_seeds import Seed, take_own_write
from langmem_tiers.sql.dialect import (
    ITEMS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, Latch, Sql, WaitFor

if TYPE_CHECKING:
    from langmem_tiers.long_term.store.writes import OwnWrite


__all__ = [
    "COUNTED_GUESS_MAX",
    "LOAD_WAIT_SECONDS",
    "MAX_SETTLED",
    "MAX_TAKEN_ITEMS",
    "MEMBER_ROWS_MAX",
    "Guess",
    "ScopeCache",
]

#: A load brings the ``columns`` of each member (what the search reads of its candidates
#: next) only while the members are at most this many. Each member row costs the reading
#: search a little more, while a separate statement for the candidates' rows costs a round
#: trip: in a small namespace the rows are cheaper, in a large one the statement.
MEMBER_ROWS_MAX = 300

#: The most items of an entry whose searches, when it remembers no members for them,
#: guess that every item is a member, proved by counting the members in the rows
#: statement (see :meth:`ScopeCache.guess`): a count over a larger namespace costs more
#: than reading its members once, after which they are remembered.
COUNTED_GUESS_MAX = 2_000

#: The most items of an entry that takes in this process's writes as they commit: taking
#: one in copies the entry, at a cost to the writer that grows with the entry, so above
#: this the next search reads the changes instead, once for every write
#: since, and writes of its namespaces read no counts.
MAX_TAKEN_ITEMS = 1_000

#: Namespaces remembered as not new to this process's writes (their count was above 0 at
#: its first write there, and it holds no seed of them): their writes read no counts.
MAX_SETTLED = 100_000

#: How long a search waits for another's load of its namespace before reading it itself
#: (a load of 20,000 items takes well under a second; this only bounds a stuck one).
LOAD_WAIT_SECONDS = 10.0


class Guess(NamedTuple):
    """Members a search takes from the cache without asking the database first, and the
    proof it must ask for in the statement that reads its rows: ``check`` (bound to
    ``params``) is 1 when they are exactly the search's members at the entry's version."""

    data: ScopeData
    members: Members
    check: str
    params: list[Any]


class _Search(NamedTuple):
    """The search :meth:`ScopeCache.members_flow` reads members for."""

    prefix: str
    where: str
    params: Sequence[Any]
    key: tuple[Any, ...]
    instants: tuple[datetime, datetime] | None


class _State(NamedTuple):
    """What a members statement reads besides the members: the counters' sum, the
    moves and the next time of an item (``text`` bound to ``params``), and the first two
    alone (``light_text``), for a read whose next time is that of the changed items."""

    text: str
    params: list[Any]
    light_text: str
    light_params: list[Any]


#: What a step of :meth:`ScopeCache.members_flow` answers when the entry it holds is
#: behind the database and the namespace must be read whole.
_STALE: Final = object()


class ScopeCache:
    """:class:`ScopeData` per namespace prefix, bounded by ``max_items`` over all prefixes
    (``Settings.scope_cache_items``); the least recently searched prefixes leave first
    (thread-safe)."""

    def __init__(self, dialect: Dialect, max_items: int) -> None:
        self.dialect = dialect
        self.max_items = max_items
        self._entries: OrderedDict[str, ScopeData] = OrderedDict()
        # Items over every entry, kept as entries come and go: summed at each keep, it cost
        # a namespace's first search a pass over every entry held.
        self._held = 0
        self._loads: dict[str, Latch] = {}  # prefixes being read, for searches to wait on
        # Prefixes this process wrote under since their entries were read: a guess there
        # would cost a rows statement that the counters then refuse.
        self._written: set[str] = set()
        # Namespaces whose every item this process wrote since their count was 0, by
        # namespace, the least recently written first; and namespaces known not to be.
        self._seeds: OrderedDict[str, Seed] = OrderedDict()
        self._seed_items = 0
        self._settled: set[str] = set()
        self._lock = threading.Lock()

    def counted(self, namespaces: Iterable[str]) -> list[str]:
        """The namespaces, among those a write is about to write to, whose counts it should
        read for :meth:`written`: those this cache holds in an entry or a seed, and those
        it has not met (a first write of a new namespace starts its seed)."""
        with self._lock:
            return sorted(
                n
                for n in namespaces
                if n not in self._settled
                or n in self._seeds
                or any(len(self._entries[p].ids) <= MAX_TAKEN_ITEMS for p in self._covering(n))
            )

    def written(self, namespaces: Iterable[str], own: OwnWrite | None = None) -> None:
        """Namespaces (joined) this process has just written to, in a committed write, with
        what it did to those it counted (``own``, see :meth:`counted`).

        An entry of at most :data:`MAX_TAKEN_ITEMS` that held a counted namespace at the
        write's first count takes in the write's items there (:meth:`ScopeData.changed`),
        so the next search reads nothing of them. Otherwise the cached prefixes above a
        namespace only learn that it was written: their searches ask for the changes first
        instead of guessing their members. That is only a hint: a guess is proved by the
        counters, whoever wrote, so a write of another process costs a wrong guess (one
        more statement), never a wrong answer. And an entry is right for each namespace at its own count, so
        taking in some namespaces of a write and not others leaves it right.
        """
        taken: dict[str, tuple[ScopeData, list[str]]] = {}
        hinted: set[str] = set()
        with self._lock:
            for name in set(namespaces):
                covering = self._covering(name)
                for prefix in covering:
                    data = self._entries[prefix]
                    if (
                        own is not None
                        and len(data.ids) <= MAX_TAKEN_ITEMS
                        and name in own.after
                        and data.counters is not None
                        and data.counters.get(name, 0) == own.before[name]
                    ):
                        taken.setdefault(prefix, (data, []))[1].append(name)
                    else:
                        hinted.add(prefix)
                if own is not None and name in own.after:
                    self._seed(name, own, held=name in covering)
            self._written.update(hinted)
        for prefix, (data, names) in taken.items():
            updated = take_own_write(data, own, names)  # type: ignore[arg-type]
            with self._lock:
                if self._entries.get(prefix) is not data:
                    continue  # replaced meanwhile by a newer read
                if len(updated.ids) > self.max_items:
                    self._held -= len(self._entries.pop(prefix).ids)
                    continue
                self._set_entry(prefix, updated)
                if prefix not in hinted:
                    self._written.discard(prefix)

    def _covering(self, namespace: str) -> list[str]:
        """The prefixes of entries that hold ``namespace`` (the caller holds the lock)."""
        labels = namespace.split(".")
        prefixes = ["", *(".".join(labels[:n]) for n in range(1, len(labels) + 1))]
        return [p for p in prefixes if p in self._entries]

    def _seed(self, name: str, own: OwnWrite, *, held: bool) -> None:
        """Take ``own``'s items in ``name`` into its seed: the seed it continues, or a new
        one where the namespace's count was 0 (the caller holds the lock). A namespace
        whose entry is kept (``held``) needs none."""
        seed = self._seeds.pop(name, None)
        if seed is not None:
            self._seed_items -= len(seed.items)
        if held:
            if own.before[name] > 0:
                self._settle(name)  # its entries count it while one may take writes in
            return
        if seed is None and own.before[name] == 0 and name not in self._settled:
            seed = Seed()
        elif seed is None or seed.count != own.before[name]:
            # Written by another since: the seed no longer holds every item.
            self._settle(name)
            return
        seed.take(own.items.get(name, {}), own.after[name])
        self._seeds[name] = seed
        self._seed_items += len(seed.items)
        while self._seed_items > self.max_items and self._seeds:
            gone, dropped = self._seeds.popitem(last=False)
            self._seed_items -= len(dropped.items)
            self._settle(gone)

    def _settle(self, name: str) -> None:
        if len(self._settled) >= MAX_SETTLED:
            self._settled.clear()
        self._settled.add(name)

    def _seeded(self, prefix: str) -> ScopeData | None:
        """The entry of ``prefix`` from its seed, kept (None: no seed)."""
        with self._lock:
            if prefix in self._entries:
                return None
            seed = self._seeds.pop(prefix, None)
            if seed is None:
                return None
            self._seed_items -= len(seed.items)
        data = seed.entry(prefix)
        self._keep(prefix, data)
        return data

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0
            self._seeds.clear()
            self._seed_items = 0

    def guess(
        self,
        prefix: str,
        key: tuple[Any, ...],
        instants: tuple[datetime, datetime] | None,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> Guess | None:
        """The members of a search with ``key`` at ``instants`` (condition ``where`` on
        ``i``, bound to ``params``) as the cache believes them, for the search to confirm
        in its own rows statement; None where statements cost no round trip
        (:meth:`members_flow` then asks the two counters first) or where it has no belief.

        Members remembered for ``key`` are checked by the counters, read in the
        statement's snapshot: while both are what they were when the members were read,
        nothing under the prefix was written or moved since, so the members are the
        search's (see :class:`RememberedMembers`). Without them, and given ``where``, an
        entry of at most :data:`COUNTED_GUESS_MAX` items (one made from a seed, at the
        first search of a namespace this process wrote, included) guesses that every item
        is a member: while the change count is the entry's, the prefix holds exactly its
        items, so as many items matching ``where`` as the entry holds are all of them.
        A wrong guess costs the search one more statement, never an answer.
        """
        if self.dialect.in_process:
            return None
        with self._lock:
            if prefix in self._written:
                return None
            data = self._entries.get(prefix)
            remembered = (
                data.remembered(key, instants)
                if data is not None and instants is not None
                else None
            )
        if data is None and where:
            data = self._seeded(prefix)
        if data is None:
            return None
        under, under_params = under_sql(self.dialect, "prefix", prefix)
        changes = f"(SELECT {changes_sql(under)}) = ?"
        if remembered is None and (not where or len(data.ids) > COUNTED_GUESS_MAX):
            return None
        self._touch(prefix, data)
        if remembered is not None:
            moves, moves_params = self.dialect.moves_sql(under, under_params)
            return Guess(
                data,
                remembered.members,
                f"(SELECT CASE WHEN {changes} AND {moves} = ? THEN 1 ELSE 0 END)",
                [*under_params, data.version, *moves_params, remembered.moves],
            )
        return Guess(
            data,
            data.every_member(),
            f"(SELECT CASE WHEN {changes} AND (SELECT count(*) FROM {ITEMS} i WHERE {where})"
            " = ? THEN 1 ELSE 0 END)",
            [*under_params, data.version, *params, len(data.ids)],
        )

    def members_flow(
        self,
        prefix: str,
        where: str,
        params: Sequence[Any],
        *,
        key: tuple[Any, ...] = (),
        instants: tuple[datetime, datetime] | None = None,
        columns: Sequence[str] = (),
        member_rows: dict[str, Sequence[Any]] | None = None,
        may_wait: bool = True,
    ) -> Flow[tuple[ScopeData, Members] | None]:
        """The prefix's data and the items matching ``where`` (alias ``i``; within ``prefix``).

        When the namespace is read (missing or stale) and its members are at most
        :data:`MEMBER_ROWS_MAX`, the ``columns`` (expressions on ``i``) of every member
        come with it, in ``member_rows`` by item: what a search would read of its
        candidates next, in the same snapshot as the members.

        ``key`` is ``where`` and ``params`` less the ``instants`` it compares times with
        (the search's time, the clock). When the entry holds members of a search with that
        key, the database has counted no change of the prefix since (nor of the columns
        that decide membership: statuses, scopes, kinds, times), and no item's time lies
        between that search's instants and these, those members are this search's too:
        one small statement. Otherwise one statement for the members and the counters,
        which also reads the items the change log names since the entry's counts (a stale
        entry is brought up to date from them, :meth:`_changes_flow`); when the entry is
        missing, or the log no longer holds its changes, one statement that reads the
        items, their vectors and which of them are members. None when the search's items
        are more than the cache may keep.

        The members' ids are sent only when they are not simply every item of the cached
        entry: at the entry's version the prefix holds exactly its items, and the members
        are some of them, so as many members as items are all of them (the usual case: a
        search of a namespace's current memories), and a large namespace costs no list.
        """
        remembers = instants is not None and self.dialect.counts_membership_changes
        under, under_params = under_sql(self.dialect, "prefix", prefix)
        changes = f"(SELECT {changes_sql(under)})"
        moves, moves_params = "0", list[Any]()
        if remembers:
            moves, moves_params = self.dialect.moves_sql(under, under_params)
        with self._lock:
            known = self._entries.get(prefix)
        if known is None:
            known = self._seeded(prefix)
        # Out of process, :meth:`guess` has asked the counters already.
        if known is not None and instants is not None and remembers and self.dialect.in_process:
            with self._lock:  # searches of several threads share the entry
                remembered = known.remembered(key, instants)
            if remembered is not None:
                rows = yield Sql(f"SELECT {changes}, {moves}", [*under_params, *moves_params])
                if int(rows[0][0]) == known.version and int(rows[0][1]) == remembered.moves:
                    self._touch(prefix, known)
                    return known, remembered.members
        horizon, horizon_params = "NULL", list[Any]()
        if instants is not None and remembers:
            horizon, horizon_params = horizon_sql(self.dialect, prefix, min(instants))
        state = _State(
            f"{changes}, {moves}, {horizon}",
            [*under_params, *moves_params, *horizon_params],
            f"{changes}, {moves}",
            [*under_params, *moves_params],
        )
        search = _Search(prefix, where, params, key, instants)
        if known is not None:
            found = yield from (
                self._counted_flow(search, known, state)
                if not self.dialect.logs_item_changes
                or known.counters is None
                or len(known.counters) > MAX_CHANGED_NAMESPACES
                else self._updated_flow(search, known, state, remembers=remembers)
            )
            if found is not _STALE:
                return found  # type: ignore[return-value]
        return (yield from self._loaded_flow(search, state, columns, member_rows, may_wait))

    def _counted_flow(
        self, search: _Search, known: ScopeData, state: _State
    ) -> Flow[tuple[ScopeData, Members] | object | None]:
        """``known`` and the search's members when the database counts no change since
        (the members' ids read only when the cache may use them); :data:`_STALE` when
        the entry is behind; None when the members are more than the cache may keep."""
        size = len(known.ids)
        # The ids only when the cache may use them: a namespace too large to keep would
        # send every id at every search for nothing.
        rows = yield Sql(
            f"SELECT m.ids, m.n, {state.text} FROM"
            f" (SELECT CASE WHEN count(*) <= ? AND count(*) <> ?"
            f" THEN {self.dialect.packed_sql('i.id')} END AS ids,"
            f" count(*) AS n FROM {ITEMS} i WHERE {search.where}) m",
            [*state.params, self.max_items, size, *search.params],
        )
        packed, count, version, moved, next_time = rows[0]
        if count > self.max_items:
            return None
        if known.version != int(version):
            return _STALE
        members = known.listed(packed, count, size)
        self._confirmed(search.prefix, known)
        self._note(known, search.key, search.instants, members, moved, next_time)
        return known, members

    def _updated_flow(
        self, search: _Search, known: ScopeData, state: _State, *, remembers: bool
    ) -> Flow[tuple[ScopeData, Members] | object | None]:
        """``known`` brought up to date from the change log, and the search's members
        (:meth:`_changes_flow`); :data:`_STALE` when the log cannot bring it up to date;
        None when the members are more than the cache may keep."""
        prefix, instants = search.prefix, search.instants
        light: tuple[RememberedMembers, str, list[Any]] | None = None
        if remembers and instants is not None:
            with self._lock:
                remembered = known.remembered(search.key, instants)
            if remembered is not None:
                # The remembered members stay but for the changed items: the next
                # time among those alone.
                next_changed, next_params = horizon_sql(
                    self.dialect, prefix, min(instants), " AND i.id IN (SELECT l.item_id FROM l)"
                )
                light = (
                    remembered,
                    f"{state.light_text}, {next_changed}",
                    [*state.light_params, *next_params],
                )
        updated = yield from self._changes_flow(
            prefix, known, search.where, search.params, state.text, state.params, light
        )
        if updated == TOO_MANY:
            return None
        if updated is None:
            return _STALE
        data, members, moved, next_time = updated
        if data is known:
            self._confirmed(prefix, known)
        else:
            self._keep(prefix, data, replacing=known)
        self._note(data, search.key, instants, members, moved, next_time)
        return data, members

    def _loaded_flow(
        self,
        search: _Search,
        state: _State,
        columns: Sequence[str],
        member_rows: dict[str, Sequence[Any]] | None,
        may_wait: bool,
    ) -> Flow[tuple[ScopeData, Members] | None]:
        """The namespace read whole (:meth:`_load_flow`), one load per prefix at a time: a
        search that would read a namespace another search of this cache is reading waits
        for that load (``may_wait``; at most :data:`LOAD_WAIT_SECONDS`) and then checks
        the entry it left like any other, so eight clients meeting a cold namespace cost
        one load, not eight competing ones.

        Where each statement reads its own snapshot (PostgreSQL's READ COMMITTED), a load
        may see changes committed after the members were read: it reads the members again,
        with the items, the vectors and the counter, in its own snapshot. The members of a
        search are kept with the entry (:meth:`guess`), and remembered where membership
        changes are counted, only when read at the entry's own version."""
        prefix = search.prefix
        with self._lock:
            latch = self._loads.get(prefix)
            mine = latch is None
            if latch is None:
                latch = self._loads[prefix] = Latch()
        if not mine and may_wait:
            opened = yield WaitFor(latch, LOAD_WAIT_SECONDS)
            if not opened:
                # A load that never ended (its flow left unfinished): searches no longer
                # wait for it, and the next to load registers its own.
                self._forget_load(prefix, latch)
            return (
                yield from self.members_flow(
                    prefix,
                    search.where,
                    search.params,
                    key=search.key,
                    instants=search.instants,
                    columns=columns,
                    member_rows=member_rows,
                    may_wait=False,
                )
            )
        try:
            loaded = yield from self._load_flow(
                prefix, search.where, search.params, state.text, state.params, columns, member_rows
            )
            if loaded is None:
                return None
            data, members, moved, next_time = loaded
            self._keep(prefix, data)
            self._note(data, search.key, search.instants, members, moved, next_time)
            return data, members
        finally:
            if mine:
                self._forget_load(prefix, latch)
                latch.open()

    def _keep(self, prefix: str, data: ScopeData, *, replacing: ScopeData | None = None) -> None:
        """Keep ``data`` as the entry of ``prefix`` (unless larger than the cache: used
        once), the least recently searched prefixes leaving to make room. With
        ``replacing``, only while that is still the entry: a newer read stays."""
        if len(data.ids) > self.max_items:
            return
        with self._lock:
            if replacing is not None and self._entries.get(prefix) is not replacing:
                return
            self._written.discard(prefix)
            self._set_entry(prefix, data)
            self._entries.move_to_end(prefix)
            while self._held > self.max_items and len(self._entries) > 1:
                _, gone = self._entries.popitem(last=False)
                self._held -= len(gone.ids)

    def _set_entry(self, prefix: str, data: ScopeData) -> None:
        """``data`` as the entry of ``prefix``, counted (the caller holds the lock)."""
        replaced = self._entries.get(prefix)
        self._held += len(data.ids) - (0 if replaced is None else len(replaced.ids))
        self._entries[prefix] = data

    def _forget_load(self, prefix: str, latch: Latch) -> None:
        """``latch``'s load of ``prefix`` is no longer one to wait for."""
        with self._lock:
            if self._loads.get(prefix) is latch:
                del self._loads[prefix]

    def _note(
        self,
        data: ScopeData,
        key: tuple[Any, ...],
        instants: tuple[datetime, datetime] | None,
        members: Members,
        moves: Any,
        next_time: Any,
    ) -> None:
        """Keep ``members``, read at ``data``'s version, as those of searches with ``key``."""
        if instants is None:
            return
        horizon = self.dialect.ts_value(next_time) if next_time is not None else None
        entry = RememberedMembers(members, int(moves), instants, horizon)
        with self._lock:
            data.remember(key, entry)

    def _confirmed(self, prefix: str, data: ScopeData) -> None:
        """``data`` was found current by a read of the counters: used, and no longer
        written since."""
        self._touch(prefix, data)
        with self._lock:
            self._written.discard(prefix)

    def _touch(self, prefix: str, data: ScopeData) -> None:
        """``data`` was used: the last to leave."""
        with self._lock:
            if self._entries.get(prefix) is data:
                self._entries.move_to_end(prefix)

    def _load_flow(
        self,
        prefix: str,
        where: str,
        params: Sequence[Any],
        state: str,
        state_params: Sequence[Any],
        columns: Sequence[str],
        member_rows: dict[str, Sequence[Any]] | None,
    ) -> Flow[tuple[ScopeData, Members, Any, Any] | None]:
        """The entry of ``prefix`` as the database holds it, the items matching ``where``
        among it, and the ``state`` read with them (the counters, the next time of an item:
        three values); None when those items are more than the cache may keep. The
        ``columns`` of each member go to ``member_rows`` when the members are at most
        :data:`MEMBER_ROWS_MAX` (the columns are NULL on every row otherwise).

        One statement, so one snapshot: a row per item with its terms packed
        (bm25.pack_terms; a namespace of a thousand items has tens of thousands of term
        rows, each a Python tuple if read one by one), whether it is a member, whether it
        may have neighbours, and its ``columns``; a row per vector (its bytes; the binary
        result format carries them as they are); a row per namespace with its count; a
        last row with the state and the members' number. Nothing but the last rows when the
        members are too many: the items are then not read at all.
        """
        under, under_params = under_sql(self.dialect, "i.prefix", prefix)
        fits = "(SELECT m.n FROM m) <= ?"
        few = f"(SELECT m.n FROM m) <= {MEMBER_ROWS_MAX}"
        wanted = [f"CASE WHEN {few} THEN {c} END" for c in columns]
        rows = yield Sql(
            f"WITH m AS MATERIALIZED (SELECT count(*) AS n FROM {ITEMS} i WHERE {where})"
            f" {items_sql(self.dialect, where, wanted, f'{under} AND {fits}')} UNION ALL"
            f" {vectors_sql(self.dialect, prefix, fits, len(columns))} UNION ALL"
            f" {counters_sql(self.dialect, prefix, '0', len(columns))}"
            f" UNION ALL SELECT 's', NULL, m.n, NULL, 0, 0, {state}, NULL"
            f"{', NULL' * len(columns)} FROM m",
            [
                *params,
                *params,
                *under_params,
                self.max_items,
                *under_sql(self.dialect, "v.prefix", prefix)[1],
                self.max_items,
                *under_sql(self.dialect, "s.prefix", prefix)[1],
                *state_params,
            ],
            binary=True,
        )
        read = read_rows(rows, member_rows)
        count, _, _, version, moves, next_time = read.state
        if member_rows is not None and count > MEMBER_ROWS_MAX:
            member_rows.clear()  # their columns were not read
        if count > self.max_items:
            return None
        data = ScopeData(
            int(version),
            {i: length for i, (length, _, _) in read.items.items()},
            {i: packed for i, (_, packed, _) in read.items.items() if packed},
            read.vector_ids,
            vector_matrix(self.dialect, read.vectors),
            {i for i, (_, _, episodic) in read.items.items() if episodic},
            read.counters,
        )
        return data, data.members_of(read.members), moves, next_time

    def _changes_flow(
        self,
        prefix: str,
        known: ScopeData,
        where: str,
        params: Sequence[Any],
        state: str,
        state_params: Sequence[Any],
        light: tuple[RememberedMembers, str, list[Any]] | None = None,
    ) -> Flow[tuple[ScopeData, Members, Any, Any] | Literal["too many"] | None]:
        """``known`` brought to the database's version by reading the items changed since
        (the change log names them), the items matching ``where`` among it and the
        ``state``, in one statement (``known`` itself when nothing changed); None when the
        log no longer holds every change since (or holds more than :data:`CHANGES_KEPT`):
        the namespace is then read again; :data:`TOO_MANY` when the members are more than
        the cache may keep.

        With ``light`` (members remembered for the search, and a state whose next time is
        that of the changed items only), the members are not read: while no update moved
        an item (the moves counter is the remembered one), they are the remembered ones
        but for the changed items, whose membership the statement reads. Otherwise the
        statement is read again without it.

        A write of one item to a namespace of 20,000 makes the next search read that item,
        not 20,000 items and their vectors, nor build their inverted index again.
        """
        rows = yield changes_request(
            self.dialect, self.max_items, prefix, known, where, params, state, state_params, light
        )
        read = read_rows(rows, None)
        moves = read.state[4]
        if light is not None and int(moves) != light[0].moves:
            return (
                yield from self._changes_flow(prefix, known, where, params, state, state_params)
            )
        return self._taken_changes(known, read, light)

    def _taken_changes(
        self,
        known: ScopeData,
        read: ReadRows,
        light: tuple[RememberedMembers, str, list[Any]] | None,
    ) -> tuple[ScopeData, Members, Any, Any] | Literal["too many"] | None:
        """What :meth:`_changes_flow` answers from the rows its statement ``read``."""
        assert known.counters is not None
        count, packed, total, version, moves, next_time = read.state
        if count > self.max_items:
            return TOO_MANY
        if int(version) == known.version:
            if light is not None:
                return known, light[0].members, moves, light[0].horizon
            return known, known.listed(packed, count, total), moves, next_time
        behind = {p: n - known.counters.get(p, 0) for p, n in read.counters.items()}
        if not known.counters.keys() <= read.counters.keys() or any(
            read.logged.get(p, 0) != n for p, n in behind.items()
        ):
            return None  # changes the log no longer holds
        data = known.changed(
            int(version),
            read.counters,
            read.changed,
            read.items,
            read.vector_ids,
            vector_matrix(self.dialect, read.vectors),
        )
        if light is not None:
            remembered = light[0]
            listed = (set(remembered.members.ids) - read.changed) | read.members
            found = self.dialect.ts_value(next_time) if next_time is not None else None
            horizon = min((t for t in (found, remembered.horizon) if t is not None), default=None)
            return data, data.members_of(listed), moves, horizon
        if len(data.ids) != int(total):
            return None  # not what the database holds: read it all
        return data, data.listed(packed, count, total), moves, next_time
