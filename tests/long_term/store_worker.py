"""A second process on a store's database, for the differential contract test.

Run as ``python store_worker.py URL SCOPE_CACHE_ITEMS``: it opens a TieredMemoryStore on
``URL`` with the tests' deterministic embeddings and applies the operations it reads
from stdin, one JSON object a line (``{"op": "put", "namespace": [...], "key": ...,
"value": {...}, "ttl": null}`` or ``{"op": "delete", "namespace": [...], "key": ...}``),
answering each with one line: ``ok`` or ``error: <reason>``. It ends at end of input.
"""

from __future__ import annotations

import json
import sys

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from tests.long_term.fakes import default_index


def main(url: str, scope_cache_items: int) -> None:
    """Serve operations from stdin until it closes."""
    settings = Settings.from_env(scope_cache_items=scope_cache_items, environ={}, dotenv=None)
    with TieredMemoryStore.from_url(url, index=default_index(), settings=settings) as store:
        print("ready", flush=True)
        for line in sys.stdin:
            op = json.loads(line)
            try:
                if op["op"] == "put":
                    store.put(tuple(op["namespace"]), op["key"], op["value"], ttl=op["ttl"])
                elif op["op"] == "delete":
                    store.delete(tuple(op["namespace"]), op["key"])
                else:
                    raise ValueError(f"unknown op {op['op']!r}")
            except Exception as err:  # reported to the test, which fails on it
                print(f"error: {type(err).__name__}: {err}".replace("\n", " "), flush=True)
            else:
                print("ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
