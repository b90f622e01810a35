"""``langmem-tiers inspect``: the memory inspector in the browser (the 'server' extra).

Example:
    $ langmem-tiers inspect --url sqlite:///memory.db
    memory inspector: open http://127.0.0.1:8090/ui/?key=...
"""

from __future__ import annotations

import argparse

from langmem_tiers.cli.main import settings_for

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Serve the inspector on loopback over ``--url`` until stopped; prints its link."""
    from langmem_tiers.server.inspector import serve_inspector

    settings = settings_for(args)
    serve_inspector(settings.url, settings=settings, port=args.port, log_level=args.log_level)
    return 0
