"""The examples in the command line's docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["demo", "ingest", "main"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"langmem_tiers.cli.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
