"""Rule-based text analysis: sentences, names, facts, topics, extractive summaries.

The offline tierer and the offline summariser are built from these functions (with the
extractive summaries and topic words of :mod:`~langmem_tiers.tiers.extractive`); they are
deterministic, need no model and no download, and run thousands of messages a second.

Example:
    >>> for fact in extract_facts("Hi, I'm Jordan. The RAI Chat deadline is 2026-03-01."):
    ...     print(fact)
    Fact(key='user_name', value='Jordan')
    Fact(key='deadline', value='2026-03-01')
    Fact(key='entity', value='RAI Chat')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from langchain_core.messages import BaseMessage

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.tiers.identifiers import find_identifiers
from langmem_tiers.tiers.lexicon import (
    ABBREVIATIONS,
    BULLET,
    CALENDAR_WORDS,
    CHAT_WORDS,
    CLAUSE_STARTS,
    COMMON_OPENERS,
    CUT_WORDS,
    DATE_CUES,
    DATE_HINT,
    DATE_LEAD,
    DATE_PATTERNS,
    DECISION,
    DETERMINERS,
    DIGIT,
    FAVORITE,
    GREETINGS,
    I_FORMS,
    INITIALS,
    LEADING_DETERMINERS,
    MONEY_CUES,
    MOTION_WORDS,
    NUMBER,
    NUMBER_ADJECTIVES,
    NUMBER_FOLLOWERS,
    NUMBER_WORD,
    NUMBER_WORDS,
    PERSON_CUES,
    PERSON_FOLLOWERS,
    PLACE_CUES,
    PREFERENCE,
    PREFERENCE_CUT,
    PRONOUN_VALUES,
    QUOTED,
    RELATIONS,
    RESERVED_KEYS,
    SCALE_WORDS,
    SELF_NAME,
    SENTENCE_END,
    SPACES,
    STOP_WORDS,
    VALUE_JUNK,
    WORD,
    DatePattern,
)

__all__ = [
    "Fact",
    "content_words",
    "extract_facts",
    "format_facts",
    "message_role",
    "message_text",
    "named_runs",
    "normalize_text",
    "parse_tier1",
    "sentence_score",
    "split_sentences",
]


class Fact(NamedTuple):
    """One ``key=value`` fact of tier 1."""

    key: str
    value: str


# Output order of tier 1: who, then where and when, then how many, then opinions and
# decisions, then everything else.
_GROUP_SELF, _GROUP_RELATION, _GROUP_NAME, _GROUP_PLACE, _GROUP_DATE = 0, 1, 2, 3, 4
_GROUP_NUMBER, _GROUP_PREFERENCE, _GROUP_DECISION, _GROUP_TITLE, _GROUP_ENTITY = 5, 6, 7, 8, 9
_GROUP_TOPIC = 10


# -- messages ------------------------------------------------------------------------
def message_role(message: BaseMessage) -> str:
    """``user``, ``assistant``, ``system`` or ``tool`` (the message type otherwise).

    >>> from langchain_core.messages import AIMessage
    >>> message_role(AIMessage("ok"))
    'assistant'
    """
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def message_text(message: BaseMessage, index: int = 0) -> str:
    """The text of a message, or :class:`InvalidContentError` if it has none.

    >>> from langchain_core.messages import HumanMessage
    >>> message_text(HumanMessage("  hello "))
    '  hello '
    """
    if not isinstance(message, BaseMessage):
        raise InvalidContentError(
            f"messages[{index}] must be a langchain-core BaseMessage, got "
            f"{type(message).__name__}; wrap text in HumanMessage(...) or AIMessage(...)."
        )
    text = str(message.text)
    if not text.strip():
        raise InvalidContentError(
            f"messages[{index}].content has no text to tier, got {message.content!r}; "
            "leave out empty messages (for example tool-call-only AI messages)."
        )
    return text


# -- sentences and words -------------------------------------------------------------
def normalize_text(text: str) -> str:
    """Text with curly apostrophes made straight, spaces collapsed and blank lines dropped.

    >>> normalize_text("  It’s   here.\\n\\n\\n Done ")
    "It's here.\\nDone"
    """
    text = text.replace("’", "'").replace("‘", "'")
    lines = (SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (line breaks end sentences; bullets are removed).

    >>> split_sentences("Hi Dr. Lee! We met on Friday.\\n- bring the slides")
    ['Hi Dr. Lee!', 'We met on Friday.', 'bring the slides']
    """
    return _split_normalized(normalize_text(text))


def _split_normalized(text: str) -> list[str]:
    """:func:`split_sentences` of a text :func:`normalize_text` already gave."""
    sentences: list[str] = []
    pending = ""
    for piece in SENTENCE_END.split(text):
        piece = BULLET.sub("", piece).strip()
        if not piece:
            continue
        pending = f"{pending} {piece}" if pending else piece
        last = pending.rsplit(" ", 1)[-1]
        if pending.endswith(".") and (
            last.rstrip(".").lower() in ABBREVIATIONS or INITIALS.fullmatch(last)
        ):
            continue  # "Dr." or "J.K." did not end the sentence
        sentences.append(pending)
        pending = ""
    if pending:
        sentences.append(pending)
    return sentences


# Words repeat across sentences and messages: their verdicts are cached (bounded).
@lru_cache(maxsize=1 << 16)
def _is_capitalised(word: str) -> bool:
    first = word[0]
    if first.isupper():
        return first != "I" or word.lower() not in I_FORMS
    # iPhone, eBay: a lower-case start but a capital inside
    rest = word[1:]
    return first.isalpha() and rest != rest.lower()


def _strip_possessive(word: str) -> str:
    return word[:-2] if word.endswith("'s") else word


def _is_common(word: str) -> bool:
    lower = _strip_possessive(word).lower()
    base = lower.split("'")[0]  # "how're", "must've", "y'all"
    return (
        lower in STOP_WORDS
        or lower in CHAT_WORDS
        or lower in CALENDAR_WORDS
        or lower in COMMON_OPENERS
        or ("'" in lower and (base in STOP_WORDS or base in CHAT_WORDS or len(base) <= 1))
    )


class _Entity(NamedTuple):
    text: str
    start: int
    end: int
    before: tuple[str, ...]
    """Up to three lower-cased words before the entity, nearest last."""
    after: str
    """The character and next word after the entity."""
    vocative: bool


def _looks_common_noun(word: str) -> bool:
    lower = word.lower()
    return lower.endswith(("ing", "ed", "ly", "ness", "tion", "ment", "s")) or len(lower) <= 2


_Token = tuple[str, int, int]
"""A word of a sentence, with where it starts and ends."""


def _tokens(sentence: str) -> list[_Token]:
    return [(m[0], m.start(), m.end()) for m in WORD.finditer(sentence)]


_NAME_PARTICLES = {"of", "the", "de", "da", "van", "von", "del", "la", "le"}
"""Lower-case words a name can hold between capitalised ones ("Bank of England")."""


def _run_end(sentence: str, tokens: list[_Token], i: int) -> int:
    """Where the run of capitalised words starting at token ``i`` ends (exclusive): words
    one space apart, through name particles, and not past a possessive."""
    j = i + 1
    while j < len(tokens):
        gap = sentence[tokens[j - 1][2] : tokens[j][1]]
        if gap != " " or tokens[j - 1][0].endswith("'s"):
            break
        nxt = tokens[j][0]
        if _is_capitalised(nxt):
            j += 1
        elif (
            nxt in _NAME_PARTICLES
            and j + 1 < len(tokens)
            and sentence[tokens[j][2] : tokens[j + 1][1]] == " "
            and _is_capitalised(tokens[j + 1][0])
        ):
            j += 2
        else:
            break
    return j


def _trimmed_run(run: list[_Token], sentence_initial: bool) -> list[_Token]:
    """The run without calendar words and common words at its ends ("Hey Mel" -> "Mel")."""
    while run and (
        _strip_possessive(run[0][0]).lower() in CALENDAR_WORDS
        or (
            (sentence_initial or _strip_possessive(run[0][0]).lower() in GREETINGS)
            and _is_common(run[0][0])
        )
        or run[0][0].lower() in {"of", "the"}
    ):
        run = run[1:]
        sentence_initial = False
    while run and (
        _strip_possessive(run[-1][0]).lower() in CALENDAR_WORDS or run[-1][0].lower() in STOP_WORDS
    ):
        run = run[:-1]
    return run


def _lone_opener_is_name(sentence: str, token: _Token, capitalised_elsewhere: set[str]) -> bool:
    """A lone capitalised word opening a sentence is usually an ordinary word: a name only
    when it is capitalised elsewhere too, addressed, unlike a common noun, or an acronym."""
    word = token[0]
    after_char = sentence[token[2] : token[2] + 1]
    return not _is_common(word) and (
        _strip_possessive(word) in capitalised_elsewhere
        or (after_char in {",", "!", "?"} and not word.endswith(("ed", "ly")))
        or not _looks_common_noun(word)
        or (word.isupper() and len(word) > 1)
    )


def _entity(sentence: str, tokens: list[_Token], run: list[_Token], k: int) -> _Entity:
    """The entity of ``run`` (starting at token ``k``), with its context."""
    ent_start, ent_end = run[0][1], run[-1][2]
    rest = sentence[ent_end:].strip(" ,.!?")
    # "Hey Mel!", "Thanks, Gina.", "That's great, John!": someone addressed.
    vocative = len(run) == 1 and (
        (
            all(t[0].lower() in GREETINGS for t in tokens[:k])
            and sentence[ent_end : ent_end + 1] in {",", "!", "?", ".", ""}
        )
        or (sentence[max(0, ent_start - 2) : ent_start] == ", " and not rest)
    )
    return _Entity(
        text=_strip_possessive(sentence[ent_start:ent_end]),
        start=ent_start,
        end=ent_end,
        before=tuple(t[0].lower() for t in tokens[max(0, k - 3) : k]),
        after=sentence[ent_end : ent_end + 24],
        vocative=vocative,
    )


def _sentence_entities(
    sentence: str, capitalised_elsewhere: set[str], tokens: list[_Token] | None = None
) -> list[_Entity]:
    """Runs of capitalised words that are names, places or other proper nouns.

    ``tokens``: the sentence's :func:`_tokens`, when the caller has them already.
    """
    if tokens is None:
        tokens = _tokens(sentence)
    entities: list[_Entity] = []
    i = 0
    while i < len(tokens):
        word = tokens[i][0]
        if not _is_capitalised(word) or word.isdigit():
            i += 1
            continue
        j = _run_end(sentence, tokens, i)
        run = _trimmed_run(tokens[i:j], sentence_initial=i == 0)
        if run:
            k = tokens.index(run[0])
            if not (k == 0 and len(run) == 1) or _lone_opener_is_name(
                sentence, run[0], capitalised_elsewhere
            ):
                entities.append(_entity(sentence, tokens, run, k))
        i = max(j, i + 1)
    return entities


def named_runs(text: str) -> list[tuple[str, tuple[str, ...], str]]:
    """The names of ``text`` (runs of capitalised words tier 1 takes as names), in order.

    Each with up to three lower-cased words before it and the text right after it.

    >>> [name for name, _, _ in named_runs("Hey Mel! I met Dr. Lee in New York.")]
    ['Mel', 'Dr. Lee', 'New York']
    """
    sentences = [(sentence, _tokens(sentence)) for sentence in _split_normalized(text)]
    capitalised_elsewhere: set[str] = set()
    for _, tokens in sentences:
        capitalised_elsewhere.update(
            _strip_possessive(t[0]) for t in tokens[1:] if _is_capitalised(t[0])
        )
    return [
        (ent.text, ent.before, ent.after)
        for sentence, tokens in sentences
        for ent in _sentence_entities(sentence, capitalised_elsewhere, tokens)
    ]


def content_words(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no function or chat words).

    >>> content_words("Wow, I really love the new garden!")
    ['garden']
    """
    return _content_words(WORD.findall(text))


def _content_words(words: Iterable[str]) -> list[str]:
    """:func:`content_words` of words ``WORD`` found."""
    return [w for w in map(_content_word, words) if w]


@lru_cache(maxsize=1 << 16)
def _content_word(word: str) -> str:
    """The word lower-cased when it carries meaning, else ``""``."""
    w = _strip_possessive(word).lower()
    if len(w) >= 3 and w.isalpha() and w not in STOP_WORDS and w not in CHAT_WORDS:
        return w
    return ""


def sentence_score(sentence: str) -> float:
    """How informative a sentence is: entities, numbers and content words per word.

    Names and numbers weigh double (a name only addressed, as in "Thanks, Jon!", does
    not count); dividing by the square root of the length (at least 8 words) favours
    dense sentences without always picking the shortest.

    >>> sentence_score("Thanks!") < sentence_score("Jordan moved to Lisbon in 2021.")
    True
    """
    tokens = _tokens(sentence)
    if not tokens:
        return 0.0
    words = [t[0] for t in tokens]
    capitalised_elsewhere = {w for w in words[1:] if _is_capitalised(w)}
    entities = sum(
        1 for ent in _sentence_entities(sentence, capitalised_elsewhere, tokens) if not ent.vocative
    )
    # No character is both a letter and a digit, so only non-alphabetic words are looked into.
    numbers = sum(1 for w in words if not w.isalpha() and any(c.isdigit() for c in w))
    content = len(_content_words(words))
    return (2.0 * entities + 2.0 * numbers + content) / math.sqrt(max(len(words), 8))


# -- facts ---------------------------------------------------------------------------
def _clean_value(value: str, max_words: int = 6) -> str:
    value = VALUE_JUNK.sub(" ", re.split(r"\s[-–—]+\s|\(", value)[0])
    words = value.split()
    for i, w in enumerate(words):
        if i > 0 and w.lower() in CUT_WORDS:
            words = words[:i]
            break
    words = words[:max_words]
    while words and words[0].lower() in LEADING_DETERMINERS:
        words = words[1:]
    while words and (words[-1].lower() in STOP_WORDS or words[-1].lower() in CUT_WORDS):
        words = words[:-1]
    return " ".join(words).strip(" -'")


def _snake(word: str) -> str:
    key = re.sub(r"[^a-z0-9]+", "_", word.lower()).strip("_")
    return key[:24]


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def _words_before(text: str, position: int, count: int) -> list[str]:
    """Up to ``count`` words before ``position`` in the same sentence."""
    window = re.split(r"[.!?\n]\s", text[max(0, position - 60) : position])[-1]
    return [w.lower() for w in WORD.findall(window)][-count:]


class _FactList:
    """Facts in output order; duplicates (same key, same value) kept once."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, Fact]] = []
        self._seen: set[tuple[str, str]] = set()
        self.values: set[str] = set()

    def add(self, group: int, key: str, value: str) -> None:
        value = value.strip()
        if not key or not value:
            return
        ident = (key, value.lower())
        if ident in self._seen:
            return
        self._seen.add(ident)
        self.values.add(value.lower())
        self.items.append((group, len(self.items), Fact(key, value)))

    def ordered(self) -> list[Fact]:
        return [fact for _, _, fact in sorted(self.items)]


def _self_name_key(role: str) -> str:
    return f"{role}_name" if role in {"user", "assistant"} else "name"


def _has_needs(date: DatePattern, text: str, lowered: str | None) -> bool:
    """Whether ``text`` may hold a match of ``date`` (``lowered``: it lower-cased, if ASCII)."""
    if not date.needs:
        return True
    if not date.needs_any_case:
        return any(need in text for need in date.needs)
    # Outside ASCII, case-insensitive matching has more equivalents than lower(): search.
    return lowered is None or any(need in lowered for need in date.needs)


def _extract_identifiers(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    """Codes, contacts, amounts, addresses and measurements, whole (see ``identifiers``)."""
    for found in find_identifiers(text):
        taken.append((found.start, found.end))
        group = _GROUP_PLACE if found.key == "address" else _GROUP_NUMBER
        facts.add(group, found.key, found.value)


def _extract_dates(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    # A digit is one of the hint's alternatives, and the cheapest to look for.
    if DIGIT.search(text) is None and DATE_HINT.search(text) is None:
        return
    lowered = text.lower() if text.isascii() else None
    found: list[tuple[int, int, str]] = []
    for date in DATE_PATTERNS:
        if not _has_needs(date, text, lowered):
            continue
        for m in date.pattern.finditer(text):
            found.append((m.start(), m.end(), date.kind))
    # Longest match first where matches overlap ("8 May, 2023" beats "2023").
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    for start, end, kind in found:
        if _overlaps((start, end), taken):
            continue
        taken.append((start, end))
        value = DATE_LEAD.sub("", SPACES.sub(" ", text[start:end].replace(",", " ")))
        key = kind
        for word in reversed(_words_before(text, start, 5)):
            if word in DATE_CUES:
                key = _snake(word)
                break
        facts.add(_GROUP_DATE, key, value.strip())


def _counted_noun(word: str) -> bool:
    """Whether ``word`` after a number says what was counted ("3 cats", not "454 departing").

    A capitalised word starts a name ("12 Secret Lane"), a verb or adverb says what
    happened, and a function word says nothing: none of them is the key of the number.
    """
    lower = word.lower()
    return (
        word == lower
        and lower not in STOP_WORDS
        and lower not in CUT_WORDS
        and lower not in DETERMINERS
        and lower not in NUMBER_FOLLOWERS
        and not (lower.endswith("ing") and not lower.endswith("ings"))
        and not lower.endswith(("ed", "ly"))
    )


def _extract_numbers(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    for m in NUMBER.finditer(text):
        span = (
            m.start("num") - (1 if m.group("cur") else 0),
            m.end("suf") if m.group("suf") else m.end("num"),
        )
        if _overlaps(span, taken):
            continue
        taken.append(span)
        number = m.group("num")  # as written: "12,500" stays "12,500"
        suffix = m.group("suf") or ""
        w1, w2 = m.group("w1"), m.group("w2")
        if m.group("cur"):
            value = m.group("cur") + number + suffix
            if w1 and w1.lower() in SCALE_WORDS:
                value += " " + w1
            key = "amount"
            for word in reversed(_words_before(text, m.start(), 5)):
                if word in MONEY_CUES:
                    key = _snake(word)
                    break
            facts.add(_GROUP_NUMBER, key, value)
            continue
        if suffix == "%":
            facts.add(_GROUP_NUMBER, "percent", number + "%")
            continue
        if w1 and w1.lower() == "percent":
            facts.add(_GROUP_NUMBER, "percent", f"{number} {w1}")
            continue
        noun = None
        if (
            w1
            and w2
            and (w1.lower() in NUMBER_ADJECTIVES or (w1.islower() and w1.lower().endswith("ed")))
        ):
            noun = w2  # "3 little kids", "320 planned hours": what is counted comes second
        elif w1:
            noun = w1
        if noun is not None and not _counted_noun(noun):
            noun = None
        if re.fullmatch(r"(?i)st|nd|rd|th", suffix):
            value = number + suffix + (f" {noun}" if noun else "")
            facts.add(_GROUP_NUMBER, "number", value)
            continue
        value = number + suffix
        key = _snake(_strip_possessive(noun)) if noun else ""
        if not key or key in RESERVED_KEYS:
            if noun:
                value = f"{value} {noun.lower()}"
            key = "number"
        facts.add(_GROUP_NUMBER, key, value)
    lowered = text.lower()
    if text.isascii() and not any(word in lowered for word in NUMBER_WORDS):
        return  # no number word in any case (outside ASCII, case has more forms: search)
    for m in NUMBER_WORD.finditer(text):
        if _overlaps((m.start(), m.end()), taken):
            continue
        noun = m.group("noun").lower()
        if noun in STOP_WORDS or noun in CHAT_WORDS:
            continue
        taken.append((m.start(), m.end()))
        key = _snake(noun)
        number = NUMBER_WORDS[m.group("num").lower()]
        if key in RESERVED_KEYS:
            facts.add(_GROUP_NUMBER, "number", f"{number} {noun}")
        else:
            facts.add(_GROUP_NUMBER, key, number)


def _group_until_taken(m: re.Match[str], group: str, taken: list[tuple[int, int]]) -> str:
    """A group of ``m`` cut before the first date or number inside it (already a fact)."""
    start, end = m.span(group)
    for taken_start, _ in taken:
        if start < taken_start < end:
            end = taken_start
    return m.string[start:end]


def _extract_opinions(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    for m in PREFERENCE.finditer(text):
        verb = " ".join(m.group("verb").lower().split())
        if verb.startswith(("hate", "dislike", "despise", "detest", "can", "don", "do ")):
            key = "dislikes"
        elif verb.startswith("prefer"):
            key = "prefers"
        else:
            key = "likes"
        what = re.split(PREFERENCE_CUT, _group_until_taken(m, "what", taken))[0]
        if re.match(r"(?i)(?:that|this|these|those)\s", what):
            continue  # "I like that idea" answers what was said; it is no lasting preference
        what = _clean_value(what, 4)
        lower = what.lower()
        if lower in CHAT_WORDS or lower.startswith(CLAUSE_STARTS):
            continue
        if what and lower not in PRONOUN_VALUES:
            facts.add(_GROUP_PREFERENCE, key, what)
    for m in FAVORITE.finditer(text):
        noun = _snake(m.group("noun"))
        what = _clean_value(_group_until_taken(m, "what", taken), 5)
        if noun and what and what.lower() not in PRONOUN_VALUES:
            facts.add(_GROUP_PREFERENCE, f"favorite_{noun}", what)
    for m in DECISION.finditer(text):
        if m.group("will") and m.group("subj").lower() != "we":
            continue  # "I'll check it out" is small talk; "we will" is a plan
        key = "decision" if m.group("decided") else "plan"
        what = _clean_value(_group_until_taken(m, "what", taken), 6)
        if what and what.lower() not in PRONOUN_VALUES:
            facts.add(_GROUP_DECISION, key, what)


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _shares_word(entity: str, value: str) -> bool:
    """Whether one of ``entity`` and ``value`` holds the other on letter boundaries."""
    inner, outer = (entity, value) if len(entity) <= len(value) else (value, entity)
    return re.search(rf"(?<![^\W\d_]){re.escape(inner)}(?![^\W\d_])", outer) is not None


def _extract_entities(text: str, role: str, facts: _FactList) -> None:
    for m in SELF_NAME.finditer(text):
        name = _strip_possessive(m.group("name"))
        words = name.split()
        while words and _is_common(words[-1]):
            words = words[:-1]
        if words and not _is_common(words[0]):
            facts.add(_GROUP_SELF, _self_name_key(role), " ".join(words))
    for m in QUOTED.finditer(text):
        title = VALUE_JUNK.sub(" ", (m.group(1) or m.group(2))).strip(" .!?")
        if title and len(title.split()) <= 8 and title.lower() not in PRONOUN_VALUES:
            facts.add(_GROUP_TITLE, "title", title)
    sentences = [(sentence, _tokens(sentence)) for sentence in _split_normalized(text)]
    capitalised_elsewhere: set[str] = set()
    for _, tokens in sentences:
        capitalised_elsewhere.update(
            _strip_possessive(t[0]) for t in tokens[1:] if _is_capitalised(t[0])
        )
    for sentence, tokens in sentences:
        for ent in _sentence_entities(sentence, capitalised_elsewhere, tokens):
            lower = ent.text.lower()
            if lower in facts.values or any(lower in v.split(";") for v in facts.values):
                continue
            if any(lower in value for value in facts.values if " " in value):
                continue  # already inside a title, a preference or a decision
            if any(_shares_word(lower, value) for value in facts.values if _has_digit(value)):
                continue  # part of a code, an amount or a measurement ("4°C", "UA123")
            before = ent.before
            last = before[-1] if before else ""
            if len(before) >= 2 and (
                before[-2] in {"my", "our", "his", "her", "their"} or last in RELATIONS
            ):
                relation = last
            elif last in {"named", "called"} and len(before) >= 2:
                relation = before[-2]  # "a puppy called Pixie" -> puppy=Pixie
            else:
                relation = ""
            follower = WORD.findall(ent.after)
            if relation in RELATIONS:
                facts.add(_GROUP_RELATION, _snake(relation), ent.text)
            elif last in PLACE_CUES or (
                last == "to" and len(before) >= 2 and before[-2] in MOTION_WORDS
            ):
                facts.add(_GROUP_PLACE, "place", ent.text)
            elif (
                ent.vocative
                or last in PERSON_CUES
                or (follower and follower[0].lower() in PERSON_FOLLOWERS)
            ):
                facts.add(_GROUP_NAME, "name", ent.text)
            else:
                facts.add(_GROUP_ENTITY, "entity", ent.text)


def extract_facts(text: str, role: str = "user") -> list[Fact]:
    """Facts of one text, in tier-1 order (no topic fallback, no size limit).

    >>> for fact in extract_facts("My sister Anna and I adopted 2 cats in Lisbon last week."):
    ...     print(fact)
    Fact(key='sister', value='Anna')
    Fact(key='place', value='Lisbon')
    Fact(key='date', value='last week')
    Fact(key='cats', value='2')
    """
    norm = normalize_text(text)
    facts = _FactList()
    taken: list[tuple[int, int]] = []
    _extract_identifiers(norm, facts, taken)
    _extract_dates(norm, facts, taken)
    _extract_numbers(norm, facts, taken)
    _extract_opinions(norm, facts, taken)
    _extract_entities(norm, role, facts)
    return facts.ordered()


def format_facts(facts: Iterable[Fact]) -> str:
    """Tier-1 text: facts of one key share it (values joined by ``;``), keys joined by ``", "``.

    >>> format_facts([Fact("name", "Jon"), Fact("place", "Paris"), Fact("name", "Gina")])
    'name=Jon;Gina, place=Paris'
    """
    merged: dict[str, list[str]] = {}
    for fact in facts:
        merged.setdefault(fact.key, []).append(fact.value)
    return ", ".join(f"{key}={';'.join(values)}" for key, values in merged.items())


def parse_tier1(text: str) -> list[Fact]:
    """The facts of a tier-1 text (the inverse of :func:`format_facts`).

    Parts without ``=`` are kept with the key ``note``.

    >>> [f"{key}:{value}" for key, value in parse_tier1("name=Jon;Gina, place=Paris")]
    ['name:Jon', 'name:Gina', 'place:Paris']
    """
    facts: list[Fact] = []
    for part in text.split(", "):
        key, sep, values = part.partition("=")
        if not sep:
            if part.strip():
                facts.append(Fact("note", part.strip()))
            continue
        facts.extend(Fact(key.strip(), v.strip()) for v in values.split(";") if v.strip())
    return facts
