"""Relation slots: what a statement says of whom, and whether a new one ends an old one.

A memory like "The user lives in Berlin." fills a *slot* of its subject (``user``,
``lives_in``, ``Berlin``) that holds one value at a time; "The user moved to Munich last
month." fills the same slot with another value, so the older statement no longer holds.
Statements also *end* values in ordinary words ("I quit Acme", "Sarah left", "I gave up
Spanish", "I'm no longer a nurse", "Chris and I got divorced"), and *add* without
replacing anything ("I also have a cat", "I'm learning German too").

:func:`read_claims` reads those from one statement (first or third person: ``I``, ``my``,
``we`` and ``the user`` are all the speaker); :func:`slot_verdict` compares a new
statement's claims with an old one's, and :func:`related` tells, cheaply, whether an old
statement is worth checking against a new one at all (the engine uses it to find the
candidates that embeddings alone miss).

The slots are of two kinds:

- fixed relations with their change verbs: ``lives_in`` (lives in, moved to, relocated
  to, based in), ``works_at`` (works at/for, started at, employed by), ``job`` (works as),
  ``relationship`` (single, married to, engaged to, divorced), ``lives_with`` (alone,
  with ...), ``diet`` (vegetarian, vegan...), ``age`` (... years old);
- a possessive or named noun phrase with a copula or a change verb: "my manager is
  Sarah", "my new manager is Tom", "Marco is my team lead now", "my email changed to
  ...", "the launch was pushed to June 10", "I got a new mobile number: ...".

Example:
    >>> old = read_claims("The user's manager is Sarah.")
    >>> new = read_claims("Sarah left; the user's new manager is Tom.")
    >>> old.slots, new.slots, sorted(new.ended)
    ({('user', 'manager'): 'sarah'}, {('user', 'manager'): 'tom'}, ['sarah'])
    >>> slot_verdict(new, old)[0]
    True
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

__all__ = ["Claims", "SlotVerdict", "fills_slot", "read_claims", "related", "slot_verdict"]

SlotVerdict = tuple[bool, float, str]
"""Whether two statements conflict, how sure the slots are, and why."""

Slot = tuple[str, str]
"""(subject, relation): ``("user", "lives_in")``, ``("user.daughter", "school")``."""


class Claims(NamedTuple):
    """What one statement says: slots it fills, values it ends, whether it only adds."""

    slots: dict[Slot, str]
    """Each single-valued slot the statement fills, with its value (lower-case)."""
    ended: frozenset[str]
    """Values (lower-case words) the statement says no longer hold."""
    now: frozenset[tuple[str, str]]
    """``(subject, verb)`` pairs said to hold *now* ("now drive a Tesla"), in stems."""
    adds: bool
    """An additive cue ("also", "too", "as well", "another") and no change cue."""
    subjects: frozenset[str]
    """Every subject the statement speaks of (``user``, ``user.sister``, a name)."""
    text: str
    """The normalised text (lower-case, the speaker as ``user``)."""


# -- normalising -------------------------------------------------------------------------
_SPEAKER = (
    (r"\bi'm\b|\bwe're\b", "user is"),
    (r"\bi've\b|\bwe've\b", "user has"),
    (r"\bi'd\b|\bwe'd\b", "user would"),
    (r"\bi'll\b|\bwe'll\b", "user will"),
    (r"\bthe user's\b", "user's"),
    (r"\bthe user\b", "user"),
    (r"\b(?:my|our)\b", "user's"),
    (r"\b(?:i|we|me|us)\b", "user"),
)
_CONTRACTED = (
    ("n't", " not"),
    ("'re", " are"),
    ("'ve", " have"),
    ("'ll", " will"),
)
_CLAUSE = r"(?=\s*(?:[,;.!?:]|\band\b|\bbut\b|\bso\b|\bbecause\b|\bwhile\b|$))"
_VALUE = r"(?P<value>[^,;.!?]+?)"
# Words that say when, not what: cut from the end of a value ("Munich last month").
_TRAILING_TIME = re.compile(
    r"\s+(?:last|this|next)\s+(?:week|month|year|weekend|spring|summer|fall|autumn|winter)$"
    r"|\s+(?:in|on|since|from)\s+(?:january|february|march|april|may|june|july|august"
    r"|september|october|november|december|\d{4})$"
    r"|\s+(?:now|today|yesterday|recently|instead|anymore|again|already|too|either)$"
    r"|\s+(?:after all|these days|nowadays|for good)$"
)
_LEADING = re.compile(r"^(?:(?:the|a|an|now|actually|currently|only|just|still)\s+)+")


def _normal(text: str) -> str:
    lowered = " ".join(text.lower().replace("\u2019", "'").split())
    lowered = re.sub(r"\b(dr|mr|mrs|ms|prof|st)\.", r"\1", lowered)  # "dr. kim" is one name
    for pattern, replacement in _SPEAKER:
        lowered = re.sub(pattern, replacement, lowered)
    for short, long in _CONTRACTED:
        lowered = lowered.replace(short, long)
    return re.sub(r"\buser am\b", "user is", lowered)


def _value(raw: str) -> str:
    value = raw.strip(" '\"")
    for _ in range(3):
        value = _TRAILING_TIME.sub("", value).strip()
    return _LEADING.sub("", value).strip()


def _subject(raw: str | None) -> str:
    """``user``, ``user.<relation>`` or a name, from the words before a verb."""
    if not raw:
        return "user"
    words = raw.split()
    if words[0] == "user's" and len(words) > 1:
        return "user." + " ".join(w for w in words[1:] if w not in _NEW)
    if words[0] in _NOT_SUBJECTS:
        return ""
    return " ".join(words)


# -- the slots -----------------------------------------------------------------------------
# Words before a verb that are no subject of their own ("... and started at Globex"): the
# statement's first subject is meant.
_NOT_SUBJECTS = frozenset(
    {"and", "but", "so", "then", "or", "he", "she", "they", "it", "who", "which", "that", "also"}
)
_NEW = frozenset({"new", "current", "present", "latest", "updated", "old", "former", "go-to"})
_ADVERBS = r"(?:(?:now|still|currently|actually|also|just|finally|recently|officially)\s+)*"
_WHO = r"(?P<who>user|user's\s+[a-z-]+(?:\s+[a-z-]+)?|[a-z]+)"
_FIXED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (relation, re.compile(pattern))
    for relation, pattern in (
        (
            "lives_in",
            rf"\b{_WHO}\s+(?:(?:is|are|has|have)\s+)?{_ADVERBS}"
            rf"(?:lives?|living|lived|moved|moving|relocated|relocating|based)\s+"
            rf"(?:back\s+)?(?:in|to)\s+{_VALUE}{_CLAUSE}",
        ),
        (
            "works_at",
            rf"\b{_WHO}\s+(?:(?:is|are|has|have)\s+)?{_ADVERBS}"
            rf"(?:works?|working|worked|started|starting|employed)\s+(?:at|for|by)\s+"
            rf"(?P<value>[^,;.!?]+?)(?=\s+as\b|{_CLAUSE})",
        ),
        (
            "job",
            rf"\b{_WHO}\s+{_ADVERBS}(?:works?|working)\s+as\s+(?:a\s+|an\s+)?{_VALUE}{_CLAUSE}",
        ),
        (
            "relationship",
            rf"\b{_WHO}\s+(?:is|are|got|has\s+been)\s+{_ADVERBS}"
            r"(?P<value>single|married|engaged|divorced|widowed|separated|dating)\b",
        ),
        (
            "lives_with",
            rf"\b{_WHO}\s+{_ADVERBS}(?:lives?|living)\s+(?P<value>(?:alone|on\s+(?:my|his|her)\s+own"
            rf"|with\s+)[^,;.!?]*?){_CLAUSE}",
        ),
        (
            "diet",
            rf"\b{_WHO}\s+(?:is|are)\s+{_ADVERBS}(?:a\s+)?(?P<value>vegetarian|vegan|pescatarian"
            r"|omnivore|carnivore|flexitarian)\b",
        ),
        (
            "age",
            rf"\b{_WHO}\s+(?:is|are|turned|turns)\s+{_ADVERBS}(?P<value>\d+)\s+years?\s+old\b",
        ),
        ("age", rf"\b{_WHO}\s+(?:just\s+)?(?:turned|turns)\s+(?P<value>\d+)\b"),
        (
            "age",
            rf"\b{_WHO}\s+(?:is|are)\s+(?P<value>\d+)(?=\s*[,;.!?]|$)",
        ),
    )
)
_NOUN = r"[a-z][a-z'-]*"
_PHRASE = rf"{_NOUN}(?:\s+{_NOUN}){{0,2}}"
_SLOT_VERBS = (
    r"(?:has\s+|got\s+|was\s+|is\s+|just\s+)?(?:changed|moved|pushed|rescheduled|postponed"
    r"|shifted|delayed|brought\s+forward|went\s+(?:up|down)|rose|dropped|increased"
    r"|decreased|fell|switched)\s+(?:back\s+)?to\s+(?:(?:on|at)\s+)?"
    r"|(?:now\s+)?(?:happens|takes\s+place)\s+(?:on|at|in)\s+"
    r"|(?:is|are|was|were)\s+(?:now\s+|actually\s+|still\s+)?(?:(?:on|at|in)\s+)?"
)
# "user's manager is sarah", "the launch was pushed to june 10", "user's new boss is greg".
_POSSESSIVE = re.compile(
    rf"(?:^|(?<=[\s,;:]))(?P<owner>user's|the|this|that)\s+(?P<slot>{_PHRASE}?)\s+"
    rf"(?:(?:for|of)\s+(?:the\s+|user's\s+)?(?P<of>{_NOUN}(?:\s+{_NOUN})?)\s+)?"
    rf"(?:{_SLOT_VERBS}){_VALUE}{_CLAUSE}"
)
# "marco is user's team lead now"
_NAMED_AS = re.compile(
    rf"(?:^|(?<=[\s,;:]))(?P<value>[a-z][a-z.'-]*(?:\s+[a-z][a-z.'-]*)?)\s+is\s+{_ADVERBS}"
    rf"user's\s+(?:new\s+)?(?P<slot>{_PHRASE}?){_CLAUSE}"
)
# "user got a new mobile number: 0160 ...", "user has a new address, 48 pine avenue"
_GOT_NEW = re.compile(
    rf"\buser\s+(?:got|has|have)\s+a\s+new\s+(?P<slot>{_PHRASE})(?:\s*[:,-]\s*|\s+(?:is\s+)?)"
    rf"{_VALUE}{_CLAUSE}"
)
# Slots that are not single-valued things of the owner, or not things at all.
_NOT_SLOTS = frozenset(
    {
        "user", "thing", "things", "idea", "plan", "problem", "issue", "question", "point",
        "reason", "way", "day", "time", "kids", "children", "friends", "parents", "pets",
        "hobbies", "favorites", "plans", "goal", "goals", "dream", "weekend", "week",
    }
)  # fmt: skip
_SLOT_TAIL = frozenset({"now", "today", "again", "too", "anymore", "currently", "instead"})
_TRIM_SLOT = re.compile(r"\s+(?:number|no|nr|id)$")

# -- ended values ------------------------------------------------------------------------
_ENDED: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        rf"\buser\s+(?:has\s+|have\s+|had\s+)?{_ADVERBS}(?:quits?|quitting|left|leaves|leaving"
        r"|drop(?:s|ped)|cancel(?:s|led|ed)|sold|sells|gave\s+up|gives?\s+up|giving\s+up"
        r"|stop(?:s|ped)|ditch(?:es|ed)|abandon(?:s|ed)|retired\s+from|moved\s+out\s+of"
        r"|resigned\s+from|closed)\s+(?:being\s+|using\s+|at\s+|from\s+)?"
        rf"{_VALUE}{_CLAUSE}",
        rf"\b(?:moved|switched|changed|transferred|upgraded|downgraded)\b[^,;.!?]*?\bfrom\s+"
        rf"{_VALUE}\s+to\b",
        rf"\buser\s+replaced\s+{_VALUE}\s+with\b",
        rf"\buser\s+(?:is|are)\s+no\s+longer\s+(?:a\s+|an\s+|at\s+|in\s+|with\s+)?{_VALUE}{_CLAUSE}",
        rf"\buser\s+(?:does|do|is|are)\s+not\s+{_VALUE}\s+(?:anymore|any\s+more|after\s+all)\b",
        rf"\buser\s+(?:is|are)\s+not\s+{_VALUE}\s+after\s+all\b",
        rf"\buser\s+(?:do|does)\s+not\s+{_VALUE}\s+anymore\b",
        rf"\bno\s+more\s+{_VALUE}{_CLAUSE}",
    )
)
# Values ended by a name before the verb ("Sarah left", "Chris and I got divorced").
_ENDED_BY_NAME: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"(?:^|(?<=[\s,;:]))(?P<value>[a-z][a-z.'-]*)\s+(?:has\s+|just\s+)?(?:left|retired|quit"
        r"|moved\s+on|resigned|passed\s+away)\b",
        r"(?:^|(?<=[\s,;:]))(?P<value>[a-z][a-z.'-]*)\s+and\s+user\s+(?:broke\s+up|split\s+up"
        r"|separated|got\s+divorced|divorced)\b",
    )
)
_NOT_ENDED = frozenset(
    {"user", "it", "that", "this", "them", "home", "work", "not", "never", "no", "he", "she"}
)
# Relations whose value must name something (a name, a number): "lives in a small flat"
# is no city, "works for a living" no employer.
_NAMED_RELATIONS = frozenset({"lives_in", "works_at"})
_VALUE_LIKE = re.compile(
    r"\d|@|\b(?:january|february|march|april|may|june|july|august|september|october"
    r"|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
)
_LEAD = re.compile(r"^(?:[a-z]+,\s+)?(?P<who>user's\s+[a-z-]+|user|[a-z]+)\b")
_NOW_VERBS = (
    re.compile(rf"\b{_WHO}\s+(?:(?:is|are)\s+)?now\s+(?P<verb>[a-z]+)\b"),
    re.compile(rf"\b{_WHO}\s+(?P<verb>[a-z]+)\s+[^,;.!?]*?\bnow\b"),
)
_ADDITIVE = re.compile(
    r"\b(?:also|too|as\s+well|another|additionally|in\s+addition|besides|second|both)\b"
)
_CHANGE = re.compile(
    r"\b(?:new|now|instead|anymore|any\s+more|no\s+longer|switched|changed|moved|replaced"
    r"|quit|left|gave\s+up|stopped|dropped|sold|cancell?ed|correction|actually|nowadays)\b"
)
_STEM = re.compile(r"(?:ing|ed|es|s)$")
_UNCOUNTED_VERBS = frozenset(
    {"is", "are", "has", "have", "does", "do", "was", "were", "user", "not", "no", "got", "get"}
)
_ADVERB_WORDS = frozenset(
    {"now", "still", "currently", "actually", "also", "just", "finally", "recently", "only"}
)


def _stem(word: str) -> str:
    if len(word) > 4:
        return _STEM.sub("", word)
    return word[:-1] if len(word) == 4 and word.endswith("s") else word


def _slot_name(raw: str, of: str | None) -> str:
    words = [w for w in raw.split() if w not in _NEW]
    if of:
        words = [*of.split(), *words]  # "the deadline for the report": report deadline
    while words and words[-1] in _SLOT_TAIL:
        words = words[:-1]  # "marco is my team lead now": the slot is "team lead"
    return _TRIM_SLOT.sub("", " ".join(words))


@lru_cache(maxsize=4096)
def read_claims(text: str) -> Claims:
    """The slots, ended values and cues of one statement (see the module docstring).

    >>> read_claims("I moved to Munich last month.").slots
    {('user', 'lives_in'): 'munich'}
    >>> read_claims("I also have a cat named Miso.").adds
    True
    """
    norm = _normal(text)
    slots: dict[Slot, str] = {}
    lead = _LEAD.match(norm)
    first = (_subject(lead.group("who")) if lead else "") or "user"
    subjects: set[str] = {first}
    # A person's relations are said of the speaker, their people, or a name: "the
    # deadline moved to Friday" is no move of house.
    names = {w.lower() for w in re.findall(r"\b[A-Z][\w'-]*", text)} - {"the", "a", "an"}

    def named(value: str) -> bool:
        """A value that names something: a name, a number, an address, a date."""
        return bool(_VALUE_LIKE.search(value)) or any(w in names for w in value.split())

    for relation, pattern in _FIXED:
        for m in pattern.finditer(norm):
            who = m.group("who")
            if not who.startswith("user") and who not in _NOT_SUBJECTS and who not in names:
                continue
            subject = _subject(who) or first
            value = _value(m.group("value"))
            if value and (relation not in _NAMED_RELATIONS or named(value)):
                slots.setdefault((subject, relation), value)
                subjects.add(subject)
    for m in _POSSESSIVE.finditer(norm):
        name = _slot_name(m.group("slot"), m.group("of"))
        value = _value(m.group("value"))
        if not name or not value or name.split()[-1] in _NOT_SLOTS:
            continue
        # "my manager is Sarah", "the launch is on May 4": a value that names something.
        # "losing my job was hard", "that bowl is gorgeous" are opinions, not values.
        if not named(value):
            continue
        # "my appointment" and "the appointment" are the speaker's alike.
        slots.setdefault(("user", name), value)
    for pattern in (_NAMED_AS, _GOT_NEW):
        for m in pattern.finditer(norm):
            name = _slot_name(m.group("slot"), None)
            value = _value(m.group("value"))
            if name and value and named(value) and name.split()[-1] not in _NOT_SLOTS:
                slots.setdefault(("user", name), value)
                subjects.add("user")
    ended = set()
    for by_name, patterns in ((False, _ENDED), (True, _ENDED_BY_NAME)):
        for pattern in patterns:
            for m in pattern.finditer(norm):
                value = _value(m.group("value"))
                if not value or value in _NOT_ENDED:
                    continue
                if by_name and value.split()[0] not in names:
                    continue  # "Sarah left", not "... won't quit"
                ended.add(value)
    now = set()
    # "now <verb>" replaces only beside another change word ("changed schools and now goes
    # to ..."): "the user now plays tennis" may well add to the guitar.
    other_change = _CHANGE.search(re.sub(r"\bnow\b", " ", norm)) is not None
    for pattern in _NOW_VERBS if other_change else ():
        for m in pattern.finditer(norm):
            verb = m.group("verb")
            if verb not in _UNCOUNTED_VERBS and verb not in _ADVERB_WORDS:
                now.add((_subject(m.group("who")) or first, _stem(verb)))
    for subject, _ in slots:
        subjects.add(subject)
    change = _CHANGE.search(norm) is not None or bool(ended)
    adds = _ADDITIVE.search(norm) is not None and not change
    return Claims(dict(slots), frozenset(ended), frozenset(now), adds, frozenset(subjects), norm)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9@.'-]+", text)


def _mentions(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` on word boundaries (both normalised)."""
    return re.search(rf"(?<![a-z0-9]){re.escape(value)}(?![a-z0-9])", text) is not None


def _same_value(a: str, b: str) -> bool:
    return a == b or _mentions(a, b) or _mentions(b, a)


def _ended_in(new: Claims, old: Claims) -> str | None:
    for value in sorted(new.ended):
        if _mentions(old.text, value):
            return value
        # "the civic" ended, "a honda civic" held: the last word names it.
        last = value.split()[-1]
        if len(last) > 2 and len(value.split()) > 1 and _mentions(old.text, last):
            return value
    return None


def _now_in(new: Claims, old: Claims) -> bool:
    """A verb said to hold *now* that the old statement says of the same subject."""
    if not new.now:
        return False
    old_verbs = {(s, _stem(w)) for s in old.subjects | {"user"} for w in _words(old.text)}
    return any(pair in old_verbs for pair in new.now) and not _now_same(new, old)


def _now_same(new: Claims, old: Claims) -> bool:
    """The old statement is the new one without "now" (said again, not changed)."""
    return new.text.replace(" now", "") == old.text


def slot_verdict(new: Claims, old: Claims) -> SlotVerdict | None:
    """What the slots say of ``new`` against ``old``: a verdict, or None when they say nothing.

    >>> slot_verdict(read_claims("My work phone number is 555-0300."),
    ...              read_claims("My phone number is 555-0199."))
    (False, 0.65, 'the statements fill different slots')
    """
    ended = _ended_in(new, old)
    if ended is not None:
        return (True, 0.8, f"the new statement says {ended!r} no longer holds")
    shared = sorted(set(new.slots) & set(old.slots))
    for slot in shared:
        a, b = new.slots[slot], old.slots[slot]
        if not _same_value(a, b):
            subject, relation = slot
            what = relation.replace("_", " ")
            what = what if subject == "user" else f"{subject} {what}"
            return (True, 0.75, f"{what}: {a!r} now, {b!r} before")
    if _now_in(new, old):
        return (True, 0.65, "the new statement says what holds now")
    if shared:
        return (False, 0.7, "the same value said again")
    if new.adds:
        return (False, 0.7, "the new statement adds to the existing one")
    if new.slots and old.slots:
        # "my son is 8" and "my daughter is 5", "my phone" and "my work phone": two things.
        return (False, 0.65, "the statements fill different slots")
    return None


def fills_slot(sentence: str) -> bool:
    """Whether a sentence fills a relation slot or ends a value ("I work as a nurse.").

    >>> fills_slot("I'm single."), fills_slot("Sounds lovely.")
    (True, False)
    """
    claims = read_claims(sentence)
    return bool(claims.slots or claims.ended)


def related(new: Claims, old: Claims) -> bool:
    """Whether ``old`` is worth checking against ``new`` (shares a slot, or is ended)."""
    if set(new.slots) & set(old.slots):
        return True
    return _ended_in(new, old) is not None or _now_in(new, old)
