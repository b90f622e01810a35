"""Validation at the store's edge and the mapping of a value onto the memory columns.

A put is validated completely before any I/O, so a bad op in a batch stores nothing.
Memory kinds (namespaces ending in ``episodic``, ``semantic`` or ``procedural``) have
columns taken from well-known keys of the value; the value itself is stored unchanged
and comes back from ``get`` exactly as it was put.

Well-known keys (all optional):

=============  =================================================================
all kinds      ``content`` (a string, or any JSON: structured content is kept as
               given and rendered to text), ``confidence`` (0..1), ``importance``
               (>= 0), ``status``
episodic       ``event_timestamp`` (ISO-8601), ``session_id``, ``actor``,
               ``action_type``
semantic       ``subject``, ``category``, ``valid_from``, ``valid_until``,
               ``session_id`` (the conversation a summary or a fact comes from)
procedural     ``key`` (defaults to the item key)
=============  =================================================================

A memory needs text, to be searched and checked for contradictions: its ``content``
rendered by :func:`memory_text` (or, without a ``content``, the rest of the value), so a
LangMem memory such as ``{"kind": "Memory", "content": {"content": "Jo likes tea"}}`` is
indexed as ``Jo likes tea``.

Example:
    >>> memory_text({"kind": "Memory", "content": {"content": "Jo likes tea"}})
    'Jo likes tea'
    >>> memory_text({"content": {"name": "Jo", "languages": ["en", "pt"]}})
    'name: Jo; languages: en, pt'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.store.base import get_text_at_path, tokenize_path

from langmem_tiers.errors import InvalidContentError, InvalidNamespaceError
from langmem_tiers.long_term.store.scope import parse_memory_namespace
from langmem_tiers.sql.item_ids import item_id

__all__ = [
    "STATUSES",
    "ItemRecord",
    "as_namespace",
    "item_id",
    "join_namespace",
    "json_utf8_error",
    "memory_text",
    "parse_timestamp",
    "split_namespace",
    "texts_to_index",
    "utf8_error",
    "validate_key",
    "validate_namespace",
    "validate_value",
    "validate_value_json",
]

STATUSES = ("active", "superseded", "decayed", "deleted", "compressed")
MAX_LABEL_CHARS = 512
MAX_KEY_CHARS = 1024


class ItemRecord(NamedTuple):
    """Column values of one item, from its namespace, key and value."""

    id: str
    prefix: str
    key: str
    scope: str
    kind: str | None
    value: dict[str, Any]
    event_at: datetime | None
    session_id: str | None
    actor: str | None
    action_type: str | None
    subject: str | None
    category: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    proc_key: str | None
    confidence: float
    importance: float
    status: str
    text: str = ""
    """The memory's text (:func:`memory_text`); empty for plain documents."""


# JSON escapes a NUL character as \u0000; typed text "\u0000" is escaped again (\\u0000).
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def has_nul_escape(encoded_json: str) -> bool:
    """Whether JSON text encodes a NUL character (not the six typed characters ``\\u0000``)."""
    # The substring test is a plain scan, many times faster than the regex it spares.
    return "\\u0000" in encoded_json and _NUL_ESCAPE.search(encoded_json) is not None


def utf8_error(text: str, field: str) -> str | None:
    """Why ``text`` (named ``field``) cannot be stored, or ``None`` when it can.

    A lone surrogate (what ``surrogateescape`` decoding makes of bytes that are not UTF-8)
    cannot be encoded as UTF-8, so no backend can write it, and an embedder fails on it.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"{field} is not valid Unicode: it holds the lone surrogate {text[err.start]!r} at "
            f"character {err.start}, which cannot be stored as UTF-8. Decode the source bytes "
            "as UTF-8 (with errors='replace' if they may be invalid)."
        )
    return None


def json_utf8_error(value: Any, encoded_json: str, where: str, *, sep: str = ": ") -> str | None:
    """Why a JSON value cannot be stored as UTF-8, naming the string at fault, or ``None``.

    ``encoded_json`` is the value's JSON text (``ensure_ascii=False``): encoding it once is
    the whole check of a valid value; the value is walked only to name the string that
    failed. Names read ``{where}{sep}{path}``.
    """
    whole = utf8_error(encoded_json, where)
    if whole is None:
        return None
    for path, text in _json_strings(value):
        found = utf8_error(text, f"{where}{sep}{path}" if path else where)
        if found is not None:
            return found
    return whole


def _json_strings(value: Any) -> Iterator[tuple[str, str]]:
    """``(path, text)`` of every string of a JSON value, keys too, in document order.

    Iterative: the value may be as deep as ``json.dumps`` accepted.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path, node
        elif isinstance(node, Mapping):
            children: list[tuple[str, Any]] = []
            for k, inner in node.items():
                if isinstance(k, str):
                    yield (f"key {k!r} of {path}" if path else f"key {k!r}"), k
                name = str(k)
                children.append((f"{path}.{name}" if path else name, inner))
            stack.extend(reversed(children))
        elif isinstance(node, (list, tuple)):
            stack.extend(reversed([(f"{path}[{i}]", inner) for i, inner in enumerate(node)]))


# Keys of a memory value that describe it rather than say something: left out of its text
# when there is no ``content`` to render.
_META_KEYS = frozenset(
    {
        "confidence", "importance", "status", "event_timestamp", "session_id", "actor",
        "action_type", "subject", "category", "valid_from", "valid_until", "kind",
        "source_episodic_ids", "source_message_ids", "source_session_id",
        "source_session_ids", "supersedes", "superseded_by", "conflicts_with",
        "consolidated_into_id", "consolidated_at", "metadata", "key_concepts",
    }
)  # fmt: skip
# Keys whose string value is the text itself (``{"content": "..."}`` renders as ``...``).
_TEXT_KEYS = frozenset({"content", "text", "memory", "fact", "statement", "summary"})


def _render(node: Any, depth: int = 0) -> str:
    if depth > 50:  # the value was checked by json.dumps: this only bounds the walk
        return json.dumps(node, ensure_ascii=False, sort_keys=True)
    if isinstance(node, str):
        return " ".join(node.split())
    if node is None:
        return ""
    if isinstance(node, bool):
        return "yes" if node else "no"
    if isinstance(node, (int, float)):
        return str(node)
    if isinstance(node, Mapping):
        parts = []
        for k, inner in node.items():
            text = _render(inner, depth + 1)
            if text:
                alone = k in _TEXT_KEYS and isinstance(inner, str)
                parts.append(text if alone else f"{k}: {text}")
        return "; ".join(parts)
    if isinstance(node, (list, tuple)):
        return ", ".join(t for t in (_render(inner, depth + 1) for inner in node) if t)
    return str(node)


def memory_text(value: Mapping[str, Any]) -> str:
    """The text of a memory value: its ``content``, rendered when it is structured.

    Without a ``content`` key, the value's other fields (not the well-known metadata
    like ``confidence`` or ``session_id``) are rendered. An empty string means the value
    says nothing a search could find.
    """
    if "content" in value:
        return _render(value["content"])
    return _render({k: v for k, v in value.items() if k not in _META_KEYS})


def join_namespace(namespace: Sequence[str]) -> str:
    """Namespaces are stored as labels joined by ``.`` (labels never contain one)."""
    return ".".join(namespace)


def split_namespace(prefix: str) -> tuple[str, ...]:
    return tuple(prefix.split("."))


def as_namespace(namespace: Any, *, field: str = "namespace") -> tuple[str, ...]:
    """A namespace given as any sequence of labels (a list, as LangGraph accepts), as a tuple.

    Example:
        >>> as_namespace(["agent_a", "semantic"])
        ('agent_a', 'semantic')
    """
    if isinstance(namespace, tuple):
        return namespace
    if isinstance(namespace, (str, bytes)) or not isinstance(namespace, Sequence):
        raise InvalidNamespaceError(
            f"{field} must be a tuple (or list) of strings, got {type(namespace).__name__} "
            f"{namespace!r}; e.g. ('agent_a', 'semantic')."
        )
    return tuple(namespace)


def validate_namespace(
    namespace: Any,
    *,
    field: str = "namespace",
    prefix: bool = False,
    reserved_ok: bool = False,
) -> None:
    """Raise InvalidNamespaceError unless ``namespace`` is a valid (prefix of a) namespace.

    ``reserved_ok`` allows a first label ``langgraph``, which only LangGraph's public
    ``put`` refuses (its own server writes there through ``batch``).
    """
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"{field} must be a tuple of strings, got {type(namespace).__name__} {namespace!r}."
        )
    if not namespace and not prefix:
        raise InvalidNamespaceError(f"{field} cannot be empty; pass e.g. ('agent_a', 'semantic').")
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(
                f"{field} labels must be non-empty strings, got {label!r} in {namespace!r}."
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"{field} label {label!r} contains '.', which separates labels; encode ids with "
                "langmem_tiers.long_term.store.scope.encode_label (e.g. for e-mail addresses)."
            )
        if "\x00" in label:
            raise InvalidNamespaceError(f"{field} label {label!r} contains a NUL byte.")
        if len(label) > MAX_LABEL_CHARS:
            raise InvalidNamespaceError(
                f"{field} label is {len(label)} characters; the limit is {MAX_LABEL_CHARS}."
            )
        refusal = utf8_error(label, f"{field} label {label!r}")
        if refusal is not None:
            raise InvalidNamespaceError(refusal)
    if namespace and namespace[0] == "langgraph" and not prefix and not reserved_ok:
        raise InvalidNamespaceError(
            f"{field} may not start with 'langgraph' (reserved by LangGraph), got {namespace!r}."
        )


def validate_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidContentError(f"key must be a non-empty string, got {key!r}.")
    if "\x00" in key:
        raise InvalidContentError(f"key {key!r} contains a NUL byte; remove it.")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidContentError(f"key is {len(key)} characters; the limit is {MAX_KEY_CHARS}.")
    refusal = utf8_error(key, f"key {key!r}")
    if refusal is not None:
        raise InvalidContentError(refusal)
    return key


# The JSON text a value is stored as (what ``Dialect.json_param`` writes), refusing NaN.
_encode_value = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def validate_value(
    namespace: tuple[str, ...], key: str, value: Any, *, max_chars: int
) -> ItemRecord:
    """Check a value and extract its memory columns; raise InvalidContentError when bad."""
    return validate_value_json(namespace, key, value, max_chars=max_chars)[0]


def validate_value_json(
    namespace: tuple[str, ...], key: str, value: Any, *, max_chars: int
) -> tuple[ItemRecord, str]:
    """:func:`validate_value`, with the value's JSON text as stored (encoded once, here).

    ``max_chars`` bounds that text: compact JSON, non-ASCII characters counted once.
    """
    where = f"value of {join_namespace(namespace)}/{key}"
    encoded = _checked_json(value, where, max_chars)
    plain: dict[str, Any] = dict(value) if _flat_json(value) else json.loads(encoded)
    scope, kind = parse_memory_namespace(namespace)
    confidence, importance, status = 1.0, 1.0, "active"
    cols: dict[str, Any] = {}
    text = ""
    if kind is not None:
        text = memory_text(plain)
        if not text:
            shown = plain.get("content", plain)
            raise InvalidContentError(
                f"{where}: {kind} memories need some text to search: a non-empty 'content' "
                f"(a string, or a JSON object or list holding text), got {shown!r:.200}."
            )
        confidence = _unit_float(plain, "confidence", where, default=1.0)
        importance = _nonneg_float(plain, "importance", where, default=1.0)
        status = plain.get("status", "active")
        if status not in STATUSES:
            raise InvalidContentError(
                f"{where}: status must be one of {', '.join(STATUSES)}, got {status!r}."
            )
        cols = _kind_columns(plain, kind, key, where)
    record = ItemRecord(
        id=item_id(namespace, key),
        prefix=join_namespace(namespace),
        key=key,
        scope=join_namespace(scope),
        kind=kind,
        value=plain,
        event_at=cols.get("event_at"),
        session_id=cols.get("session_id"),
        actor=cols.get("actor"),
        action_type=cols.get("action_type"),
        subject=cols.get("subject"),
        category=cols.get("category"),
        valid_from=cols.get("valid_from"),
        valid_until=cols.get("valid_until"),
        proc_key=cols.get("proc_key"),
        confidence=confidence,
        importance=importance,
        status=status,
        text=text,
    )
    return record, encoded


def _checked_json(value: Any, where: str, max_chars: int) -> str:
    """The value's stored JSON text, refused with a message naming the fault if it can't be stored."""
    if not isinstance(value, Mapping):
        raise InvalidContentError(f"{where} must be a dict (mapping), got {type(value).__name__}.")
    for k in value:
        if not isinstance(k, str):
            raise InvalidContentError(f"{where} has a non-string key {k!r}; JSON keys are strings.")
    try:
        encoded = _encode_value(value)
    except (TypeError, ValueError) as err:
        raise InvalidContentError(
            f"{where} is not JSON-serialisable ({err}); store only str, int, float, bool, None, "
            "lists and dicts."
        ) from err
    except RecursionError as err:
        raise InvalidContentError(f"{where} is nested too deeply to store.") from err
    if has_nul_escape(encoded):
        raise InvalidContentError(f"{where} contains a NUL byte (\\x00) in a string; remove it.")
    if len(encoded) > max_chars:
        raise InvalidContentError(
            f"{where} is {len(encoded)} characters of JSON; the limit (max_content_chars) is "
            f"{max_chars}. Split it, or raise the limit."
        )
    refusal = json_utf8_error(value, encoded, where)
    if refusal is not None:
        raise InvalidContentError(refusal)
    return encoded


def _kind_columns(plain: dict[str, Any], kind: str, key: str, where: str) -> dict[str, Any]:
    """The columns a memory kind takes from well-known keys of its value."""
    cols: dict[str, Any] = {}
    if kind == "episodic":
        cols["event_at"] = _optional_time(plain, "event_timestamp", where)
        for name in ("session_id", "actor", "action_type"):
            cols[name] = _optional_str(plain, name, where)
    elif kind == "semantic":
        cols["session_id"] = _optional_str(plain, "session_id", where)
        cols["subject"] = _optional_str(plain, "subject", where)
        cols["category"] = _optional_str(plain, "category", where)
        cols["valid_from"] = _optional_time(plain, "valid_from", where)
        cols["valid_until"] = _optional_time(plain, "valid_until", where)
    else:
        cols["proc_key"] = _optional_str(plain, "key", where) or key
    return cols


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat_json(value: Mapping[str, Any]) -> bool:
    """Whether ``value`` (encoded without error) is a dict of str keys and JSON scalars,
    exactly those types: its JSON text then reads back as a plain copy of it, which
    ``dict(value)`` makes without decoding that text (the usual value: one or a few
    strings)."""
    return (
        type(value) is dict
        and all(type(k) is str for k in value)
        and all(type(v) in _JSON_SCALARS for v in value.values())
    )


def texts_to_index(record: ItemRecord, fields: Sequence[str] | None) -> list[tuple[str, str]]:
    """``(field_id, text)`` pairs to embed for an item.

    ``fields=None`` means the default: ``content`` for memory kinds, the whole value
    (``$``) for plain documents.
    """
    if fields is None:
        fields = ["content"] if record.kind is not None else ["$"]
    out: list[tuple[str, str]] = []
    for path in fields:
        if path == "$":
            out.append(("$", json.dumps(record.value, ensure_ascii=False, sort_keys=True)))
            continue
        if path == "content" and record.kind is not None:
            # A memory's text, also when its content is structured or absent.
            out.append(("content", record.text))
            continue
        texts = get_text_at_path(record.value, tokenize_path(path))
        for i, text in enumerate(texts):
            if text and text.strip():
                out.append((f"{path}#{i}" if len(texts) > 1 else path, text))
    return out


def parse_timestamp(raw: Any, *, field: str) -> datetime:
    """An aware datetime from an ISO-8601 string or a datetime (naive means UTC)."""
    if isinstance(raw, datetime):
        parsed = raw
    elif isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError as err:
            raise InvalidContentError(
                f"{field} must be an ISO-8601 timestamp like 2024-05-01T12:00:00+00:00, "
                f"got {raw!r}."
            ) from err
    else:
        raise InvalidContentError(f"{field} must be an ISO-8601 string, got {raw!r}.")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _optional_time(value: Mapping[str, Any], name: str, where: str) -> datetime | None:
    raw = value.get(name)
    return None if raw is None else parse_timestamp(raw, field=f"{where}: {name}")


def _optional_str(value: Mapping[str, Any], name: str, where: str) -> str | None:
    raw = value.get(name)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidContentError(f"{where}: {name} must be a string, got {raw!r}.")
    return raw


def _unit_float(value: Mapping[str, Any], name: str, where: str, *, default: float) -> float:
    raw = value.get(name, default)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= 1:
        raise InvalidContentError(f"{where}: {name} must be a number in [0, 1], got {raw!r}.")
    return float(raw)


def _nonneg_float(value: Mapping[str, Any], name: str, where: str, *, default: float) -> float:
    raw = value.get(name, default)
    if (
        isinstance(raw, bool)
        or not isinstance(raw, (int, float))
        or not math.isfinite(raw)
        or raw < 0
    ):
        raise InvalidContentError(f"{where}: {name} must be a number >= 0, got {raw!r}.")
    return float(raw)
