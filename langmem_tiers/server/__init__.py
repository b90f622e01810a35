"""The HTTP API of the long-term memory engine (extra ``server``: FastAPI and uvicorn).

Example:
    >>> from langmem_tiers.server import create_app
    >>> create_app("sqlite:///:memory:").title
    'langmem-tiers'
"""

from langmem_tiers.server.app import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_POOL_SIZE,
    ServerState,
    create_app,
    serve,
)
from langmem_tiers.server.keys import ApiKey, ApiKeys, CreatedKey

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_POOL_SIZE",
    "ApiKey",
    "ApiKeys",
    "CreatedKey",
    "ServerState",
    "create_app",
    "serve",
]
