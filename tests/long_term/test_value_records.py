"""A put's value is kept as its JSON text reads back, however the record was made.

A flat value of JSON scalars is copied instead of decoded from the text it was encoded
to; a nested one, or one of other types (tuples, str subclasses), is decoded. Both must
give what decoding gives: the same values of the same types, and never the caller's
own dict.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_tiers.long_term.store.records import validate_value_json

NAMESPACE = ("maya", "semantic")

# Any text a value may hold: no NUL, no lone surrogate (both refused).
_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
_SCALARS = (
    st.text(_CHARS, max_size=8)
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(_CHARS, max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


class _Label(str):
    """A str subclass: encoded as a string, read back as a plain one."""


def _typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out, for an exact comparison."""
    if isinstance(value, dict):
        return {(type(k).__name__, k): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(_CHARS, max_size=6), _VALUES, max_size=4), st.booleans())
def test_the_kept_value_is_what_its_json_text_reads_back_as(
    extra: dict[str, Any], subclassed: bool
) -> None:
    value: dict[str, Any] = {**extra, "content": _Label("tea at noon") if subclassed else "tea"}
    value.pop("status", None)  # the one checked field a key of six characters can name
    record, text = validate_value_json(NAMESPACE, "k", value, max_chars=1_000_000)
    assert _typed(record.value) == _typed(json.loads(text))
    assert record.value is not value


def test_a_flat_value_is_copied_not_shared() -> None:
    value = {"content": "tea at noon", "confidence": 0.5, "note": None}
    record, _ = validate_value_json(NAMESPACE, "k", value, max_chars=1_000)
    value["content"] = "changed after the put"
    assert record.value == {"content": "tea at noon", "confidence": 0.5, "note": None}
