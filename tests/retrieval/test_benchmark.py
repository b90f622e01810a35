"""The LoCoMo helpers and the retrieval benchmark, on a tiny conversation made here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import locomo_retrieval
from benchmarks.locomo import load_locomo, normalise_evidence, retrieval_questions
from langmem_tiers.long_term.store.search import bm25 as lexical

SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Rex!"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely. I started pottery classes."},
            {
                "speaker": "Ana",
                "dia_id": "D1:3",
                "text": "Look at this",
                "img_url": ["x"],
                "blip_caption": "a photo of a dog on a beach",
            },
        ],
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery bowl came out of the kiln."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Rex chewed my shoes again."},
        ],
        "session_3_date_time": "",
        "session_3": [],
    },
    "qa": [
        {
            "question": "What is the puppy's name?",
            "answer": "Rex",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "What does Ben make in pottery class?",
            "answer": "a bowl",
            "evidence": ["D1:2; D2:1"],
            "category": 1,
        },
        {"question": "When did Ana adopt?", "answer": "May", "evidence": ["D:1:1"], "category": 2},
        {"question": "What chewed?", "answer": "Rex", "evidence": ["D2:02", "D9:9"], "category": 3},
        {
            "question": "Unanswerable",
            "adversarial_answer": "x",
            "evidence": ["D1:1"],
            "category": 5,
        },
        {"question": "No evidence", "answer": "x", "evidence": ["D"], "category": 4},
    ],
}


@pytest.fixture
def data_path(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE, {**SAMPLE, "sample_id": "conv-test-2"}]))
    return path


def test_load_builds_turns_with_dates_and_captions(data_path: Path) -> None:
    conv = load_locomo(data_path)[0]
    assert conv.speakers == ("Ana", "Ben")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert (
        conv.turns[0].indexed_text == "[1:56 pm on 8 May, 2023] Ana: I adopted a puppy named Rex!"
    )
    assert conv.turns[2].indexed_text.endswith("Look at this [shares a photo of a dog on a beach]")
    assert conv.questions[4].answer == "x"


def test_evidence_is_normalised(data_path: Path) -> None:
    conv = load_locomo(data_path)[0]
    assert [q.evidence for q in conv.questions] == [
        ("D1:1",),
        ("D1:2", "D2:1"),
        ("D1:1",),
        ("D2:2",),
        ("D1:1",),
        (),
    ]
    # Adversarial questions and questions left without evidence are not measured.
    assert [q.question for q in retrieval_questions(conv)] == [
        "What is the puppy's name?",
        "What does Ben make in pottery class?",
        "When did Ana adopt?",
        "What chewed?",
    ]
    assert normalise_evidence(["D9:1 D4:4 D4:6", "D30:05"], {"D4:4", "D30:5"}) == (
        "D4:4",
        "D30:5",
    )


def test_question_metrics() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.5, 0.0])
    m = locomo_retrieval.question_metrics(scores, np.array([2, 4]))
    # Ranking: 1, 2, 3 (tie broken by turn order), 0, 4.
    assert m["MRR"] == pytest.approx(0.5)
    assert m["R@5"] == 1.0
    assert m["any@10"] == 1.0
    assert m["all@20"] == 1.0
    m = locomo_retrieval.question_metrics(np.arange(30.0), np.array([0, 29]))
    assert m["R@5"] == 0.5
    assert m["R@20"] == 0.5
    assert m["all@20"] == 0.0
    assert m["MRR"] == 1.0


def test_benchmark_bm25_equals_the_reference() -> None:
    texts = [
        "I adopted a puppy named Rex",
        "Rex chewed my shoes, the puppy is wild",
        "pottery class again",
        "",
    ]
    docs = [lexical.analyze(t) for t in texts]
    matrix = locomo_retrieval.Bm25Matrix(docs)
    for query in (["puppi", "rex"], {"pottery": 0.5, "rex": 2.0}, ["none"]):
        for k1, b in ((1.2, 0.3), (1.5, 0.75)):
            assert matrix.scores(query, k1, b) == pytest.approx(
                lexical.bm25_scores(query, docs, k1=k1, b=b)
            )


def test_quick_run_writes_results(data_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    report = locomo_retrieval.main(["--quick", "--data", str(data_path), "--out", str(out)])
    assert json.loads(out.read_text()) == report
    assert report["questions"] == 8
    methods = report["methods"]
    weight = locomo_retrieval.EMBEDDER_WEIGHTS["offline"]
    default = methods[f"fuse(bm25+feedback, offline) w={weight} [default]"]["all"]
    assert 0.0 <= default["R@10"] <= 1.0
    # Five turns per conversation: every evidence turn is in the top 10 of any ranking.
    assert default["R@10"] == 1.0
    assert set(default["R@10_by_category"]) == {
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    }
    # The puppy question is answered by lexical matching at rank 1.
    plain = methods["bm25 plain tokens (k1 1.5, b 0.75)"]["all"]
    assert plain["MRR"] > 0.5
