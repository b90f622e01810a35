"""Benchmark results: the machine they ran on, timing summaries, and the README table.

Every benchmark writes one JSON file into ``benchmarks/results/`` with
:func:`write_results`, stamped by :func:`machine_info`. :func:`render` turns the JSON
files into Markdown tables and :func:`update_readme` puts them into ``README.md`` between
the ``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers (appending the markers
when they are missing). Numbers are copied from the files, never computed here.

Run::

    python -m benchmarks.report [--results benchmarks/results] [--readme README.md] [--print]

Example:
    >>> timing_summary([0.001, 0.002, 0.003])["p50_ms"]
    2.0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "END_MARKER",
    "START_MARKER",
    "machine_info",
    "main",
    "render",
    "timing_summary",
    "update_readme",
    "write_results",
]

START_MARKER = "<!-- bench:start -->"
END_MARKER = "<!-- bench:end -->"
RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parents[1] / "README.md"


# -- helpers the benchmarks share ---------------------------------------------------------


def _ram_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info(postgres_url: str | None = None) -> dict[str, Any]:
    """Date, CPU count, RAM, Python, OS and (when reachable) PostgreSQL and pgvector versions."""
    info: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_count": os.cpu_count(),
        "ram_gb": _ram_gb(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "postgresql": None,
        "pgvector": None,
        # Other work on the machine skews timings: record how busy it was.
        "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    if postgres_url:
        try:
            import psycopg

            with psycopg.connect(postgres_url, connect_timeout=3, autocommit=True) as conn:
                row = conn.execute("SHOW server_version").fetchone()
                info["postgresql"] = str(row[0]).split()[0] if row else None
                row = conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()
                info["pgvector"] = str(row[0]) if row else None
        except Exception:  # unreachable: the fields stay None
            pass
    return info


def timing_summary(seconds: Sequence[float]) -> dict[str, Any]:
    """``n``, ``p50_ms``, ``p95_ms`` and ``mean_ms`` of durations given in seconds."""
    if not seconds:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "mean_ms": None}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(np.mean(ms)), 3),
    }


def write_results(results: dict[str, Any], path: Path) -> None:
    """Write one benchmark's results as indented JSON (the directory is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# -- rendering -----------------------------------------------------------------------------


def _load(directory: Path, name: str) -> dict[str, Any] | None:
    path = directory / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _num(value: Any, digits: int = 1, *, thousands: bool = False) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:,.{digits}f}" if thousands else f"{value:.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _machine_line(machine: dict[str, Any] | None) -> str:
    if not machine:
        return ""
    parts = [
        f"{machine.get('cpu_count')} CPUs",
        f"{machine.get('ram_gb')} GB RAM",
        f"Python {machine.get('python')}",
    ]
    if machine.get("postgresql"):
        pg = f"PostgreSQL {machine['postgresql']}"
        if machine.get("pgvector"):
            pg += f" + pgvector {machine['pgvector']}"
        parts.append(pg)
    if machine.get("platform"):
        parts.append(str(machine["platform"]))
    if machine.get("load_average_1m") is not None:
        # The machine was shared: say how busy it was when the results were written.
        parts.append(f"load average {machine['load_average_1m']} at the end")
    return f"{machine.get('date')}, " + ", ".join(parts)


def _store_speed(data: dict[str, Any]) -> list[str]:
    out = [
        "### Long-term store speed",
        "",
        f"{data['config']['scopes']} scopes, {data['config']['dims']}-dimensional seeded fake "
        f"embeddings, puts in batches of {data['config']['batch']}, "
        f"{data['config']['queries']} top-{data['config']['limit']} searches within one scope. "
        "*put, then search*: one put into a scope searched before, then a search of it, 50 "
        "times (the search's time). *search beside writes*: 50 searches while another thread "
        "puts batches of 500 (and that thread's items/s). *first search in a new process*: one "
        "search in each of 50 scopes after this project's store forgot what it holds of its "
        "namespaces (it keeps every namespace it wrote since it was empty, so the searches "
        "before are those of the process that loaded the data). "
        "*dense recall@10*: LangGraph's stores rank by cosine, so it is their results against "
        "the exact cosine top 10; this project ranks by a hybrid score, so it is its vector "
        "index's candidate stage (k=10 / k=30) against the exact top k.",
        "",
    ]
    rows = []
    for r in data["runs"]:
        s = r["search"]
        if s.get("dense_stage"):
            stage = s["dense_stage"]
            recall = " / ".join(_num(v, 3) for v in stage.values())
        else:
            recall = _num(s.get("recall_at_10"), 3)
        rows.append(
            [
                r["label"],
                f"{r['size']:,}",
                _num(r["put"]["items_per_s"], 0, thousands=True),
                _num(r["get"]["p50_ms"], 2),
                _num(s["p50_ms"], 1),
                _num(s["p95_ms"], 1),
                _num(s["full_10_share"], 3),
                recall,
                _after_put(r),
                _beside_writes(r),
                _new_process(r),
            ]
        )
    out += _table(
        [
            "system",
            "memories",
            "put items/s",
            "get p50 ms",
            "search p50 ms",
            "search p95 ms",
            "full-10 share",
            "dense recall@10",
            "put, then search p50 / p95 ms",
            "search beside writes p50 / p95 ms (writer items/s)",
            "first search in a new process p50 / p95 ms",
        ],
        rows,
    )
    for skip in data.get("skipped", []):
        out.append("")
        out.append(f"Not run: {skip['system']} at {skip['size']:,}: {skip['reason']}.")
    if data.get("targets"):
        out += ["", "Targets (measured, not asserted):", ""]
        out += _table(
            ["target", "measured", "met"],
            [[t["target"], t["measured"], _num(t["met"])] for t in data["targets"]],
        )
    out += ["", "![search p95 against memories](benchmarks/results/search_p95.png)"]
    return out


def _after_put(run: dict[str, Any]) -> str:
    """The put-then-search rounds of a store speed run: the search's p50 / p95 (runs from
    before that phase have none)."""
    rounds = run.get("put_then_search")
    if not rounds:
        return "-"
    return f"{_num(rounds['search']['p50_ms'], 1)} / {_num(rounds['search']['p95_ms'], 1)}"


def _new_process(run: dict[str, Any]) -> str:
    """The searches of scopes a process has read nothing of: p50 / p95 (runs from before
    that phase have none)."""
    phase = run.get("new_process_search")
    if not phase:
        return "-"
    return f"{_num(phase['p50_ms'], 1)} / {_num(phase['p95_ms'], 1)}"


def _beside_writes(run: dict[str, Any]) -> str:
    """The searches beside a writing thread: p50 / p95 and the writer's rate (runs from
    before that phase have none)."""
    phase = run.get("search_beside_writes")
    if not phase:
        return "-"
    search = phase["search"]
    rate = _num(phase["writer_items_per_s"], 0, thousands=True)
    return f"{_num(search['p50_ms'], 1)} / {_num(search['p95_ms'], 1)} ({rate})"


def _stm_speed(data: dict[str, Any]) -> list[str]:
    out = [
        "### Short-term memory speed",
        "",
        f"`tiered` preset with the offline tierer; a session of {data['config']['messages']:,} "
        "messages. *add one* is one `add_messages([message])` (tiering, log write, window "
        "policy); *context* builds the model's view of the whole session (ours) or reads all "
        "messages (`PostgresChatMessageHistory.messages`).",
        "",
    ]
    rows = [
        [
            r["label"],
            _num(r["add_one"]["p50_ms"], 2),
            _num(r["add_one_late"]["p50_ms"], 2) if r.get("add_one_late") else "–",
            _num(r["context"]["p50_ms"], 1),
        ]
        for r in data["runs"]
    ]
    out += _table(
        [
            "system",
            "add one p50 ms",
            f"add one p50 ms (last {data['config']['late_window']})",
            f"context / read {data['config']['messages']:,} p50 ms",
        ],
        rows,
    )
    for note in data.get("notes", []):
        out += ["", note]
    return out


def _token_savings(data: dict[str, Any]) -> list[str]:
    out = [
        "### Prompt tokens of the tiered context (LoCoMo)",
        "",
        "Each LoCoMo conversation fed turn by turn through the `tiered` preset (offline "
        "tierer, embedded store). Tokens of the built context against the raw history at "
        "the same turn (mean over conversations, same counter). *Reachable*: share of "
        "question evidence turns in the final context at some tier or in the top 10 of an "
        "episodic search for the question.",
        "",
    ]
    rows = []
    for config in data["configs"]:
        mean = config["mean"]
        cells = [config["name"]]
        for point in data["checkpoints"]:
            m = mean.get(str(point))
            cells.append(
                f"{m['context_tokens']:,.0f} / {m['raw_tokens']:,.0f} ({m['ratio']:.0%})"
                if m
                else "–"
            )
        reach = config["reachable"]
        cells.append(
            f"{reach['share']:.3f} (context {reach['in_context_share']:.3f}, "
            f"search {reach['by_search_only_share']:.3f})"
        )
        rows.append(cells)
    out += _table(
        [
            "configuration",
            *[f"turn {p}: context / raw" for p in data["checkpoints"]],
            "evidence reachable",
        ],
        rows,
    )
    return out


def _faithful(data: dict[str, Any]) -> str:
    """``faithful / whole`` of the tuned and held-out identifier corpus, or a dash."""
    parts = []
    for part in ("tuned", "held_out"):
        got = data.get(part, {})
        if got.get("faithful") is None:
            return "–"
        parts.append(f"{got['faithful']:.3f} ({got['whole']:.3f} whole)")
    return " / ".join(parts)


def _tier_sizes(data: dict[str, Any]) -> list[str]:
    t1, t2 = data.get("tier1_over_raw", {}), data.get("tier2_over_raw", {})
    kept = data.get("kept_in_tier1", {})
    return [
        "### Tier sizes (offline tierer, LoCoMo turns)",
        "",
        *_table(
            [
                "messages",
                "tier 1 / raw (median)",
                "tier 2 / raw (median)",
                "entities kept in tier 1",
                "numbers kept in tier 1",
                "messages/s",
                "faithful facts, tuned / held-out",
            ],
            [
                [
                    _num(data.get("messages"), 0, thousands=True),
                    _num(t1.get("median"), 3),
                    _num(t2.get("median"), 3),
                    _num(kept.get("entities"), 3),
                    _num(kept.get("numbers"), 3),
                    _num(data.get("throughput_messages_per_s"), 0, thousands=True),
                    _faithful(data.get("faithful_facts", {})),
                ]
            ],
        ),
        "",
        "*Faithful facts*: on messages full of identifiers, phone numbers, e-mails, amounts,"
        " addresses, dates, times, versions and measurements (`benchmarks/faithful_facts.py`),"
        " the share of tier-1 values the message holds as written on whole tokens, and in"
        " brackets the share of expected values stated whole; *held-out* messages were"
        " written after the rules were fixed.",
    ]


def _recall_cells(overall: dict[str, Any]) -> list[str]:
    """R@5, R@10, R@20 and MRR of a LoCoMo result over all its questions."""
    return [_num(overall.get(metric), 3) for metric in ("R@5", "R@10", "R@20", "MRR")]


def _locomo_retrieval(data: dict[str, Any]) -> list[str]:
    methods: dict[str, Any] = data.get("methods", {})
    rows = []
    for name, result in methods.items():
        if "[default]" not in name and "cosine" not in name and "product" not in name:
            continue
        overall = result.get("all", {})
        rows.append([name, *_recall_cells(overall)])
    return [
        "### Retrieval quality (LoCoMo)",
        "",
        f"{data.get('questions', '?')} questions of categories 1-4 over "
        f"{data.get('conversations', '?')} conversations; each ranks the turns of its own "
        "conversation. Full table in `benchmarks/results/locomo_retrieval.json`.",
        "",
        *_table(["method", "R@5", "R@10", "R@20", "MRR"], rows),
    ]


def _locomo_store(data: dict[str, Any]) -> list[str]:
    rows = []
    for name, result in data.get("results", {}).items():
        overall, held = result.get("all", {}), result.get("held_out") or {}
        by_category = overall.get("R@10_by_category", {})
        rows.append(
            [
                name,
                *_recall_cells(overall),
                *(
                    _num(by_category.get(c), 3)
                    for c in ("multi-hop", "temporal", "open-domain", "single-hop")
                ),
                _num(held.get("R@10"), 3),
                _num(result.get("searches_per_s"), 0, thousands=True),
            ]
        )
    return [
        "### Retrieval through the store (LoCoMo)",
        "",
        f"{_num(data.get('questions'), 0, thousands=True)} questions of categories 1-4 over "
        f"{data.get('conversations', '?')} conversations"
        + (" (quick run)" if data.get("quick") else "")
        + ". Every turn is stored as an episodic memory through the public API and each "
        "question is answered by `store.search` (top 20) exactly as a user gets it, access "
        "counts included; LangGraph's `InMemoryStore` searches the same memories with the same "
        "embeddings. Ranking tuned on conversations 0-4; *held-out* is 5-9.",
        "",
        *_table(
            [
                "system",
                "R@5",
                "R@10",
                "R@20",
                "MRR",
                "R@10 multi-hop",
                "temporal",
                "open-domain",
                "single-hop",
                "held-out R@10",
                "searches/s",
            ],
            rows,
        ),
    ]


_BACKEND_NAMES = {"sqlite": "embedded (SQLite)", "postgres": "PostgreSQL"}
_ENDPOINT_NAMES = {
    "retrieve": "retrieve (`POST /api/v1/memory/retrieve`)",
    "episodic_store": "episodic store (`POST /api/v1/memory/episodic`)",
}


def _http_load(data: dict[str, Any]) -> list[str]:
    config = data["config"]
    counts = config.get("workers") or [1]
    counts = sorted(counts) if isinstance(counts, list) else [int(counts)]
    processes = (
        "one process"
        if counts == [1]
        else "; ".join(f"`--workers {c}`" for c in counts) + ", a row each"
    )
    totals = sorted(
        {r["memories"]["total"] for r in data["runs"] if r.get("endpoint") == "retrieve"
         and isinstance(r.get("memories"), dict)}
    )  # fmt: skip
    joining = (
        f"; they join {config['join_interval_s']:g} s apart"
        if config.get("join_interval_s")
        else ""
    )
    held = (
        f" (with the semantic memories consolidation makes of them, "
        f"{' / '.join(f'{t:,}' for t in totals)} memories)"
        if totals
        else ""
    )
    out = [
        "### HTTP API under load",
        "",
        f"`python -m langmem_tiers serve` (uvicorn, {processes}) on loopback; "
        f"{config['concurrency']} closed-loop clients (httpx, asyncio{joining}) on the same "
        "machine, "
        f"{config['duration_s']:g} s per endpoint and backend. *retrieve* is a hybrid top-10 "
        f"search over {config['preload']:,} stored events{held}; *episodic store* adds a new "
        "event each time. An error is any answer that is not 2xx, or no answer. Client and "
        "server share the cores, so these are a floor.",
    ]
    machine = _machine_line(data.get("machine"))
    if machine:
        out += ["", f"Run: {machine}."]
    rows = [
        [
            _BACKEND_NAMES.get(r["backend"], r["backend"]),
            _ENDPOINT_NAMES.get(r["endpoint"], r["endpoint"]),
            str(r.get("workers", counts[0])),
            _num(r["requests"], 0, thousands=True),
            _num(r["requests_per_s"], 1),
            _num(r["p50_ms"], 1),
            _num(r["p99_ms"], 1),
            _num(r["errors"], 0, thousands=True),
            _num(r["server_errors"], 0, thousands=True),
        ]
        for r in data["runs"]
    ]
    out += [
        "",
        *_table(
            [
                "backend",
                "endpoint",
                "server processes",
                "requests",
                "requests/s",
                "p50 ms",
                "p99 ms",
                "errors",
                "5xx",
            ],
            rows,
        ),
    ]
    for skip in data.get("skipped", []):
        backend = _BACKEND_NAMES.get(skip["backend"], skip["backend"])
        out += ["", f"Not run: {backend}: {skip['reason']}."]
    return out


def _middleware_vs_summarization(data: dict[str, Any]) -> list[str]:
    from benchmarks.middleware_vs_summarization import table

    return [
        "### TieredMemoryMiddleware beside SummarizationMiddleware (create_agent, LoCoMo)",
        "",
        "Each conversation replayed through two `create_agent` agents with the same replayed "
        "answers. *Evidence reachable*: for summarisation, the turn is still in the agent's "
        "state; for the tiered middleware, it is in the last prompt at some tier (the model "
        "can ask for it by id) or in the top 10 of an episodic search for the question.",
        "",
        table(data),
    ]


_SECTIONS: list[tuple[str, Callable[[dict[str, Any]], list[str]]]] = [
    ("store_speed", _store_speed),
    ("stm_speed", _stm_speed),
    ("token_savings", _token_savings),
    ("locomo_retrieval", _locomo_retrieval),
    ("locomo_store", _locomo_store),
    ("tier_sizes", _tier_sizes),
    ("middleware_vs_summarization", _middleware_vs_summarization),
    ("http_load", _http_load),
]


def render(directory: Path = RESULTS) -> str:
    """The Markdown of every result file found in ``directory`` (markers not included)."""
    lines = ["## Benchmarks", ""]
    loaded = {name: _load(directory, name) for name, _ in _SECTIONS}
    machine = next(
        (d["machine"] for d in loaded.values() if d and isinstance(d.get("machine"), dict)), None
    )
    lines.append(
        "Measured with `python -m benchmarks all` "
        + (f"({_machine_line(machine)})" if machine else "")
        + "; the JSON files and the plot are in `benchmarks/results/`. "
        "Numbers are measurements of one run on that machine, not guarantees."
    )
    for name, section in _SECTIONS:
        data = loaded[name]
        if data is None:
            continue
        lines.append("")
        try:
            lines += section(data)
        except (KeyError, TypeError, ValueError) as err:
            lines.append(f"### {name}\n\n(results file not in the expected shape: {err!r})")
    return "\n".join(lines) + "\n"


def update_readme(markdown: str, readme: Path = README) -> None:
    """Replace what lies between the markers in ``readme`` (add the markers at the end)."""
    text = readme.read_text(encoding="utf-8")
    block = f"{START_MARKER}\n{markdown.rstrip()}\n{END_MARKER}"
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start != -1 and end > start:
        text = text[:start] + block + text[end + len(END_MARKER) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> str:
    """Render the results and write them into the README (or print them with ``--print``)."""
    parser = argparse.ArgumentParser(description="Write the benchmark tables into README.md.")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--print", action="store_true", help="print instead of writing")
    args = parser.parse_args(argv)
    markdown = render(args.results)
    if args.print:
        print(markdown)
    else:
        update_readme(markdown, args.readme)
        print(f"benchmark tables written into {args.readme.name}")
    return markdown


if __name__ == "__main__":
    main()
