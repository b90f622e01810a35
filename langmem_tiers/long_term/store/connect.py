"""What a store is opened with: its index configuration, a connection string, a Qdrant client."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

from langmem_tiers.embeddings import OfflineEmbeddings, resolve_embeddings
from langmem_tiers.errors import ConfigurationError, MissingDependencyError

__all__ = ["DISTANCES", "check_name", "conn_string_url", "qdrant_client", "resolve_index"]

#: The distances an index config may name: those LangGraph's stores take for float
#: vectors. Vectors are stored unit-normalised, and on unit vectors all three rank alike:
#: the squared L2 distance is ``2 - 2 * cosine`` and the inner product is the cosine. So
#: every one is ranked by cosine similarity, and the fused score's semantic part stays
#: the cosine (in [0, 1]) whichever is named.
DISTANCES = ("cosine", "l2", "inner_product")


def resolve_index(
    index: IndexConfig | None, embeddings: Embeddings | str | None
) -> tuple[Embeddings, int, list[str] | None]:
    if index is not None and embeddings is not None:
        raise ConfigurationError("pass either index= or embeddings=, not both.")
    spec: Any = embeddings
    dims: int | None = None
    fields: list[str] | None = None
    if index is not None:
        if not isinstance(index, dict):
            raise ConfigurationError(f"index must be a dict like IndexConfig, got {index!r}.")
        distance = index.get("distance_type", "cosine")
        if distance not in DISTANCES:
            raise ConfigurationError(
                f"index['distance_type'] must be one of {list(DISTANCES)} (float vectors), got "
                f"{distance!r}; leave it out for 'cosine'."
            )
        spec = index.get("embed")
        dims = index.get("dims")
        raw_fields = index.get("fields")
        fields = list(raw_fields) if raw_fields is not None else None
    embed = resolve_embeddings(spec)
    if dims is None:
        dims = getattr(embed, "dims", None)
    if dims is None:
        raise ConfigurationError(
            "index['dims'] is required for these embeddings: pass index={'dims': N, 'embed': ...} "
            "with the length of the embedder's vectors."
        )
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ConfigurationError(f"index['dims'] must be a whole number >= 1, got {dims!r}.")
    if isinstance(embed, OfflineEmbeddings) and embed.dims != dims:
        embed = OfflineEmbeddings(dims=dims)
    return embed, dims, fields


_CONNINFO = re.compile(r"^\s*\w+\s*=")


def conn_string_url(conn_string: str) -> str:
    """A URL for what LangGraph's ``from_conn_string`` takes: a URL, libpq key=value, a path."""
    if not isinstance(conn_string, str) or not conn_string:
        raise ConfigurationError(
            f"conn_string must be a non-empty string (a URL or an SQLite path), got "
            f"{conn_string!r}."
        )
    if "://" in conn_string or _CONNINFO.match(conn_string):
        return conn_string
    return f"sqlite:///{conn_string}"


def qdrant_client(location: str) -> Any:
    try:
        from qdrant_client import QdrantClient
    except ImportError as err:
        raise MissingDependencyError("Qdrant vectors", "qdrant", "qdrant-client") from err
    if location == ":memory:":
        return QdrantClient(location=":memory:")
    if location.startswith(("http://", "https://")):
        return QdrantClient(url=location)
    return QdrantClient(path=location)


def check_name(name: str, field: str) -> None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]{0,62}", name):
        raise ConfigurationError(
            f"{field} must be 1-63 letters, digits, '_' or '-' starting with a letter, got {name!r}."
        )
