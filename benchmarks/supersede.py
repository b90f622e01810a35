"""Whether updates said in ordinary words supersede the old fact offline, and adds do not.

Each pair of the corpus (``tests/engine/data/updates.json``) is two user messages,
ingested one day apart into a scope of its own exactly as a user would
(``langmem-tiers ingest FILE --scope ID``: the conversation path, the offline tierer and
contradiction rules, the offline embedder), then searched as ``langmem-tiers search``
does (:meth:`~langmem_tiers.long_term.engine.engine.MemoryEngine.retrieve`, semantic and
procedural memories). For an *update* ("I live in Berlin." then "I moved to Munich last
month.") the pair counts as superseded when no active memory holds the old value any
more, and as right when, besides, the first search result holds the new value. For an
*add* ("I have a dog." then "I also have a cat.") a memory holding the old value must stay
active: if none does, the add was a wrong supersede.

- ``recall``: updates right / updates;
- ``precision``: supersedes that were updates / all supersedes (updates superseded plus
  adds wrongly superseded);
- ``wrong_supersedes``: adds whose old fact was no longer active;
- ``not_stored``: pairs whose first message left no memory holding the old value (the
  conversation path keeps only sentences that state something): they count as missed
  updates, and as no supersede for adds.

Run from the repository root::

    python -m benchmarks.supersede [--corpus path.json] [--out path.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.report import write_results
from langmem_tiers import TieredMemoryStore
from langmem_tiers.cli import main as cli
from langmem_tiers.long_term.engine.engine import MemoryEngine

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT / "tests" / "engine" / "data" / "updates.json"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "supersede.json"
_KINDS = ["semantic", "procedural"]


def _ingest(folder: Path, url: str, scope: str, pair: dict[str, Any]) -> None:
    path = folder / f"{scope}.jsonl"
    lines = [
        {"role": "user", "content": pair["before"], "at": "2026-01-10T09:00:00+00:00"},
        {"role": "user", "content": pair["after"], "at": "2026-01-11T09:00:00+00:00"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    argv = ["ingest", str(path), "--scope", scope, "--url", url, "--no-progress", "--json"]
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(argv)
    if code != 0:
        raise RuntimeError(f"ingest of {scope} failed with exit code {code}")


def _holds(content: str, value: str) -> bool:
    return value.casefold() in content.casefold()


def judge(engine: MemoryEngine, scope: str, pair: dict[str, Any]) -> dict[str, Any]:
    """What became of one pair: the old fact stored, still active, the first search result.

    The old fact is a memory that holds the old value and not the new one (the new
    statement often names the old value too: "I quit Acme and started at Globex").
    """
    every = engine.memories(scope, kinds=_KINDS, statuses=None, limit=1000)
    old = [
        m for m in every if _holds(m.content, pair["old"]) and not _holds(m.content, pair["new"])
    ]
    found = engine.retrieve(scope, pair["query"], kinds=_KINDS, limit=5)
    first = found[0].content if found else ""
    return {
        "old_stored": bool(old),
        "old_active": any(m.status == "active" for m in old),
        "new_first": _holds(first, pair["new"]),
        "first": first,
        "active": [m.content for m in every if m.status == "active"],
    }


def _measure_pairs(
    engine: MemoryEngine, updates: list[dict[str, Any]], adds: list[dict[str, Any]]
) -> dict[str, Any]:
    superseded = [u for u in updates if u["old_stored"] and not u["old_active"]]
    right = [u for u in superseded if u["new_first"]]
    wrong = [a for a in adds if a["old_stored"] and not a["old_active"]]
    done = len(superseded) + len(wrong)
    return {
        "updates": len(updates),
        "adds": len(adds),
        "superseded": len(superseded),
        "right": len(right),
        "recall": round(len(right) / len(updates), 4) if updates else None,
        "precision": round(len(superseded) / done, 4) if done else None,
        "wrong_supersedes": len(wrong),
        "not_stored": sum(not p["old_stored"] for p in [*updates, *adds]),
        "missed": [
            {"before": u["before"], "after": u["after"], "first": u["first"], "active": u["active"]}
            for u in updates
            if u not in right
        ],
        "wrong": [
            {"before": a["before"], "after": a["after"], "active": a["active"]} for a in wrong
        ],
    }


def measure(corpus: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The figures of the module docstring, ingesting into a SQLite file in ``folder``.

    ``tuned``: the pairs the rules were fixed on; ``held_out``: pairs written after and
    never tuned on.
    """
    url = f"sqlite:///{folder / 'supersede.db'}"
    parts = ["updates", "adds", "held_out_updates", "held_out_adds"]
    for part in parts:
        for index, pair in enumerate(corpus.get(part, [])):
            _ingest(folder, url, f"{part}-{index}", pair)
    outcomes: dict[str, list[dict[str, Any]]] = {}
    with TieredMemoryStore.from_url(url) as store:
        engine = MemoryEngine(store)
        for part in parts:
            outcomes[part] = [
                {**pair, **judge(engine, f"{part}-{index}", pair)}
                for index, pair in enumerate(corpus.get(part, []))
            ]
        return {
            "tuned": _measure_pairs(engine, outcomes["updates"], outcomes["adds"]),
            "held_out": _measure_pairs(
                engine, outcomes["held_out_updates"], outcomes["held_out_adds"]
            ),
        }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure the corpus, write the JSON results and print the headline."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    corpus = json.loads(args.corpus.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        results = measure(corpus, Path(folder))
    write_results(results, args.out)
    print(json.dumps(results, indent=2, ensure_ascii=False))
    return results


if __name__ == "__main__":
    main()
