"""The ``demo`` command: the shipped conversation through the tiered chat graph, offline."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from langmem_tiers import TieredMemoryStore, decode_label
from langmem_tiers.cli import main
from langmem_tiers.cli.demo import TurnStats, load_conversation, token_table
from langmem_tiers.cli.demo_report import locate, plot_tokens
from langmem_tiers.short_term.sql_log import SqlMessageLog

REPO = Path(__file__).resolve().parents[2]


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_shipped_conversation_is_a_multi_session_project() -> None:
    turns = load_conversation()
    sessions = list(dict.fromkeys(t.session for t in turns))
    assert len(turns) >= 200
    assert len(sessions) >= 5
    questions = [t for t in turns if t.content.rstrip().endswith("?")]
    # Every question states the fact its answer should hold, so the demo can score it.
    assert questions
    assert all(t.expect for t in questions)
    # Turns are in time order, sessions contiguous.
    assert [t.at for t in turns] == sorted(t.at for t in turns)
    assert list(dict.fromkeys(t.session for t in turns)) == sessions


def test_demo_json_reports_pruning_and_loses_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    report = _run_json(capsys, "demo", "--turns", "60", "--url", url, "--budget", "300", "--json")
    assert report["turns"] == 60
    assert report["model"] == "offline"
    assert report["scope"].startswith("demo-")
    pruned = [e for e in report["events"] if e["type"] == "pruned"]
    assert pruned, "a 300-token budget must prune within 60 turns"
    archived = [i for e in pruned for i in e["ids"]]
    held = report["long_term_memory"]
    assert held["episodic"]["count"] == len(archived)
    # Sessions end with a consolidation of their episodes into a summary.
    assert any(e["type"] == "consolidated" for e in report["events"])
    assert held["semantic"]["by_category"].get("episode_summary", 0) >= 1
    # No message is lost: what was archived plus what the windows still hold is every
    # message of the run (a user turn and an answer per turn).
    turns = load_conversation()[:60]
    with TieredMemoryStore.from_url(url) as store:
        log = SqlMessageLog(store.conn)
        in_windows = sum(
            len(log.read(f"{report['scope']}-{session}"))
            for session in dict.fromkeys(t.session for t in turns)
        )
    assert in_windows + len(archived) == 2 * 60
    # Token accounting: one row per turn, the raw history grows, the prompt is measured.
    tokens = report["tokens"]
    assert [row["turn"] for row in tokens] == list(range(1, 61))
    assert all(row["prompt_tokens"] > 0 and row["calls"] >= 1 for row in tokens)
    raw_all = [row["raw_all_tokens"] for row in tokens]
    assert raw_all == sorted(raw_all)
    assert report["questions"] == sum(1 for t in turns if t.expect)
    assert 0 <= report["answered_with_expected_fact"] <= report["questions"]


def test_each_run_has_a_fresh_scope_and_reset_removes_earlier_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    first = _run_json(capsys, "demo", "--turns", "20", "--url", url, "--json")
    second = _run_json(capsys, "demo", "--turns", "20", "--url", url, "--json")
    assert first["scope"] != second["scope"]

    # The second run does not see the first one's memories: same input, same holdings.
    def held(run: dict) -> str:
        text = json.dumps(run["long_term_memory"]).replace(run["scope"], "<scope>")
        # A summary's key is random or a digest of its episodes' ids (which hold the scope).
        return re.sub(r"\b[0-9a-f]{16,}\b", "<id>", text)

    assert held(first) == held(second)
    assert [r["prompt_tokens"] for r in first["tokens"]] == [
        r["prompt_tokens"] for r in second["tokens"]
    ]
    third = _run_json(capsys, "demo", "--turns", "20", "--url", url, "--json", "--reset")
    with TieredMemoryStore.from_url(url) as store:
        scopes = {decode_label(ns[0]) for ns in store.list_namespaces(max_depth=1)}
        log = SqlMessageLog(store.conn)
        left = log.read(f"{first['scope']}-{load_conversation()[0].session}")
    assert scopes == {third["scope"]}
    assert left == []


def test_demo_prints_what_memory_supplied_and_the_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    plot = tmp_path / "tokens.png"
    argv = ["demo", "--turns", "45", "--url", url, "--budget", "300", "--rows", "5"]
    assert main([*argv, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "context budget (a demo setting; the product's default is 30,000 tokens)" in out
    assert "How to read a question" in out
    assert "== session 1/2: s1-kickoff" in out
    # Where it writes, and how to remove what earlier runs left.
    assert f"writing to {tmp_path / 'demo.db'} under scope demo-" in out
    assert "`langmem-tiers demo --reset` deletes every earlier run's" in out
    assert "to episodic memory" in out
    # Each question: the answer with its verdict, then what memory put in the prompt.
    questions = [t for t in load_conversation()[:45] if t.expect]
    lines = out.splitlines()
    asked = [i for i, line in enumerate(lines) if " Q: " in line]
    assert len(asked) == len(questions)
    for i in asked:
        assert lines[i + 1].strip().startswith("A: ")
        assert "  [answer holds " in lines[i + 1] or "  [answer lacks " in lines[i + 1]
        assert lines[i + 2].strip().startswith("memory: ")
    assert "memory: user_context: Our client contact is Ruth Alvarez" in out
    assert "Prompt tokens per turn (sampled, 45 turns)" in out
    assert "mean  over 45 turns" in out
    assert "Per session:" in out
    table = out[out.index("The tiered memory beside two baselines") :]
    for row in ("tiered memory", "full history", "last 20 messages"):
        assert row in table
    # Both counts: the evidence in the prompt and the answers that hold the fact.
    header = table.splitlines()[1]
    assert "evidence in the prompt" in header
    assert "answers with the fact" in header
    assert "Targets:" in out
    assert "Long-term memory of this run:" in out
    assert "answers that hold the expected fact:" in out
    assert f"plot written to {plot}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_the_plot_is_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    rows = [TurnStats(1, "s1", 100, 1, 20, 20, 30, 30)]
    note = plot_tokens(rows, str(tmp_path / "p.png"), 20, "title")
    assert note is not None
    assert "matplotlib is not installed" in note
    assert not (tmp_path / "p.png").exists()


@pytest.fixture(scope="module")
def whole_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """One offline run of the whole conversation (JSON), shared by the specs that need it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('whole') / 'demo.db'}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["demo", "--url", url, "--json"]) == 0
    return url, json.loads(out.getvalue())


def test_the_demo_meets_its_targets_offline(whole_demo: tuple[str, dict]) -> None:
    """The whole conversation: evidence reaches the prompt, the prompt stays small."""
    url, report = whole_demo
    assert report["context"] == {"soft_budget": 400, "budget": 400, "window": 20}
    assert {t["name"]: t["met"] for t in report["targets"]} == {
        "expected fact in the prompt >= 90 %": True,
        "mean prompt below the raw session's, per session": True,
        "last prompt <= 25 % of the raw history": True,
    }
    evidence = report["evidence_in_prompt"]
    assert evidence["tiered"] >= 0.9 * report["questions"]
    assert evidence["tiered"] > evidence["window"]  # a plain window forgets
    tokens = report["tokens"]
    full = sum(r["full_history_tokens"] for r in tokens)
    assert sum(r["prompt_tokens"] for r in tokens) < full / 4
    # An answer that holds the expected fact had it in its prompt (nothing is guessed).
    details = report["question_details"]
    assert all(q["evidence"] is not None for q in details if q["answered"])
    # Long-term memory holds facts, not the assistant's confirmations or chit-chat.
    with TieredMemoryStore.from_url(url) as store:
        from langmem_tiers import namespace_for

        semantic = store.search(namespace_for(report["scope"], "semantic"), limit=500)
    contents = [str(i.value["content"]) for i in semantic]
    assert contents
    assert not [c for c in contents if "Noted" in c]
    assert not [c for c in contents if c.startswith(("Hi", "Hello", "Thank", "Talk to you"))]


def test_locate_names_where_the_evidence_is() -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    search = (
        "Rules.\n\nArchived messages found by your search ([session/id] who: text):\n"
        "- [s1/m3] user: The launch moves to May 4."
    )
    prompt = [
        SystemMessage(search),
        HumanMessage("[m7|t1] launch=May 4"),
        HumanMessage("When is the launch?"),
    ]
    found = locate(prompt, "may 4")
    assert found is not None
    assert found.source == "episodic search"
    assert locate(prompt[1:], "May 4") == ("tier 1 line", "[m7|t1] launch=May 4")
    assert locate(prompt, "April 20") is None


def test_token_table_samples_rows_and_ends_with_the_mean() -> None:
    rows = [TurnStats(i, "s1", 100 + i, 1, 10 * i, 20 * i, 30 * i, 5 * i) for i in range(1, 101)]
    lines = token_table(rows, 5)
    body = list(lines[2:-3])
    assert [int(line.split()[0]) for line in body] == [1, 26, 51, 75, 100]
    mean, peak = lines[-2].split(), lines[-1].split()
    assert mean[:4] == ["mean", "over", "100", "turns"]
    assert mean[4] == "150"  # prompt tokens 101..200: mean 150.5, shown rounded to even
    assert peak == ["max", "200", "1", "1,000", "3,000", "500"]


def test_demo_as_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "langmem_tiers",
            "demo",
            "--turns",
            "30",
            "--url",
            f"sqlite:///{tmp_path / 'demo.db'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Prompt tokens per turn (sampled, 30 turns)" in done.stdout
    assert "The tiered memory beside two baselines" in done.stdout
    assert "Long-term memory of this run:" in done.stdout


def test_demo_with_an_unknown_model_provider_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    code = main(["demo", "--turns", "2", "--url", url, "--model", "nosuchprovider:model-x"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("langmem-tiers: error: ")
    assert err.count("\n") == 1
    assert "nosuchprovider:model-x" in err


def test_the_moved_launch_date_is_the_one_answered(whole_demo: tuple[str, dict]) -> None:
    """The conversation moves the launch from April 20 to May 4: every later answer says May 4.

    The chat graph's save node writes through the engine's pipeline, so the April 20 fact
    is superseded (it leaves the user's context) when the move is said.
    """
    url, report = whole_demo
    answers = {
        q["question"]: q["answer"]
        for q in report["question_details"]
        if q["question"].startswith("When is the launch")
    }
    assert set(answers) == {
        "When is the launch date?",
        "When is the launch now?",
        "When is the launch?",
    }
    for question in ("When is the launch now?", "When is the launch?"):
        assert "May 4" in answers[question]
        assert "The launch date is April 20" not in answers[question]
    with TieredMemoryStore.from_url(url) as store:
        from langmem_tiers.long_term.engine.engine import MemoryEngine

        engine = MemoryEngine(store)
        (label,) = {ns[0] for ns in store.list_namespaces(max_depth=1)}
        old = [
            m
            for m in engine.memories(decode_label(label), kinds="semantic", statuses=None)
            if m.content.startswith("The launch date is April 20")
        ]
        assert [(m.status, m.valid_until is not None) for m in old] == [("superseded", True)]


def test_an_answer_counts_by_the_fact_asked_for_not_by_a_name(
    whole_demo: tuple[str, dict],
) -> None:
    """ "Who covers on-call while Tomas is away?" expects Leo: a line that names Leo for
    something else (the team's roles) is neither the answer nor its evidence."""
    _, report = whole_demo
    (question,) = [
        q for q in report["question_details"] if q["question"].startswith("Who covers on-call")
    ]
    said = [s for s in re.split(r"(?<=[.!?])\s+", question["answer"]) if "Leo" in s]
    assert question["answered"] == any("on-call" in s or "covers" in s for s in said)
    if question["evidence"] is not None:
        assert "on-call" in question["evidence"]["line"]
    assert report["answered_with_expected_fact"] <= report["evidence_in_prompt"]["tiered"]
