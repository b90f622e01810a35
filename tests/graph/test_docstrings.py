"""The examples in the graph docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agent",
    "chat",
    "consolidation",
    "flows",
    "memory",
    "models",
    "offline_model",
    "prompts",
    "state",
    "studio",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"langmem_tiers.graph.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
