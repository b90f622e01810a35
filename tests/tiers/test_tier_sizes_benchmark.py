"""The tier-size benchmark runs end to end on a tiny LoCoMo-shaped file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

SAMPLE = [
    {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Jordan",
            "speaker_b": "Ava",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Jordan",
                    "dia_id": "D1:1",
                    "text": "Hi Ava! I moved to Lisbon in 2021.",
                },
                {
                    "speaker": "Ava",
                    "dia_id": "D1:2",
                    "text": "Wow, Jordan! How do you like Lisbon?",
                },
                {"speaker": "Jordan", "dia_id": "D1:3", "text": "I love it. We have 2 dogs now."},
            ],
        },
        "qa": [],
    }
]


@pytest.mark.slow
def test_benchmark_writes_its_results(tmp_path: Path) -> None:
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(SAMPLE), encoding="utf-8")
    out = tmp_path / "tier_sizes.json"
    subprocess.run(
        [sys.executable, "-m", "benchmarks.tier_sizes", "--data", str(data), "--out", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["messages"] == 3
    assert results["tier1_within_raw_share"] == 1.0
    # Per turn: Ava, Lisbon | Jordan, Lisbon (numbers: 2021 | 2); the literal count also
    # takes "Hi" and "Wow" for names.
    assert results["key_token_counts"] == {
        "entities": 4,
        "entities_strict": 4,
        "entities_literal": 6,
        "numbers": 2,
    }
    assert results["share_kept_in_tier1"] == 1.0
    assert results["throughput_messages_per_s"] > 0
