"""Identifiers, contacts, amounts, addresses and measurements: values tier 1 keeps whole.

The first pass of the rule-based facts (:func:`~langmem_tiers.tiers.extraction.extract_facts`):
before dates and counted numbers are looked for, the values whose every character matters
are taken whole, as written, under a key that names what they are:

- e-mail addresses, web addresses and phone numbers (``email``, ``url``, ``phone``);
- street addresses (``12 Secret Lane``, ``45 Rue de Rivoli``, ``Hauptstraße 5``);
- amounts with a currency sign, code or word (``$12,500.75``, ``EUR 1,450``, ``89.90 EUR``);
- measurements with their unit (``23.5 kg`` -> ``weight``, ``21.1 km`` -> ``distance``);
- codes: tokens mixing letters and digits, or digit groups a date does not explain
  (``INV-2023-0042``, ``078-05-1120``, ``B12``, ``3.12.1``, ``#4521``), and numbers a cue
  word names (``gate B12``, ``room 304``, ``my PIN for the gate is 4471``).

A code's key comes from the words before it: the head of the noun phrase before
``is``/``was`` (``my social security number is ...`` -> ``social_security_number``) or a
cue word right before it (``invoice INV-2023-0042`` -> ``invoice``); without one it is
``version`` for a version number and the neutral ``code`` otherwise. Nothing here invents a
value: every value is a slice of the text.

Example:
    >>> for found in find_identifiers("My flight is LH 454 from gate B12."):
    ...     print(found.key, found.value)
    flight LH 454
    gate B12
"""

from __future__ import annotations

import re
from typing import NamedTuple

from langmem_tiers.tiers.lexicon import CHAT_WORDS, DATE_PATTERNS, MONEY_CUES, STOP_WORDS

__all__ = ["Identifier", "code_key", "find_identifiers"]


class Identifier(NamedTuple):
    """A value found whole: where it is in the text, its key and its text."""

    start: int
    end: int
    key: str
    value: str


def _words(words: str) -> frozenset[str]:
    return frozenset(words.split())


# A cue word right before a number names it ("room 304" -> room=304, "version 4.2").
NUMBER_CUES = _words("""
    gate seat room platform terminal flight train bus version apartment apt unit suite
    extension ext pier dock locker berth cabin
    """)
# A cue word right before a code names it ("invoice INV-2023-0042" -> invoice=...).
CODE_CUES = NUMBER_CUES | _words("""
    invoice order ticket booking account card policy case tracking serial model release
    build passport sku booth carriage coach ward
    """)
# A noun phrase ending with one of these names a code after ``is`` ("my zip code is ...").
CODE_HEADS = (
    _words("""
    number no id code reference ref password passcode pin plate address iban postcode
    ssn sku serial
    """)
    | CODE_CUES
)
_COPULAS = _words("is was are were =")
_PREPOSITIONS = _words("for of on at in with from to by")
_TRANSPORT = _words("flight train bus ferry coach")
_TRANSPORT_VERBS = _words("booked boarding board boarded taking take took catching catch on")
PHONE_CUES = _words("""
    phone mobile cell cellphone telephone tel fax number call calling reach text texting
    whatsapp dial ring contact
    """)
CURRENCY_CODES = (
    "USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|INR|CNY|RMB|SEK|NOK|DKK|PLN|CZK|HUF|BRL|MXN|ZAR|SGD|HKD"
)
CURRENCY_WORDS = (
    "dollars?|euros?|pounds?(?:\\s+sterling)?|yen|francs?|rupees?|yuan|kronor|kroner|zloty"
    "|pesos?|reais|rand|bucks"
)
SCALES = r"(?:k|K|m|M|bn|mn|million|billion|thousand|trillion)"
# Units and the key a measurement in them gets.
UNIT_KEYS: dict[str, str] = {
    **dict.fromkeys(["kg", "g", "mg", "lb", "lbs", "oz", "kilos", "kilograms", "grams"], "weight"),
    **dict.fromkeys(["pounds"], "weight"),
    **dict.fromkeys(["km", "mi", "miles", "kilometers", "kilometres"], "distance"),
    **dict.fromkeys(
        ["m", "cm", "mm", "ft", "in", "meters", "metres", "feet", "inches", "yards"], "length"
    ),
    **dict.fromkeys(["l", "ml", "liters", "litres", "gallons"], "volume"),
    **dict.fromkeys(["kb", "mb", "gb", "tb", "pb"], "storage"),
    **dict.fromkeys(["°c", "°f", "℃", "℉", "degrees"], "temperature"),
    **dict.fromkeys(["km/h", "kph", "mph", "m/s"], "speed"),
    **dict.fromkeys(["kw", "kwh", "w", "mw", "hp"], "power"),
    **dict.fromkeys(["ghz", "mhz", "hz"], "frequency"),
}
# Units that are also ordinary words ("in", "m", "l", "pounds") count only right after a
# digit or in a "<number> <unit> of"/"<number> <unit> wide" sense: see _MEASUREMENT.
_AMBIGUOUS_UNITS = _words("in m l w g pounds degrees")

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,5}\)[\s.-]?)?\d{2,8}(?:[\s.-]\d{2,8}){0,4}(?![\w-])"
)
_NANP = re.compile(r"\(?\d{3}\)?[\s.-]\d{3}[.-]\d{4}")
_STREET_TYPES = (
    r"Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl"
    r"|Square|Sq|Terrace|Crescent|Close|Highway|Hwy|Parkway|Pkwy|Row|Walk|Alley|Circle|Cir"
)
_ADDRESS = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?\s+(?:[A-Z][\w'.-]*\s+){{1,4}}(?:{_STREET_TYPES})\b\.?"
    r"|\b\d{1,5}[A-Za-z]?,?\s+(?:Rue|Via|Calle|Avenida|Rua|Piazza|Plaza|Boulevard|Avenue|Viale"
    r"|Carrer|Largo)(?:\s+(?:de|la|du|del|des|di|da|dos|das|della|d'))*\s+[A-Z][\w'-]*"
    r"|\b[A-Z][\w-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|laan|straat|gade|vej)"
    r"\s+\d{1,4}[a-z]?\b"
)
_AMOUNT = re.compile(
    rf"(?:[$€£¥₹₩]|\b(?:{CURRENCY_CODES})\s?)\d[\d,]*(?:\.\d+)?(?:\s?{SCALES}\b)?"
    rf"|(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:\s?{SCALES})?\s?(?:\b(?:{CURRENCY_CODES})\b"
    rf"|\b(?:{CURRENCY_WORDS})\b|[€£¥₹])"
)
_UNITS = "|".join(sorted((re.escape(u) for u in UNIT_KEYS), key=len, reverse=True))
_MEASUREMENT = re.compile(rf"(?<![\w.,])\d+(?:[.,]\d+)?\s?(?i:{_UNITS})(?![\w°/])")
_SPACED_CODE = re.compile(r"\b[A-Z]{2,3}\s\d{1,4}[A-Z]?\b")
_TOKEN = re.compile(r"[^\s]+")
_DIGIT = re.compile(r"\d")
_EDGE_OPEN = "([{\"'"
_EDGE_CLOSE = ".,;:!?)]}\"'"
# Tokens that are numbers, ordinals, ranges, decades or number-and-unit: not codes.
_PLAIN_NUMBER = re.compile(
    r"[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|[$€£]?\d+(?:\.\d+)?(?:[-–/]\d+(?:\.\d+)?)?%?"
    r"|\d+(?:st|nd|rd|th|s|am|pm|a\.m\.|p\.m\.|x|h|k|K)"
)
_VERSION = re.compile(r"v\d+(?:\.\d+)*[a-z]?|\d+\.\d+\.\d+(?:[.-]\w+)?")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_CODE_RUN = re.compile(r"[A-Z0-9][A-Z0-9#/-]*")
_NUMBER_TOKEN = re.compile(r"\d+(?:\.\d+)?")
_GROUPS = re.compile(r"(?:\s[A-Z0-9][A-Z0-9-]*(?!\w))+")
_GROUPED_KEYS = ("number", "plate", "iban", "postcode", "reference", "code", "id")


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def _snake(words: list[str]) -> str:
    return re.sub(r"[^a-z0-9]+", "_", "_".join(words).lower()).strip("_")[:32]


def _sentence_words(text: str, position: int) -> list[str]:
    """The words (and ``=``/``:``) before ``position`` in its sentence, as written."""
    window = re.split(r"[.!?;\n]\s|,\s", text[max(0, position - 80) : position])[-1]
    return re.findall(r"[\w'/-]+|[=:#]", window)


def _modifiers(words: list[str]) -> list[str]:
    """Up to two words naming the head after them ("social security" of "... number")."""
    kept: list[str] = []
    for word in reversed(words[-2:]):
        lower = word.lower()
        plain = word.isalpha() and (word.islower() or word.isupper())
        if not plain or lower in STOP_WORDS or lower in CHAT_WORDS:
            break
        kept.insert(0, lower)
    return kept


def code_key(text: str, start: int) -> str:
    """The key the words before ``text[start:]`` give a code, or ``""`` when they give none.

    >>> code_key("My social security number is 078-05-1120", 29)
    'social_security_number'
    >>> code_key("The PIN for the gate is 4471", 24), code_key("Order #4521", 6)
    ('pin', 'order')
    """
    words = _sentence_words(text, start)
    while words and words[-1] in {"#", ":"}:
        words.pop()
    if words and words[-1].lower() in _COPULAS:
        phrase = words[:-1]
        for i, word in enumerate(phrase):
            if word.lower() in _PREPOSITIONS and i > 0:
                phrase = phrase[:i]  # "the PIN for the gate": the PIN
                break
        if phrase and phrase[-1].lower() in CODE_HEADS:
            return _snake([*_modifiers(phrase[:-1]), phrase[-1]])
        return ""
    if words and words[-1].lower() in {"number", "no", "id", "code"}:
        head = words.pop().lower()
        mods = _modifiers(words)
        return _snake([*mods, head]) if mods else ""
    if words and words[-1].lower() in CODE_CUES:
        return words[-1].lower()
    return ""


def _is_date(token: str) -> bool:
    return any(date.pattern.fullmatch(token) for date in DATE_PATTERNS)


def _is_code(token: str) -> bool:
    """Whether a token is a code: letters and digits mixed, or digit groups no date explains."""
    if not any(c.isdigit() for c in token) or _PLAIN_NUMBER.fullmatch(token) or _is_date(token):
        return False
    if token.startswith("#"):
        return token[1:].isalnum()
    if _VERSION.fullmatch(token):
        return True
    letters = any(c.isalpha() for c in token)
    groups = len(re.findall(r"\d+", token))
    return letters or groups >= 3 or (groups == 2 and not re.fullmatch(r"\d+[.,]\d+", token))


def _code_kind(token: str) -> str:
    """The neutral key of a code no words name: an IP address, a version or a code."""
    if _IPV4.fullmatch(token):
        return "ip_address"
    return "version" if _VERSION.fullmatch(token) else "code"


class _Finder:
    def __init__(self, text: str) -> None:
        self.text = text
        self.found: list[Identifier] = []
        self.taken: list[tuple[int, int]] = []

    def add(self, start: int, end: int, key: str) -> None:
        value = self.text[start:end].strip()
        if value and not _overlaps((start, end), self.taken):
            self.taken.append((start, end))
            self.found.append(Identifier(start, end, key, value))

    def words_before(self, position: int, count: int) -> list[str]:
        return [w.lower() for w in _sentence_words(self.text, position)][-count:]


def _contacts(f: _Finder) -> None:
    for m in _EMAIL.finditer(f.text):
        f.add(m.start(), m.end(), "email")
    for m in _URL.finditer(f.text):
        f.add(m.start(), m.end() - len(m[0]) + len(m[0].rstrip(_EDGE_CLOSE)), "url")
    for m in _PHONE.finditer(f.text):
        digits = sum(c.isdigit() for c in m[0])
        if not 7 <= digits <= 15 or _is_date(m[0]):
            continue
        cued = bool(PHONE_CUES & set(f.words_before(m.start(), 5)))
        if m[0].startswith("+") or "(" in m[0] or _NANP.fullmatch(m[0]) or (cued and " " in m[0]):
            key = "fax" if "fax" in f.words_before(m.start(), 5) else "phone"
            f.add(m.start(), m.end(), key)


def _money_key(f: _Finder, start: int) -> str:
    for word in reversed(f.words_before(start, 5)):
        if word in MONEY_CUES or word in {"quote", "bill", "quoted", "total", "deposit"}:
            return re.sub(r"[^a-z0-9]+", "_", word)
    return "amount"


def _amounts(f: _Finder) -> None:
    for pattern in (_ADDRESS,):
        for m in pattern.finditer(f.text):
            f.add(m.start(), m.end() - (1 if m[0].endswith(".") else 0), "address")
    for m in _AMOUNT.finditer(f.text):
        end = m.start() + len(m[0].rstrip(",."))
        f.add(m.start(), end, _money_key(f, m.start()))
    for m in _MEASUREMENT.finditer(f.text):
        unit = re.sub(r"^[\d.,\s]+", "", m[0]).lower()
        if unit in _AMBIGUOUS_UNITS and not m[0][-len(unit) - 1].isdigit():
            continue  # "3 in the morning", "2 pounds" is weight only when written "2lb"
        f.add(m.start(), m.end(), UNIT_KEYS[unit])


def _codes(f: _Finder) -> None:
    text = f.text
    for m in _SPACED_CODE.finditer(text):
        before = f.words_before(m.start(), 3)
        cue = next((w for w in reversed(before) if w in _TRANSPORT), "")
        if cue or (before and before[-1] in _TRANSPORT_VERBS):
            f.add(m.start(), m.end(), cue or "flight")
    for m in _TOKEN.finditer(text):
        token = m[0].lstrip(_EDGE_OPEN)
        start = m.start() + len(m[0]) - len(token)
        token = token.rstrip(_EDGE_CLOSE)
        end = start + len(token)
        digits = any(c.isdigit() for c in token)
        grouped = _CODE_RUN.fullmatch(token) is not None and len(token) > 1
        if not (digits or grouped) or _overlaps((start, end), f.taken):
            continue
        code = digits and _is_code(token)
        key = code_key(text, start) if code or grouped or _NUMBER_TOKEN.fullmatch(token) else ""
        if key and key in NUMBER_CUES and not code:
            if _NUMBER_TOKEN.fullmatch(token):
                f.add(start, end, key)  # "room 304", "version 4.2"
        elif key and key not in CODE_CUES and (code or grouped or token.isdigit()):
            # A phrase before "is" names it ("my zip code is 94103", "the PIN ... is 4471").
            if key.endswith(_GROUPED_KEYS):
                # "SW1A 1AA", "B-MW 2041", "DE89 3704 0044": a code written in groups.
                rest = _GROUPS.match(text, end)
                if rest is not None:
                    end = rest.end()
            f.add(start, end, key)
        elif code:
            f.add(start, end, key or _code_kind(token))


def find_identifiers(text: str) -> list[Identifier]:
    """The values of ``text`` to keep whole (see the module docstring), in text order.

    >>> [(i.key, i.value) for i in find_identifiers("Call +1 (415) 555-0132 or jo@ex.com.")]
    [('phone', '+1 (415) 555-0132'), ('email', 'jo@ex.com')]
    """
    if _DIGIT.search(text) is None and "@" not in text and "www." not in text and "://" not in text:
        return []  # every value here holds a digit, or is an e-mail or web address
    f = _Finder(text)
    _contacts(f)
    _amounts(f)
    _codes(f)
    return sorted(f.found)
