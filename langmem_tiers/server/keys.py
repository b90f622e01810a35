"""API keys of the HTTP server: created once, stored hashed, checked in constant time.

A key looks like ``lmt_<id>_<secret>``: ``id`` is 12 hex characters that find the row,
``secret`` 43 characters of a 256-bit random token. Only the SHA-256 of the whole key is
stored (a key of this entropy needs no slow password hash), and the comparison uses
:func:`hmac.compare_digest`. A key is bound to one scope (an agent or user id), or is an
admin key (every scope, and the ``agents`` listing).

The queries are flows (``sql/flow.py``): :class:`ApiKeys` runs them with the
store's database, sync or async.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     keys = ApiKeys(store.db)
    ...     created = keys.create(scope="agent-a", name="docs")
    ...     found = keys.verify(created.key)
    ...     wrong = keys.verify(created.key[:-1] + "x")
    >>> found.scope, found.is_admin, wrong
    ('agent-a', False, None)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import weakref
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple, TypeVar

from langmem_tiers.errors import InvalidNamespaceError, NotFoundError, ValidationError
from langmem_tiers.long_term.store.records import validate_namespace
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.server.key_migrations import API_KEYS_SCHEMA
from langmem_tiers.sql import migrations as schema
from langmem_tiers.sql.database import Database
from langmem_tiers.sql.dialect import API_KEYS, Dialect
from langmem_tiers.sql.flow import Flow, Sql, Transaction

__all__ = ["KEY_PREFIX", "ApiKey", "ApiKeys", "CreatedKey", "hash_key", "parse_key"]

KEY_PREFIX = "lmt"
"""First part of every key, so a leaked key is easy to recognise (and to scan for)."""

T = TypeVar("T")

_KEY = re.compile(rf"^{KEY_PREFIX}_(?P<id>[0-9a-f]{{12}})_(?P<secret>[A-Za-z0-9_\-]{{43}})$")
_COLUMNS = "id, scope, is_admin, name, created_at, last_used_at, revoked_at"
_MAX_NAME_CHARS = 200
_MAX_SCOPE_CHARS = 512
# last_used_at is written at most this often per key: a write per request would make
# every read a write.
_TOUCH_EVERY = timedelta(minutes=1)
# Compared against when the id is unknown, so both paths cost one hash and one comparison.
_DUMMY_HASH = hashlib.sha256(b"langmem-tiers: no such key").hexdigest()
# Databases whose keys table is known to be set up (by this process).
_SET_UP: weakref.WeakSet[Database] = weakref.WeakSet()


class ApiKey(NamedTuple):
    """A stored key (never the key itself)."""

    id: str
    scope: str | None
    """The scope the key may use; None for an admin key."""
    is_admin: bool
    name: str | None
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe fields."""
        out = self._asdict()
        for name in ("created_at", "last_used_at", "revoked_at"):
            if out[name] is not None:
                out[name] = out[name].isoformat()
        return out


class CreatedKey(NamedTuple):
    """A new key: ``key`` is shown once and cannot be recovered later."""

    key: str
    record: ApiKey


def hash_key(key: str) -> str:
    """SHA-256 of a key, hex.

    >>> len(hash_key("lmt_000000000000_" + "a" * 43))
    64
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def parse_key(key: str) -> str | None:
    """The id part of a well-formed key, else None.

    >>> parse_key("lmt_0123456789ab_" + "A" * 43), parse_key("not-a-key")
    ('0123456789ab', None)
    """
    match = _KEY.match(key.strip()) if isinstance(key, str) else None
    return match.group("id") if match else None


def _new_key() -> tuple[str, str]:
    key_id = secrets.token_hex(6)
    return key_id, f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"


def _check_scope(scope: str | None, admin: bool) -> None:
    if admin:
        if scope is not None:
            raise ValidationError(
                f"an admin key is not bound to a scope, got scope={scope!r}; pass one or the other."
            )
        return
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidNamespaceError(
            f"scope must be a non-empty agent or user id, got {scope!r}; "
            "pass the scope the key may use, or ask for an admin key."
        )
    if "\x00" in scope or len(scope) > _MAX_SCOPE_CHARS:
        raise InvalidNamespaceError(
            f"scope must be at most {_MAX_SCOPE_CHARS} characters without NUL bytes, "
            f"got {scope[:60]!r}."
        )
    # The rule every request applies: the scope's namespace must be valid. An id is
    # encoded into a label ('.' -> '%2E', '%' -> '%25'), so one within the id limit can
    # still make a label past the label limit; a key for it could never be used.
    try:
        validate_namespace(namespace_for(scope, "semantic"), field="scope")
    except InvalidNamespaceError as err:
        raise InvalidNamespaceError(
            f"scope {scope[:60]!r} cannot hold memories, so a key for it could never be "
            f"used: {err} Its '.' and '%' count three characters each; choose a shorter id."
        ) from err


def _check_name(name: str | None) -> None:
    if name is not None and (len(name) > _MAX_NAME_CHARS or "\x00" in name):
        raise ValidationError(
            f"name must be at most {_MAX_NAME_CHARS} characters without NUL bytes, "
            f"got {name[:60]!r}."
        )


def _row(dialect: Dialect, row: tuple[Any, ...]) -> ApiKey:
    created = dialect.ts_value(row[4])
    assert created is not None  # NOT NULL column
    return ApiKey(
        id=row[0],
        scope=row[1],
        is_admin=bool(row[2]),
        name=row[3],
        created_at=created,
        last_used_at=dialect.ts_value(row[5]),
        revoked_at=dialect.ts_value(row[6]),
    )


# -- flows ------------------------------------------------------------------------------


def create_key_flow(
    dialect: Dialect, *, scope: str | None, admin: bool, name: str | None, now: datetime
) -> Flow[CreatedKey]:
    """Store a new key's hash; answers the key (shown once) and its record."""
    _check_scope(scope, admin)
    _check_name(name)
    key_id, key = _new_key()
    yield Sql(
        f"INSERT INTO {API_KEYS} (id, key_hash, scope, is_admin, name, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [key_id, hash_key(key), scope, 1 if admin else 0, name, dialect.ts_param(now)],
    )
    record = ApiKey(key_id, scope, admin, name, now, None, None)
    return CreatedKey(key, record)


def verify_key_flow(dialect: Dialect, key: str, *, now: datetime) -> Flow[ApiKey | None]:
    """The key's record when ``key`` is valid and not revoked, else None."""
    key_id = parse_key(key)
    rows = []
    if key_id is not None:
        rows = yield Sql(f"SELECT {_COLUMNS}, key_hash FROM {API_KEYS} WHERE id = ?", [key_id])
    stored = rows[0][7] if rows else _DUMMY_HASH
    matches = hmac.compare_digest(stored.encode("ascii"), hash_key(key).encode("ascii"))
    if not rows or not matches:
        return None
    record = _row(dialect, rows[0][:7])
    if record.revoked_at is not None:
        return None
    if record.last_used_at is None or now - record.last_used_at >= _TOUCH_EVERY:
        # One statement, atomic on its own; a key revoked since the read keeps its time.
        yield Sql(
            f"UPDATE {API_KEYS} SET last_used_at = ? WHERE id = ? AND revoked_at IS NULL",
            [dialect.ts_param(now), key_id],
        )
        record = record._replace(last_used_at=now)
    return record


def list_keys_flow(dialect: Dialect, *, scope: str | None = None) -> Flow[list[ApiKey]]:
    """Every key (or a scope's keys), oldest first; revoked ones included."""
    if scope is None:
        rows = yield Sql(f"SELECT {_COLUMNS} FROM {API_KEYS} ORDER BY created_at, id")
    else:
        rows = yield Sql(
            f"SELECT {_COLUMNS} FROM {API_KEYS} WHERE scope = ? ORDER BY created_at, id", [scope]
        )
    return [_row(dialect, row) for row in rows]


def revoke_key_flow(dialect: Dialect, key_id: str, *, now: datetime) -> Flow[ApiKey]:
    """Revoke a key by id (idempotent); NotFoundError when there is no such key."""
    rows = yield Sql(f"SELECT {_COLUMNS} FROM {API_KEYS} WHERE id = ?", [key_id])
    if not rows:
        raise NotFoundError(
            f"no API key with id {key_id!r}; list them with: langmem-tiers keys list."
        )
    record = _row(dialect, rows[0])
    if record.revoked_at is None:
        yield Sql(
            f"UPDATE {API_KEYS} SET revoked_at = ? WHERE id = ?", [dialect.ts_param(now), key_id]
        )
        record = record._replace(revoked_at=now)
    return record


def _transaction(flow: Flow[T]) -> Flow[T]:
    result: T = yield Transaction(flow)
    return result


# -- the sync and async methods ----------------------------------------------------------


class ApiKeys:
    """The API keys kept in a store's database (see the module docstring).

    Args:
        db: the store's :class:`~langmem_tiers.sql.database.Database`
            (``store.db``); the keys' table is set up at its first use here.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def dialect(self) -> Dialect:
        """The SQL dialect of the database."""
        return self.db.dialect

    @staticmethod
    def _now() -> datetime:
        return datetime.now(timezone.utc)

    def _run(self, flow: Flow[T]) -> T:
        # The keys' table is the server's own component: set up at a database's first use.
        if self.db not in _SET_UP:
            self.db.run(_transaction(schema.migrate_flow(self.dialect, [API_KEYS_SCHEMA])))
            _SET_UP.add(self.db)
        return self.db.run(flow)

    async def _arun(self, flow: Flow[T]) -> T:
        if self.db not in _SET_UP:
            await self.db.arun(_transaction(schema.migrate_flow(self.dialect, [API_KEYS_SCHEMA])))
            _SET_UP.add(self.db)
        return await self.db.arun(flow)

    def create(
        self, *, scope: str | None = None, admin: bool = False, name: str | None = None
    ) -> CreatedKey:
        """A new key for ``scope`` (or an admin key); the key is in the answer only."""
        return self._run(
            create_key_flow(self.dialect, scope=scope, admin=admin, name=name, now=self._now())
        )

    async def acreate(
        self, *, scope: str | None = None, admin: bool = False, name: str | None = None
    ) -> CreatedKey:
        """Async twin of :meth:`create`."""
        return await self._arun(
            create_key_flow(self.dialect, scope=scope, admin=admin, name=name, now=self._now())
        )

    def verify(self, key: str) -> ApiKey | None:
        """The record of a valid, unrevoked key; None for anything else.

        Every request of the server calls this, so it is a plain read (no transaction,
        which on SQLite would take the write lock per request); the last-use time is
        written at most once a minute per key.
        """
        return self._run(verify_key_flow(self.dialect, key, now=self._now()))

    async def averify(self, key: str) -> ApiKey | None:
        """Async twin of :meth:`verify`."""
        return await self._arun(verify_key_flow(self.dialect, key, now=self._now()))

    def list_keys(self, *, scope: str | None = None) -> list[ApiKey]:
        """Every key's record (or a scope's), oldest first."""
        return self._run(list_keys_flow(self.dialect, scope=scope))

    async def alist_keys(self, *, scope: str | None = None) -> list[ApiKey]:
        """Async twin of :meth:`list_keys`."""
        return await self._arun(list_keys_flow(self.dialect, scope=scope))

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by its id; it stops working at once."""
        return self._run(_transaction(revoke_key_flow(self.dialect, key_id, now=self._now())))

    async def arevoke(self, key_id: str) -> ApiKey:
        """Async twin of :meth:`revoke`."""
        return await self._arun(
            _transaction(revoke_key_flow(self.dialect, key_id, now=self._now()))
        )
