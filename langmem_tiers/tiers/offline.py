"""The offline tierer: rule-based ``key=value`` facts and an extractive summary.

No model, no download, deterministic, thousands of messages a second. Tier 1 lists
what a reader would need to recognise the message later (who, where, when, how many,
what was liked or decided) as ``key=value`` pairs; tier 2 keeps the one or two most
informative sentences, trimmed. Both are never longer than the raw text.

The text helpers here (:func:`split_sentences`, :func:`extract_facts`,
:func:`sentence_score`) are shared with the offline summariser.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> tiers = OfflineTierer().tier(
    ...     [HumanMessage("Hi, my name is Jordan. The deadline for RAI Chat is March 1, 2026.")]
    ... )
    >>> tiers[0].tier1
    'user_name=Jordan, deadline=March 1 2026, entity=RAI Chat'
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from langchain_core.messages import BaseMessage

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.tiers.base import MessageTiers, Tierer
from langmem_tiers.tiers.tokens import TokenCounter, count_tokens

__all__ = [
    "Fact",
    "OfflineTierer",
    "content_words",
    "cut_words",
    "extract_facts",
    "format_facts",
    "message_role",
    "message_text",
    "parse_tier1",
    "sentence_score",
    "split_sentences",
    "summarize_text",
    "topic_words",
    "trim_sentence",
]


class Fact(NamedTuple):
    """One ``key=value`` fact of tier 1."""

    key: str
    value: str


# -- word lists ----------------------------------------------------------------------
def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Function words: never entities, never topics.
STOP_WORDS = _word_set("""
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    even ever few for from further get gets got had has have having he her here hers herself
    him himself his how i if in into is it its itself just let lets me more most much must my
    myself no nor not now of off on once one ones only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up us very was we were what when where
    which while who whom why will with would yet you your yours yourself yourselves may might
    shall i'm i've i'll i'd you're you've you'll you'd he's she's it's we're we've we'll we'd
    they're they've they'll they'd that's there's here's what's let's don't doesn't didn't
    can't couldn't won't wouldn't shouldn't isn't aren't wasn't weren't haven't hasn't
    hadn't it'll that'd it'd who's how's where's ya thing things something anything
    everything nothing someone anyone everyone somebody anybody lot lots still though
    although either neither else since whether already almost quite rather around
    """)

# Frequent chat words: capitalised at a sentence start they are not names, and they say
# little about what a message is about.
CHAT_WORDS = _word_set("""
    wow whoa woah hey hi hello heya oh ah aw aww awww ooh ooo oof ouch ugh phew hmm mmm um
    haha ha hehe lol omg yay woohoo woo yep yup yeah yea yes nah nope ok okay well btw ttyl
    thanks thank congrats congratulations sorry glad sure cool great awesome nice sweet good
    amazing incredible wonderful fantastic lovely cute adorable beautiful impressive exciting
    excited interesting funny crazy tough hard happy proud lucky bummer cheers bye goodbye
    later anytime exactly totally absolutely definitely really actually basically literally
    honestly seriously certainly probably maybe perhaps hopefully thankfully fortunately
    unfortunately luckily especially usually sometimes always never often lately recently
    finally anyway anyways besides plus however otherwise instead together right true
    agreed indeed super pretty kinda sorta gonna wanna gotta gotcha bet guess
    sounds sound seems seem looks look looking feels feel feeling felt think thinking thought
    know knew knowing hope hoping wish wishing love loved loving loves like liked likes
    enjoy enjoyed enjoying want wanted wants need needed needs keep keeping kept take taking
    took make making makes made give giving gave go going went come coming came see seeing
    saw seen tell telling told say saying said talk talking try trying tried check stay
    remember remind reminds reminded mean means meant believe hear heard appreciate
    appreciated cherish imagine glad catch hang count mind care show
    best better bit big little small new old long last next first same different whole
    able kind sort stuff time times way ways day days life people family friends man
    everybody anything nothing name names met got get put let
    """)

# Ordinary words that often open a chat sentence: capitalised there, still not names.
_COMMON_OPENERS = _word_set("""
    every whenever wherever whatever whoever under over two three four five alright
    nature music art arts dance yoga exercise travel sports sport food cooking painting
    reading writing hiking gaming swimming running walking photography pottery creativity
    balance trust change pride chase push start set find found met create gather rate mix
    mental simple positive regular strong young busy epic classic precious real
    """)

# Capitalised but part of a date, handled by the date rules instead.
_CALENDAR_WORDS = _word_set(
    """
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    """
) | _word_set(
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun"
)

_I_FORMS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})

# "my <relation> <Name>" makes the relation the key: sister=Anna, dog=Toby.
_RELATIONS = _word_set("""
    friend friends sister brother mom mum mother dad father son daughter wife husband
    partner boyfriend girlfriend fiance fiancee boss manager colleague coworker cousin aunt
    uncle grandma grandmother grandpa grandfather niece nephew neighbor neighbour roommate
    teacher mentor coach doctor therapist kid kids child baby dog cat puppy kitten pet
    """)

# Words that open a greeting or thanks before a name: "Hey Mel!", "Thanks so much, Jon."
_GREETINGS = _word_set("""
    hey hi hello hiya heya thanks thank you so much wow whoa congrats congratulations sorry oh
    aw aww awww yeah yes yep no sure thing good great job morning night evening bye dear
    see ya cool nice haha welcome ok okay definitely absolutely totally hope well
    """)
# A capitalised word after these (or after a motion verb and "to") is taken as a place.
_PLACE_CUES = frozenset(
    {"in", "from", "near", "visited", "visit", "visiting", "around", "across", "toward"}
)
_MOTION_WORDS = _word_set("""
    went go going gone goes moved move moving trip travel traveled travelled traveling
    travelling flew fly flying drove drive driving back headed heading road vacation
    relocated relocate
    """)
# A capitalised word after these is taken as a person's name.
_PERSON_CUES = frozenset(
    {"with", "named", "called", "met", "meet", "meeting", "and", "by", "name's", "name"}
)
_PERSON_FOLLOWERS = frozenset({"said", "says", "told", "asked", "thinks", "thought", "wants"})

# Nouns that name a date: "the deadline is March 1" -> deadline=March 1.
_DATE_CUES = _word_set("""
    deadline due birthday anniversary meeting launch release wedding appointment interview
    exam trip flight party concert match event graduation start starts starting
    """)
# Nouns that name an amount: "a budget of $500" -> budget=$500.
_MONEY_CUES = _word_set("budget price cost costs salary rent paid pay raised spent earn earned fee")
_NUMBER_WORDS = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "twenty": "20",
    "thirty": "30",
    "fifty": "50",
    "hundred": "100",
    "dozen": "12",
}
# Skipped between a number and its noun: "3 little kids" -> kids=3.
_NUMBER_ADJECTIVES = _word_set(
    "little big small young younger old older new more extra whole different other full"
)
_SCALE_WORDS = frozenset({"thousand", "million", "billion", "k"})

# Keys the rules set themselves; a counted noun with one of these names goes to "number".
_RESERVED_KEYS = _word_set("""
    user_name assistant_name name place date time amount percent number likes dislikes
    prefers decision plan title entity topic
    """)

# Dropped from the head of a tier-2 sentence even without a comma after them.
_INTERJECTIONS = _word_set("oh ah aw aww wow whoa hey hi hmm um haha yeah yep yes ok okay")
# Dropped from tier 2: they add length, not meaning.
_FILLER_WORDS = _word_set("""
    really just actually basically literally totally definitely truly honestly absolutely
    super very
    """)

# Output order of tier 1: who, then where and when, then how many, then opinions and
# decisions, then everything else.
_GROUP_SELF, _GROUP_RELATION, _GROUP_NAME, _GROUP_PLACE, _GROUP_DATE = 0, 1, 2, 3, 4
_GROUP_NUMBER, _GROUP_PREFERENCE, _GROUP_DECISION, _GROUP_TITLE, _GROUP_ENTITY = 5, 6, 7, 8, 9
_GROUP_TOPIC = 10

# -- patterns ------------------------------------------------------------------------
# Initials ("J.K.") and titles ("Dr.") are words of their own, so "J.K. Rowling" and
# "Dr. Lee" stay one name.
_WORD = re.compile(
    r"(?:[A-Z]\.){2,}|(?:Dr|Mr|Mrs|Ms|Prof|St)\.(?= [A-Z])|[^\W_](?:[\w'\-]*[^\W_])?"
)
_INITIALS = re.compile(r"(?:[A-Z]\.)+")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_ABBREVIATIONS = _word_set(
    "mr mrs ms dr st vs etc e.g i.e jr sr prof mt no approx dept est fig inc ltd"
)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)])\s+")
_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”")
_VALUE_JUNK = re.compile(r"[,;=|\n\"“”]+")

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?)"
)
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_ORDINAL = r"(?:st|nd|rd|th)"
_SMALL_NUMBER = (
    r"(?:\d+|a|an|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple(?:\s+of)?)"
)
_DATE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b")),
    ("date", re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")),
    (
        "date",
        re.compile(rf"\b\d{{1,2}}{_ORDINAL}?\s+(?:of\s+)?{_MONTH}(?![\w])(?:,?\s+\d{{4}}\b)?"),
    ),
    ("date", re.compile(rf"\b{_MONTH}\s+\d{{1,2}}{_ORDINAL}?(?!\d)\b(?:,?\s+\d{{4}}\b)?")),
    ("date", re.compile(rf"\b{_MONTH},?\s+\d{{4}}\b")),
    (
        "date",
        re.compile(
            rf"(?i:\b(?:in|since|until|till|by|during|through|of|early|late|mid|last|next"
            rf"|this)\s+)(?:(?i:early|late|mid)-?\s*)?{_MONTH}\b"
        ),
    ),
    ("date", re.compile(rf"\b(?:(?i:last|next|this|every)\s+)?{_WEEKDAY}s?\b")),
    (
        "date",
        re.compile(
            r"(?i:\b(?:last|next|this|on)\s+)(?:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?"
        ),
    ),
    (
        "date",
        re.compile(
            r"(?i:\b(?:yesterday|today|tonight|tomorrow|(?:last|next|this)\s+(?:week|weekend"
            r"|month|year|summer|winter|spring|fall|autumn|night|morning|afternoon|evening)"
            rf"|{_SMALL_NUMBER}\s+(?:day|week|month|year)s?\s+ago)\b)"
        ),
    ),
    ("date", re.compile(r"\b(?:19|20)\d{2}s?\b(?!\s*(?:%|percent))")),
    ("time", re.compile(r"(?i:\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w))")),
    ("time", re.compile(r"\b\d{1,2}:\d{2}\b")),
    ("time", re.compile(r"(?i:\b(?:noon|midnight)\b)")),
)
# Every date pattern needs one of these; most messages have none and skip the patterns.
_DATE_HINT = re.compile(
    rf"\d|{_MONTH}|{_WEEKDAY}|\b(?:Mon|Tues?|Wed|Thu|Fri|Sat|Sun)\b"
    r"|(?i:yesterday|today|tonight|tomorrow|\bago\b|noon|midnight|\b(?:last|next|this)\s+"
    r"(?:week|weekend|month|year|summer|winter|spring|fall|autumn|night|morning|afternoon"
    r"|evening))"
)
_DATE_LEAD = re.compile(r"(?i)^(?:in|since|until|till|by|during|through|of|on)\s+")

_NUMBER = re.compile(
    r"(?<![\w.$€£\-])(?P<cur>[$€£])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[-–/]\d+(?:\.\d+)?)?)"
    r"(?P<suf>%|[A-Za-z][\w\-]*)?"
    r"(?:[ \-](?P<w1>[A-Za-z][A-Za-z'\-]*))?(?:\s(?P<w2>[A-Za-z][A-Za-z'\-]*))?"
)
_NUMBER_WORD = re.compile(
    r"(?i)\b(?P<num>" + "|".join(_NUMBER_WORDS) + r")\s+(?P<noun>[a-z][a-z'\-]*s)\b"
)

_SELF_NAME = re.compile(
    r"(?:(?i:\bmy\s+name\s+is|\bmy\s+name's|\bi\s+am|\bi'm|\bcall\s+me))\s+"
    r"(?P<name>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)?)"
)
# Where a liked thing or a decision ends, so "I love X but I hate Y" gives both.
_CLAUSE_END = (
    r"(?=\s*[,.;!?\n]|\s+(?i:but|and|because|so|although|though|while|whereas|since)\s|\s*$)"
)
_PREFERENCE = re.compile(
    r"(?i:\b(?:i|we)\s+(?:(?:really|totally|absolutely|just|also|truly|do|still|always)\s+)*"
    r"(?P<verb>love|like|enjoy|adore|prefer|hate|dislike|despise|detest|can't\s+stand"
    r"|cannot\s+stand|don't\s+like|do\s+not\s+like|don't\s+enjoy)s?)\s+"
    r"(?P<what>[^.,;!?\n]{1,80}?)" + _CLAUSE_END
)
_FAVORITE = re.compile(
    r"(?i:\bmy\s+(?:all-time\s+)?favou?rite\s+)(?P<noun>[a-z][a-z\-]*(?:\s+[a-z][a-z\-]*)?)"
    r"(?i:\s+(?:is|are|was|has\s+to\s+be)\s+)(?P<what>[^.,;!?\n]{1,60})"
)
_DECISION = re.compile(
    r"(?i:\b(?P<subj>we|i)(?:\s+|(?='))(?:(?:have|'ve|finally|just|all|also|now)\s+)*"
    r"(?:(?P<decided>decided|agreed|chose|settled\s+on|committed)(?:\s+(?:to|that|on|upon))?"
    r"|(?P<plan>plan|planned|(?:are|am|'re|'m)\s+(?:planning|going))\s+(?:to|on)"
    r"|(?P<will>will|'ll))\s+)"
    r"(?P<what>[^.;!?\n]{2,100}?)" + _CLAUSE_END
)
# Where a liked thing ends: "hiking with my dog" -> "hiking".
_PREFERENCE_CUT = re.compile(r"(?i)\s+(?:over|than|rather|with|for|whenever|every)\s")
_CUT_WORDS = _word_set(
    "and but because so when since as if though although which while whereas cause"
)
_LEADING_DETERMINERS = _word_set("to the a an my our his her their your this that some")
_DETERMINERS = _word_set(
    "a an the my your our his her their this that these those some any every each no"
)
_PRONOUN_VALUES = _word_set("it that this them you him her these those one stuff")
# A liked "how it works" or "what you said" is not a thing liked.
_CLAUSE_STARTS = ("how ", "what ", "when ", "where ", "why ", "that ", "it ", "this ", "the way")


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
def _normalize(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'")
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (line breaks end sentences; bullets are removed).

    >>> split_sentences("Hi Dr. Lee! We met on Friday.\\n- bring the slides")
    ['Hi Dr. Lee!', 'We met on Friday.', 'bring the slides']
    """
    sentences: list[str] = []
    pending = ""
    for piece in _SENTENCE_END.split(_normalize(text)):
        piece = _BULLET.sub("", piece).strip()
        if not piece:
            continue
        pending = f"{pending} {piece}" if pending else piece
        last = pending.rsplit(" ", 1)[-1]
        if pending.endswith(".") and (
            last.rstrip(".").lower() in _ABBREVIATIONS or _INITIALS.fullmatch(last)
        ):
            continue  # "Dr." or "J.K." did not end the sentence
        sentences.append(pending)
        pending = ""
    if pending:
        sentences.append(pending)
    return sentences


def _is_capitalised(word: str) -> bool:
    first = word[0]
    if first.isupper():
        return first != "I" or word.lower() not in _I_FORMS
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
        or lower in _CALENDAR_WORDS
        or lower in _COMMON_OPENERS
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


def _sentence_entities(sentence: str, capitalised_elsewhere: set[str]) -> list[_Entity]:
    """Runs of capitalised words that are names, places or other proper nouns."""
    tokens = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(sentence)]
    entities: list[_Entity] = []
    i = 0
    while i < len(tokens):
        word = tokens[i][0]
        if not _is_capitalised(word) or word.isdigit():
            i += 1
            continue
        j = i + 1
        while j < len(tokens):
            gap = sentence[tokens[j - 1][2] : tokens[j][1]]
            if gap != " " or tokens[j - 1][0].endswith("'s"):
                break
            nxt = tokens[j][0]
            if _is_capitalised(nxt):
                j += 1
            elif (
                nxt in {"of", "the", "de", "da", "van", "von", "del", "la", "le"}
                and j + 1 < len(tokens)
                and sentence[tokens[j][2] : tokens[j + 1][1]] == " "
                and _is_capitalised(tokens[j + 1][0])
            ):
                j += 2
            else:
                break
        run = tokens[i:j]
        sentence_initial = i == 0
        # Drop calendar words and common words heading the run ("Hey Mel" -> "Mel").
        while run and (
            _strip_possessive(run[0][0]).lower() in _CALENDAR_WORDS
            or (
                (sentence_initial or _strip_possessive(run[0][0]).lower() in _GREETINGS)
                and _is_common(run[0][0])
            )
            or run[0][0].lower() in {"of", "the"}
        ):
            run = run[1:]
            sentence_initial = False
        while run and (
            _strip_possessive(run[-1][0]).lower() in _CALENDAR_WORDS
            or run[-1][0].lower() in STOP_WORDS
        ):
            run = run[:-1]
        if run:
            first_word = run[0][0]
            k = tokens.index(run[0])
            keep = True
            if k == 0 and len(run) == 1:
                # A lone capitalised word opening a sentence is usually an ordinary word.
                after_char = sentence[run[0][2] : run[0][2] + 1]
                keep = not _is_common(first_word) and (
                    _strip_possessive(first_word) in capitalised_elsewhere
                    or (after_char in {",", "!", "?"} and not first_word.endswith(("ed", "ly")))
                    or not _looks_common_noun(first_word)
                    or (first_word.isupper() and len(first_word) > 1)
                )
            if keep:
                ent_start, ent_end = run[0][1], run[-1][2]
                rest = sentence[ent_end:].strip(" ,.!?")
                # "Hey Mel!", "Thanks, Gina.", "That's great, John!": someone addressed.
                vocative = len(run) == 1 and (
                    (
                        all(t[0].lower() in _GREETINGS for t in tokens[:k])
                        and sentence[ent_end : ent_end + 1] in {",", "!", "?", ".", ""}
                    )
                    or (sentence[max(0, ent_start - 2) : ent_start] == ", " and not rest)
                )
                entities.append(
                    _Entity(
                        text=_strip_possessive(sentence[ent_start:ent_end]),
                        start=ent_start,
                        end=ent_end,
                        before=tuple(t[0].lower() for t in tokens[max(0, k - 3) : k]),
                        after=sentence[ent_end : ent_end + 24],
                        vocative=vocative,
                    )
                )
        i = max(j, i + 1)
    return entities


def content_words(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no function or chat words).

    >>> content_words("Wow, I really love the new garden!")
    ['garden']
    """
    words = []
    for m in _WORD.finditer(text):
        w = _strip_possessive(m.group()).lower()
        if len(w) >= 3 and w.isalpha() and w not in STOP_WORDS and w not in CHAT_WORDS:
            words.append(w)
    return words


def sentence_score(sentence: str) -> float:
    """How informative a sentence is: entities, numbers and content words per word.

    Names and numbers weigh double (a name only addressed, as in "Thanks, Jon!", does
    not count); dividing by the square root of the length (at least 8 words) favours
    dense sentences without always picking the shortest.

    >>> sentence_score("Thanks!") < sentence_score("Jordan moved to Lisbon in 2021.")
    True
    """
    words = _WORD.findall(sentence)
    if not words:
        return 0.0
    capitalised_elsewhere = {w for w in words[1:] if _is_capitalised(w)}
    entities = sum(
        1 for ent in _sentence_entities(sentence, capitalised_elsewhere) if not ent.vocative
    )
    numbers = sum(1 for w in words if any(c.isdigit() for c in w))
    content = len(content_words(sentence))
    return (2.0 * entities + 2.0 * numbers + content) / math.sqrt(max(len(words), 8))


# -- facts ---------------------------------------------------------------------------
def _clean_value(value: str, max_words: int = 6) -> str:
    value = _VALUE_JUNK.sub(" ", re.split(r"\s[-–—]+\s|\(", value)[0])
    words = value.split()
    for i, w in enumerate(words):
        if i > 0 and w.lower() in _CUT_WORDS:
            words = words[:i]
            break
    words = words[:max_words]
    while words and words[0].lower() in _LEADING_DETERMINERS:
        words = words[1:]
    while words and (words[-1].lower() in STOP_WORDS or words[-1].lower() in _CUT_WORDS):
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
    return [w.lower() for w in _WORD.findall(window)][-count:]


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


def _extract_dates(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    if _DATE_HINT.search(text) is None:
        return
    found: list[tuple[int, int, str]] = []
    for kind, pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            found.append((m.start(), m.end(), kind))
    # Longest match first where matches overlap ("8 May, 2023" beats "2023").
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    for start, end, kind in found:
        if _overlaps((start, end), taken):
            continue
        taken.append((start, end))
        value = _DATE_LEAD.sub("", _SPACES.sub(" ", text[start:end].replace(",", " ")))
        key = kind
        for word in reversed(_words_before(text, start, 5)):
            if word in _DATE_CUES:
                key = _snake(word)
                break
        facts.add(_GROUP_DATE, key, value.strip())


def _extract_numbers(text: str, facts: _FactList, taken: list[tuple[int, int]]) -> None:
    for m in _NUMBER.finditer(text):
        span = (
            m.start("num") - (1 if m.group("cur") else 0),
            m.end("suf") if m.group("suf") else m.end("num"),
        )
        if _overlaps(span, taken):
            continue
        taken.append(span)
        number = m.group("num").replace(",", "")
        suffix = m.group("suf") or ""
        w1, w2 = m.group("w1"), m.group("w2")
        if m.group("cur"):
            value = m.group("cur") + number + suffix
            if w1 and w1.lower() in _SCALE_WORDS:
                value += " " + w1.lower()
            key = "amount"
            for word in reversed(_words_before(text, m.start(), 5)):
                if word in _MONEY_CUES:
                    key = _snake(word)
                    break
            facts.add(_GROUP_NUMBER, key, value)
            continue
        if suffix == "%" or (w1 and w1.lower() == "percent"):
            facts.add(_GROUP_NUMBER, "percent", number + "%")
            continue
        noun = None
        if w1 and w1.lower() in _NUMBER_ADJECTIVES and w2:
            noun = w2
        elif w1:
            noun = w1
        if noun is not None and (noun.lower() in STOP_WORDS or noun.lower() in _CUT_WORDS):
            noun = None
        if re.fullmatch(r"(?i)st|nd|rd|th", suffix):
            value = number + suffix + (f" {noun}" if noun else "")
            facts.add(_GROUP_NUMBER, "number", value)
            continue
        value = number + suffix
        key = _snake(_strip_possessive(noun)) if noun else ""
        if not key or key in _RESERVED_KEYS:
            if noun:
                value = f"{value} {noun.lower()}"
            key = "number"
        facts.add(_GROUP_NUMBER, key, value)
    for m in _NUMBER_WORD.finditer(text):
        if _overlaps((m.start(), m.end()), taken):
            continue
        noun = m.group("noun").lower()
        if noun in STOP_WORDS or noun in CHAT_WORDS:
            continue
        taken.append((m.start(), m.end()))
        key = _snake(noun)
        number = _NUMBER_WORDS[m.group("num").lower()]
        if key in _RESERVED_KEYS:
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
    for m in _PREFERENCE.finditer(text):
        verb = " ".join(m.group("verb").lower().split())
        if verb.startswith(("hate", "dislike", "despise", "detest", "can", "don", "do ")):
            key = "dislikes"
        elif verb.startswith("prefer"):
            key = "prefers"
        else:
            key = "likes"
        what = re.split(_PREFERENCE_CUT, _group_until_taken(m, "what", taken))[0]
        what = _clean_value(what, 4)
        lower = what.lower()
        if lower in CHAT_WORDS or lower.startswith(_CLAUSE_STARTS):
            continue
        if what and lower not in _PRONOUN_VALUES:
            facts.add(_GROUP_PREFERENCE, key, what)
    for m in _FAVORITE.finditer(text):
        noun = _snake(m.group("noun"))
        what = _clean_value(_group_until_taken(m, "what", taken), 5)
        if noun and what and what.lower() not in _PRONOUN_VALUES:
            facts.add(_GROUP_PREFERENCE, f"favorite_{noun}", what)
    for m in _DECISION.finditer(text):
        if m.group("will") and m.group("subj").lower() != "we":
            continue  # "I'll check it out" is small talk; "we will" is a plan
        key = "decision" if m.group("decided") else "plan"
        what = _clean_value(_group_until_taken(m, "what", taken), 6)
        if what and what.lower() not in _PRONOUN_VALUES:
            facts.add(_GROUP_DECISION, key, what)


def _extract_entities(text: str, role: str, facts: _FactList) -> None:
    for m in _SELF_NAME.finditer(text):
        name = _strip_possessive(m.group("name"))
        words = name.split()
        while words and _is_common(words[-1]):
            words = words[:-1]
        if words and not _is_common(words[0]):
            facts.add(_GROUP_SELF, _self_name_key(role), " ".join(words))
    for m in _QUOTED.finditer(text):
        title = _VALUE_JUNK.sub(" ", (m.group(1) or m.group(2))).strip(" .!?")
        if title and len(title.split()) <= 8 and title.lower() not in _PRONOUN_VALUES:
            facts.add(_GROUP_TITLE, "title", title)
    sentences = split_sentences(text)
    capitalised_elsewhere: set[str] = set()
    for sentence in sentences:
        words = _WORD.findall(sentence)
        capitalised_elsewhere.update(_strip_possessive(w) for w in words[1:] if _is_capitalised(w))
    for sentence in sentences:
        for ent in _sentence_entities(sentence, capitalised_elsewhere):
            lower = ent.text.lower()
            if lower in facts.values or any(lower in v.split(";") for v in facts.values):
                continue
            if any(lower in value for value in facts.values if " " in value):
                continue  # already inside a title, a preference or a decision
            before = ent.before
            last = before[-1] if before else ""
            if len(before) >= 2 and (
                before[-2] in {"my", "our", "his", "her", "their"} or last in _RELATIONS
            ):
                relation = last
            elif last in {"named", "called"} and len(before) >= 2:
                relation = before[-2]  # "a puppy called Pixie" -> puppy=Pixie
            else:
                relation = ""
            follower = _WORD.findall(ent.after)
            if relation in _RELATIONS:
                facts.add(_GROUP_RELATION, _snake(relation), ent.text)
            elif last in _PLACE_CUES or (
                last == "to" and len(before) >= 2 and before[-2] in _MOTION_WORDS
            ):
                facts.add(_GROUP_PLACE, "place", ent.text)
            elif (
                ent.vocative
                or last in _PERSON_CUES
                or (follower and follower[0].lower() in _PERSON_FOLLOWERS)
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
    norm = _normalize(text)
    facts = _FactList()
    taken: list[tuple[int, int]] = []
    _extract_dates(norm, facts, taken)
    _extract_numbers(norm, facts, taken)
    _extract_opinions(norm, facts, taken)
    _extract_entities(norm, role, facts)
    return facts.ordered()


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
    tokens = [_strip_possessive(w).lower() for w in _WORD.findall(text)]
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    nouns: set[str] = set()
    for i, w in enumerate(tokens):
        if len(w) < 3 or not w.isalpha() or w in STOP_WORDS or w in excluded:
            continue
        if (w in CHAT_WORDS and not allow_chat_words) or w in _GREETINGS:
            continue
        first.setdefault(w, i)
        # Repeated words, and words after a determiner ("the park", "a new bike": nouns),
        # say more about the subject than verbs and adverbs.
        points = 2.0 + min(len(w), 10) / 4
        if (i >= 1 and tokens[i - 1] in _DETERMINERS) or (
            i >= 2 and tokens[i - 2] in _DETERMINERS and tokens[i - 1] not in STOP_WORDS
        ):
            points += 2.0
            nouns.add(w)
        if w.endswith(("ly", "ed")):
            points -= 1.5
        score[w] = score.get(w, 0.0) + points
    candidates = [w for w in score if w in nouns] if nouns_only else list(score)
    ranked = sorted(candidates, key=lambda w: (-score[w], first[w]))
    return sorted(ranked[:count], key=lambda w: first[w])


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


def trim_sentence(sentence: str) -> str:
    """A sentence without opening interjections and filler words.

    >>> trim_sentence("Wow, that is really a great idea!")
    'That is a great idea!'
    """
    words = [w for w in sentence.split(" ") if w.lower().strip(",.!?") not in _FILLER_WORDS]
    # Leading interjections ("Wow, ", "Oh yeah!") carry no content; "Thanks for..." does.
    while len(words) > 1:
        head = words[0].lower()
        bare = head.strip(",.!?")
        if (bare in CHAT_WORDS and head != bare) or bare in _INTERJECTIONS:
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


class OfflineTierer(Tierer):
    """Rule-based tiers: ``key=value`` facts and an extractive one- or two-sentence summary.

    Args:
        max_facts: most facts in tier 1 (names, places, dates and numbers come first).
        tier1_ratio: share of the raw size a topic may bring tier 1 to; facts are kept
            even past it, the topic only fills space that is left.
        tier2_ratio: tier 2 budget as a share of the raw words.
        tier2_min_words: tier 2 budget never goes below this.
        short_message_words: messages this short keep their text as tier 2.
        token_counter: how sizes are measured (default :func:`count_tokens`).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> tiers = OfflineTierer().tier([AIMessage("We decided to ship the beta on Friday.")])
        >>> tiers[0].tier1
        'date=Friday, decision=ship the beta'
        >>> tiers[0].tier2
        'We decided to ship the beta on Friday.'
    """

    name = "offline"

    def __init__(
        self,
        *,
        max_facts: int = 12,
        tier1_ratio: float = 0.2,
        tier2_ratio: float = 0.35,
        tier2_min_words: int = 8,
        short_message_words: int = 8,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if max_facts < 1:
            raise ValueError(f"max_facts must be >= 1, got {max_facts!r}.")
        for field_name, ratio in (("tier1_ratio", tier1_ratio), ("tier2_ratio", tier2_ratio)):
            if not 0 < ratio <= 1:
                raise ValueError(f"{field_name} must be in (0, 1], got {ratio!r}.")
        self.max_facts = max_facts
        self.tier1_ratio = tier1_ratio
        self.tier2_ratio = tier2_ratio
        self.tier2_min_words = tier2_min_words
        self.short_message_words = short_message_words
        self.token_counter = token_counter

    def _count(self, text: str) -> int:
        return count_tokens(text, self.token_counter)

    def tier_text(self, text: str, role: str = "user") -> MessageTiers:
        """Tiers of a text said by ``role`` (``user``, ``assistant``...).

        >>> OfflineTierer().tier_text("I love hiking with my dog Toby.")
        MessageTiers(tier1='dog=Toby, likes=hiking', tier2='I love hiking with my dog Toby.')
        """
        if not text.strip():
            raise InvalidContentError(f"text has no content to tier, got {text!r}.")
        norm = _normalize(text)
        raw_tokens = self._count(norm)
        return MessageTiers(self._tier1(norm, role, raw_tokens), self._tier2(norm, raw_tokens))

    def _tier1(self, text: str, role: str, raw_tokens: int) -> str:
        facts = extract_facts(text, role)[: self.max_facts]
        budget = max(1, math.ceil(raw_tokens * self.tier1_ratio))
        tier1 = format_facts(facts)
        room = budget - self._count(tier1)
        want_topic = not facts or room > 2
        if want_topic:
            count = 3 if len(text.split()) > 30 else 2
            for n in range(count, 0, -1):
                topic = topic_words(text, [w for f in facts for w in f], n)
                if not topic:
                    break
                candidate = format_facts([*facts, Fact("topic", " ".join(topic))])
                if not facts or self._count(candidate) <= budget:
                    tier1 = candidate
                    break
        if not facts and not tier1:
            # Small talk only: its gist in chat words still beats repeating it.
            loose = topic_words(text, [], 2, allow_chat_words=True)
            tier1 = format_facts([Fact("topic", " ".join(loose))]) if loose else ""
        # Tier 1 never costs more than the message itself.
        while facts and self._count(tier1) > raw_tokens:
            facts = facts[:-1]
            tier1 = format_facts(facts)
        if not tier1 or self._count(tier1) > raw_tokens:
            return text.replace("\n", " ")
        return tier1

    def _tier2(self, text: str, raw_tokens: int) -> str:
        flat = text.replace("\n", " ")
        n_words = len(flat.split())
        if n_words <= self.short_message_words:
            return flat
        budget = max(self.tier2_min_words, math.ceil(n_words * self.tier2_ratio))
        summary = summarize_text(text, budget)
        if not summary or self._count(summary) >= raw_tokens:
            return flat
        return summary

    def tier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        """Tiers of each message, in order; an empty message raises InvalidContentError."""
        texts = [(message_text(m, i), message_role(m)) for i, m in enumerate(messages)]
        return [self.tier_text(text, role) for text, role in texts]
