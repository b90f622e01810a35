"""The SqliteStore peer of :mod:`benchmarks.store_speed`, run under another Python.

LangGraph's ``SqliteStore`` with sqlite-vec needs a ``sqlite3`` that loads extensions, which
many Python builds lack: the peer runs in a subprocess under a virtual environment made
from the system Python, kept in a cache directory between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["default_peer_venv", "peer_python", "run_in_peer"]

#: The Python the SqliteStore peer's environment is made from: Debian's can load
#: SQLite extensions.
SYSTEM_PYTHON = "/usr/bin/python3"
PEER_PACKAGES = ("langgraph-checkpoint-sqlite", "sqlite-vec", "numpy")


def default_peer_venv() -> Path:
    """Where the SqliteStore peer's virtual environment is kept between runs."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "langmem-tiers-bench" / "sqlite-store-peer"


def _can_load_extensions(python: str) -> str | None:
    """Why ``python`` cannot run SqliteStore with sqlite-vec, or None when it can."""
    probe = (
        "import sqlite3, sqlite_vec, langgraph.store.sqlite, numpy\n"
        "c = sqlite3.connect(':memory:')\n"
        "c.enable_load_extension(True)\n"
        "sqlite_vec.load(c)\n"
    )
    try:
        done = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} does not run: {err}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{python} cannot load sqlite-vec: {last}"
    return None


def peer_python(venv: Path, *, install: bool) -> tuple[str | None, str | None]:
    """The SqliteStore peer's Python (made when missing and ``install``), or why there is none.

    Returns ``(python, None)`` or ``(None, reason)``.
    """
    python = venv / "bin" / "python"
    if python.exists():
        problem = _can_load_extensions(str(python))
        return (str(python), None) if problem is None else (None, problem)
    if not install:
        return None, (
            f"the SqliteStore peer needs a virtual environment at {venv} (made from "
            f"{SYSTEM_PYTHON}, whose sqlite3 loads extensions) and installing it was not "
            "allowed (--quick or --peer-install never); run once without --quick"
        )
    if not Path(SYSTEM_PYTHON).exists():
        return None, f"{SYSTEM_PYTHON} is missing: no Python here can load sqlite-vec"
    steps = [
        [SYSTEM_PYTHON, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"making the peer environment failed ({' '.join(step[:3])}): {err}"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            hint = " (apt-get install python3-venv)" if "venv" in step[2] else ""
            return None, f"making the peer environment failed{hint}: {last}"
    problem = _can_load_extensions(str(python))
    return (str(python), None) if problem is None else (None, problem)


def run_in_peer(
    python: str, name: str, size: int, args: argparse.Namespace, *, log: Callable[[str], None]
) -> dict[str, Any]:
    """Run :func:`run_one` for ``name`` at ``size`` under ``python`` and return its result."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="langmem-bench-peer-") as directory:
        out = Path(directory) / "run.json"
        command = [
            python,
            "-m",
            "benchmarks.store_speed",
            "--peer-run",
            name,
            "--sizes",
            str(size),
            "--queries",
            str(args.queries),
            "--gets",
            str(args.gets),
            "--seed",
            str(args.seed),
            "--out",
            str(out),
        ]
        env = {**os.environ, "PYTHONPATH": str(root)}
        done = subprocess.run(command, cwd=root, env=env, text=True, capture_output=True)
        for line in done.stdout.splitlines():
            log(line)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the peer process failed: {last}")
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result
