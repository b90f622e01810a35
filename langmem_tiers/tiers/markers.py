"""The marker language a model uses to ask for more context.

A model answering from a tiered context can write, anywhere in its answer:

- ``[REQUEST_TIER:<level>:<message_id>]`` to see message ``<message_id>`` (an id such as
  ``m12``, as the context shows it) at tier ``<level>``: 1 facts, 2 summary, 3 raw;
- ``[SEARCH_EPISODIC: <query>]`` to search the archived history for ``<query>``.

:func:`parse_markers` finds them, drops them from the text shown to the user and returns
what was asked for; the caller loads the context and regenerates the answer (a bounded
number of times). Spacing and case are forgiven (``[request_tier: 3 : M12]``,
``[Search Episodic: ...]``); an invalid level or id is logged and ignored; queries are
cut to :data:`MAX_QUERY_CHARS`; a marker cut off by the end of the output still counts.

Security: **markers are interpreted only in model output.** Never call
:func:`parse_markers` (or act on :func:`has_markers`) on text a user typed, a tool
returned or a document contained: there a marker is plain text, stored and shown as is.
Otherwise a user could make the system load other messages or search the archive on
their behalf. The context builder shows user text verbatim; only the generate step parses
the model's own answer.

Example:
    >>> answer = parse_markers("Let me check. [REQUEST_TIER:3:m12] [SEARCH_EPISODIC: trip plans]")
    >>> answer.text
    'Let me check.'
    >>> answer.tier_requests
    [TierRequest(level=<TierLevel.RAW: 3>, message_id='m12')]
    >>> answer.episodic_searches
    ['trip plans']
"""

from __future__ import annotations

import logging
import re
from typing import NamedTuple, TypeVar

from langmem_tiers.errors import InvalidTierError
from langmem_tiers.tiers.base import TierLevel

__all__ = [
    "MARKER_INSTRUCTIONS",
    "MAX_MARKERS",
    "MAX_QUERY_CHARS",
    "ParsedAnswer",
    "TierRequest",
    "episodic_search_marker",
    "has_markers",
    "parse_markers",
    "strip_markers",
    "tier_request_marker",
]

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 300
"""Longest episodic search query kept; longer ones are cut at a word boundary."""

MAX_MARKERS = 16
"""Most requests of each kind taken from one answer; the rest are logged and ignored."""

MARKER_INSTRUCTIONS = """\
Older messages are shown in short form, each starting with its id and tier, like \
[m12|t1]: t1 = key=value facts, t2 = a short summary, t3 = the full text.
If you need more of a message to answer, write [REQUEST_TIER:<tier>:<id>] (for example \
[REQUEST_TIER:3:m12]) and nothing else is needed: you will be asked again with that \
message shown in full.
If you need something from earlier conversations that is not shown, write \
[SEARCH_EPISODIC: <what to look for>] and you will be asked again with what was found.
Only ask when the shown context is not enough; otherwise just answer."""
"""Prompt text telling a model how to use the markers (callers may override it)."""


class TierRequest(NamedTuple):
    """A request to see message ``message_id`` at tier ``level``."""

    level: TierLevel
    message_id: str


class ParsedAnswer(NamedTuple):
    """A model answer with its markers taken out."""

    text: str
    """The answer without markers, whitespace tidied where markers were."""
    tier_requests: list[TierRequest]
    """Tier requests in the order written, each once."""
    episodic_searches: list[str]
    """Episodic search queries in the order written, each once."""

    @property
    def has_requests(self) -> bool:
        """True when the model asked for more context."""
        return bool(self.tier_requests or self.episodic_searches)


# A marker may be cut off by the end of the output (a truncated answer): an unclosed tier
# request still counts when only its id follows, an unclosed search takes the rest of the
# line as its query. Anything else that starts like a marker and is closed is malformed:
# it is removed from the text and logged, never shown to the user.
_TIER_PATTERN = (
    r"\[\s*request[\s_-]*tier\s*:(?P<level>[^:\]\n]*):"
    r"(?:(?P<id>[^\]\n]*?)\s*\]|[ \t]*(?P<open_id>[\w.\-]+)[ \t]*(?=\n|\Z))"
)
_SEARCH_PATTERN = r"\[\s*search[\s_-]*episodic\s*:(?P<query>[^\]\n]*?)\s*(?:\]|(?=\n)|\Z)"
_MALFORMED_PATTERN = r"(?P<bad>\[\s*(?:request[\s_-]*tier|search[\s_-]*episodic)\b[^\]\n]*\])"
_ANY_MARKER = re.compile(f"{_TIER_PATTERN}|{_SEARCH_PATTERN}|{_MALFORMED_PATTERN}", re.IGNORECASE)
_MAX_REMOVAL_ROUNDS = 4
_LEVEL = re.compile(r"(?i)^(?:t|tier)?\s*(\d+)$")
_LEVEL_NAMES = {level.name.lower(): level for level in TierLevel}
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,63}$")
_SHORT_ID = re.compile(r"^[mM]\d+$")


def _parse_level(raw: str) -> TierLevel:
    """A tier level from ``3``, ``t3``, ``tier 3`` or ``raw``; InvalidTierError otherwise."""
    text = raw.strip()
    match = _LEVEL.match(text)
    if match is not None:
        number = int(match.group(1))
        if 1 <= number <= 3:
            return TierLevel(number)
    elif text.lower() in _LEVEL_NAMES:
        return _LEVEL_NAMES[text.lower()]
    raise InvalidTierError(
        f"tier level must be 1 (facts), 2 (summary) or 3 (raw), got {raw.strip()!r}."
    )


def _tidy(text: str, touched_lines: set[int]) -> str:
    """Collapse the gaps markers left; lines without markers are kept exactly."""
    lines = text.split("\n")
    out: list[str] = []
    for number, line in enumerate(lines):
        if number not in touched_lines:
            out.append(line)
            continue
        line = re.sub(r"[ \t]{2,}", " ", line).strip()
        line = re.sub(r" +([,.;:!?])", r"\1", line)
        if line:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _tier_request(match: re.Match[str]) -> TierRequest | None:
    raw_id = (match.group("id") or match.group("open_id") or "").strip()
    try:
        level = _parse_level(match.group("level"))
    except InvalidTierError as err:
        logger.warning("Ignoring tier request %r: %s", match.group(0), err)
        return None
    if not _MESSAGE_ID.match(raw_id):
        logger.warning(
            "Ignoring tier request %r: message id %r is not an id like 'm12'.",
            match.group(0),
            raw_id,
        )
        return None
    return TierRequest(level, raw_id.lower() if _SHORT_ID.match(raw_id) else raw_id)


def _search_query(match: re.Match[str], max_query_chars: int) -> str | None:
    query = " ".join(match.group("query").split())
    if not query:
        logger.warning("Ignoring episodic search %r: the query is empty.", match.group(0))
        return None
    if len(query) > max_query_chars:
        cut = query[:max_query_chars].rsplit(" ", 1)[0] or query[:max_query_chars]
        logger.warning("Episodic search query cut from %d to %d characters.", len(query), len(cut))
        query = cut
    return query


_T = TypeVar("_T")


def _append_new(bucket: list[_T], item: _T | None, marker: str) -> None:
    """Append ``item`` once, up to :data:`MAX_MARKERS` items."""
    if item is None or item in bucket:
        return
    if len(bucket) >= MAX_MARKERS:
        logger.warning("Ignoring %r: more than %d requests of a kind.", marker, MAX_MARKERS)
        return
    bucket.append(item)


def _remove_markers(text: str) -> tuple[str, list[re.Match[str]]]:
    """The text without markers (tidied) and the markers found, in order.

    Removal repeats (a few rounds) because taking one marker out can join the pieces of
    another ("[REQUEST_" + marker + "TIER:3:m1]"); the user never sees a marker.
    """
    found: list[re.Match[str]] = []
    touched: set[int] = set()
    for _ in range(_MAX_REMOVAL_ROUNDS):
        current = text

        def remove(match: re.Match[str], current: str = current) -> str:
            found.append(match)
            touched.add(current.count("\n", 0, match.start()))
            return " "

        text = _ANY_MARKER.sub(remove, current)
        if text == current:
            break
    return _tidy(text, touched), found


def parse_markers(text: str, *, max_query_chars: int = MAX_QUERY_CHARS) -> ParsedAnswer:
    """Split a **model** answer into the text for the user and the context it asked for.

    Call this on model output only, never on user text (see the module docstring).
    Invalid markers (a level outside 1..3, an id that is not an id, an empty query) are
    removed from the text, logged, and not returned.

    >>> parse_markers("[request_tier: 2 : M7] The trip was in May.").tier_requests
    [TierRequest(level=<TierLevel.SUMMARY: 2>, message_id='m7')]
    >>> parse_markers("Answer [REQUEST_TIER:9:m1]")
    ParsedAnswer(text='Answer', tier_requests=[], episodic_searches=[])
    """
    if max_query_chars < 1:
        raise ValueError(f"max_query_chars must be >= 1, got {max_query_chars!r}.")
    clean, found = _remove_markers(text)
    tier_requests: list[TierRequest] = []
    searches: list[str] = []
    for match in found:
        if match.group("bad") is not None:
            logger.warning("Ignoring malformed marker %r.", match.group("bad"))
        elif match.group("level") is not None:
            _append_new(tier_requests, _tier_request(match), match.group(0))
        else:
            _append_new(searches, _search_query(match, max_query_chars), match.group(0))
    return ParsedAnswer(clean, tier_requests, searches)


def strip_markers(text: str) -> str:
    """A **model** answer without its markers (valid or not), whitespace tidied.

    >>> strip_markers("Sure [SEARCH_EPISODIC: budget], one moment.")
    'Sure, one moment.'
    """
    return _remove_markers(text)[0]


def has_markers(text: str) -> bool:
    """True when ``text`` holds a marker (valid or not). For model output only.

    >>> has_markers("[REQUEST_TIER:3:m1]"), has_markers("no markers here")
    (True, False)
    """
    return _ANY_MARKER.search(text) is not None


def tier_request_marker(level: int, message_id: str) -> str:
    """The marker asking for ``message_id`` at ``level`` (for prompts and tests).

    >>> tier_request_marker(3, "m12")
    '[REQUEST_TIER:3:m12]'
    """
    tier = _parse_level(str(level))
    if not _MESSAGE_ID.match(message_id):
        raise InvalidTierError(
            f"message_id must look like 'm12' (letters, digits, '_', '.', '-'), got {message_id!r}."
        )
    return f"[REQUEST_TIER:{int(tier)}:{message_id}]"


def episodic_search_marker(query: str) -> str:
    """The marker asking for an episodic search of ``query``.

    >>> episodic_search_marker("  what did we decide about the venue ")
    '[SEARCH_EPISODIC: what did we decide about the venue]'
    """
    clean = " ".join(query.replace("]", ")").replace("[", "(").split())
    if not clean:
        raise InvalidTierError("query must not be empty; say what to search for.")
    return f"[SEARCH_EPISODIC: {clean[:MAX_QUERY_CHARS]}]"
