"""How faithful tier 1 is: identifiers, amounts, addresses and dates stated whole and named right.

Runs :func:`~langmem_tiers.tiers.extraction.extract_facts` (the rules behind the offline
tier 1) over a corpus of messages full of things a model must not get wrong (social
security and invoice numbers, flights, phones, e-mails, amounts in several currencies,
street addresses, dates in many formats, times, versions, percentages, measurements), each
with the facts it must state, and reports:

- ``faithful``: the share of stated values the message holds as written, on whole tokens
  (a value that starts or ends inside a token, like ``078-05`` of ``078-05-1120``, or a
  number the message does not hold, is not faithful). A comma before a space may be
  dropped (``, `` separates tier-1 keys) and a number word may be stated as its digits;
  case and spacing are ignored;
- ``whole``: the share of expected values stated whole (as one value);
- ``right_key``: the share of expected values stated whole under a key that names them (or
  a neutral key such as ``code`` or ``number``);
- ``wrong_keys`` and ``fragments``: stated facts whose key names the wrong thing, and
  stated values that are a part of an expected value or run across its edge.

What counts as faithful is decided here, from the message text alone, not by the rules.

Run from the repository root::

    python -m benchmarks.faithful_facts [--corpus path.json] [--out path.json]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.report import write_results
from langmem_tiers.tiers.extraction import Fact, extract_facts
from langmem_tiers.tiers.lexicon import NUMBER_WORDS

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT / "tests" / "tiers" / "data" / "faithful_facts.json"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "faithful_facts.json"

# Keys that only say "a value" and so are never wrong.
_SKIPPED_KEYS = frozenset({"topic", "note"})
# Written-out numbers a message may hold where tier 1 writes digits.
_NUMBER_WORDS = {"one": "1", **NUMBER_WORDS}
# A token may be wrapped in these (before) and followed by sentence punctuation (after).
_OPENING = "([{\"'"
_CLOSING = ".,;:!?)]}\"'"


def _norm(text: str) -> str:
    """Lower-case, straight quotes, one space; a comma before a space dropped."""
    text = text.replace("’", "'").replace("‘", "'").lower()
    text = re.sub(r",(?=\s)", "", text)
    return re.sub(r"\s+", " ", text).strip()


def _on_token_edges(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` starts and ends where a whitespace token does."""
    if start > 0 and not (text[start - 1].isspace() or text[start - 1] in _OPENING):
        return False
    rest = text[end:]
    trailing = len(rest) - len(rest.lstrip(_CLOSING))
    return trailing == len(rest) or rest[trailing].isspace()


def spans(value: str, text: str, *, whole: bool = True) -> list[tuple[int, int]]:
    """Where ``value`` occurs in ``text`` (both :func:`_norm`-ed), on whole tokens only
    unless ``whole`` is false."""
    needle, haystack = _norm(value), _norm(text)
    found: list[tuple[int, int]] = []
    if not needle:
        return found
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if not whole or _on_token_edges(haystack, start, end):
            found.append((start, end))
        start = haystack.find(needle, start + 1)
    return found


def is_faithful(value: str, text: str) -> bool:
    """Whether ``text`` holds ``value`` as written, on whole tokens.

    >>> is_faithful("078-05-1120", "My SSN is 078-05-1120."), is_faithful("078-05", "078-05-1120")
    (True, False)
    >>> is_faithful("2", "I have two cats"), is_faithful("May 8 2023", "on May 8, 2023.")
    (True, True)
    """
    if spans(value, text):
        return True
    words = {_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _NUMBER_WORDS}
    return value in words


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score_message(
    text: str, expected: Sequence[dict[str, Any]], facts: Sequence[Fact], neutral: frozenset[str]
) -> dict[str, Any]:
    """The counts of one message (see the module docstring)."""
    stated = [f for f in facts if f.key not in _SKIPPED_KEYS]
    unfaithful = [f for f in stated if not is_faithful(f.value, text)]
    whole = right_key = 0
    wrong_keys: list[Fact] = []
    fragments: list[Fact] = []
    for item in expected:
        value, keys = item["value"], set(item["keys"]) | neutral
        same = [f for f in stated if _norm(f.value) == _norm(value)]
        whole += bool(same)
        right_key += any(f.key in keys for f in same)
        wrong_keys.extend(f for f in same if f.key not in keys)
        where = spans(value, text)
        for fact in stated:
            if _norm(fact.value) == _norm(value) or fact in fragments:
                continue
            # Where the value is: on whole tokens, or (only if never so) anywhere.
            inside = spans(fact.value, text) or spans(fact.value, text, whole=False)
            if any(_overlaps(a, b) for a in inside for b in where):
                fragments.append(fact)
    return {
        "stated": len(stated),
        "unfaithful": unfaithful,
        "whole": whole,
        "right_key": right_key,
        "wrong_keys": wrong_keys,
        "fragments": fragments,
    }


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def _measure_messages(
    messages: Sequence[dict[str, Any]], neutral: frozenset[str]
) -> dict[str, Any]:
    stated = unfaithful = expected = whole = right_key = 0
    wrong: list[str] = []
    split: list[str] = []
    untrue: list[str] = []
    for message in messages:
        text = message["text"]
        counts = score_message(text, message["facts"], extract_facts(text), neutral)
        stated += counts["stated"]
        unfaithful += len(counts["unfaithful"])
        expected += len(message["facts"])
        whole += counts["whole"]
        right_key += counts["right_key"]
        untrue += [f"{text} -> {f.key}={f.value}" for f in counts["unfaithful"]]
        wrong += [f"{text} -> {f.key}={f.value}" for f in counts["wrong_keys"]]
        split += [f"{text} -> {f.key}={f.value}" for f in counts["fragments"]]
    return {
        "messages": len(messages),
        "facts_stated": stated,
        "facts_expected": expected,
        "faithful": _share(stated - unfaithful, stated),
        "whole": _share(whole, expected),
        "right_key": _share(right_key, expected),
        "wrong_keys": len(wrong),
        "fragments": len(split),
        "unfaithful_examples": untrue[:20],
        "wrong_key_examples": wrong[:20],
        "fragment_examples": split[:20],
    }


def measure(corpus: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the module docstring over ``corpus`` (the JSON of the data file).

    ``tuned``: the messages the rules were fixed on; ``held_out``: messages written after
    and never tuned on.
    """
    neutral = frozenset(corpus.get("neutral_keys", ()))
    return {
        "tuned": _measure_messages(corpus["messages"], neutral),
        "held_out": _measure_messages(corpus.get("held_out", []), neutral),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure the corpus, write the JSON results and print them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    results = measure(json.loads(args.corpus.read_text(encoding="utf-8")))
    write_results(results, args.out)
    print(json.dumps(results, indent=2, ensure_ascii=False))
    return results


if __name__ == "__main__":
    main()
