"""The export/import benchmark runs end to end at a tiny size (timings are not asserted)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import portability_speed


def test_the_benchmark_runs_every_step(tmp_path: Path, postgres_url: str) -> None:
    steps = portability_speed.run(40, postgres_url, tmp_path, isolated=False)
    assert set(steps) == {
        "fill-sqlite",
        "export",
        "export-with-vectors",
        "import-postgres",
        "reimport-postgres",
        "import-sqlite",
    }
    assert steps["export"]["records"] == 1 + 2 * portability_speed.SCOPES + 40 * 2
    assert steps["import-postgres"]["embedded"] == 0
    assert (steps["reimport-postgres"]["written"], steps["reimport-postgres"]["unchanged"]) == (
        0,
        80,
    )
    assert steps["import-sqlite"]["embedded"] == 40
