"""Scopes (an agent or a user) and the namespaces their memories live in.

A memory namespace is ``(*scope_labels, kind)`` where kind is ``episodic``, ``semantic``
or ``procedural``. A scope id is any non-empty string (``alice@example.com``); LangGraph
labels may not contain ``.``, be empty or start the namespace with ``langgraph``, so ids
are encoded reversibly into labels: ``%`` and ``.`` become ``%25`` and ``%2E`` and a
leading ``langgraph`` becomes ``%6Canggraph``.

Example:
    >>> namespace_for("alice@example.com", "semantic")
    ('alice@example%2Ecom', 'semantic')
    >>> decode_label(encode_label("alice@example.com"))
    'alice@example.com'
    >>> parse_memory_namespace(("alice@example%2Ecom", "semantic"))
    MemoryNamespace(scope=('alice@example%2Ecom',), kind='semantic')
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

from langmem_tiers.errors import InvalidNamespaceError

__all__ = [
    "MEMORY_KINDS",
    "MemoryKind",
    "MemoryNamespace",
    "decode_label",
    "encode_label",
    "namespace_for",
    "parse_memory_namespace",
]

MemoryKind = Literal["episodic", "semantic", "procedural"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)

_MAX_LABEL_CHARS = 512


class MemoryNamespace(NamedTuple):
    """A namespace split into its scope labels and its memory kind (None: a plain document)."""

    scope: tuple[str, ...]
    kind: MemoryKind | None


def encode_label(scope_id: str) -> str:
    """Encode any non-empty id as a valid LangGraph namespace label (reversibly)."""
    if not isinstance(scope_id, str) or not scope_id:
        raise InvalidNamespaceError(
            f"scope id must be a non-empty string, got {scope_id!r}; pass the agent or user id."
        )
    if "\x00" in scope_id:
        raise InvalidNamespaceError(
            f"scope id may not contain NUL bytes, got {scope_id!r}; remove the '\\x00'."
        )
    if len(scope_id) > _MAX_LABEL_CHARS:
        raise InvalidNamespaceError(
            f"scope id is {len(scope_id)} characters long; the limit is {_MAX_LABEL_CHARS}."
        )
    label = scope_id.replace("%", "%25").replace(".", "%2E")
    if label.startswith("langgraph"):
        label = "%6C" + label[1:]
    return label


def decode_label(label: str) -> str:
    """Invert :func:`encode_label`."""
    out: list[str] = []
    i = 0
    while i < len(label):
        if label[i] == "%":
            try:
                out.append(chr(int(label[i + 1 : i + 3], 16)))
            except ValueError as err:
                raise InvalidNamespaceError(
                    f"label {label!r} is not an encoded scope id (bad escape at {i})."
                ) from err
            i += 3
        else:
            out.append(label[i])
            i += 1
    return "".join(out)


def namespace_for(scope_id: str | tuple[str, ...], kind: MemoryKind) -> tuple[str, ...]:
    """The namespace of ``kind`` memories of a scope.

    ``scope_id`` is one id (encoded into one label) or a tuple of ids for nested scopes,
    e.g. ``("org_1", "alice")``.
    """
    if kind not in MEMORY_KINDS:
        raise InvalidNamespaceError(f"kind must be one of {', '.join(MEMORY_KINDS)}, got {kind!r}.")
    ids = (scope_id,) if isinstance(scope_id, str) else tuple(scope_id)
    if not ids:
        raise InvalidNamespaceError("scope must name at least one id, got an empty tuple.")
    return (*(encode_label(i) for i in ids), kind)


def parse_memory_namespace(namespace: tuple[str, ...]) -> MemoryNamespace:
    """Split a namespace into scope and kind; a namespace not ending in a kind is a plain document."""
    if len(namespace) >= 2 and namespace[-1] in MEMORY_KINDS:
        return MemoryNamespace(tuple(namespace[:-1]), namespace[-1])
    return MemoryNamespace(tuple(namespace), None)
