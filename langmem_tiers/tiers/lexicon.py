"""Word lists and patterns of the rule-based extraction (internal to ``tiers``).

Kept apart from the rules that use them so the rules read as logic, and the lists can
be tuned (or extended for another language) in one place. Everything here is data:
frozen sets of lower-case words and compiled regular expressions.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "ABBREVIATIONS",
    "BULLET",
    "CALENDAR_WORDS",
    "CHAT_WORDS",
    "CLAUSE_END",
    "CLAUSE_STARTS",
    "COMMON_OPENERS",
    "CUT_WORDS",
    "DATE_CUES",
    "DATE_HINT",
    "DATE_LEAD",
    "DATE_PATTERNS",
    "DECISION",
    "DETERMINERS",
    "DIGIT",
    "FAVORITE",
    "FILLER_WORDS",
    "GREETINGS",
    "INITIALS",
    "INTERJECTIONS",
    "I_FORMS",
    "LEADING_DETERMINERS",
    "MONEY_CUES",
    "MONTH",
    "MOTION_WORDS",
    "NUMBER",
    "NUMBER_ADJECTIVES",
    "NUMBER_FOLLOWERS",
    "NUMBER_WORD",
    "NUMBER_WORDS",
    "ORDINAL",
    "PERSON_CUES",
    "PERSON_FOLLOWERS",
    "PLACE_CUES",
    "PREFERENCE",
    "PREFERENCE_CUT",
    "PRONOUN_VALUES",
    "QUOTED",
    "RELATIONS",
    "RESERVED_KEYS",
    "SCALE_WORDS",
    "SELF_NAME",
    "SENTENCE_END",
    "SMALL_NUMBER",
    "SPACES",
    "STOP_WORDS",
    "VALUE_JUNK",
    "WEEKDAY",
    "WORD",
    "DatePattern",
]


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# -- word lists ----------------------------------------------------------------------

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
COMMON_OPENERS = _word_set("""
    every whenever wherever whatever whoever under over two three four five alright
    nature music art arts dance yoga exercise travel sports sport food cooking painting
    reading writing hiking gaming swimming running walking photography pottery creativity
    balance trust change pride chase push start set find found met create gather rate mix
    mental simple positive regular strong young busy epic classic precious real
    """)

# Capitalised but part of a date, handled by the date rules instead.
CALENDAR_WORDS = _word_set(
    """
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    """
) | _word_set(
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun"
)

I_FORMS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})

# "my <relation> <Name>" makes the relation the key: sister=Anna, dog=Toby.
RELATIONS = _word_set("""
    friend friends sister brother mom mum mother dad father son daughter wife husband
    partner boyfriend girlfriend fiance fiancee boss manager colleague coworker cousin aunt
    uncle grandma grandmother grandpa grandfather niece nephew neighbor neighbour roommate
    teacher mentor coach doctor therapist kid kids child baby dog cat puppy kitten pet
    """)

# Words that open a greeting or thanks before a name: "Hey Mel!", "Thanks so much, Jon."
GREETINGS = _word_set("""
    hey hi hello hiya heya thanks thank you so much wow whoa congrats congratulations sorry oh
    aw aww awww yeah yes yep no sure thing good great job morning night evening bye dear
    see ya cool nice haha welcome ok okay definitely absolutely totally hope well
    """)
# A capitalised word after these (or after a motion verb and "to") is taken as a place.
PLACE_CUES = frozenset(
    {"in", "from", "near", "visited", "visit", "visiting", "around", "across", "toward"}
)
MOTION_WORDS = _word_set("""
    went go going gone goes moved move moving trip travel traveled travelled traveling
    travelling flew fly flying drove drive driving back headed heading road vacation
    relocated relocate
    """)
# A capitalised word after these is taken as a person's name.
PERSON_CUES = frozenset(
    {"with", "named", "called", "met", "meet", "meeting", "and", "by", "name's", "name"}
)
PERSON_FOLLOWERS = frozenset({"said", "says", "told", "asked", "thinks", "thought", "wants"})

# Nouns that name a date: "the deadline is March 1" -> deadline=March 1.
DATE_CUES = _word_set("""
    deadline due birthday anniversary meeting launch release wedding appointment interview
    exam trip flight party concert match event graduation start starts starting
    """)
# Nouns that name an amount: "a budget of $500" -> budget=$500.
MONEY_CUES = _word_set("budget price cost costs salary rent paid pay raised spent earn earned fee")
NUMBER_WORDS = {
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
NUMBER_ADJECTIVES = _word_set(
    "little big small young younger old older new more extra whole different other full"
)
# Words after a number that never say what it counts: "at 10.15 every day", "1,450 per month".
NUMBER_FOLLOWERS = _word_set("""
    per near via across along among around behind beside beyond inside outside toward
    towards upon within without including plus minus times each every ago later earlier
    sharp tops max min
    """)
SCALE_WORDS = frozenset({"thousand", "million", "billion", "k"})

# Keys the rules set themselves; a counted noun with one of these names goes to "number".
RESERVED_KEYS = _word_set("""
    user_name assistant_name name place date time amount percent number likes dislikes
    prefers decision plan title entity topic
    """)

# Dropped from the head of a tier-2 sentence even without a comma after them.
INTERJECTIONS = _word_set("oh ah aw aww wow whoa hey hi hmm um haha yeah yep yes ok okay")
# Dropped from tier 2: they add length, not meaning.
FILLER_WORDS = _word_set("""
    really just actually basically literally totally definitely truly honestly absolutely
    super very
    """)

# -- patterns ------------------------------------------------------------------------
# Initials ("J.K.") and titles ("Dr.") are words of their own, so "J.K. Rowling" and
# "Dr. Lee" stay one name.
WORD = re.compile(r"(?:[A-Z]\.){2,}|(?:Dr|Mr|Mrs|Ms|Prof|St)\.(?= [A-Z])|[^\W_](?:[\w'\-]*[^\W_])?")
INITIALS = re.compile(r"(?:[A-Z]\.)+")
SPACES = re.compile(r"[ \t\r\f\v]+")
SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
ABBREVIATIONS = _word_set(
    "mr mrs ms dr st vs etc e.g i.e jr sr prof mt no approx dept est fig inc ltd"
)
BULLET = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)])\s+")
QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”")
VALUE_JUNK = re.compile(r"[,;=|\n\"“”]+")

MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?)"
)
WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
ORDINAL = r"(?:st|nd|rd|th)"
SMALL_NUMBER = (
    r"(?:\d+|a|an|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple(?:\s+of)?)"
)


class DatePattern(NamedTuple):
    """A date or time pattern, and literal text every one of its matches contains."""

    kind: str
    """The fact's key when no cue word names it (``date``, ``time``)."""
    pattern: re.Pattern[str]
    needs: tuple[str, ...] = ()
    """Every match contains one of these (none: no such text), so a text without any
    of them is not searched."""
    needs_any_case: bool = False
    """``needs`` are lower-case and matched in any case (the pattern ignores case there)."""


# Month names and abbreviations all start with one of these (and weekdays likewise).
_MONTH_STARTS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_WEEKDAY_STARTS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
DATE_PATTERNS: tuple[DatePattern, ...] = (
    DatePattern(
        "date",
        re.compile(
            r"\b\d{4}-\d{1,2}-\d{1,2}(?:T\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
        ),
        ("-",),
    ),
    DatePattern("date", re.compile(r"\b\d{4}/\d{1,2}/\d{1,2}\b"), ("/",)),
    DatePattern("date", re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b"), ("/",)),
    DatePattern("date", re.compile(r"\b\d{1,2}\.\d{1,2}\.(?:\d{4}|\d{2})\b(?!\.\d)"), (".",)),
    DatePattern(
        "date",
        re.compile(rf"\b\d{{1,2}}{ORDINAL}?\s+(?:of\s+)?{MONTH}(?![\w])(?:,?\s+\d{{4}}\b)?"),
        _MONTH_STARTS,
    ),
    DatePattern(
        "date",
        re.compile(rf"\b{MONTH}\s+\d{{1,2}}{ORDINAL}?(?!\d)\b(?:,?\s+\d{{4}}\b)?"),
        _MONTH_STARTS,
    ),
    DatePattern("date", re.compile(rf"\b{MONTH},?\s+\d{{4}}\b"), _MONTH_STARTS),
    DatePattern(
        "date",
        re.compile(
            rf"(?i:\b(?:in|since|until|till|by|during|through|of|early|late|mid|last|next"
            rf"|this)\s+)(?:(?i:early|late|mid)-?\s*)?{MONTH}\b"
        ),
        _MONTH_STARTS,
    ),
    DatePattern(
        "date", re.compile(rf"\b(?:(?i:last|next|this|every)\s+)?{WEEKDAY}s?\b"), _WEEKDAY_STARTS
    ),
    DatePattern(
        "date",
        re.compile(
            r"(?i:\b(?:last|next|this|on)\s+)(?:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?"
        ),
        _WEEKDAY_STARTS,
    ),
    DatePattern(
        "date",
        re.compile(
            r"(?i:\b(?:yesterday|today|tonight|tomorrow|(?:last|next|this)\s+(?:week|weekend"
            r"|month|year|summer|winter|spring|fall|autumn|night|morning|afternoon|evening)"
            rf"|{SMALL_NUMBER}\s+(?:day|week|month|year)s?\s+ago)\b)"
        ),
        ("yesterday", "today", "tonight", "tomorrow", "last", "next", "this", "ago"),
        needs_any_case=True,
    ),
    DatePattern(
        "date", re.compile(r"\b(?:(?i:mid|early|late)-)?(?:19|20)\d{2}s?\b(?!\s*(?:%|percent))")
    ),
    DatePattern("time", re.compile(r"(?i:\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w))")),
    DatePattern("time", re.compile(r"\b\d{1,2}:\d{2}\b"), (":",)),
    DatePattern(
        "time", re.compile(r"(?i:\b(?:noon|midnight)\b)"), ("noon", "midnight"), needs_any_case=True
    ),
)
DIGIT = re.compile(r"\d")
# Every date pattern needs one of these; most messages have none and skip the patterns.
DATE_HINT = re.compile(
    rf"\d|{MONTH}|{WEEKDAY}|\b(?:Mon|Tues?|Wed|Thu|Fri|Sat|Sun)\b"
    r"|(?i:yesterday|today|tonight|tomorrow|\bago\b|noon|midnight|\b(?:last|next|this)\s+"
    r"(?:week|weekend|month|year|summer|winter|spring|fall|autumn|night|morning|afternoon"
    r"|evening))"
)
DATE_LEAD = re.compile(r"(?i)^(?:in|since|until|till|by|during|through|of|on)\s+")

NUMBER = re.compile(
    r"(?<![\w.$€£\-])(?P<cur>[$€£])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:[-–/]\d+(?:\.\d+)?)?)"
    r"(?P<suf>%|[A-Za-z][\w\-]*)?"
    r"(?:[ \-](?P<w1>[A-Za-z][A-Za-z'\-]*))?(?:\s(?P<w2>[A-Za-z][A-Za-z'\-]*))?"
)
NUMBER_WORD = re.compile(
    r"(?i)\b(?P<num>" + "|".join(NUMBER_WORDS) + r")\s+(?P<noun>[a-z][a-z'\-]*s)\b"
)

SELF_NAME = re.compile(
    r"(?:(?i:\bmy\s+name\s+is|\bmy\s+name's|\bi\s+am|\bi'm|\bcall\s+me))\s+"
    r"(?P<name>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)?)"
)
# Where a liked thing or a decision ends, so "I love X but I hate Y" gives both.
CLAUSE_END = (
    r"(?=\s*[,.;!?\n]|\s+(?i:but|and|because|so|although|though|while|whereas|since)\s|\s*$)"
)
PREFERENCE = re.compile(
    r"(?i:\b(?:i|we)\s+(?:(?:really|totally|absolutely|just|also|truly|do|still|always)\s+)*"
    r"(?P<verb>love|like|enjoy|adore|prefer|hate|dislike|despise|detest|can't\s+stand"
    r"|cannot\s+stand|don't\s+like|do\s+not\s+like|don't\s+enjoy)s?)\s+"
    r"(?P<what>[^.,;!?\n]{1,80}?)" + CLAUSE_END
)
FAVORITE = re.compile(
    r"(?i:\bmy\s+(?:all-time\s+)?favou?rite\s+)(?P<noun>[a-z][a-z\-]*(?:\s+[a-z][a-z\-]*)?)"
    r"(?i:\s+(?:is|are|was|has\s+to\s+be)\s+)(?P<what>[^.,;!?\n]{1,60})"
)
DECISION = re.compile(
    r"(?i:\b(?P<subj>we|i)(?:\s+|(?='))(?:(?:have|'ve|finally|just|all|also|now)\s+)*"
    r"(?:(?P<decided>decided|agreed|chose|settled\s+on|committed)(?:\s+(?:to|that|on|upon))?"
    r"|(?P<plan>plan|planned|(?:are|am|'re|'m)\s+(?:planning|going))\s+(?:to|on)"
    r"|(?P<will>will|'ll))\s+)"
    r"(?P<what>[^.;!?\n]{2,100}?)" + CLAUSE_END
)
# Where a liked thing ends: "hiking with my dog" -> "hiking".
PREFERENCE_CUT = re.compile(r"(?i)\s+(?:over|than|rather|with|for|whenever|every)\s")
CUT_WORDS = _word_set(
    "and but because so when since as if though although which while whereas cause"
)
LEADING_DETERMINERS = _word_set("to the a an my our his her their your this that some")
DETERMINERS = _word_set(
    "a an the my your our his her their this that these those some any every each no"
)
PRONOUN_VALUES = _word_set("it that this them you him her these those one stuff")
# A liked "how it works" or "what you said" is not a thing liked.
CLAUSE_STARTS = ("how ", "what ", "when ", "where ", "why ", "that ", "it ", "this ", "the way")
