"""Retrieval tests also exercise ``benchmarks/`` (a top-level folder, not an installed package)."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    # pytest puts only the test roots on sys.path; the benchmarks live beside them.
    sys.path.insert(0, _ROOT)
