"""The memory inspector: read-only pages of what an agent remembers, in the browser.

Served under ``/ui`` of the HTTP server (``langmem-tiers serve``) and by ``langmem-tiers
inspect``, behind the server's API keys (see :mod:`.access`). The pages are drawn on the
server from what :mod:`.reads` reads through the store's and the engine's public methods:
:mod:`.pages` (the routes, the scopes and a scope with its search), :mod:`.memory_pages`
(a memory, time travel), :mod:`.session_page`, sharing :mod:`.frame` (sign-in, errors,
parameters), :mod:`.html` (escaping) and :mod:`.svg` (plots).
"""

from langmem_tiers.server.inspector.pages import build_inspector_router
from langmem_tiers.server.inspector.serve import inspect_url, serve_inspector

__all__ = ["build_inspector_router", "inspect_url", "serve_inspector"]
