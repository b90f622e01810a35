"""The ``dual`` preset's switches: long-term memory off, and a per-call number of rounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_tiers import namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError, ValidationError
from langmem_tiers.short_term.presets import build_memory

from .conftest import TwinOf
from .fakes import make_store


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, True),
        ({"LANGMEM_TIERS_LTM_ENABLED": "false"}, False),
        ({"MEM0_ENABLED": "false"}, False),
        ({"MEM0_ENABLED": "False"}, False),
        ({"MEM0_ENABLED": "0"}, False),
        ({"MEM0_ENABLED": "no"}, False),
        ({"MEM0_ENABLED": "true"}, True),
        ({"LANGMEM_TIERS_LTM_ENABLED": "1", "MEM0_ENABLED": "false"}, True),
    ],
)
def test_long_term_memory_can_be_turned_off_from_the_environment(
    environ: dict[str, str], expected: bool
) -> None:
    assert Settings.from_env(environ=environ).ltm_enabled is expected


def test_a_bad_switch_value_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match=r"MEM0_ENABLED.*true or false.*maybe"):
        Settings.from_env(environ={"MEM0_ENABLED": "maybe"})
    with pytest.raises(ConfigurationError, match="ltm_enabled"):
        Settings(ltm_enabled="no")  # type: ignore[arg-type]


async def test_dual_without_long_term_memory_keeps_the_window_and_touches_no_store(
    tmp_path: Path, twin_of: TwinOf
) -> None:
    store = make_store()
    settings = Settings(ltm_enabled=False, sliding_window_rounds=2)
    memory = build_memory(
        "chat", preset="dual", store=store, settings=settings, directory=tmp_path, user_id="u1"
    )
    assert memory.store is None
    stm = twin_of(memory)
    for turn in range(3):
        result = await stm.add_messages(
            [HumanMessage(f"My name is Jordan {turn}."), AIMessage("Hi")]
        )
        assert result.error is None
    assert store.search(namespace_for("u1", "semantic")) == [], "facts went to long-term memory"
    assert [m.content for m in await stm.context()][-1] == "Hi"
    assert len(await stm.context()) == 4
    assert len(await stm.records()) == 6


def test_without_long_term_memory_no_default_store_is_opened(tmp_path: Path) -> None:
    settings = Settings(ltm_enabled=False, url=f"sqlite:///{tmp_path / 'never.db'}")
    build_memory("chat", preset="dual", settings=settings, directory=tmp_path / "sessions")
    assert not (tmp_path / "never.db").exists()


@pytest.mark.parametrize("preset", ["moving_window", "reset", "tiered"])
def test_presets_that_move_messages_to_long_term_memory_refuse_it_turned_off(
    preset: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match=f"ltm_enabled.*{preset}"):
        build_memory(
            "chat", preset=preset, settings=Settings(ltm_enabled=False), directory=tmp_path
        )


async def test_the_sliding_window_is_read_with_a_number_of_rounds_per_call(
    tmp_path: Path, twin_of: TwinOf
) -> None:
    memory = build_memory(
        "chat",
        preset="dual",
        store=make_store(),
        settings=Settings(sliding_window_rounds=10),
        directory=tmp_path,
    )
    stm = twin_of(memory)
    for turn in range(1, 8):
        await stm.add_messages([HumanMessage(f"question {turn}"), AIMessage(f"answer {turn}")])

    def raw(messages: list[Any]) -> list[str]:
        return [m.content for m in messages if m.id is not None]

    assert raw(await stm.context(rounds=2)) == ["question 6", "answer 6", "question 7", "answer 7"]
    assert len(raw(await stm.context())) == 14
    assert len(raw(await stm.context(rounds=50))) == 14


@pytest.mark.parametrize("rounds", [0, -1, 2.5, "5", True])
async def test_an_invalid_number_of_rounds_is_a_clear_error(
    rounds: Any, tmp_path: Path, twin_of: TwinOf
) -> None:
    memory = build_memory("chat", preset="dual", store=make_store(), directory=tmp_path)
    with pytest.raises(
        ValidationError, match=f"rounds must be a whole number >= 1, got {rounds!r}"
    ):
        await twin_of(memory).context(rounds=rounds)
