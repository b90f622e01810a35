"""``plain``: the JSON-safe form the CLI, the HTTP API and MCP answer with."""

from __future__ import annotations

import enum
import json
import math
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import PurePosixPath
from typing import NamedTuple

import numpy as np
import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.plain import plain


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Hit(NamedTuple):
    key: str
    score: float


@dataclass
class Box:
    items: tuple[int, ...]
    at: date


def test_built_in_values_keep_their_form_and_non_finite_floats_become_none() -> None:
    value = {"a": [1, 2.5, True, None, "x"], 3: ("t", float("nan")), "inf": -math.inf}
    assert plain(value) == {"a": [1, 2.5, True, None, "x"], "3": ["t", None], "inf": None}


def test_subclasses_of_built_ins_take_their_own_form() -> None:
    assert plain([Colour.RED, Level.HIGH]) == ["red", 3]
    assert plain(Hit("k", 0.5)) == {"key": "k", "score": 0.5}
    assert plain({"hit": Hit("k", math.nan)}) == {"hit": {"key": "k", "score": None}}


def test_other_values_become_strings_numbers_or_records() -> None:
    at = datetime(2026, 5, 4, 12, tzinfo=timezone.utc)
    ident = uuid.UUID(int=1)
    assert plain(
        {
            "at": at,
            "gap": timedelta(minutes=1),
            "id": ident,
            "path": PurePosixPath("/a/b"),
            "box": Box((1, 2), date(2026, 5, 4)),
            "set": frozenset({7}),
            "np": np.float32(0.25),
        }
    ) == {
        "at": "2026-05-04T12:00:00+00:00",
        "gap": 60.0,
        "id": str(ident),
        "path": "/a/b",
        "box": {"items": [1, 2], "at": "2026-05-04"},
        "set": [7],
        "np": 0.25,
    }


def test_a_memory_becomes_its_json_form() -> None:
    at = datetime(2026, 5, 4, 12, tzinfo=timezone.utc)
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        memory = MemoryEngine(store).add_episodic(
            "agent-a", "Bob likes jazz", event_timestamp=at, metadata={"tags": ["music"]}
        )
    data = plain(memory)
    assert data == json.loads(json.dumps(data))
    assert data["event_timestamp"] == "2026-05-04T12:00:00+00:00"
    assert data["content"] == "Bob likes jazz"
    assert data["value"]["metadata"] == {"tags": ["music"]}
    assert data["value"] is not memory.value  # a copy: the answer never aliases the record


def test_a_value_without_json_form_is_refused() -> None:
    with pytest.raises(TypeError, match="object has no JSON form"):
        plain({"x": object()})
