"""The examples in the short-term memory docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "records",
    "log",
    "jsonl_log",
    "policies",
    "effects",
    "consolidation",
    "context",
    "memory",
    "presets",
    "history",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"langmem_tiers.short_term.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
