"""The examples in the retrieval modules' docstrings run."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import benchmarks.locomo
from langmem_tiers import embeddings
from langmem_tiers.long_term import fusion, lexical


@pytest.mark.parametrize("module", [lexical, fusion, embeddings, benchmarks.locomo])
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
