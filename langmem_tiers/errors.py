"""The one exception tree of langmem_tiers.

Every error the package raises on purpose is a :class:`LangmemTiersError`. Each leaf
also subclasses the builtin a caller would naturally catch, so ``except ValueError``
keeps working around code that validates input::

    LangmemTiersError
    ├── ConfigurationError (ValueError)        a setting is invalid (name, value, fix)
    │   └── InvalidStateError                  also asyncio.InvalidStateError: a sync call
    │                                          on the event loop of an async store
    ├── MissingDependencyError (ImportError)   an optional extra is not installed
    ├── ValidationError (ValueError)           bad input at the public edge
    │   ├── InvalidNamespaceError              also langgraph's InvalidNamespaceError
    │   ├── InvalidFilterError
    │   ├── InvalidContentError                empty, oversized, NUL bytes, not JSON
    │   ├── DimensionMismatchError             a vector of the wrong length
    │   ├── FormatVersionError                 an export newer than this package reads
    │   └── InvalidTierError
    ├── NotFoundError (LookupError)            no such memory / message in this scope
    ├── ConflictError                          a write was refused by a conflict rule
    ├── BackendError (RuntimeError)            the database or vector index failed
    │   └── MigrationError
    ├── EmbeddingError (RuntimeError)          the embedder failed or returned garbage
    └── ModelError (RuntimeError)              the chat model failed or returned garbage

Messages say what was wrong, the value received, and how to fix it.
"""

from __future__ import annotations

import asyncio

from langgraph.store.base import InvalidNamespaceError as _LangGraphInvalidNamespaceError

__all__ = [
    "BackendError",
    "ConfigurationError",
    "ConflictError",
    "DimensionMismatchError",
    "EmbeddingError",
    "FormatVersionError",
    "InvalidContentError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidStateError",
    "InvalidTierError",
    "LangmemTiersError",
    "MigrationError",
    "MissingDependencyError",
    "ModelError",
    "NotFoundError",
    "ValidationError",
]


class LangmemTiersError(Exception):
    """Base class of every error raised on purpose by langmem_tiers."""


class ConfigurationError(LangmemTiersError, ValueError):
    """A setting (argument, environment variable or preset) is invalid."""


class InvalidStateError(ConfigurationError, asyncio.InvalidStateError):
    """A sync method was called on the event loop of a store opened with an async connection.

    It is also an ``asyncio.InvalidStateError``, what LangGraph's async stores raise then.
    """


class MissingDependencyError(LangmemTiersError, ImportError):
    """An optional extra is needed for what was asked and is not installed."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the '{module}' package, which is not installed. "
            f"Install it with: pip install 'langmem-tiers[{extra}]'"
        )
        self.extra = extra


class ValidationError(LangmemTiersError, ValueError):
    """Input at the public edge is invalid; nothing was stored."""


class InvalidNamespaceError(ValidationError, _LangGraphInvalidNamespaceError):
    """A namespace or scope id cannot be used."""


class InvalidFilterError(ValidationError):
    """A search filter uses an unknown operator or an invalid value."""


class InvalidContentError(ValidationError):
    """Content is empty, too large, holds NUL bytes or is not JSON-serialisable."""


class DimensionMismatchError(ValidationError):
    """A vector does not have the dimensions the index was created with."""


class FormatVersionError(ValidationError):
    """An export file of a format version newer than this package reads."""


class InvalidTierError(ValidationError):
    """A tier level outside 1..3, or a tier request that cannot be honoured."""


class NotFoundError(LangmemTiersError, LookupError):
    """The memory or message does not exist in the caller's scope."""


class ConflictError(LangmemTiersError):
    """A write was refused by a conflict rule (for example ``reject_new``)."""


class BackendError(LangmemTiersError, RuntimeError):
    """The database or the vector index failed; the operation was rolled back."""


class MigrationError(BackendError):
    """The schema could not be brought to the version this package needs."""


class EmbeddingError(LangmemTiersError, RuntimeError):
    """The embedder raised or returned vectors of the wrong shape."""


class ModelError(LangmemTiersError, RuntimeError):
    """The chat model raised or returned output that could not be used."""
