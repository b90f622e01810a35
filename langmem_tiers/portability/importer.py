"""Import: records of the export format written into any store, scope by scope.

Each scope is one transaction, committed when its ``end`` record is read (a cut file
leaves the scopes before the cut imported and nothing of the one it cuts). Records are
read in pages of :data:`~langmem_tiers.portability.exporter.PAGE`; a record equal to the
row already stored is left alone, so importing a file twice changes nothing.

Items are written with the store's own parts, as its writer writes them: the value is
checked and analysed by ``prepare_put`` (terms packed in the row, its length), the vectors
go through the store's vector index (the SQL table, or Qdrant), the namespaces' change
counters are taken in the writer's order and counted by the items table's triggers, so a
process's cached namespace sees the imported rows at its next search. The columns the
export carries (times, status, version, counts) are kept as they were, and so are the
events (the log's sequence numbers where they are free in the target; after its last one,
in order, where another scope has them). Vectors are those of the export when it carries
them and the target's embedder is the one that made them; otherwise the texts are embedded
again with the target's embedder.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> from langmem_tiers.portability import export_records
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as source:
    ...     source.put(("ann", "semantic"), "f1", {"content": "Ann likes tea"})
    ...     records = list(export_records(source))
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as target:
    ...     first, again = import_records(target, records), import_records(target, records)
    ...     hits = target.search(("ann",), query="tea")
    >>> first.items, again.items, again.unchanged, hits[0].value["content"]
    (1, 0, 2, 'Ann likes tea')
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import PutOp

from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.store.embedding import embed_matrix_flow
from langmem_tiers.long_term.store.records import item_id, parse_timestamp, split_namespace
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.vectors import VectorRow, normalize_rows
from langmem_tiers.long_term.store.writes import (
    PreparedPut,
    lock_scope_changes_flow,
    prepare_put,
)
from langmem_tiers.portability.exporter import (
    PAGE,
    embedder_name,
    entity_records_flow,
    event_record,
    item_records_flow,
    message_record,
)
from langmem_tiers.portability.format import (
    ENTITY_FIELDS,
    EVENT_FIELDS,
    ITEM_FIELDS,
    ITEM_TIMES,
    MESSAGE_FIELDS,
    VERSION_FIELDS,
    check_header,
    iso,
)
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.sql.dialect import (
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEM_ACCESS,
    ITEMS,
    STM_MESSAGES,
    STM_SESSIONS,
    VECTORS,
    VERSIONS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, InsertRows, Sql, Transaction
from langmem_tiers.sql.migrations import migrate_flow

__all__ = ["ImportResult", "aimport_records", "import_flow", "import_records"]

_ROW_COLUMNS = (*tuple(c for c in ITEM_FIELDS if c != "indexed"), "doc_len", "terms")
_KINDS = ("item", "event", "entity", "session", "message")


class ImportResult(NamedTuple):
    """What an import wrote: scopes, and records written of each type; ``unchanged``:
    records equal to what the target held; ``embedded``: items whose texts were embedded
    again (the export had no vectors of the target's embedder); ``entities``: entity
    records written."""

    scopes: int
    items: int
    events: int
    sessions: int
    messages: int
    unchanged: int
    embedded: int
    entities: int = 0


Numbered = Iterator[tuple[int, dict[str, Any]]]


def _key(column: str) -> str:
    """An event record's key of an events column (its ``type`` is the record's own)."""
    return "event_type" if column == "type" else column


def _field(record: dict[str, Any], name: str, number: int, kinds: tuple[type, ...]) -> Any:
    value = record.get(name)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ValidationError(
            f"line {number}: {record.get('type')} field {name!r} must be "
            f"{' or '.join(k.__name__ for k in kinds)}, got {value!r}."
        )
    return value


def _time(record: dict[str, Any], name: str, number: int) -> str | None:
    raw = record.get(name)
    if raw is None:
        return None
    try:
        return iso(parse_timestamp(raw, field=name))
    except ValidationError as err:
        raise ValidationError(f"line {number}: {err}") from err


def _normal_item(record: dict[str, Any], number: int, scope: str) -> dict[str, Any]:
    """``record`` checked, its times in the format's spelling (as an export of it reads)."""
    _field(record, "id", number, (str,))
    _field(record, "prefix", number, (str,))
    _field(record, "key", number, (str,))
    _field(record, "value", number, (dict,))
    if record.get("scope") != scope:
        raise ValidationError(
            f"line {number}: item {record['id']!r} is of scope {record.get('scope')!r}, inside "
            f"the records of scope {scope!r}; export the file again."
        )
    expected = item_id(split_namespace(record["prefix"]), record["key"])
    if record["id"] != expected:
        raise ValidationError(
            f"line {number}: item id {record['id']!r} is not the id of its prefix and key "
            f"({expected!r}); ids are derived from them, do not edit them."
        )
    out: dict[str, Any] = {"type": "item"}
    for name in ITEM_FIELDS:
        out[name] = _time(record, name, number) if name in ITEM_TIMES else record.get(name)
    for name in ("version", "reinforcement_count"):
        out[name] = int(record.get(name) or 0) or (1 if name == "version" else 0)
    for name in ("confidence", "importance"):
        out[name] = float(record.get(name, 1.0))
    if out["ttl_minutes"] is not None:
        out["ttl_minutes"] = float(out["ttl_minutes"])
    out["status"] = record.get("status") or "active"
    out["indexed"] = bool(record.get("indexed", True))
    access = record.get("access") or {}
    out["access"] = {
        "count": int(access.get("count") or 0),
        "last_at": _time(access, "last_at", number),
    }
    versions = []
    for version in record.get("versions") or []:
        v = {name: version.get(name) for name in VERSION_FIELDS}
        for name in ("valid_from", "valid_until", "created_at"):
            v[name] = _time(version, name, number)
        v["version"] = int(v["version"])
        v["confidence"] = float(v["confidence"])
        versions.append(v)
    out["versions"] = versions
    return out


def _stem(name: str) -> str:
    """The ``stem`` column of an entity named ``name``: the engine's rule (its entities
    module; the import does not depend on the engine), checked by the round-trip test
    finding an entity by alias after an import."""
    return name.casefold()[:3]


def _normal_entity(record: dict[str, Any], number: int, scope: str | None) -> dict[str, Any]:
    """An entity ``record`` checked, in the spelling an export of it reads."""
    for name in ("id", "name", "kind"):
        _field(record, name, number, (str,))
    _field(record, "mentions", number, (int,))
    if record.get("scope") != scope:
        raise ValidationError(
            f"line {number}: entity {record['id']!r} is of scope {record.get('scope')!r}, "
            f"inside the records of scope {scope!r}; export the file again."
        )
    aliases = record.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValidationError(
            f"line {number}: entity field 'aliases' must be a list of strings, got {aliases!r}."
        )
    out: dict[str, Any] = {"type": "entity", **{f: record.get(f) for f in ENTITY_FIELDS}}
    out["aliases"] = list(aliases)
    for name in ("first_seen", "last_seen"):
        out[name] = _time(record, name, number)
        if out[name] is None:
            raise ValidationError(f"line {number}: an entity needs {name!r} (a time).")
    mentioned = record.get("mentioned_by") or []
    if not isinstance(mentioned, list):
        raise ValidationError(
            f"line {number}: entity field 'mentioned_by' must be a list, got {mentioned!r}."
        )
    out["mentioned_by"] = []
    for mention in mentioned:
        if not isinstance(mention, dict) or not isinstance(mention.get("memory_id"), str):
            raise ValidationError(
                f"line {number}: each of an entity's 'mentioned_by' must be an object with a "
                f"'memory_id' (a string) and 'at', got {mention!r}."
            )
        at = _time(mention, "at", number)
        if at is None:
            raise ValidationError(f"line {number}: a mention of an entity needs 'at'.")
        out["mentioned_by"].append({"memory_id": mention["memory_id"], "at": at})
    return out


class _Scope:
    """One scope's import: the target's parts and what was written."""

    def __init__(self, core: Any, scope: str | None, reuse: bool, counts: Counter[str]) -> None:
        self.core = core
        self.d: Dialect = core.dialect
        self.scope = scope
        self.reuse = reuse
        self.counts = counts
        self.touched: dict[str, dict[str, Any]] = {}  # session id -> its record

    # -- items -----------------------------------------------------------------------
    def items_flow(self, page: list[tuple[int, dict[str, Any]]]) -> Flow[None]:
        d, core = self.d, self.core
        assert self.scope is not None
        records = {r["id"]: (n, r) for n, r in page}
        normal = {i: _normal_item(r, n, self.scope) for i, (n, r) in records.items()}
        in_ids, params = d.in_list("id", list(normal))
        stored = yield from item_records_flow(core, in_ids, params, vectors=False)
        held = {s["id"]: s for s in stored}
        changed = sorted(i for i, r in normal.items() if held.get(i) != r)
        self.counts["unchanged"] += len(normal) - len(changed)
        if not changed:
            return
        puts = {i: self._prepared_put(records[i][0], i, normal[i]) for i in changed}
        lock = d.lock_items_sql()
        if lock:
            yield Sql(lock, [changed])
        yield from lock_scope_changes_flow(d, {normal[i]["prefix"] for i in changed})
        replaced = [i for i in changed if i in held]
        if replaced:
            yield from self._delete_items_flow(replaced)
        rows, access, versions = self._item_rows(changed, normal, puts)
        yield InsertRows(ITEMS, _ROW_COLUMNS, rows)
        if access:
            yield InsertRows(ITEM_ACCESS, ("id", "access_count", "last_accessed_at"), access)
        if versions:
            yield InsertRows(VERSIONS, ("memory_id", *_VERSION_ROW), versions)
        vector_rows = yield from self._vector_rows(
            [(records[i][1], normal[i], puts[i]) for i in changed]
        )
        if core.index.in_database:
            yield from core.index.write_requests(vector_rows, [])
        else:
            yield from core.index.write_flow(vector_rows, replaced)
        self.counts["item"] += len(changed)

    def _prepared_put(self, line: int, item_id: str, rec: dict[str, Any]) -> PreparedPut:
        """The item checked and tokenised as a put would be, its errors naming the line."""
        try:
            return prepare_put(
                PutOp(
                    split_namespace(rec["prefix"]),
                    rec["key"],
                    rec["value"],
                    index=None if rec["indexed"] else False,
                ),
                fields=self.core.fields,
                max_chars=self.core.settings.max_content_chars,
            )
        except ValidationError as err:
            raise ValidationError(f"line {line}: item {item_id!r}: {err}") from err

    def _delete_items_flow(self, replaced: list[str]) -> Flow[None]:
        """Delete the stored items an import replaces, with their access, versions and vectors."""
        d = self.d
        in_old, old_params = d.in_list("id", replaced)
        yield Sql(f"DELETE FROM {ITEM_ACCESS} WHERE {in_old}", old_params)
        in_mem, mem_params = d.in_list("memory_id", replaced)
        yield Sql(f"DELETE FROM {VERSIONS} WHERE {in_mem}", mem_params)
        if self.core.index.in_database:
            in_vec, vec_params = d.in_list("item_id", replaced)
            yield Sql(f"DELETE FROM {VECTORS} WHERE {in_vec}", vec_params)
        yield Sql(f"DELETE FROM {ITEMS} WHERE {in_old}", old_params)

    def _item_rows(
        self,
        changed: list[str],
        normal: dict[str, dict[str, Any]],
        puts: dict[str, PreparedPut],
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The rows to insert for the changed items: items, access counts and versions."""
        d = self.d
        rows, access, versions = [], [], []
        for i in changed:
            rec, p = normal[i], puts[i]
            values = dict(rec)
            values["value"] = d.json_param(rec["value"])
            for name in ITEM_TIMES:
                values[name] = (
                    d.ts_param(parse_timestamp(rec[name], field=name)) if rec[name] else None
                )
            values["doc_len"] = p.doc_len
            values["terms"] = bm25.pack_terms(p.terms)
            rows.append(tuple(values[c] for c in _ROW_COLUMNS))
            if rec["access"]["count"] or rec["access"]["last_at"]:
                last = rec["access"]["last_at"]
                access.append(
                    (
                        i,
                        rec["access"]["count"],
                        d.ts_param(parse_timestamp(last, field="last_at")) if last else None,
                    )
                )
            for v in rec["versions"]:
                versions.append(
                    (
                        i,
                        v["version"],
                        rec["scope"],
                        v["content"],
                        d.json_param(v["value"]),
                        v["confidence"],
                        *(
                            d.ts_param(parse_timestamp(v[t], field=t)) if v[t] else None
                            for t in ("valid_from", "valid_until")
                        ),
                        v["reason"],
                        d.ts_param(parse_timestamp(v["created_at"], field="created_at")),
                    )
                )
        return rows, access, versions

    def _vector_rows(
        self, items: list[tuple[dict[str, Any], dict[str, Any], Any]]
    ) -> Flow[list[VectorRow]]:
        rows: list[VectorRow] = []
        texts: list[str] = []
        wanted: list[tuple[str, str, str]] = []
        for raw, rec, p in items:
            given = raw.get("vectors") if self.reuse else None
            if isinstance(given, dict) and all(f in given for f, _ in p.texts):
                for field, _ in p.texts:
                    vector = np.asarray(given[field], dtype=np.float64)
                    if vector.shape != (self.core.dims,):
                        raise ValidationError(
                            f"item {rec['id']!r}: vector of {field!r} has {vector.size} "
                            f"dimensions, the embedder {self.core.dims}."
                        )
                    rows.append(VectorRow(rec["id"], field, rec["prefix"], vector))
                continue
            if p.texts:
                self.counts["embedded"] += 1
            for field, text in p.texts:
                texts.append(text)
                wanted.append((rec["id"], field, rec["prefix"]))
        if texts:
            matrix = yield from embed_matrix_flow(texts, dims=self.core.dims, query=False)
            units = normalize_rows(list(matrix))
            rows.extend(
                VectorRow(i, f, prefix, units[k]) for k, (i, f, prefix) in enumerate(wanted)
            )
        return rows

    # -- events ----------------------------------------------------------------------
    def events_flow(self, page: list[tuple[int, dict[str, Any]]]) -> Flow[None]:
        d = self.d
        incoming = []
        for n, r in page:
            _field(r, "seq", n, (int,))
            for name in ("memory_id", "prefix", "key"):
                _field(r, name, n, (str,))
            if not isinstance(r.get("metadata") or {}, dict):
                raise ValidationError(f"line {n}: event metadata must be an object.")
            if r.get("scope") != self.scope:
                raise ValidationError(
                    f"line {n}: event {r['seq']} is of scope {r.get('scope')!r}, inside the "
                    f"records of scope {self.scope!r}; export the file again."
                )
            rec: dict[str, Any] = {
                "type": "event",
                **{_key(f): r.get(_key(f)) for f in EVENT_FIELDS},
            }
            rec["at"] = _time(r, "at", n)
            if rec["at"] is None or not isinstance(rec["event_type"], str):
                raise ValidationError(f"line {n}: an event needs 'at' and 'event_type'.")
            incoming.append(rec)
        seqs = [r["seq"] for r in incoming]
        in_seq, params = d.in_list("seq", seqs, sql_type="bigint")
        rows = yield Sql(f"SELECT {', '.join(EVENT_FIELDS)} FROM {EVENTS} WHERE {in_seq}", params)
        held = {int(r[0]): event_record(d, r) for r in rows}
        kept, appended = [], []
        for rec in incoming:
            there = held.get(rec["seq"])
            if there == rec:
                self.counts["unchanged"] += 1
            elif there is None:
                kept.append(rec)
            elif there["scope"] == self.scope and there["memory_id"] == rec["memory_id"]:
                # The same event's row, changed since (an erased one stays erased).
                self.counts["unchanged"] += 1
            else:
                found = yield Sql(
                    f"SELECT count(*) FROM {EVENTS} WHERE scope = ? AND memory_id = ?"
                    " AND type = ? AND at = ?",
                    [
                        rec["scope"],
                        rec["memory_id"],
                        rec["event_type"],
                        d.ts_param(parse_timestamp(rec["at"], field="at")),
                    ],
                )
                if int(found[0][0]):
                    self.counts["unchanged"] += 1
                else:
                    appended.append(rec)
        columns = list(EVENT_FIELDS)
        if kept:
            yield InsertRows(EVENTS, columns, [self._event_row(r) for r in kept])
            sync = d.sync_serial_sql(EVENTS, "seq")
            if sync:
                yield Sql(sync)
        if appended:
            yield InsertRows(EVENTS, columns[1:], [self._event_row(r)[1:] for r in appended])
        self.counts["event"] += len(kept) + len(appended)

    def _event_row(self, r: dict[str, Any]) -> tuple[Any, ...]:
        d = self.d
        values = dict(r)
        values["at"] = d.ts_param(parse_timestamp(r["at"], field="at"))
        for name in ("before", "after"):
            values[name] = None if r[name] is None else d.json_param(r[name])
        values["metadata"] = d.json_param(r["metadata"] or {})
        return tuple(values[_key(c)] for c in EVENT_FIELDS)

    # -- entities --------------------------------------------------------------------
    def entities_flow(self, page: list[tuple[int, dict[str, Any]]]) -> Flow[None]:
        """Entities as the export holds them: one differing from the stored one replaces
        it, its mentions too (as an item replaces its row)."""
        d = self.d
        incoming = {}
        for n, r in page:
            rec = _normal_entity(r, n, self.scope)
            incoming[rec["id"]] = rec
        in_ids, params = d.in_list("id", list(incoming))
        stored = yield from entity_records_flow(d, in_ids, params)
        held = {s["id"]: s for s in stored}
        changed = sorted(i for i, r in incoming.items() if held.get(i) != r)
        self.counts["unchanged"] += len(incoming) - len(changed)
        if not changed:
            return
        replaced = [i for i in changed if i in held]
        if replaced:
            in_old, old_params = d.in_list("entity_id", replaced)
            yield Sql(f"DELETE FROM {ENTITY_MENTIONS} WHERE {in_old}", old_params)
            in_old, old_params = d.in_list("id", replaced)
            yield Sql(f"DELETE FROM {ENTITIES} WHERE {in_old}", old_params)
        rows: list[tuple[Any, ...]] = []
        mentions: list[tuple[Any, ...]] = []
        for i in changed:
            rec = incoming[i]
            values = dict(rec)
            values["aliases"] = json.dumps(rec["aliases"])
            for name in ("first_seen", "last_seen"):
                values[name] = d.ts_param(parse_timestamp(rec[name], field=name))
            rows.append((*(values[c] for c in ENTITY_FIELDS), _stem(rec["name"])))
            mentions.extend(
                (i, m["memory_id"], rec["scope"], d.ts_param(parse_timestamp(m["at"], field="at")))
                for m in rec["mentioned_by"]
            )
        yield InsertRows(ENTITIES, (*ENTITY_FIELDS, "stem"), rows)
        if mentions:
            yield InsertRows(ENTITY_MENTIONS, ("entity_id", "memory_id", "scope", "at"), mentions)
        self.counts["entity"] += len(changed)

    # -- short-term memory -----------------------------------------------------------
    def session_flow(self, number: int, record: dict[str, Any]) -> Flow[None]:
        session = _field(record, "session_id", number, (str,))
        rows = yield Sql(
            f"SELECT last_seq, changes FROM {STM_SESSIONS} WHERE session_id = ?", [session]
        )
        last, changes = int(record.get("last_seq") or 0), int(record.get("changes") or 0)
        if not rows:
            yield Sql(
                f"INSERT INTO {STM_SESSIONS} (session_id, last_seq, changes) VALUES (?, ?, ?)",
                [session, last, changes],
            )
            self.counts["session"] += 1
        elif (int(rows[0][0]), int(rows[0][1])) != (last, changes):
            self.touched[session] = record
        else:
            self.counts["unchanged"] += 1

    def messages_flow(self, page: list[tuple[int, dict[str, Any]]]) -> Flow[None]:
        d = self.d
        incoming = []
        for n, r in page:
            _field(r, "session_id", n, (str,))
            _field(r, "seq", n, (int,))
            rec: dict[str, Any] = {"type": "message", **{f: r.get(f) for f in MESSAGE_FIELDS}}
            rec["required_tier_level"] = int(rec["required_tier_level"] or 1)
            rec["extra"] = rec["extra"] or {}
            incoming.append(rec)
        held: dict[tuple[str, int], dict[str, Any]] = {}
        for session in sorted({str(r["session_id"]) for r in incoming}):
            seqs = [r["seq"] for r in incoming if r["session_id"] == session]
            in_seq, params = d.in_list("seq", seqs, sql_type="bigint")
            rows = yield Sql(
                f"SELECT {', '.join(MESSAGE_FIELDS)} FROM {STM_MESSAGES}"
                f" WHERE session_id = ? AND {in_seq}",
                [session, *params],
            )
            held.update({(session, int(r[1])): message_record(d, r) for r in rows})
        changed = [r for r in incoming if held.get((r["session_id"], r["seq"])) != r]
        self.counts["unchanged"] += len(incoming) - len(changed)
        for r in changed:
            if (r["session_id"], r["seq"]) in held:
                yield Sql(
                    f"DELETE FROM {STM_MESSAGES} WHERE session_id = ? AND seq = ?",
                    [r["session_id"], r["seq"]],
                )
                self.touched.setdefault(r["session_id"], {})
        if changed:
            yield InsertRows(
                STM_MESSAGES,
                MESSAGE_FIELDS,
                [
                    tuple(
                        d.json_param(r[c]) if c in ("content", "extra") else r[c]
                        for c in MESSAGE_FIELDS
                    )
                    for r in changed
                ],
            )
        self.counts["message"] += len(changed)

    def finish_flow(self) -> Flow[None]:
        """Sessions changed in place count a change, so a log caching them reads again."""
        for session, record in sorted(self.touched.items()):
            yield Sql(
                f"UPDATE {STM_SESSIONS} SET last_seq = CASE WHEN last_seq > ? THEN last_seq"
                " ELSE ? END, changes = changes + 1 WHERE session_id = ?",
                [int(record.get("last_seq") or 0), int(record.get("last_seq") or 0), session],
            )
            self.counts["session"] += 1


_VERSION_ROW = (
    "version",
    "scope",
    "content",
    "value",
    "confidence",
    "valid_from",
    "valid_until",
    "reason",
    "created_at",
)


def _scope_flow(
    core: Any, numbered: Numbered, scope: str | None, reuse: bool, counts: Counter[str]
) -> Flow[None]:
    job = _Scope(core, scope, reuse, counts)
    seen: Counter[str] = Counter()
    page: list[tuple[int, dict[str, Any]]] = []
    kind = ""

    def flush() -> Flow[None]:
        if not page:
            return
        if kind == "item":
            yield from job.items_flow(page)
        elif kind == "event":
            yield from job.events_flow(page)
        elif kind == "entity":
            yield from job.entities_flow(page)
        elif kind == "message":
            yield from job.messages_flow(page)
        page.clear()

    last = 0
    for number, record in numbered:
        last = number
        rtype = record["type"]
        if rtype == "end":
            yield from flush()
            stated = record.get("counts") or {}
            for name in _KINDS:
                if int(stated.get(name, 0)) != seen[name]:
                    raise ValidationError(
                        f"line {number}: scope {scope!r} ends with {stated.get(name, 0)} "
                        f"{name} records stated, {seen[name]} read; the file is damaged."
                    )
            yield from job.finish_flow()
            return
        if rtype not in _KINDS:
            if rtype in ("scope", "header"):
                raise ValidationError(
                    f"line {number}: a {rtype} record inside scope {scope!r}, before its end "
                    "record; the file is cut or damaged (nothing of this scope was imported)."
                )
            continue  # a record type of a later minor revision
        if scope is None and rtype in ("item", "event", "entity"):
            raise ValidationError(f"line {number}: {rtype} records need a scope.")
        seen[rtype] += 1
        if rtype != kind or len(page) >= PAGE:
            yield from flush()
            kind = rtype
        if rtype == "session":
            yield from job.session_flow(number, record)
            continue
        page.append((number, record))
    raise ValidationError(
        f"the export ends (line {last}) inside scope {scope!r}, before its end record; the "
        "scopes before it were imported, nothing of this one."
    )


def import_flow(core: Any, records: Iterable[dict[str, Any]], embedder: str) -> Flow[ImportResult]:
    """Import ``records`` (the header first) into the store of ``core``, whose embedder is
    named ``embedder``; one transaction per scope."""
    numbered: Numbered = iter(enumerate(records, start=1))
    first = next(numbered, None)
    if first is None:
        raise ValidationError("the export is empty; it must start with its header line.")
    head = check_header(first[1])
    made_by = head.get("embedder") or {}
    reuse = bool(head.get("embeddings")) and made_by == {"name": embedder, "dims": core.dims}
    counts: Counter[str] = Counter()
    scopes = 0
    # The sessions go into the message log's tables, a component of their own.
    yield Transaction(migrate_flow(core.dialect, [SHORT_TERM]))
    for number, record in numbered:
        if record["type"] != "scope":
            raise ValidationError(
                f"line {number}: expected a scope record, got {record['type']!r}."
            )
        scope = record.get("scope")
        if scope is not None and not isinstance(scope, str):
            raise ValidationError(f"line {number}: scope must be a string or null, got {scope!r}.")
        yield Transaction(_scope_flow(core, numbered, scope, reuse, counts))
        scopes += 1
    return ImportResult(
        scopes,
        counts["item"],
        counts["event"],
        counts["session"],
        counts["message"],
        counts["unchanged"],
        counts["embedded"],
        counts["entity"],
    )


def import_records(store: Any, records: Iterable[dict[str, Any]]) -> ImportResult:
    """Import ``records`` (an export's, header first) into ``store``."""
    result: ImportResult = store.db.run(
        import_flow(store.core, records, embedder_name(store.embeddings))
    )
    return result


async def aimport_records(store: Any, records: Iterable[dict[str, Any]]) -> ImportResult:
    """Async twin of :func:`import_records` (``records`` are read as the import goes)."""
    result: ImportResult = await store.db.arun(
        import_flow(store.core, records, embedder_name(store.embeddings))
    )
    return result
