"""Execute the notebooks in place, so that they read with their outputs on a repository page.

Run from the repository's root, offline, with a PostgreSQL server with pgvector reachable
as the notebooks' PostgreSQL cells expect (else those cells print that they skipped)::

    python scripts/execute_notebooks.py [notebooks/01_quickstart.ipynb ...]

Each notebook runs top to bottom in a ``python3`` kernel with a throwaway data directory,
as ``tests/notebooks`` runs it; cell timing metadata is dropped. CI executes the notebooks
again and checks that what is committed is a clean run (no errors, no machine paths).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path) -> None:
    """Run the notebook at ``path`` and write it back with its outputs."""
    nb: Any = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    with tempfile.TemporaryDirectory(prefix="langmem-notebook-") as data:
        os.environ["XDG_DATA_HOME"] = data
        NotebookClient(
            nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}}
        ).execute()
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, path)  # type: ignore[no-untyped-call]
    print(f"executed {path.relative_to(ROOT)}")


def main(argv: list[str]) -> None:
    paths = [Path(a).resolve() for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        execute(path)


if __name__ == "__main__":
    main(sys.argv[1:])
