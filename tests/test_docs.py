"""The step-by-step pages in docs/ run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks(page: str) -> list[str]:
    return _BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", ["presets.md"])
def test_every_code_block_runs_in_order(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks(page)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {"__name__": f"docs.{page}"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{page} block {i + 1}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{page}, code block {i + 1} failed: {err!r}") from err
