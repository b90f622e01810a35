"""The examples in the memory engine's docstrings run."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from langmem_tiers.long_term import (
    conflicts,
    consolidation,
    engine,
    lifecycle,
    memory,
    steps,
    validate,
)

from . import fakes


@pytest.mark.parametrize(
    "module", [conflicts, consolidation, engine, lifecycle, memory, steps, validate, fakes]
)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
