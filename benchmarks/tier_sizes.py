"""How small the offline tiers are, what tier 1 keeps, and how fast they are made.

Runs :class:`~langmem_tiers.tiers.OfflineTierer` over every LoCoMo turn (speaker A as
the user, speaker B as the assistant) and reports, with tokens counted by
:func:`~langmem_tiers.tiers.count_tokens`:

- the median, mean and 90th percentile of tier1/raw and tier2/raw token ratios;
- the share of the raw turn's named entities and numbers found again in tier 1;
- throughput in messages per second (best of three passes over all turns);
- how faithful tier 1 is on a corpus of messages full of identifiers, amounts and dates
  (:mod:`benchmarks.faithful_facts`, its tuned and held-out messages).

What counts as a named entity is decided here, independently of the tierer's rules:

- ``entities`` (the headline): capitalised words that are not stop words or
  interjections and, when they open a sentence, whose lower-case form never occurs in
  the whole corpus (so "Wow" or "Pets" at a sentence start are not names, "Toby" is);
- ``entities_strict``: only capitalised words inside a sentence (never the first word);
- ``entities_literal``: every capitalised word except stop words opening a sentence
  (this counts "Wow", "Thanks", "Sounds" as names, so it understates what is kept).

Numbers are the tokens that contain a digit. A token is kept when tier 1 contains it,
ignoring case, thousands separators and a possessive ``'s``.

Run from the repository root::

    python -m benchmarks.tier_sizes [--data path/to/locomo10.json] [--out path.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from benchmarks import faithful_facts
from langmem_tiers.tiers import MessageTiers, OfflineTierer, count_tokens

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo10.json"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "tier_sizes.json"


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# A standard English stop-word list, kept apart from the tierer's own word lists so the
# measure does not share its assumptions.
STOP_WORDS = _word_set("""
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves
    """)

# Interjections are not names even though some never occur in lower case in the corpus.
INTERJECTIONS = _word_set("""
    ah aha aw aww awww bravo btw eh gosh gotcha ha haha hello hey hi hmm hooray huh mmm nah nope oh ok
    okay omg oof ooh ooo oops ouch phew ugh uh um whoa woah woo woohoo wow yay yeah yep yup
    """)

_TOKEN = re.compile(r"[^\s]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_EDGE_PUNCT = "\"'“”‘’()[]{}<>.,;:!?*…-–—"


def load_turns(path: Path) -> list[BaseMessage]:
    """Every turn of every session as a message (speaker A: human, speaker B: AI)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    messages: list[BaseMessage] = []
    for sample in data:
        conversation = sample["conversation"]
        speaker_a = conversation["speaker_a"]
        sessions = sorted(
            (int(key.split("_")[1]), turns)
            for key, turns in conversation.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list)
        )
        for _, turns in sessions:
            for turn in turns:
                text = str(turn.get("text", ""))
                if not text.strip():
                    continue
                cls = HumanMessage if turn["speaker"] == speaker_a else AIMessage
                messages.append(cls(text, name=turn["speaker"]))
    return messages


def _norm(token: str) -> str:
    token = token.strip(_EDGE_PUNCT).replace("’", "'").lower()
    if token.endswith("'s"):
        token = token[:-2]
    return token.replace(",", "")


def _is_capitalised(token: str) -> bool:
    return bool(token) and token[0].isupper() and _norm(token) not in {"i", "i'm", "i've"}


def lowercase_vocabulary(texts: Iterable[str]) -> set[str]:
    """Words that occur in lower case somewhere in the corpus (so are common words)."""
    vocabulary: set[str] = set()
    for text in texts:
        for token in _TOKEN.findall(text):
            core = token.strip(_EDGE_PUNCT)
            if core and core[0].islower():
                vocabulary.add(_norm(core))
    return vocabulary


def key_tokens(text: str, lower_vocabulary: set[str]) -> dict[str, set[str]]:
    """The entity and number tokens of one turn under each definition."""
    found: dict[str, set[str]] = {
        "entities": set(),
        "entities_strict": set(),
        "entities_literal": set(),
        "numbers": set(),
    }
    for sentence in _SENTENCE.split(text):
        for position, raw in enumerate(_TOKEN.findall(sentence)):
            core = raw.strip(_EDGE_PUNCT)
            norm = _norm(core)
            if not norm:
                continue
            if any(c.isdigit() for c in core):
                found["numbers"].add(norm)
                continue
            if not _is_capitalised(core):
                continue
            if position > 0 or norm not in STOP_WORDS:
                found["entities_literal"].add(norm)
            if norm in STOP_WORDS or norm in INTERJECTIONS:
                continue
            if position > 0:
                found["entities_strict"].add(norm)
                found["entities"].add(norm)
            elif norm not in lower_vocabulary:
                found["entities"].add(norm)
    return found


def _contains_word(haystack: str, token: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(token)}(?![a-z0-9])", haystack) is not None


def _share(kept: int, total: int) -> float | None:
    return round(kept / total, 4) if total else None


def _ratios(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 4),
        "mean": round(statistics.fmean(ordered), 4),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 4),
    }


def measure(messages: Sequence[BaseMessage], tierer: OfflineTierer) -> dict[str, Any]:
    """Sizes, kept shares and throughput of ``tierer`` over ``messages``."""
    timings = []
    tiers: list[MessageTiers] = []
    for _ in range(3):
        start = time.perf_counter()
        tiers = tierer.tier(messages)
        timings.append(time.perf_counter() - start)
    texts = [m.text for m in messages]
    vocabulary = lowercase_vocabulary(texts)
    tier1_ratio, tier2_ratio = [], []
    tier1_within_raw = tier2_is_raw = 0
    totals: dict[str, list[int]] = {}
    for text, tier in zip(texts, tiers, strict=True):
        raw = count_tokens(text)
        t1, t2 = count_tokens(tier.tier1), count_tokens(tier.tier2)
        tier1_ratio.append(t1 / raw)
        tier2_ratio.append(t2 / raw)
        tier1_within_raw += t1 <= raw
        tier2_is_raw += tier.tier2.strip() == " ".join(text.split())
        haystack = tier.tier1.replace("’", "'").lower().replace(",", "")
        for kind, tokens in key_tokens(text, vocabulary).items():
            kept = sum(1 for token in tokens if _contains_word(haystack, token))
            total = totals.setdefault(kind, [0, 0])
            total[0] += kept
            total[1] += len(tokens)
    kept_shares = {kind: _share(k, n) for kind, (k, n) in totals.items()}
    counts = {kind: n for kind, (_, n) in totals.items()}
    combined = totals["entities"][0] + totals["numbers"][0]
    combined_total = totals["entities"][1] + totals["numbers"][1]
    return {
        "messages": len(messages),
        "tier1_over_raw": _ratios(tier1_ratio),
        "tier2_over_raw": _ratios(tier2_ratio),
        "tier1_within_raw_share": round(tier1_within_raw / len(messages), 4),
        "tier2_equals_raw_share": round(tier2_is_raw / len(messages), 4),
        "share_kept_in_tier1": _share(combined, combined_total),
        "kept_in_tier1": kept_shares,
        "key_token_counts": counts,
        "throughput_messages_per_s": round(len(messages) / min(timings), 1),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the results and write them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"LoCoMo data not found at {args.data}; pass --data path/to/locomo10.json")
    messages = load_turns(args.data)
    tierer = OfflineTierer()
    results = {
        "benchmark": "tier_sizes",
        "data": args.data.name,
        "tierer": type(tierer).__name__,
        "token_counter": "count_tokens (about 4 characters per token)",
        "python": platform.python_version(),
        **measure(messages, tierer),
        # Faithfulness of tier 1 on messages full of identifiers (not LoCoMo turns).
        "faithful_facts": faithful_facts.measure(
            json.loads(faithful_facts.DEFAULT_CORPUS.read_text(encoding="utf-8"))
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    json.dump(results, sys.stdout, indent=2)
    print()
    return results


if __name__ == "__main__":
    main()
