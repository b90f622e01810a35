"""The package's public face: imports, optional extras, settings."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import langmem_tiers
from langmem_tiers.config import RankingWeights, Settings
from langmem_tiers.errors import ConfigurationError, MissingDependencyError


def test_import_loads_no_optional_backend() -> None:
    code = (
        "import sys, langmem_tiers; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('psycopg', 'psycopg_pool', 'qdrant_client', 'fastapi', 'openai')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


PUBLIC_SURFACE = {
    "BackendError",
    "ConfigurationError",
    "ConflictError",
    "DimensionMismatchError",
    "EmbeddingError",
    "InMemoryMessageLog",
    "InvalidContentError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidTierError",
    "JsonlMessageLog",
    "LangmemTiersError",
    "MemoryEngine",
    "MigrationError",
    "MissingDependencyError",
    "ModelError",
    "NotFoundError",
    "OfflineChatModel",
    "PRESETS",
    "RankedItem",
    "RankingWeights",
    "Settings",
    "ShortTermMemory",
    "SqlMessageLog",
    "TieredChatMessageHistory",
    "TieredMemoryMiddleware",
    "TieredMemoryStore",
    "ValidationError",
    "__version__",
    "build_consolidation_graph",
    "build_memory",
    "build_tiered_chat_graph",
    "decode_label",
    "encode_label",
    "event_context",
    "memory_save_node",
    "memory_view_node",
    "namespace_for",
}


def test_all_is_the_pinned_public_surface() -> None:
    assert set(langmem_tiers.__all__) == PUBLIC_SURFACE
    assert len(langmem_tiers.__all__) == len(PUBLIC_SURFACE)


def test_public_namespace_equals_all() -> None:
    """Once every export is loaded, the package holds exactly ``__all__`` (and submodules)."""
    code = (
        "import types, langmem_tiers as p; "
        "[getattr(p, n) for n in p.__all__]; "
        "print(sorted(n for n, v in vars(p).items() "
        "if not n.startswith('_') and not isinstance(v, types.ModuleType)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(out.stdout) == sorted(PUBLIC_SURFACE - {"__version__"})


def test_import_is_cheap() -> None:
    """``import langmem_tiers`` loads no LangGraph, LangChain or NumPy until a name is used."""
    code = (
        "import sys, langmem_tiers; "
        "print(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'langgraph', 'langchain', 'langchain_core', 'numpy', 'pydantic'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = langmem_tiers.Nope  # type: ignore[attr-defined]


def test_missing_extra_names_the_install_command() -> None:
    err = MissingDependencyError("The PostgreSQL backend", "postgres", "psycopg-pool")
    assert "pip install 'langmem-tiers[postgres]'" in str(err)
    assert isinstance(err, ImportError)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"MEMORY_WINDOW_LIMIT": "0"}, "MEMORY_WINDOW_LIMIT: memory_window_limit"),
        ({"SHORT_TERM_MEMORY_LIMIT": "five"}, "SHORT_TERM_MEMORY_LIMIT must be a whole number"),
        ({"LANGMEM_TIERS_WEIGHTS": "0.5,0.5,0.5,0.5"}, "must sum to 1"),
        ({"LANGMEM_TIERS_WEIGHTS": "1,0,0"}, "four comma-separated numbers"),
        ({"LANGMEM_TIERS_CONFLICT_STRATEGY": "coin_flip"}, "conflict_strategy must be one of"),
        ({"LANGMEM_TIERS_DECAY_THRESHOLD": "1.5"}, "decay_threshold must be a number"),
    ],
)
def test_invalid_settings_are_clear_errors(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env(environ=environ)


def test_arguments_win_over_environment_which_wins_over_defaults() -> None:
    env = {"MEMORY_WINDOW_LIMIT": "7", "LANGMEM_TIERS_CONTEXT_TOKEN_LIMIT": "9000"}
    settings = Settings.from_env(environ=env, memory_window_limit=3)
    assert settings.memory_window_limit == 3
    assert settings.context_token_limit == 9000
    assert settings.short_term_memory_limit == 5


def test_bad_weights_name_the_component() -> None:
    with pytest.raises(ConfigurationError, match=r"weights\.recency"):
        RankingWeights(0.4, -0.1, 0.5, 0.2).validated()
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Settings.from_env(environ={}, window=3)


# -- the layout says what may import what ---------------------------------------------------

_PACKAGE = Path(langmem_tiers.__file__).resolve().parent

#: area -> the areas it must never import at module level.
_ABOVE_MEMORY = {"conversation", "graph", "server", "cli"}
_FORBIDDEN = {
    "sql": {"long_term.store", "long_term.engine", "short_term", "tiers", *_ABOVE_MEMORY},
    "tiers": {"sql", "long_term.store", "long_term.engine", "short_term", *_ABOVE_MEMORY},
    "long_term.store": {"long_term.engine", "short_term", *_ABOVE_MEMORY},
    "long_term.engine": {"short_term", *_ABOVE_MEMORY},
    "short_term": {"long_term.engine", *_ABOVE_MEMORY},
    # The conversation service sits between memory and the surfaces that run turns.
    "conversation": {"graph", "server", "cli"},
    "graph": {"server", "cli"},
    "server": {"cli"},
}


def _area(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "long_term":
        return f"long_term.{parts[2]}"
    return parts[1] if len(parts) > 1 else ""


def _top_level_imports(path: Path) -> set[str]:
    """Package modules ``path`` imports when it is loaded (not inside functions)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found.update(n for n in names if n.startswith("langmem_tiers."))
    return found


def test_layers_import_only_what_the_layout_allows() -> None:
    broken = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(_PACKAGE.parent).with_suffix("").parts)
        forbidden = _FORBIDDEN.get(_area(module), set())
        for imported in _top_level_imports(path):
            if _area(imported) in forbidden:
                broken.append(f"{module} imports {imported}")
    assert broken == []
