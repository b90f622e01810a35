"""Every speed and token benchmark runs end to end in a tiny configuration, so none can rot.

Timings are never asserted (they are measurements); what is asserted is that each
benchmark runs every system it names, writes its JSON in the shape the report reads, and
that the report and the README block come out of those files.
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    # pytest puts only the test folders on sys.path; the benchmarks live beside them.
    sys.path.insert(0, _ROOT)

from benchmarks import __main__ as bench_cli  # noqa: E402
from benchmarks import (  # noqa: E402
    middleware_vs_summarization,
    paired,
    postgres,
    raw_puts,
    report,
    stm_speed,
    store_speed,
    store_targets,
    token_savings,
)
from benchmarks.fakes import SeededEmbeddings, SyntheticCorpus  # noqa: E402
from benchmarks.http_load import LoadResult  # noqa: E402

NON_POSTGRES_STORES = ["ours-sqlite", "langgraph-inmemory"]
POSTGRES_STORES = ["ours-postgres", "ours-postgres-qdrant", "langgraph-postgres"]


def _turn(speaker: str, session: int, index: int, text: str) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": f"D{session}:{index}", "text": text}


def _tiny_locomo(path: Path, turns: int = 60) -> Path:
    """A LoCoMo-shaped file: one conversation of ``turns`` turns and three questions."""
    facts = {
        3: "Ana: I adopted a puppy named Rex last week.",
        20: "Ben: I finally signed up for pottery classes on Tuesdays.",
        41: "Ana: My sister Mia is moving to Lisbon in June.",
    }
    session = [
        _turn(
            "Ana" if i % 2 else "Ben",
            1,
            i,
            facts.get(i, f"Turn {i}: we talked about the weather and the garden again.").split(
                ": ", 1
            )[1],
        )
        for i in range(1, turns + 1)
    ]
    sample = {
        "sample_id": "conv-tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": session,
        },
        "qa": [
            {"question": "What is Ana's puppy called?", "answer": "Rex", "evidence": ["D1:3"],
             "category": 4},
            {"question": "When does Ben do pottery?", "answer": "Tuesdays",
             "evidence": ["D1:20"], "category": 4},
            {"question": "Where is Mia moving?", "answer": "Lisbon", "evidence": ["D1:41"],
             "category": 1},
        ],
    }  # fmt: skip
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


# -- fakes -------------------------------------------------------------------------------------


def test_fake_embeddings_are_seeded_unit_vectors() -> None:
    texts = ["kalo miru tesa", "kalo miru vane", "posu rina dole", ""]
    a = SeededEmbeddings(64, seed=3).embed_array(texts)
    b = SeededEmbeddings(64, seed=3).embed_array(list(reversed(texts)))[::-1]
    np.testing.assert_array_equal(a, b)  # order and process independent
    assert np.allclose(np.linalg.norm(a[:3], axis=1), 1.0)
    assert not a[3].any()  # no words: the zero vector
    assert float(a[0] @ a[1]) > float(a[0] @ a[2])  # shared words are nearer
    assert not np.array_equal(a, SeededEmbeddings(64, seed=4).embed_array(texts))


def test_synthetic_corpus_clusters_queries_with_their_scope() -> None:
    corpus, embeddings = SyntheticCorpus(seed=5), SeededEmbeddings(128, seed=5)
    own = embeddings.embed_array([corpus.memory(scope=1, index=i) for i in range(40)])
    other = embeddings.embed_array([corpus.memory(scope=2, index=i) for i in range(40)])
    query = embeddings.embed_array([corpus.query(scope=1, index=0)])[0]
    assert float(np.max(own @ query)) > float(np.max(other @ query))


@pytest.mark.parametrize(
    "module",
    [
        *("fakes", "paired", "raw_puts", "report", "stm_speed", "token_savings"),
        "middleware_vs_summarization",
    ],
)
def test_docstring_examples_run(module: str) -> None:
    failures, _ = doctest.testmod(importlib.import_module(f"benchmarks.{module}"))
    assert failures == 0


def test_raw_puts_times_both_sides_and_supersedes_through_the_pipeline(tmp_path: Path) -> None:
    out = tmp_path / "raw.json"
    result = raw_puts.main(["--puts", "26", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["puts"] == 26
    assert set(result) >= {"plain", "pipeline", "median_ratio"}
    assert result["superseded"] > 0  # later facts about an attribute replaced earlier ones


# -- paired old/new ----------------------------------------------------------------------------

needs_git = pytest.mark.skipif(
    not (Path(_ROOT) / ".git").exists(),
    reason="extracts a committed revision: run the tests from a git checkout",
)


@needs_git
def test_paired_runs_the_committed_package_beside_the_working_one(tmp_path: Path) -> None:
    """The base revision is extracted under its own name, both sides load the same
    memories, each scope's first search and every query are timed on both, and the
    extracted package is gone after."""
    out = tmp_path / "paired.json"
    result = paired.main(
        ["--base", "HEAD", "--size", "600", "--queries", "12", "--rounds", "2", "--out", str(out)]
    )
    assert json.loads(out.read_text()) == result
    assert result["put_batches"]["n"] == 2  # 600 memories in batches of 500
    assert result["searches"]["n"] == 24
    assert 0 < result["first_searches"]["n"] <= 12  # one a scope the queries name
    assert result["searches"]["median_ratio"] > 0
    assert not [m for m in sys.modules if m.startswith(paired.BASE_PACKAGE)]


@needs_git
def test_paired_base_is_the_package_renamed(tmp_path: Path) -> None:
    package = paired.extract_base("HEAD", tmp_path)
    assert package.name == paired.BASE_PACKAGE
    text = (package / "__init__.py").read_text("utf-8")
    assert "langmem_tiers_base" in text
    assert re.search(r"\blangmem_tiers\b", text) is None


# -- store speed -------------------------------------------------------------------------------


def _store_run(tmp_path: Path, systems: list[str], *extra: str) -> dict[str, Any]:
    out, plot = tmp_path / "store_speed.json", tmp_path / "p95.png"
    args = ["--sizes", "300", "--queries", "12", "--gets", "5", "--systems", *systems]
    results = store_speed.main([*args, "--out", str(out), "--plot", str(plot), *extra])
    assert json.loads(out.read_text()) == results
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return results


def _check_store_runs(results: dict[str, Any], systems: list[str]) -> None:
    assert not results["skipped"]
    assert [r["system"] for r in results["runs"]] == systems
    for run in results["runs"]:
        assert run["size"] == 300
        assert run["put"]["items_per_s"] > 0
        assert run["get"]["n"] == 5
        assert run["search"]["n"] == 12
        # Three memories a scope: a full result is all three.
        assert run["search"]["full_10_share"] == 1.0
        # A put, then a search, per query (up to 50).
        assert run["put_then_search"]["put"]["n"] == run["put_then_search"]["search"]["n"] == 12
        # Searches while a thread puts batches (up to 50), and what that thread wrote.
        assert run["search_beside_writes"]["search"]["n"] == 12
        assert run["search_beside_writes"]["writer_items_per_s"] > 0
        # One search in each distinct scope the 12 queries name.
        assert 1 <= run["new_process_search"]["n"] <= 12
        if run["system"].startswith("ours-"):
            assert set(run["search"]["dense_stage"]) == {"recall_at_10", "recall_at_30"}
            assert run["profile"]["search"], "the statement profile saw the searches"
        else:
            assert run["search"]["recall_at_10"] == 1.0  # exact cosine over three items


@pytest.mark.slow
def test_store_speed_runs_the_embedded_systems(tmp_path: Path) -> None:
    results = _store_run(tmp_path, NON_POSTGRES_STORES)
    _check_store_runs(results, NON_POSTGRES_STORES)
    # The SQLite index is exact: its dense stage finds the exact cosine top k.
    sqlite = results["runs"][0]
    assert sqlite["search"]["dense_stage"] == {"recall_at_10": 1.0, "recall_at_30": 1.0}


@pytest.mark.slow
def test_store_speed_runs_the_postgres_systems(tmp_path: Path, postgres_url: str) -> None:
    results = _store_run(tmp_path, POSTGRES_STORES, "--postgres-url", postgres_url)
    _check_store_runs(results, POSTGRES_STORES)


def test_store_speed_caps_qdrant_local_and_reports_it(tmp_path: Path) -> None:
    results = store_speed.main(
        [
            "--sizes",
            "300",
            "--systems",
            "ours-postgres-qdrant",
            "--qdrant-cap",
            "100",
            "--out",
            str(tmp_path / "s.json"),
            "--plot",
            str(tmp_path / "p.png"),
        ]
    )
    assert results["runs"] == []
    assert results["skipped"][0]["system"] == "ours-postgres-qdrant"
    assert "capped at 100" in results["skipped"][0]["reason"]


def test_store_speed_skips_the_sqlite_store_peer_without_its_environment(tmp_path: Path) -> None:
    # --quick never creates the peer's environment (no network in CI): the run says why.
    results = store_speed.main(
        [
            "--quick",
            "--sizes",
            "300",
            "--systems",
            "langgraph-sqlite",
            "--peer-venv",
            str(tmp_path / "missing-venv"),
            "--out",
            str(tmp_path / "s.json"),
            "--plot",
            str(tmp_path / "p.png"),
        ]
    )
    assert results["runs"] == []
    skipped = results["skipped"][0]
    assert skipped["system"] == "langgraph-sqlite"
    assert "not allowed" in skipped["reason"]
    assert not (tmp_path / "missing-venv").exists()


def test_targets_compare_the_embedded_store_with_sqlite_store() -> None:
    runs = [
        _run("ours-sqlite", 10_000, 8_000.0, 4.0, 1.0),
        _run("langgraph-sqlite", 10_000, 7_000.0, 5.0, 1.0),
    ]
    targets = {t["target"]: t for t in store_targets.evaluate_targets(runs)}
    assert targets["put on SQLite >= SqliteStore's throughput (10,000)"]["met"] is True
    assert targets["search p95 on SQLite (hybrid) <= SqliteStore's (10,000)"]["met"] is True


def _run(system: str, size: int, put: float, p95: float, full: float) -> dict[str, Any]:
    return {
        "system": system,
        "size": size,
        "put": {"items_per_s": put},
        "search": {"p95_ms": p95, "full_10_share": full},
    }


def test_targets_compare_with_the_peer_at_the_same_size() -> None:
    runs = [
        _run("ours-postgres", 100_000, 3_000.0, 9.0, 1.0),
        _run("langgraph-postgres", 100_000, 250.0, 12.0, 0.1),
        _run("ours-sqlite", 100_000, 5_000.0, 25.0, 0.99),
    ]
    targets = {t["target"].split(" (")[0]: t for t in store_targets.evaluate_targets(runs)}
    assert targets["put on PostgreSQL >= 10x PostgresStore's throughput"]["met"] is True
    assert targets["search p95 on PostgreSQL <= PostgresStore's"]["met"] is True
    full = targets["every filtered search returns the full 10"]
    assert full["met"] is False
    assert "ours-sqlite" in full["measured"]
    assert targets["embedded default filtered search p95 <= 20 ms at 100k"]["met"] is False


def test_temporary_schema_url_replaces_an_existing_search_path() -> None:
    url = "postgresql://u@h:5432/db?options=-c%20search_path%3Dold&sslmode=disable"
    rewritten = postgres._with_search_path(url, "bench_x")
    assert "old" not in rewritten
    assert "sslmode=disable" in rewritten
    assert "search_path%3Dbench_x%2Cpublic" in rewritten


# -- short-term memory speed ---------------------------------------------------------------------


def _stm_systems() -> list[str]:
    sql = ["ours-sql-sqlite"] if importlib.util.find_spec(stm_speed.SQL_LOG_MODULE) else []
    return ["ours-memory", "ours-jsonl", *sql]


@pytest.mark.slow
def test_stm_speed_runs_every_local_log(tmp_path: Path) -> None:
    systems = _stm_systems()
    out = tmp_path / "stm.json"
    results = stm_speed.main(
        ["--messages", "40", "--context-reps", "2", "--systems", *systems, "--out", str(out)]
    )
    assert json.loads(out.read_text()) == results
    assert not results["skipped"]
    assert [r["system"] for r in results["runs"]] == systems
    for run in results["runs"]:
        assert run["add_one"]["n"] == 40
        assert run["add_one_late"]["n"] == 4
        assert run["context"]["n"] == 2
        assert run["messages_in_window"] == 40  # far under the token budget: nothing archived
        # The default context policy keeps messages raw while they fit the budget.
        assert 0 < run["context_tokens"] <= run["raw_tokens"]


@pytest.mark.slow
def test_stm_speed_runs_the_postgres_systems(tmp_path: Path, postgres_url: str) -> None:
    systems = ["langchain-postgres"]
    if importlib.util.find_spec(stm_speed.SQL_LOG_MODULE):
        systems.insert(0, "ours-sql-postgres")
    results = stm_speed.main(
        [
            "--messages",
            "30",
            "--context-reps",
            "2",
            "--systems",
            *systems,
            "--postgres-url",
            postgres_url,
            "--out",
            str(tmp_path / "stm.json"),
        ]
    )
    assert results["skipped"] == []
    assert [r["system"] for r in results["runs"]] == systems
    peer = results["runs"][-1]
    assert peer["messages_in_context"] == 30
    assert peer["context_tokens"] == peer["raw_tokens"]


# -- token savings -------------------------------------------------------------------------------


@pytest.mark.slow
def test_middleware_vs_summarization_on_a_tiny_conversation(tmp_path: Path) -> None:
    data = _tiny_locomo(tmp_path / "locomo.json", turns=120)
    out = tmp_path / "middleware_vs_summarization.json"
    args = ["--data", str(data), "--budget", "600", "--out", str(out)]
    results = middleware_vs_summarization.main(args)
    assert json.loads(out.read_text()) == results
    tiered, summarised = results["summary"]["tiered"], results["summary"]["summarization"]
    # The same replayed conversation: one model call per invocation for both.
    assert tiered["model_calls"] == summarised["model_calls"] == results["invokes"] == 60
    assert tiered["prompt_tokens_max"] <= 600
    assert summarised["helper_calls"] >= 1  # the history went over the trigger
    assert tiered["evidence_turns"] == summarised["evidence_turns"] == 3
    assert tiered["reachable_share"] == 1.0
    assert summarised["reachable_share"] < 1.0  # Rex and pottery were summarised away
    assert "TieredMemoryMiddleware" in report.render(tmp_path)


@pytest.mark.slow
def test_token_savings_on_a_tiny_conversation(tmp_path: Path) -> None:
    data = _tiny_locomo(tmp_path / "locomo.json")
    out = tmp_path / "tokens.json"
    results = token_savings.main(["--data", str(data), "--out", str(out)])
    assert json.loads(out.read_text()) == results
    defaults, tight = results["configs"]
    conversation = defaults["conversations"][0]
    assert conversation["turns"] == 60
    assert set(conversation["checkpoints"]) == {"50", "end"}  # 200 and 500 never reached
    end = conversation["checkpoints"]["end"]
    assert end["turn"] == 60
    # The default context policy keeps messages raw while they fit the budget.
    assert end["context_tokens"] <= end["raw_tokens"]
    # Under the default budget nothing is archived: every evidence turn is in the context.
    assert defaults["reachable"] == {
        "evidence_turns": 3,
        "share": 1.0,
        "in_context_share": 1.0,
        "by_search_only_share": 0.0,
    }
    assert tight["name"] == "tiered, 4k budget"
    assert 0.0 <= tight["reachable"]["share"] <= 1.0


def test_token_savings_turns_become_user_and_assistant_messages() -> None:
    from benchmarks.locomo import Turn

    user = token_savings.turn_message(Turn("D1:1", 1, "Ana", "d", "Hi", None), "Ana")
    image = token_savings.turn_message(Turn("D1:2", 1, "Ben", "d", "Look", "a cat"), "Ana")
    assert (user.type, user.content) == ("human", "Ana: Hi")
    assert (image.type, image.content) == ("ai", "Ben: Look [shares a cat]")


# -- the report and the one command ------------------------------------------------------------


def test_report_writes_between_the_markers_and_only_there(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n\nIntro.\n", encoding="utf-8")
    report.update_readme("## Benchmarks\n\nfirst\n", readme)
    report.update_readme("## Benchmarks\n\nsecond\n", readme)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Project\n\nIntro.\n\n")
    assert text.count(report.START_MARKER) == text.count(report.END_MARKER) == 1
    assert "second" in text
    assert "first" not in text


@pytest.mark.slow
def test_all_quick_runs_a_benchmark_and_renders_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _tiny_locomo(tmp_path / "locomo.json")
    results = tmp_path / "results"
    code = bench_cli.main(
        [
            "all",
            "--quick",
            "--only",
            "token_savings",
            "--data",
            str(data),
            "--results",
            str(results),
        ]
    )
    assert code == 0
    assert (results / "token_savings.json").exists()
    printed = capsys.readouterr().out
    assert "### Prompt tokens of the tiered context (LoCoMo)" in printed
    assert "| tiered defaults (30k budget) |" in printed


def test_report_renders_every_result_file_it_finds(tmp_path: Path) -> None:
    for name in ("store_speed", "stm_speed"):
        (tmp_path / f"{name}.json").write_text("{}", encoding="utf-8")  # wrong shape
    markdown = report.render(tmp_path)
    assert markdown.startswith("## Benchmarks")
    assert "results file not in the expected shape" in markdown


def test_list_names_every_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_cli.main(["list"]) == 0
    assert capsys.readouterr().out.split() == list(bench_cli.BENCHMARKS)


def _cli_args(*, quick: bool) -> argparse.Namespace:
    return argparse.Namespace(quick=quick, data=None, postgres_url="postgresql://db/x")


@pytest.mark.parametrize("name", ["http_load", "locomo_store"])
def test_all_runs_the_http_load_and_store_retrieval_short_in_quick_mode(
    name: str, tmp_path: Path
) -> None:
    quick = bench_cli.BENCHMARKS[name](_cli_args(quick=True), tmp_path)
    full = bench_cli.BENCHMARKS[name](_cli_args(quick=False), tmp_path)
    assert "--quick" in quick
    assert "--quick" not in full
    assert str(tmp_path / f"{name}.json") in quick
    if name == "locomo_store":
        # MiniLM costs minutes: never in quick mode, as for locomo_retrieval.
        assert quick[quick.index("--embedder") + 1] == "offline"


def test_report_renders_the_http_load_table(tmp_path: Path) -> None:
    sqlite = LoadResult("sqlite", "retrieve", 2.0, [0.010, 0.020, 0.030], {200: 2, 503: 1}, 1)
    postgres = LoadResult("postgres", "episodic_store", 2.0, [0.005, 0.005], {201: 2})
    data = {
        "benchmark": "http_load",
        "machine": report.machine_info(),
        "config": {"duration_s": 2.0, "concurrency": 8, "preload": 1000, "workers": [1, 2]},
        "runs": [{**sqlite.summary(), "workers": 2}, {**postgres.summary(), "workers": 1}],
        "skipped": [],
    }
    report.write_results(data, tmp_path / "http_load.json")
    markdown = report.render(tmp_path)
    assert "### HTTP API under load" in markdown
    assert "8 closed-loop clients" in markdown
    assert "(uvicorn, `--workers 1`; `--workers 2`, a row each)" in markdown
    assert "Run: " + report._machine_line(data["machine"]) in markdown
    # One request got no answer and one a 503: two errors, one of them a 5xx.
    row = "| embedded (SQLite) | retrieve (`POST /api/v1/memory/retrieve`) | 2 | 4 | 2.0 | 20.0 |"
    assert row in markdown
    assert "| 2 | 1 |" in markdown.split(row)[1].splitlines()[0]
    assert (
        "| PostgreSQL | episodic store (`POST /api/v1/memory/episodic`) | 1 | 2 | 1.0 | 5.0 |"
        in (markdown)
    )


def test_report_renders_the_store_retrieval_table(tmp_path: Path) -> None:
    ours = {
        "all": {"R@5": 0.5, "R@10": 0.75, "R@20": 1.0, "MRR": 0.4,
                "R@10_by_category": {"single-hop": 0.75}},
        "tune": {},
        "held_out": {},  # a quick run has no held-out conversations
        "searches_per_s": 49,
    }  # fmt: skip
    data = {"questions": 3, "conversations": 1, "quick": True, "results": {"ours": ours}}
    report.write_results(data, tmp_path / "locomo_store.json")
    markdown = report.render(tmp_path)
    assert "### Retrieval through the store (LoCoMo)" in markdown
    assert "3 questions of categories 1-4 over 1 conversations (quick run)" in markdown
    assert "| ours | 0.500 | 0.750 | 1.000 | 0.400 | – | – | – | 0.750 | – | 49 |" in markdown
