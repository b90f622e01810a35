"""Extractive text: topic words, trimmed and cut sentences, extractive summaries.

Built on the sentence and entity rules of :mod:`~langmem_tiers.tiers.extraction`; used by
the offline tierer (tier 2, topics) and the offline summariser.

Example:
    >>> summarize_text("Wow, great! We moved to Lisbon in 2021. It's sunny.", 8)
    'We moved to Lisbon in 2021.'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from langmem_tiers.tiers.extraction import (
    _strip_possessive,
    sentence_score,
    split_sentences,
)
from langmem_tiers.tiers.lexicon import (
    CHAT_WORDS,
    DETERMINERS,
    FILLER_WORDS,
    GREETINGS,
    INTERJECTIONS,
    STOP_WORDS,
    WORD,
)

__all__ = ["cut_words", "summarize_text", "topic_words", "trim_sentence"]


def topic_words(
    text: str,
    exclude: Iterable[str],
    count: int,
    *,
    nouns_only: bool = False,
    allow_chat_words: bool = False,
) -> list[str]:
    """Up to ``count`` words saying what ``text`` is about, in their order in the text.

    Words of ``exclude`` (values already in tier 1) are skipped; repeated words and
    words after a determiner (nouns, mostly) rank first. With ``nouns_only``, only
    words seen after a determiner at least once are returned. With ``allow_chat_words``,
    common chat words ("great", "day") count too (for messages that are all small talk).

    >>> topic_words("The garden looks lovely; the roses opened in the garden.", [], 2)
    ['garden', 'roses']
    """
    excluded = {w for value in exclude for w in value.lower().split()}
    tokens = [_strip_possessive(w).lower() for w in WORD.findall(text)]
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    nouns: set[str] = set()
    for i, w in enumerate(tokens):
        if len(w) < 3 or not w.isalpha() or w in STOP_WORDS or w in excluded:
            continue
        if (w in CHAT_WORDS and not allow_chat_words) or w in GREETINGS:
            continue
        first.setdefault(w, i)
        # Repeated words, and words after a determiner ("the park", "a new bike": nouns),
        # say more about the subject than verbs and adverbs.
        points = 2.0 + min(len(w), 10) / 4
        if (i >= 1 and tokens[i - 1] in DETERMINERS) or (
            i >= 2 and tokens[i - 2] in DETERMINERS and tokens[i - 1] not in STOP_WORDS
        ):
            points += 2.0
            nouns.add(w)
        if w.endswith(("ly", "ed")):
            points -= 1.5
        score[w] = score.get(w, 0.0) + points
    candidates = [w for w in score if w in nouns] if nouns_only else list(score)
    ranked = sorted(candidates, key=lambda w: (-score[w], first[w]))
    return sorted(ranked[:count], key=lambda w: first[w])


def trim_sentence(sentence: str) -> str:
    """A sentence without opening interjections and filler words.

    >>> trim_sentence("Wow, that is really a great idea!")
    'That is a great idea!'
    """
    words = [w for w in sentence.split(" ") if w.lower().strip(",.!?") not in FILLER_WORDS]
    # Leading interjections ("Wow, ", "Oh yeah!") carry no content; "Thanks for..." does.
    while len(words) > 1:
        head = words[0].lower()
        bare = head.strip(",.!?")
        if (bare in CHAT_WORDS and head != bare) or bare in INTERJECTIONS:
            words = words[1:]
        else:
            break
    text = " ".join(words)
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text


def cut_words(sentence: str, max_words: int) -> str:
    """The first ``max_words`` words of a sentence, ending cleanly, with an ellipsis.

    >>> cut_words("I moved to Lisbon in 2021 with my wife and kids.", 8)
    'I moved to Lisbon in 2021…'
    """
    words = sentence.split(" ")
    if len(words) <= max_words:
        return sentence
    end = max_words
    # Never stop inside a quoted title: take it whole if it ends soon, else stop before it.
    opened = [i for i, w in enumerate(words[:end]) if w[:1] in {'"', "“"}]
    if opened and not any(w.rstrip(".,!?;:").endswith(('"', "”")) for w in words[opened[-1] : end]):
        closing = next(
            (i for i in range(end, len(words)) if words[i].rstrip(".,!?;:").endswith(('"', "”"))),
            None,
        )
        end = closing + 1 if closing is not None and closing < max_words * 1.5 else opened[-1]
    cut = words[:end]
    # Prefer ending at a clause boundary if one is in the last half.
    for i in range(len(cut) - 1, max_words // 2, -1):
        if cut[i] in {"-", "–", "—"}:
            cut = cut[:i]
            break
        if cut[i].endswith((",", ";", ":")):
            cut = cut[: i + 1]
            break
    # End on a word that carries meaning: "moved to Lisbon in 2021 with my" -> "... 2021".
    while len(cut) > 3 and cut[-1].lower().strip(",;:") in STOP_WORDS:
        cut = cut[:-1]
    return " ".join(cut).rstrip(",;: ") + "…"


def summarize_text(text: str, max_words: int) -> str:
    """The most informative sentences of ``text`` in about ``max_words`` words, in order.

    The best sentence is always the core: kept whole when it is at most a quarter over
    the budget, cut (at a clause boundary when there is one) otherwise. A second
    sentence joins when it fits and is at least half as informative.

    >>> summarize_text("Wow, great! We moved to Lisbon in 2021. It's sunny.", 8)
    'We moved to Lisbon in 2021.'
    """
    sentences = [trim_sentence(s) for s in split_sentences(text)]
    sentences = [s for s in sentences if s]
    if not sentences:
        return ""
    scores = [sentence_score(s) for s in sentences]
    ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    best = ranked[0]
    best_length = len(sentences[best].split(" "))
    if best_length > max_words * 1.25:
        return cut_words(sentences[best], max_words)
    chosen = [best]
    for i in ranked[1:]:
        if best_length + len(sentences[i].split(" ")) <= max_words and (
            scores[i] >= scores[best] / 2
        ):
            chosen.append(i)
            break
    return " ".join(sentences[i] for i in sorted(chosen))
