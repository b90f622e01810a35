"""``python -m langmem_tiers``: the command line (same as the ``langmem-tiers`` script)."""

from langmem_tiers.cli import main

raise SystemExit(main())
