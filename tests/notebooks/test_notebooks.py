"""The notebooks run top to bottom, offline, leave nothing behind, and are committed as one run.

Each notebook in ``notebooks/`` is executed with ``nbclient`` in a ``python3`` kernel of this
interpreter, with the repository root as its working directory. A failing cell fails the
test with the notebook's name, the cell's number and source, and the traceback.

A notebook skips its PostgreSQL cells when no server with pgvector is reachable (it prints
``PostgreSQL skipped: ...``); with ``CI=true`` that fails the test, as the PostgreSQL tests
do, because CI must prove the PostgreSQL path. Schemas a notebook creates (``nb_*``) must be
dropped by its end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL_NAME = "python3"
POSTGRES_URL = os.environ.get(
    "LANGMEM_TIERS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
POSTGRES_SKIPPED = "PostgreSQL skipped"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_TIMEOUT_S = 120


def _read(path: Path) -> Any:
    """A notebook as nbformat's node (``nbformat.read`` is untyped)."""
    read: Callable[..., Any] = nbformat.read
    return read(path, as_version=4)


def _runs_this_python(argv: list[str]) -> bool:
    # jupyter_client replaces a bare "python"/"python3" with the running interpreter.
    if not argv:
        return False
    bare = {
        "python",
        f"python{sys.version_info[0]}",
        f"python{sys.version_info[0]}.{sys.version_info[1]}",
    }
    return argv[0] in bare or Path(argv[0]).resolve() == Path(sys.executable).resolve()


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Make ``python3`` a kernel of this interpreter (its own kernelspec if none fits)."""
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
        usable = _runs_this_python(list(spec.argv))
    except NoSuchKernel:
        usable = False
    if usable:
        yield
        return
    where = tmp_path_factory.mktemp("jupyter")
    kernel_dir = where / "kernels" / KERNEL_NAME
    kernel_dir.mkdir(parents=True)
    spec_json = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tests)",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec_json), encoding="utf-8")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(where), previous]))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = previous


def _left_behind_candidates() -> set[str]:
    """Where a notebook's relative paths land: the repository root and ``notebooks/``."""
    top = {p.name for p in ROOT.iterdir()}
    ours = {str(p.relative_to(ROOT)) for p in NOTEBOOK_DIR.rglob("*")}
    return top | ours


def _notebook_schemas() -> set[str]:
    """The ``nb_*`` schemas on the test PostgreSQL (none when it cannot be reached)."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'nb\\_%'"
            ).fetchall()
    except Exception:  # no server, no driver: nothing a notebook could have left there
        return set()
    return {str(row[0]) for row in rows}


def _printed(nb: Any) -> str:
    """Everything the executed notebook's cells printed."""
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )


def _failure(notebook: Path, err: CellExecutionError, nb: Any) -> str:
    failing = [
        (index, cell)
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and any(out.get("output_type") == "error" for out in cell.get("outputs", []))
    ]
    where = (
        f"cell {failing[0][0]} (counting from 0):\n{failing[0][1].source}"
        if failing
        else "an unknown cell"
    )
    return _ANSI.sub("", f"{notebook.name} failed in {where}\n\n{err}")


def test_there_are_notebooks() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names, f"no notebooks found in {NOTEBOOK_DIR}"
    assert all(name[:2].isdigit() for name in names), names


@pytest.mark.usefixtures("kernel_path")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(notebook: Path, record_property: Any) -> None:
    nb = _read(notebook)
    before = _left_behind_candidates()
    schemas_before = _notebook_schemas()
    data_dir = Path(os.environ["XDG_DATA_HOME"]) / "langmem-tiers"
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(ROOT)}},
    )
    started = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(_failure(notebook, err, nb), pytrace=False)
    elapsed = time.perf_counter() - started
    record_property("seconds", round(elapsed, 2))
    print(f"{notebook.name}: {elapsed:.1f} s")
    left = sorted(_left_behind_candidates() - before)
    assert not left, f"{notebook.name} left files in the repository: {left}"
    assert not data_dir.exists(), (
        f"{notebook.name} used the embedded default store in the user's data directory; "
        "open stores with sqlite:///:memory: or a temporary directory"
    )
    left_schemas = sorted(_notebook_schemas() - schemas_before)
    assert not left_schemas, f"{notebook.name} left PostgreSQL schemas: {left_schemas}"
    if IN_CI:
        assert POSTGRES_SKIPPED not in _printed(nb), (
            f"{notebook.name} skipped its PostgreSQL cells in CI: {POSTGRES_URL} must be reachable"
        )


def _committed_notebooks() -> list[Path]:
    """Notebooks tracked by git (all of ``notebooks/`` when git cannot say)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--", "notebooks/*.ipynb"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return NOTEBOOKS
    return sorted({ROOT / name for name in listed} | set(NOTEBOOKS))


#: What a machine's own paths look like in an output (a temporary directory, a home, a
#: virtual environment): a committed run must show none.
_MACHINE_PATH = re.compile(r"(/tmp/|/var/folders/|/root/|/home/|/Users/|site-packages|[A-Z]:\\)")


@pytest.mark.parametrize("notebook", _committed_notebooks(), ids=lambda p: p.stem)
def test_notebook_is_committed_as_a_clean_run(notebook: Path) -> None:
    """Committed with the outputs of one run top to bottom (scripts/execute_notebooks.py),
    so it reads on a repository page: every code cell ran once, in order, without an
    error, a warning on stderr, a skipped PostgreSQL cell or a path of the machine."""
    nb = _read(notebook)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    counts = [cell.get("execution_count") for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{notebook.name}: execution counts {counts}; run it top to bottom with "
        f"python scripts/execute_notebooks.py {notebook.relative_to(ROOT)}"
    )
    for index, cell in enumerate(code):
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            assert kind != "error", f"{notebook.name}: code cell {index} failed"
            assert output.get("name") != "stderr", (
                f"{notebook.name}: code cell {index} wrote to stderr: {output.get('text')!r}"
            )
            text = f"{output.get('text', '')}{output.get('data', {}).get('text/plain', '')}"
            assert POSTGRES_SKIPPED not in text, (
                f"{notebook.name}: committed from a run whose PostgreSQL cells skipped"
            )
            assert not _MACHINE_PATH.search(text), (
                f"{notebook.name}: code cell {index} shows a path of the machine: {text!r}"
            )
    assert not any("execution" in cell.get("metadata", {}) for cell in nb.cells), (
        f"{notebook.name} keeps execution timings in cell metadata; clear them"
    )
