"""The examples in the server's docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["langmem_tiers.server", "app", "auth", "errors", "keys", "models"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name if "." in name else f"langmem_tiers.server.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
