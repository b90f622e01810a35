"""The targets of :mod:`benchmarks.store_speed` (reported, never asserted) and its plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["evaluate_targets", "plot_p95"]


def _find(runs: Sequence[dict[str, Any]], system: str, size: int) -> dict[str, Any] | None:
    return next((r for r in runs if r["system"] == system and r["size"] == size), None)


class _Peer(NamedTuple):
    """A backend of ours, the LangGraph store it is compared with, and the targets' terms."""

    ours: str
    peer: str
    backend: str
    name: str
    put_factor: int
    search_on: str


_PEERS = (
    _Peer("ours-postgres", "langgraph-postgres", "PostgreSQL", "PostgresStore", 10, "PostgreSQL"),
    _Peer("ours-sqlite", "langgraph-sqlite", "SQLite", "SqliteStore", 1, "SQLite (hybrid)"),
)


def _peer_targets(ours: dict[str, Any], peer: dict[str, Any], terms: _Peer) -> list[Any]:
    size, factor = ours["size"], terms.put_factor
    times = f"{factor}x " if factor != 1 else ""
    ratio = ours["put"]["items_per_s"] / peer["put"]["items_per_s"]
    ours_p95, peer_p95 = ours["search"]["p95_ms"], peer["search"]["p95_ms"]
    return [
        {
            "target": f"put on {terms.backend} >= {times}{terms.name}'s throughput ({size:,})",
            "measured": f"{ratio:.2f}x ({ours['put']['items_per_s']:,.0f} vs "
            f"{peer['put']['items_per_s']:,.0f} items/s)",
            "met": ratio >= factor,
        },
        {
            "target": f"search p95 on {terms.search_on} <= {terms.name}'s ({size:,})",
            "measured": f"{ours_p95:.1f} ms vs {peer_p95:.1f} ms",
            "met": ours_p95 <= peer_p95,
        },
    ]


def evaluate_targets(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target with its measured value and whether it was met (reported, never asserted)."""
    targets: list[dict[str, Any]] = []
    sizes = sorted({r["size"] for r in runs})
    for terms in _PEERS:
        for size in sizes:
            ours, peer = _find(runs, terms.ours, size), _find(runs, terms.peer, size)
            if ours and peer:
                targets.extend(_peer_targets(ours, peer, terms))
    ours_runs = [r for r in runs if r["system"].startswith("ours-")]
    if ours_runs:
        worst = min(ours_runs, key=lambda r: r["search"]["full_10_share"])
        targets.append(
            {
                "target": "every filtered search returns the full 10 (this project, all backends)",
                "measured": f"lowest full-10 share {worst['search']['full_10_share']:.3f} "
                f"({worst['system']} at {worst['size']:,})",
                "met": worst["search"]["full_10_share"] >= 1.0,
            }
        )
    embedded = [r for r in runs if r["system"] == "ours-sqlite"]
    if embedded:
        largest = max(embedded, key=lambda r: r["size"])
        note = "" if largest["size"] >= 100_000 else " (100k not run: largest size shown)"
        targets.append(
            {
                "target": "embedded default filtered search p95 <= 20 ms at 100k",
                "measured": f"{largest['search']['p95_ms']:.1f} ms at {largest['size']:,}{note}",
                "met": largest["search"]["p95_ms"] <= 20 if largest["size"] >= 100_000 else None,
            }
        )
    return targets


def plot_p95(runs: Sequence[dict[str, Any]], path: Path, labels: Mapping[str, str]) -> None:
    """Search p95 against the number of memories, one line per system of ``labels`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for system, label in labels.items():
        points = sorted((r["size"], r["search"]["p95_ms"]) for r in runs if r["system"] == system)
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the store (100 scopes)")
    ax.set_ylabel("filtered search p95 (ms, log scale)")
    ax.set_title("Top-10 search within one scope")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
