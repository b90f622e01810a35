"""Named things a memory mentions, found by rules: people, organisations, places, others.

The engine records, for every memory it writes, the entities its text names (see
:mod:`~langmem_tiers.long_term.engine.entities`). The rules:

- runs of capitalised words that are names (the same runs tier 1 takes: "Hey Mel!" gives
  ``Mel``, a capitalised word opening a sentence is a name only when it looks like one);
- an organisation ends with a company word (``Acme Corp``, ``Globex Inc``, ``Oakwood
  Academy``, ``King's College``); a place follows ``in``, ``at``, ``from``, ``near`` or a
  move ("moved to Munich"); a person follows ``with``, ``named``, a relation ("my sister
  Anna"), or says or is told something; anything else is a ``thing``;
- ``I``, ``me`` and ``my`` are the speaker, when the memory names one (``speaker``).

Aliases of the simple kind (a name that starts another, "Mel" and "Melanie") are joined
where the entities are stored, since they meet in different memories.

Example:
    >>> [(e.name, e.kind) for e in find_entities("I moved to Munich with Anna from Acme Corp.")]
    [('Munich', 'place'), ('Anna', 'person'), ('Acme Corp', 'organization')]
"""

from __future__ import annotations

import re
from typing import NamedTuple

from langmem_tiers.tiers.extraction import named_runs, normalize_text

__all__ = ["Mention", "find_entities", "same_entity"]


class Mention(NamedTuple):
    """An entity a text names, and what kind of thing it is."""

    name: str
    kind: str
    """``person``, ``organization``, ``place`` or ``thing``."""


def _words(words: str) -> frozenset[str]:
    return frozenset(words.split())


ORG_WORDS = _words("""
    inc inc. corp corp. corporation co co. company ltd ltd. llc plc gmbh ag sa bv group labs
    lab university college school academy institute bank hospital clinic foundation agency
    studio studios partners associates ventures capital holdings systems technologies airlines
    airways club society association council ministry department
    """)
PLACE_CUES = _words("in at from near to visited visiting around across toward towards")
MOTION = _words("moved move moving relocated flew fly went go going travel traveled travelled")
PERSON_CUES = _words("with named called met meet and by")
RELATION_WORDS = _words("""
    sister brother mom mum mother dad father son daughter wife husband partner boyfriend
    girlfriend fiance fiancee boss manager colleague coworker cousin aunt uncle friend
    grandma grandpa niece nephew neighbor neighbour roommate teacher mentor coach doctor
    dentist therapist lead landlord
    """)
PERSON_FOLLOWERS = _words("said says told asked thinks thought wants left joined retired")
_FIRST_PERSON = re.compile(r"(?i)(?<![\w'])(?:i|me|my|mine|myself|i'm|i've|i'll|i'd)(?![\w'])")


def _kind(name: str, before: tuple[str, ...], after: str) -> str:
    words = name.lower().split()
    if words[-1] in ORG_WORDS or words[-1].rstrip(".") in ORG_WORDS:
        return "organization"
    last = before[-1] if before else ""
    if last in RELATION_WORDS or last in {"named", "called"}:
        return "person"
    if last in PLACE_CUES and not (last == "to" and (len(before) < 2 or before[-2] not in MOTION)):
        return "place" if last != "at" or len(words) == 1 else "organization"
    follower = after.split()[:1]
    if last in PERSON_CUES or (follower and follower[0].lower() in PERSON_FOLLOWERS):
        return "person"
    return "thing"


def find_entities(text: str, speaker: str | None = None) -> list[Mention]:
    """The entities ``text`` names, each once, in order of first mention.

    ``speaker``: who wrote it; a first-person text then mentions them too.

    >>> find_entities("I quit Acme and my manager Sarah left.", speaker="Jo")
    [Mention(name='Jo', kind='person'), Mention(name='Acme', kind='thing'), \
Mention(name='Sarah', kind='person')]
    """
    found: dict[str, Mention] = {}
    if speaker and speaker.strip() and _FIRST_PERSON.search(text):
        found[speaker.strip().casefold()] = Mention(speaker.strip(), "person")
    for name, before, after in named_runs(normalize_text(text)):
        key = name.casefold()
        if key in {"i", "the user", "user"} or len(name) < 2:
            continue
        kind = _kind(name, before, after)
        if key not in found or (found[key].kind == "thing" and kind != "thing"):
            found[key] = Mention(name, kind)
    return list(found.values())


def same_entity(a: str, b: str) -> bool:
    """Whether two names are one entity: equal, or one a short form of the other.

    >>> same_entity("Mel", "Melanie"), same_entity("Melanie", "mel"), same_entity("Al", "Alan")
    (True, True, False)
    >>> same_entity("Anna", "Annabel Lee"), same_entity("Acme", "Acme Corp")
    (False, True)
    """
    x, y = a.casefold(), b.casefold()
    if x == y:
        return True
    short, long = sorted((x, y), key=len)
    if len(short) < 3:
        return False
    if " " in long and " " not in short:
        return long.split()[0] == short  # "Acme" of "Acme Corp"
    return " " not in long and long.startswith(short) and len(long) - len(short) <= 4
