"""The ``langmem-tiers`` command line (``python -m langmem_tiers`` runs it too).

Example:
    $ langmem-tiers demo
    $ langmem-tiers search "launch date" --scope demo-1a2b3c4d
"""

from langmem_tiers.cli.main import main

__all__ = ["main"]
