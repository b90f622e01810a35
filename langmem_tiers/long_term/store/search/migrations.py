"""The change counters per namespace that searches keeping namespaces in process rely on
(:mod:`langmem_tiers.long_term.store.search.scope_cache`), as a component of
:mod:`langmem_tiers.sql.migrations`: triggers on the items count every writer's changes,
and log the item of each.

Statements are written out per dialect, as they ran; ``legacy=`` numbers are the
migrations' numbers in the one list of earlier releases. SQLite counted first (16);
PostgreSQL's counters came later (21), per statement from transition tables.

Example:
    >>> [m.legacy for m in SCOPE_CHANGES.sqlite]
    [16, 22, 26, 32]
"""

from __future__ import annotations

from langmem_tiers.sql.dialect import Dialect
from langmem_tiers.sql.flow import Flow
from langmem_tiers.sql.migrations import Component, Migration, add_column_flow

__all__ = ["SCOPE_CHANGES"]


def _scope_moves_column(dialect: Dialect) -> Flow[None]:
    # Updates that may change which items a search selects, counted per namespace.
    yield from add_column_flow(dialect, "lmt_scope_changes", "moves", "BIGINT NOT NULL DEFAULT 0")


_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=16,
        steps=(
            "CREATE TABLE IF NOT EXISTS lmt_scope_changes (prefix TEXT PRIMARY KEY, changes "
            "INTEGER NOT NULL)",
            "CREATE TRIGGER IF NOT EXISTS lmt_scope_changes_insert AFTER INSERT ON lmt_items "
            "BEGIN INSERT INTO lmt_scope_changes (prefix, changes) VALUES (NEW.prefix, 1) ON "
            "CONFLICT (prefix) DO UPDATE SET changes = changes + 1; END",
            "CREATE TRIGGER IF NOT EXISTS lmt_scope_changes_delete AFTER DELETE ON lmt_items "
            "BEGIN INSERT INTO lmt_scope_changes (prefix, changes) VALUES (OLD.prefix, 1) ON "
            "CONFLICT (prefix) DO UPDATE SET changes = changes + 1; END",
            "CREATE TRIGGER IF NOT EXISTS lmt_scope_changes_update AFTER UPDATE OF id, prefix, "
            "value, doc_len ON lmt_items BEGIN INSERT INTO lmt_scope_changes (prefix, changes) "
            "VALUES (OLD.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET changes = changes + 1; "
            "INSERT INTO lmt_scope_changes (prefix, changes) VALUES (NEW.prefix, 1) ON CONFLICT "
            "(prefix) DO UPDATE SET changes = changes + 1; END",
        ),
    ),
    Migration(
        legacy=22,
        steps=(
            _scope_moves_column,
            "CREATE TRIGGER IF NOT EXISTS lmt_scope_changes_move AFTER UPDATE OF status, scope, "
            "kind, valid_from, valid_until, expires_at, event_at, created_at ON lmt_items BEGIN "
            "INSERT INTO lmt_scope_changes (prefix, changes, moves) VALUES (NEW.prefix, 0, 1) ON "
            "CONFLICT (prefix) DO UPDATE SET moves = moves + 1; END",
        ),
    ),
    Migration(
        legacy=26,
        steps=(
            "CREATE TABLE IF NOT EXISTS lmt_item_changes (prefix TEXT NOT NULL, changes INTEGER "
            "NOT NULL, item_id TEXT NOT NULL, PRIMARY KEY (prefix, changes)) WITHOUT ROWID",
            "CREATE TRIGGER IF NOT EXISTS lmt_item_changes_cut AFTER INSERT ON lmt_item_changes "
            "WHEN NEW.changes % 1024 = 0 BEGIN DELETE FROM lmt_item_changes WHERE prefix = "
            "NEW.prefix AND changes <= NEW.changes - 1024; END",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_insert",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_delete",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_update",
            "CREATE TRIGGER lmt_scope_changes_insert AFTER INSERT ON lmt_items BEGIN INSERT INTO "
            "lmt_scope_changes (prefix, changes) VALUES (NEW.prefix, 1) ON CONFLICT (prefix) DO "
            "UPDATE SET changes = changes + 1; INSERT INTO lmt_item_changes (prefix, changes, "
            "item_id) SELECT prefix, changes, NEW.id FROM lmt_scope_changes WHERE prefix = "
            "NEW.prefix; END",
            "CREATE TRIGGER lmt_scope_changes_delete AFTER DELETE ON lmt_items BEGIN INSERT INTO "
            "lmt_scope_changes (prefix, changes) VALUES (OLD.prefix, 1) ON CONFLICT (prefix) DO "
            "UPDATE SET changes = changes + 1; INSERT INTO lmt_item_changes (prefix, changes, "
            "item_id) SELECT prefix, changes, OLD.id FROM lmt_scope_changes WHERE prefix = "
            "OLD.prefix; END",
            "CREATE TRIGGER lmt_scope_changes_update AFTER UPDATE OF id, prefix, value, doc_len "
            "ON lmt_items BEGIN INSERT INTO lmt_scope_changes (prefix, changes) VALUES "
            "(OLD.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET changes = changes + 1; INSERT "
            "INTO lmt_item_changes (prefix, changes, item_id) SELECT prefix, changes, OLD.id FROM "
            "lmt_scope_changes WHERE prefix = OLD.prefix; INSERT INTO lmt_scope_changes (prefix, "
            "changes) VALUES (NEW.prefix, 1) ON CONFLICT (prefix) DO UPDATE SET changes = changes "
            "+ 1; INSERT INTO lmt_item_changes (prefix, changes, item_id) SELECT prefix, changes, "
            "NEW.id FROM lmt_scope_changes WHERE prefix = NEW.prefix; END",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_move",
            "CREATE TRIGGER lmt_scope_changes_move AFTER UPDATE OF status, scope, kind, "
            "valid_from, valid_until, expires_at, event_at, created_at ON lmt_items WHEN "
            "OLD.status IS NOT NEW.status OR OLD.scope IS NOT NEW.scope OR OLD.kind IS NOT "
            "NEW.kind OR OLD.valid_from IS NOT NEW.valid_from OR OLD.valid_until IS NOT "
            "NEW.valid_until OR OLD.expires_at IS NOT NEW.expires_at OR OLD.event_at IS NOT "
            "NEW.event_at OR OLD.created_at IS NOT NEW.created_at BEGIN INSERT INTO "
            "lmt_scope_changes (prefix, changes, moves) VALUES (NEW.prefix, 0, 1) ON CONFLICT "
            "(prefix) DO UPDATE SET moves = moves + 1; END",
        ),
    ),
    Migration(
        legacy=32,
        steps=(
            "INSERT INTO lmt_scope_changes (prefix, changes) SELECT prefix, count(*) FROM "
            "lmt_items WHERE true GROUP BY prefix ON CONFLICT (prefix) DO UPDATE SET changes = "
            "lmt_scope_changes.changes + excluded.changes",
        ),
    ),
)

_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=21,
        steps=(
            'CREATE TABLE IF NOT EXISTS lmt_scope_changes (prefix TEXT COLLATE "C" PRIMARY KEY, '
            "changes BIGINT NOT NULL)",
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_statement() RETURNS trigger LANGUAGE "
            "plpgsql AS $$ BEGIN INSERT INTO lmt_scope_changes AS s (prefix, changes) SELECT "
            "prefix, count(*) FROM changed_rows GROUP BY prefix ORDER BY prefix ON CONFLICT "
            "(prefix) DO UPDATE SET changes = s.changes + excluded.changes; RETURN NULL; END $$",
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_row() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN INSERT INTO lmt_scope_changes AS s (prefix, changes) SELECT p, 1 FROM "
            "(SELECT DISTINCT unnest(ARRAY[OLD.prefix, NEW.prefix]) AS p) x ORDER BY p COLLATE "
            '"C" ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + excluded.changes; '
            "RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_insert ON lmt_items",
            "CREATE TRIGGER lmt_scope_changes_insert AFTER INSERT ON lmt_items REFERENCING NEW "
            "TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "
            "lmt_scope_changes_statement()",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_delete ON lmt_items",
            "CREATE TRIGGER lmt_scope_changes_delete AFTER DELETE ON lmt_items REFERENCING OLD "
            "TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION "
            "lmt_scope_changes_statement()",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_update ON lmt_items",
            "CREATE TRIGGER lmt_scope_changes_update AFTER UPDATE OF id, prefix, value, doc_len "
            "ON lmt_items FOR EACH ROW EXECUTE FUNCTION lmt_scope_changes_row()",
        ),
    ),
    Migration(
        legacy=25,
        steps=(
            _scope_moves_column,
            'CREATE TABLE IF NOT EXISTS lmt_scope_moves (prefix TEXT COLLATE "C" NOT NULL)',
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_take(wanted text[]) RETURNS void "
            "LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN INSERT INTO "
            "lmt_scope_changes AS s (prefix, changes) SELECT p, 0 FROM (SELECT DISTINCT "
            'unnest(wanted) COLLATE "C" AS p) x ORDER BY p ON CONFLICT (prefix) DO UPDATE SET '
            "changes = s.changes; WITH folded AS (DELETE FROM lmt_scope_moves WHERE prefix = "
            "ANY(wanted) RETURNING prefix) UPDATE lmt_scope_changes s SET moves = s.moves + f.n "
            "FROM (SELECT prefix, count(*) AS n FROM folded GROUP BY prefix) f WHERE s.prefix = "
            "f.prefix; END $$",
            "CREATE INDEX IF NOT EXISTS lmt_scope_moves_prefix ON lmt_scope_moves (prefix)",
            "CREATE OR REPLACE FUNCTION lmt_scope_moves_row() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path FROM CURRENT AS $$ BEGIN INSERT INTO lmt_scope_moves (prefix) VALUES "
            "(NEW.prefix); RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_scope_moves_update ON lmt_items",
            "CREATE TRIGGER lmt_scope_moves_update AFTER UPDATE OF status, scope, kind, "
            "valid_from, valid_until, expires_at, event_at, created_at ON lmt_items FOR EACH ROW "
            "WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.scope IS DISTINCT FROM NEW.scope "
            "OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.valid_from IS DISTINCT FROM "
            "NEW.valid_from OR OLD.valid_until IS DISTINCT FROM NEW.valid_until OR OLD.expires_at "
            "IS DISTINCT FROM NEW.expires_at OR OLD.event_at IS DISTINCT FROM NEW.event_at OR "
            "OLD.created_at IS DISTINCT FROM NEW.created_at) EXECUTE FUNCTION "
            "lmt_scope_moves_row()",
        ),
    ),
    Migration(
        legacy=26,
        steps=(
            'CREATE TABLE IF NOT EXISTS lmt_item_changes (prefix TEXT COLLATE "C" NOT NULL, '
            "changes BIGINT NOT NULL, item_id TEXT NOT NULL, PRIMARY KEY (prefix, changes))",
            "CREATE OR REPLACE FUNCTION lmt_item_changes_cut() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path FROM CURRENT AS $$ BEGIN DELETE FROM lmt_item_changes WHERE prefix = "
            "NEW.prefix AND changes <= NEW.changes - 1024; RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_item_changes_cut ON lmt_item_changes",
            "CREATE TRIGGER lmt_item_changes_cut AFTER INSERT ON lmt_item_changes FOR EACH ROW "
            "WHEN (NEW.changes % 1024 = 0) EXECUTE FUNCTION lmt_item_changes_cut()",
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_statement() RETURNS trigger LANGUAGE "
            "plpgsql SET search_path FROM CURRENT AS $$ BEGIN WITH counted AS (SELECT prefix, "
            "count(*) AS n FROM changed_rows GROUP BY prefix), bumped AS (INSERT INTO "
            "lmt_scope_changes AS s (prefix, changes) SELECT prefix, n FROM counted ORDER BY "
            'prefix COLLATE "C" ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + '
            "excluded.changes RETURNING s.prefix, s.changes) INSERT INTO lmt_item_changes "
            "(prefix, changes, item_id) SELECT r.prefix, b.changes + 1 - row_number() OVER "
            "(PARTITION BY r.prefix ORDER BY r.id), r.id FROM changed_rows r JOIN bumped b ON "
            "b.prefix = r.prefix; RETURN NULL; END $$",
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_row() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path FROM CURRENT AS $$ BEGIN WITH pairs AS (SELECT DISTINCT p AS prefix, "
            "i AS id FROM (VALUES (OLD.prefix, OLD.id), (NEW.prefix, NEW.id)) x (p, i)), counted "
            "AS (SELECT prefix, count(*) AS n FROM pairs GROUP BY prefix), bumped AS (INSERT INTO "
            "lmt_scope_changes AS s (prefix, changes) SELECT prefix, n FROM counted ORDER BY "
            'prefix COLLATE "C" ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + '
            "excluded.changes RETURNING s.prefix, s.changes) INSERT INTO lmt_item_changes "
            "(prefix, changes, item_id) SELECT r.prefix, b.changes + 1 - row_number() OVER "
            "(PARTITION BY r.prefix ORDER BY r.id), r.id FROM pairs r JOIN bumped b ON b.prefix = "
            "r.prefix; RETURN NULL; END $$",
        ),
    ),
    Migration(
        legacy=30,
        steps=(
            "CREATE OR REPLACE FUNCTION lmt_scope_changes_updated() RETURNS trigger LANGUAGE "
            "plpgsql SET search_path FROM CURRENT AS $$ BEGIN WITH pairs AS (SELECT o.prefix, "
            "o.id FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id WHERE n.id IS NULL OR "
            "o.prefix IS DISTINCT FROM n.prefix OR o.value IS DISTINCT FROM n.value OR o.doc_len "
            "IS DISTINCT FROM n.doc_len OR o.terms IS DISTINCT FROM n.terms OR o.updated_at IS "
            "DISTINCT FROM n.updated_at UNION SELECT n.prefix, n.id FROM new_rows n LEFT JOIN "
            "old_rows o ON o.id = n.id WHERE o.id IS NULL OR o.prefix IS DISTINCT FROM n.prefix "
            "OR o.value IS DISTINCT FROM n.value OR o.doc_len IS DISTINCT FROM n.doc_len OR "
            "o.terms IS DISTINCT FROM n.terms OR o.updated_at IS DISTINCT FROM n.updated_at), "
            "counted AS (SELECT prefix, count(*) AS n FROM pairs GROUP BY prefix), bumped AS "
            "(INSERT INTO lmt_scope_changes AS s (prefix, changes) SELECT prefix, n FROM counted "
            'ORDER BY prefix COLLATE "C" ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + '
            "excluded.changes RETURNING s.prefix, s.changes) INSERT INTO lmt_item_changes "
            "(prefix, changes, item_id) SELECT r.prefix, b.changes + 1 - row_number() OVER "
            "(PARTITION BY r.prefix ORDER BY r.id), r.id FROM pairs r JOIN bumped b ON b.prefix = "
            "r.prefix; RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_scope_changes_update ON lmt_items",
            "CREATE TRIGGER lmt_scope_changes_update AFTER UPDATE ON lmt_items REFERENCING OLD "
            "TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "
            "lmt_scope_changes_updated()",
            "DROP FUNCTION IF EXISTS lmt_scope_changes_row()",
        ),
    ),
    Migration(
        legacy=32,
        steps=(
            "INSERT INTO lmt_scope_changes (prefix, changes) SELECT prefix, count(*) FROM "
            "lmt_items WHERE true GROUP BY prefix ON CONFLICT (prefix) DO UPDATE SET changes = "
            "lmt_scope_changes.changes + excluded.changes",
        ),
    ),
)

#: The counters (``lmt_scope_changes``), the moves and the change log (``lmt_item_changes``).
SCOPE_CHANGES = Component("scope_changes", sqlite=_SQLITE, postgres=_POSTGRES)
