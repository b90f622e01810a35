"""Fact statements: what an exchange states, without chit-chat, echoes or questions.

Long-term memory keeps facts, not transcripts. From a user message and the assistant's
reply these rules keep:

- the user's sentences that state something (a name, a number, a date, a decision, or at
  least three words that carry meaning), leaving out questions (with or without their
  question mark: "Do I like coffee?", "what should I have for breakfast"), hypotheticals
  ("What if I moved to Lisbon?", "Suppose I quit"), greetings, thanks, sign-offs, requests
  to the assistant ("Please keep it short", "Let me check ...") and feelings ("I am really
  proud of this team");
- the assistant's sentences about plans and decisions ("I'll send the invite on Friday")
  that add something the user did not say. A confirmation ("Noted: budget=12,000") or a
  restatement of the user's words is an echo, not a fact, and an answer to a question
  restates what was known: neither is kept.

Kept sentences are put in the third person (``I`` -> ``the user``, or ``the assistant``
for the reply), so a line read later in a system prompt is not mistaken for the model's
own words. Facts a tierer found (tier 1, possibly a model's) rescue a short sentence
that holds one of their values. All rules are deterministic and offline.

One rule, :func:`is_statement`, decides whether a sentence states something about the user
or the world; :func:`stated_facts` applies it to a message's tier-1 facts, so a question's
``likes=drink`` ("What do I like to drink?") is never stored as a preference or a fact,
whichever surface saved the message.

Example:
    >>> found = exchange_statements(
    ...     "Hi! My name is Maya and I own the launch. I prefer tea. Thanks!",
    ...     "Noted: user_name=Maya. I'll draft the launch checklist by Friday.")
    >>> found.user
    ["The user's name is Maya and the user owns the launch."]
    >>> found.reply
    ['The assistant will draft the launch checklist by Friday.']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import snowballstemmer

from langmem_tiers.tiers.extraction import (
    Fact,
    content_words,
    extract_facts,
    normalize_text,
    parse_tier1,
    split_sentences,
)
from langmem_tiers.tiers.slots import fills_slot

__all__ = [
    "ExchangeStatements",
    "exchange_statements",
    "fact_sentences",
    "is_chit_chat",
    "is_echo",
    "is_preference",
    "is_statement",
    "stated_facts",
    "third_person",
]

# Keys that say what a message is about, not what it states.
_NOT_FACT_KEYS = frozenset({"topic", "note"})
# Dates that only place a sentence in the conversation ("tonight"), not in the calendar.
_RELATIVE_TIMES = frozenset(
    {
        "today",
        "tonight",
        "tomorrow",
        "yesterday",
        "now",
        "this week",
        "next week",
        "last week",
        "this weekend",
        "this morning",
        "this evening",
    }
)

# Openers are followed by punctuation ("Right, ..."), so "Right now they ..." keeps its words.
_OPENERS = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|good\s+(?:morning|afternoon|evening)|ok|okay|so|well|oh|"
    r"alright|right|great|good|nice|cool|sure|wow|yes|yeah)"
    r"(?:\s+(?:again|there|all|everyone|team))?\s*[,!.:;-]+\s*)+",
    re.IGNORECASE,
)
_SELF_ANNOUNCED = re.compile(
    r"^(?:(?:it'?s|this\s+is)\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?(?:\s+(?:again|here))?"
    r"|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?\s+here\b.*)[\s.!]*$"
)
_SOCIAL = re.compile(
    r"^(?:thanks|thank\s+you|many\s+thanks|cheers|bye|goodbye|good\s+night|see\s+you|"
    r"talk\s+(?:to\s+you|soon|later)|take\s+care|have\s+a\s+(?:good|great|nice)|"
    r"wish\s+(?:us|me)\s+luck|good\s+luck|welcome|sorry|congrat)",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:please|let'?s|let\s+(?:me|us)|can\s+you|could\s+you|would\s+you|will\s+you|"
    r"i\s+would\s+like|i'?d\s+like|i\s+want\s+you|tell\s+me|remind\s+me|give\s+me|"
    r"show\s+me|help\s+me|summari[sz]e|list\s)",
    re.IGNORECASE,
)
_META = re.compile(
    r"^(?:that'?s|that\s+is)\s+(?:all|it|everything)\b|^we\s+also\s+talked\s+about\b|"
    r"^(?:good|great|nice|productive)\s+(?:session|meeting|talk|chat)\b",
    re.IGNORECASE,
)
_FEELING = re.compile(
    r"^i(?:\s+am|'m)?\s+(?:(?:really|so|very|a\s+bit|a\s+little|quite|pretty|kind\s+of|"
    r"still|also|just)\s+)*(?:worried|proud|happy|glad|excited|sorry|tired|afraid|nervous|"
    r"thrilled|relieved|curious|hopeful|confident|stressed|exhausted)\b"
    r"|^i\s+(?:think|feel|hope|guess|believe|wonder|need\s+(?:a|some)\b)",
    re.IGNORECASE,
)
# A question without its question mark: an inverted auxiliary ("do I", "should we", "is my")
# or a question word followed by one ("what should I", "where is my").
_AUXILIARIES = (
    r"(?:do|does|did|should|shall|can|could|would|will|is|are|am|was|were|have|has|may|"
    r"might|must)(?:n'?t)?"
)
_QUESTION = re.compile(
    rf"^(?:(?:what|which|where|when|who|whom|whose|why|how(?:\s+(?:much|many|long|often))?)"
    # "what time is it" is a question; "how I did it" opens a statement's clause.
    rf"(?:\s+(?!(?:i|we|you|they|he|she)\b)\w+)?\s+)?{_AUXILIARIES}"
    r"\s+(?:i|we|you|my|our|your|it|there|the\s+user)\b",
    re.IGNORECASE,
)
# A sentence about what might be, not what is.
_HYPOTHETICAL = re.compile(
    r"^(?:what\s+if|suppose|supposing|imagine|hypothetically|in\s+theory|say\s+i|"
    r"if\s+i\s+(?:were|had|could|would|moved|quit|left|bought|took))\b",
    re.IGNORECASE,
)
# Words that open an assistant's confirmation: what follows repeats the user.
_ACKNOWLEDGEMENT = re.compile(
    r"^(?:(?:noted|got\s+it|understood|ok|okay|sure|great|thanks|thank\s+you|will\s+do|"
    r"perfect|alright|i\s+see|good|done|of\s+course|absolutely|sounds\s+good|certainly|"
    r"i(?:'ve|\s+have)\s+noted(?:\s+that)?|i(?:'ll|\s+will)\s+(?:remember|keep\s+in\s+mind|"
    r"note)(?:\s+that)?)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
# An assistant's sentence about what will happen or was decided.
_PLAN = re.compile(
    r"\b(?:i|we|you)(?:'ll|\s+will|\s+shall|\s+(?:are|am)\s+going\s+to|\s+plan\s+to)\b"
    r"|\blet'?s\b|\b(?:decided|agreed|scheduled|planned|booked|postponed|moved|set\s+up)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][\w'-]*|\d[\d.,:]*")
_FLAT = re.compile(r"[^a-z0-9]+")

# -- the third person ------------------------------------------------------------------
_UNCHANGED_VERBS = frozenset(
    [
        "will",
        "would",
        "can",
        "could",
        "should",
        "must",
        "might",
        "may",
        "shall",
        "did",
        "had",
        "was",
        "made",
        "went",
        "got",
        "took",
        "told",
        "said",
        "met",
        "found",
        "wrote",
        "saw",
        "knew",
        "thought",
        "bought",
        "brought",
        "left",
        "felt",
        "kept",
        "sent",
        "spent",
        "gave",
        "came",
        "ran",
        "began",
        "chose",
        "drove",
        "ate",
        "drank",
        "flew",
        "grew",
        "heard",
        "held",
        "lost",
        "paid",
        "put",
        "read",
        "set",
        "sold",
        "sat",
        "slept",
        "spoke",
        "stood",
        "taught",
        "understood",
        "won",
        "asked",
    ]
)
_IRREGULAR = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "go": "goes"}
_SKIPPED_ADVERBS = frozenset(
    [
        "really",
        "also",
        "still",
        "just",
        "never",
        "always",
        "often",
        "usually",
        "sometimes",
        "only",
        "even",
        "already",
        "actually",
        "mostly",
        "rarely",
        "then",
        "now",
        "definitely",
        "probably",
        "certainly",
        "finally",
        "all",
    ]
)
_NOT_VERBS = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "our",
        "his",
        "her",
        "their",
        "this",
        "that",
        "these",
        "those",
        "and",
        "or",
        "but",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "from",
        "by",
        "about",
        "as",
        "if",
        "so",
        "not",
        "no",
    ]
)
_CONTRACTIONS = {"'m": "is", "'ve": "has", "'ll": "will", "'d": "would"}


def _third_person_verb(word: str) -> str:
    lower = word.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _UNCHANGED_VERBS or lower.endswith(("ed", "s")) or not lower.isalpha():
        return word
    if lower.endswith(("sh", "ch", "x", "z", "o")):
        return word + "es"
    if lower.endswith("y") and lower[-2:-1] not in set("aeiou"):
        return word[:-1] + "ies"
    return word + "s"


def third_person(sentence: str, role: str = "user") -> str:
    """``sentence`` with ``I``/``my``/``me`` as ``the user`` (``the assistant`` for ``role``
    ``assistant``, whose ``you`` is then the user), verbs agreeing; ``we`` is kept.

    >>> print(third_person("I really dislike meetings on Fridays, and my team does too."))
    The user really dislikes meetings on Fridays, and the user's team does too.
    >>> third_person("I'll send you the invite.", "assistant")
    'The assistant will send the user the invite.'
    """
    me, you = (
        ("the assistant", "the user") if role == "assistant" else ("the user", "the assistant")
    )
    tokens = re.split(r"(\s+)", sentence)
    out: list[str] = []
    conjugate = False  # the next word that is a verb agrees with a third-person subject
    previous = ""
    words_before = 0
    for token in tokens:
        if not token or token.isspace():
            out.append(token)
            continue
        core = token.strip(',.;:!?"()')
        lead = token[: token.find(core)] if core else ""
        tail = token[len(lead) + len(core) :]
        lower = core.lower()
        replaced: str | None = None
        subject = False
        if lower in {"i", "i'm", "i've", "i'll", "i'd"}:
            replaced = me
            contraction = lower[1:]
            if contraction:
                replaced += " " + _CONTRACTIONS[contraction]
            else:
                # "Priya and I fix" stays plural; "my name is Jo and I own" does not.
                subject = previous not in {"and", "or"} or words_before > 3
        elif lower in {"my", "mine"}:
            replaced = me + "'s"
        elif lower == "me":
            replaced = me
        elif lower == "myself":
            replaced = "themselves" if role != "assistant" else "itself"
        elif lower in {"you", "you're", "you've", "you'll", "you'd"}:
            replaced = you
            contraction = lower[3:]
            if contraction == "'re":
                replaced += " is"
            elif contraction:
                replaced += " " + _CONTRACTIONS[contraction]
            else:
                subject = previous not in {"and", "or", "to", "for", "with", "thank", "of"}
        elif lower in {"your", "yours"}:
            replaced = you + "'s"
        elif conjugate and core:
            if lower in _SKIPPED_ADVERBS or lower.endswith("ly"):
                out.append(token)
                previous = lower
                words_before += 1
                continue
            if core.isalpha() and core.islower() and lower not in _NOT_VERBS:
                replaced = _third_person_verb(core)
            conjugate = False
        if replaced is not None:
            out.append(lead + replaced + tail)
            conjugate = subject and not tail  # "I, too," has no verb next
        else:
            out.append(token)
        previous = lower
        words_before = 0 if tail[-1:] in {",", ";", ":"} else words_before + 1
    text = re.sub(r"\b(the (?:user|assistant)) am\b", r"\1 is", "".join(out))
    return text[:1].upper() + text[1:] if text else text


# -- sentences -------------------------------------------------------------------------
def _flat(text: str) -> str:
    """Lower-case letters and digits only, one space apart: "12,000" and "12000" differ
    by a space, so values are compared with digits joined (see :func:`_contains`)."""
    return _FLAT.sub(" ", text.lower()).strip()


def _contains(text: str, value: str) -> bool:
    flat_value = _flat(value).replace(" ", "")
    return bool(flat_value) and flat_value in _flat(text).replace(" ", "")


def is_preference(key: str) -> bool:
    """Whether a tier-1 key is a preference (``likes``, ``prefers``, ``favorite_<thing>``...).

    >>> is_preference("favorite_color"), is_preference("deadline")
    (True, False)
    """
    return key in {"likes", "dislikes", "prefers"} or key.startswith("favorite_")


def _only_preferences(sentence: str) -> bool:
    keys = [f.key for f in extract_facts(sentence) if f.key not in _NOT_FACT_KEYS]
    return bool(keys) and all(is_preference(key) for key in keys)


def _hard_facts(sentence: str) -> list[str]:
    """Values of the facts the rules find in ``sentence`` that place it in the world."""
    return [
        f.value
        for f in extract_facts(sentence)
        if f.key not in _NOT_FACT_KEYS and f.value.lower() not in _RELATIVE_TIMES
    ]


def is_chit_chat(sentence: str) -> bool:
    """Whether a sentence is small talk: greetings, thanks, sign-offs, requests, feelings.

    >>> [is_chit_chat(s) for s in ("Hello again, it's Maya.", "Wish us luck for May 4!",
    ...                            "Please keep your answers short.", "The budget is 12,000.")]
    [True, True, True, False]
    """
    text = sentence.strip()
    rest = _OPENERS.sub("", text).strip()
    if not rest or not any(c.isalnum() for c in rest):
        return True
    if _SOCIAL.match(text) or _SOCIAL.match(rest):
        # "See you at the Lisbon office on Friday." still says where.
        return not any(f.key in {"place", "entity"} for f in extract_facts(rest))
    return bool(
        _SELF_ANNOUNCED.match(rest)
        or _REQUEST.match(rest)
        or _META.match(rest)
        or _FEELING.match(rest)
    )


def is_statement(sentence: str) -> bool:
    """Whether a sentence states something: not a question, a request, a hypothetical or
    small talk. The one rule every surface's memories follow (see :func:`stated_facts`).

    >>> [is_statement(s) for s in ("What do I like to drink?", "Should I move to Lisbon",
    ...                            "What if I quit my job?", "Please remember my order.",
    ...                            "I prefer green tea.", "What I need is a quiet desk.")]
    [False, False, False, False, True, True]
    """
    text = sentence.strip()
    return bool(text) and not _asks(text) and not is_chit_chat(text)


def _asks(sentence: str) -> bool:
    """Whether a sentence is a question or a hypothetical (with or without a "?")."""
    text = sentence.strip()
    if text.endswith("?"):
        return True
    rest = _OPENERS.sub("", text).strip()
    return bool(_QUESTION.match(rest) or _HYPOTHETICAL.match(rest))


def stated_facts(text: str, facts: Iterable[Fact]) -> list[Fact]:
    """The tier-1 ``facts`` of a message ``text`` that one of its statements holds.

    A fact is held by the sentences its value appears in: it is kept when one of them is a
    statement (:func:`is_statement`). A fact whose value no sentence holds as written (a
    model's tierer may reword it) is kept when the message states anything at all. So a
    question, a request or a hypothetical gives no preference and no fact.

    >>> facts = [Fact("prefers", "green tea"), Fact("likes", "coffee")]
    >>> stated_facts("I prefer green tea. Do I like coffee?", facts)
    [Fact(key='prefers', value='green tea')]
    >>> stated_facts("What do I like to drink?", [Fact("likes", "drink")])
    []
    """
    given = list(facts)
    if not given:
        return []
    sentences = [(s, is_statement(s)) for s in split_sentences(text)]
    states_any = any(stated for _, stated in sentences)
    kept = []
    for fact in given:
        holders = [stated for sentence, stated in sentences if _contains(sentence, fact.value)]
        if any(holders) or (not holders and states_any):
            kept.append(fact)
    return kept


def _states_something(sentence: str, known: Sequence[str]) -> bool:
    if not is_statement(sentence):
        return False
    if _hard_facts(sentence) or any(_contains(sentence, value) for value in known):
        return True
    if fills_slot(sentence):  # "I work as a nurse.", "I'm single.": short, still facts
        return True
    return len(content_words(sentence)) >= 3


def fact_sentences(text: str, facts: Iterable[str] = (), *, preferences: bool = True) -> list[str]:
    """The sentences of ``text`` that state facts, as written (see the module docstring).

    ``facts``: values a tierer found (tier 1); a sentence holding one is kept even when the
    rules find nothing in it, unless it is small talk. ``preferences=False`` leaves out
    sentences that only state preferences ("I prefer tea."): procedural memory has them.

    >>> fact_sentences("Hi! Tomas owns the migration. Talk to you next week!")
    ['Tomas owns the migration.']
    """
    known = [v for v in facts if v.strip() and v.lower() not in _RELATIVE_TIMES]
    sentences = []
    for sentence in split_sentences(text):
        trimmed = _OPENERS.sub("", sentence).strip() if _OPENERS.match(sentence) else sentence
        if not preferences and _only_preferences(sentence):
            continue
        if trimmed and _states_something(sentence, known):
            sentences.append(trimmed[:1].upper() + trimmed[1:])
    return sentences


def _stems(words: Iterable[str]) -> set[str]:
    return set(snowballstemmer.stemmer("english").stemWords(list(words)))


def is_echo(sentence: str, said: str) -> bool:
    """Whether an assistant's sentence only repeats ``said`` (what the user just said).

    >>> is_echo("Noted: user_name=Maya Chen, entity=Lighthouse.", "I'm Maya Chen of Lighthouse.")
    True
    >>> is_echo("I'll book the room for Friday.", "The review is next week.")
    False
    """
    rest = _ACKNOWLEDGEMENT.sub("", sentence.strip()).strip()
    if not rest or not any(c.isalnum() for c in rest):
        return True
    # What the user said, as written and as the rules read it ("Eleven" is 11).
    heard = {_flat(f.value).replace(" ", "") for f in extract_facts(said)}

    def repeated(value: str) -> bool:
        return _contains(said, value) or _flat(value).replace(" ", "") in heard

    if "=" in rest:  # a confirmation written as key=value facts
        values = [f.value for f in parse_tier1(rest.rstrip(".")) if f.key != "note"]
        return all(repeated(value) for value in values)
    new_values = [v for v in _hard_facts(rest) if not repeated(v)]
    new_words = _stems(content_words(rest)) - _stems(content_words(said))
    return not new_values and len(new_words) <= 1


class ExchangeStatements(NamedTuple):
    """What one exchange states, in the third person."""

    user: list[str]
    """The user message's fact sentences."""
    reply: list[str]
    """The reply's sentences about plans and decisions that are not echoes."""


def exchange_statements(
    user_text: str,
    reply_text: str = "",
    *,
    user_facts: Iterable[str] = (),
    reply_facts: Iterable[str] = (),
) -> ExchangeStatements:
    """The facts a user message and its reply state (see the module docstring).

    ``user_facts`` / ``reply_facts``: tier-1 values of each (rescue short sentences).
    The user's sentences that only state preferences are left to procedural memory. A
    reply to a question states no facts: it restates what was known.

    >>> exchange_statements("When is the launch?", "We moved the launch to May 4.")
    ExchangeStatements(user=[], reply=[])
    """
    said = normalize_text(user_text)
    user = [third_person(s, "user") for s in fact_sentences(said, user_facts, preferences=False)]
    reply: list[str] = []
    asked = any(_asks(s) for s in split_sentences(said))
    if reply_text.strip() and not asked:
        for sentence in fact_sentences(reply_text, reply_facts):
            if _PLAN.search(sentence) and not is_echo(sentence, said):
                reply.append(third_person(sentence, "assistant"))
    return ExchangeStatements(user, reply)
