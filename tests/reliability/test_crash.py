"""Crash consistency: SIGKILL at seeded moments loses nothing acknowledged and duplicates nothing.

Per backend (SQLite file, JSONL log beside an SQLite store, PostgreSQL), children run
short-term memory adds (``moving_window`` and ``tiered`` presets with small limits) and
store puts, and are killed at least ``CI_KILL_POINTS`` times; after every kill the survivors
are checked (see ``harness.verify``). The ``slow`` variant kills ten times as often:

    .venv/bin/pytest tests/reliability -m slow -k crash
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import SEED
from .harness import BACKENDS, Backend, run_kill_points

CI_KILL_POINTS = 50
SLOW_KILL_POINTS = 500


@pytest.fixture(params=BACKENDS)
def crash_backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    return backend


@pytest.fixture
def crash_url(crash_backend: Backend, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if crash_backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'store.db'}"


def _kill_and_check(
    backend: Backend, url: str, workdir: Path, kill_points: int, request: pytest.FixtureRequest
) -> None:
    seed = SEED + BACKENDS.index(backend)
    figures = run_kill_points(backend, url, workdir, seed=seed, kill_points=kill_points)
    request.node.user_properties.append(("crash_figures", figures))
    print(f"{backend}: {figures}")
    assert figures.kill_points >= kill_points
    # The kills must have hit the interesting paths, not only idle moments.
    assert figures.by_mode["step"] >= kill_points // 4
    assert figures.by_mode["timer"] >= 1
    if backend == "jsonl":
        assert figures.by_mode["torn"] >= 1
    assert figures.summaries > 0, "no moving-window consolidation happened"
    assert figures.episodes > 0, "no tiered pruning happened"
    assert figures.acknowledged > kill_points


def test_sigkill_loses_nothing_acknowledged_and_duplicates_nothing(
    crash_backend: Backend, crash_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _kill_and_check(crash_backend, crash_url, tmp_path, CI_KILL_POINTS, request)


@pytest.mark.slow
def test_sigkill_many_times(
    crash_backend: Backend, crash_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    _kill_and_check(crash_backend, crash_url, tmp_path, SLOW_KILL_POINTS, request)


def test_the_checks_catch_a_consolidation_that_removes_before_it_persists(tmp_path: Path) -> None:
    # The harness must be able to fail: with the two steps of consolidation swapped in
    # the children, a kill between them loses messages, and the checks must say so.
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with pytest.raises(AssertionError, match="left the window without reaching long-term memory"):
        run_kill_points("sqlite", url, tmp_path, seed=SEED, kill_points=40, sabotage=True)
