"""The step-by-step pages in docs/ and the README's "Six ways to use it" run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
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


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _readme_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return _BLOCK.findall(_section(readme, "## Six ways to use it"))


def test_the_readme_s_six_ways_have_their_snippets() -> None:
    blocks = _readme_blocks()
    assert len(blocks) >= 5
    for name in ("create_agent", "RunnableWithMessageHistory", "build_tiered_chat_graph"):
        assert any(name in block for block in blocks), name


@pytest.mark.parametrize("index", range(len(_readme_blocks())))
def test_each_readme_snippet_runs_as_written(
    index: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each snippet on its own, in a fresh namespace, offline, on the embedded default store
    (the test's own data directory)."""
    block = _readme_blocks()[index]
    namespace: dict[str, object] = {"__name__": "__main__"}
    try:
        exec(compile(block, f"README.md six ways, block {index + 1}", "exec"), namespace)
    except Exception as err:
        raise AssertionError(
            f"README.md, six ways, code block {index + 1} failed: {err!r}"
        ) from err
    printed = capsys.readouterr().out
    for marker, expected in _PRINTS.items():
        if marker in block:
            assert printed == expected, (marker, printed)


# What a snippet prints, where the README says it (the snippet named by a call it makes).
_PRINTS = {
    "create_agent(": "The user prefers green tea.\n['The user prefers green tea.']\n",
    "build_tiered_chat_graph(": "The user prefers green tea.\n['The user prefers green tea.']\n",
    "afrom_url(": "Alice prefers green tea\n",
}


def test_the_notebooks_describe_the_score_as_the_readme_does() -> None:
    """The gated score with an absolute relevance, never the linear sum with a relevance
    relative to the other candidates."""
    import json

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    formula = "semantic x (0.4 + 0.25 recency + 0.15 frequency + 0.2 confidence)"
    assert f"The hybrid score is *gated*: `{formula}`" in readme
    for name in ("01_quickstart.ipynb", "03_long_term_memory.ipynb"):
        cells = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        assert formula in text, name
        assert "0.4 semantic +" not in text, name
        assert "relative to the other candidates" not in text, name
