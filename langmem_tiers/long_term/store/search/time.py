"""Time in retrieval: the words people use for a memory's time, and the times a query names.

Two halves, both offline and rule-based:

* **Index side.** :func:`time_terms` turns a memory's event time into extra BM25 terms (year,
  month, month name, day, weekday). They start with ``@``, which the text analyser never
  produces, so they live in their own field of the term index: "May 2023" in a query finds
  the memories of May 2023 whatever their text says.
* **Query side.** :func:`parse_time_query` finds the time expressions of a query, absolute
  ("in March", "May 2023", "on 8 May, 2023", "in 2022") or relative to a reference time
  ("yesterday", "two days ago", "last week", "on Monday", "3 months ago"), and answers the
  time terms to search with, the window the query means (to boost or filter candidates
  with :func:`window_fit`), and whether the query asks about the present ("now", "current",
  "still", "these days"), which favours the newest evidence, and whether it asks when
  ("When did...", "How long...", "Which year..."), which favours the memories whose text
  says when (:func:`says_when`, :func:`when_boosts`).

Example::

    >>> from datetime import datetime, timezone
    >>> time_terms(datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    ['@2023', '@2023-05', '@may', '@2023-05-08', '@monday']
    >>> now = datetime(2024, 3, 14, 12, 0, tzinfo=timezone.utc)  # a Thursday
    >>> q = parse_time_query("What did I cook two days ago?", now)
    >>> q.window.start.date(), q.window.end.date(), sorted(q.terms)
    (datetime.date(2024, 3, 12), datetime.date(2024, 3, 13), ['@2024-03-12'])
    >>> parse_time_query("Where does Alice live now?", now).present
    True
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from contextlib import suppress
from datetime import date, datetime, time, timedelta, timezone
from typing import NamedTuple, TypeVar

__all__ = [
    "PRESENT_BOOST",
    "TIME_BOOST",
    "TIME_TERM_PREFIX",
    "WHEN_BOOST",
    "TimeQuery",
    "Window",
    "parse_time_query",
    "says_when",
    "time_boosts",
    "time_terms",
    "when_boosts",
    "window_fit",
]

K = TypeVar("K", bound=Hashable)

#: What the calendar raises for a time it cannot hold ("6000 years ago" said in 2023, "in
#: 10**20 days", a number too long to read): such an expression is not indexed as a time,
#: and the rest of the text still is. Understanding time never fails a write or a search.
_OUT_OF_RANGE = (ValueError, OverflowError)

#: The first character of every time term; the text analyser never emits it.
TIME_TERM_PREFIX = "@"

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_ALIASES = {
    **{name: i + 1 for i, name in enumerate(MONTHS)},
    **{name[:3]: i + 1 for i, name in enumerate(MONTHS) if name != "may"},
    "sept": 9,
}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
#: Windows up to this long are searched by their day terms, up to :data:`_MONTH_TERMS_DAYS`
#: by their month terms, longer ones by their year terms.
_DAY_TERMS_DAYS = 14
_MONTH_TERMS_DAYS = 100

_MONTH_RE = "|".join(sorted(_MONTH_ALIASES, key=len, reverse=True))
_NUM_RE = "|".join(sorted((re.escape(k) for k in _NUMBER_WORDS), key=len, reverse=True))
_DAY_RE = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_RE = r"(?P<year>(?:19|20)\d\d)"

_ISO_DATE = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")
_DAY_MONTH_YEAR = re.compile(
    rf"\b{_DAY_RE}\s+(?:of\s+)?(?P<month>{_MONTH_RE})\.?,?\s+{_YEAR_RE}\b", re.I
)
_MONTH_DAY_YEAR = re.compile(rf"\b(?P<month>{_MONTH_RE})\.?\s+{_DAY_RE},?\s+{_YEAR_RE}\b", re.I)
_MONTH_YEAR = re.compile(rf"\b(?P<month>{_MONTH_RE})\.?,?\s+(?:of\s+)?{_YEAR_RE}\b", re.I)
_DAY_MONTH = re.compile(rf"\b{_DAY_RE}\s+(?:of\s+)?(?P<month>{_MONTH_RE})\b", re.I)
_MONTH_DAY = re.compile(rf"\b(?P<month>{_MONTH_RE})\.?\s+{_DAY_RE}\b(?!\s*(?::|am|pm))", re.I)
# "may" is a month only where a month is expected: after a preposition or before a date.
_MONTH_ALONE = re.compile(
    rf"(?:\b(?P<lead>in|on|during|since|of|from|until|till|by|last|this|next|early|late|mid)"
    rf"[\s-]+)?\b(?P<month>{_MONTH_RE})\b",
    re.I,
)
_YEAR_ALONE = re.compile(rf"\b{_YEAR_RE}\b")
_WORD = re.compile(r"[^\W\d_]+")
_UNIT_WORDS = frozenset(
    f"{unit}{plural}"
    for unit in ("day", "week", "weekend", "month", "year")
    for plural in ("", "s")
)
_DIGIT = re.compile(r"\d")
_AGO = re.compile(rf"\b(?P<n>\d+|{_NUM_RE})\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I)
_PAST_N = re.compile(
    rf"\b(?:in\s+the\s+|over\s+the\s+|during\s+the\s+|within\s+the\s+)?(?:last|past)\s+"
    rf"(?P<n>\d+|{_NUM_RE})\s+(?P<unit>day|week|month|year)s?\b",
    re.I,
)
_RELATIVE = re.compile(
    r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week|weekend|month|year)\b", re.I
)
_WEEKDAY = re.compile(
    rf"\b(?:(?P<lead>last|on|this|past|previous)\s+)?(?P<weekday>{'|'.join(WEEKDAYS)})s?\b",
    re.I,
)
_DAY_WORDS = re.compile(
    r"\b(?P<word>the\s+day\s+before\s+yesterday|yesterday|today|tonight)\b", re.I
)
_PRESENT = re.compile(
    r"\b(?:now|right\s+now|currently|current|still|these\s+days|nowadays|at\s+the\s+moment"
    r"|at\s+present|presently|any\s*more|latest|most\s+recent(?:ly)?|recently|lately"
    r"|up\s+to\s+date)\b",
    re.I,
)

_WEEKDAY_RE = "|".join(WEEKDAYS)
_WHEN_UNIT_RE = (
    r"(?:day|night|week|weekend|month|year|morning|afternoon|evening|summer|winter|spring"
    r"|autumn|fall)s?"
)
# A question that asks for a time: its answer is a time, so its evidence says one.
_ASKS_WHEN = re.compile(
    r"^\W*(?:when|since\s+when|how\s+long|how\s+many\s+(?:days|weeks|months|years)"
    r"|(?:in\s+|on\s+|at\s+)?(?:what|which)\s+(?:year|month|day|date|week|weekend|time))\b",
    re.I,
)
# Words that place what a text tells in time, alone ("yesterday", "Monday", "June") or in a
# phrase with a unit ("last week", "two years back", "for 3 years"). "May" only after a word
# that makes it the month ("you may" is not); a year not followed by more digits or a dash
# (an ISO date's, as in a stored timestamp).
_WHEN_WORDS = frozenset(
    {
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "recently",
        "lately",
        "ago",
        *WEEKDAYS,
        *(f"{day}s" for day in WEEKDAYS),
        *(month for month in MONTHS if month != "may"),
    }
)
_WHEN_UNITS = frozenset(
    form
    for unit in re.findall(r"[a-z]+", _WHEN_UNIT_RE.removesuffix("s?"))
    for form in (unit, f"{unit}s")
)
_WHEN_PHRASE = re.compile(
    rf"\b(?:(?:last|next|this|past|previous|coming|other)\s+(?:{_WHEN_UNIT_RE})"
    rf"|(?:\d+|{_NUM_RE})\s+{_WHEN_UNIT_RE}\s+(?:back|from\s+now|later|earlier|now)"
    rf"|for\s+(?:\d+|{_NUM_RE})\s+{_WHEN_UNIT_RE}"
    r"|(?:in|of|last|next|this|early|late|mid)\s+may)\b"
)
_YEAR_SAID = re.compile(r"\b(?:19|20)\d\d(?![-\d])")


class Window(NamedTuple):
    """A half-open time interval ``[start, end)`` a query refers to."""

    start: datetime
    end: datetime

    def contains(self, at: datetime) -> bool:
        """Whether ``at`` falls inside the window."""
        return self.start <= at < self.end


class TimeQuery(NamedTuple):
    """What a query says about time.

    ``terms`` are time terms (see :func:`time_terms`) to add to the lexical query with their
    weights; ``window`` the interval the query's most specific expression means (None when it
    names none); ``present`` whether it asks about the present state of things;
    ``asks_when`` whether it asks for a time ("When did...", "How long...", "Which year...").
    """

    terms: dict[str, float]
    window: Window | None
    present: bool
    asks_when: bool = False


def time_terms(at: datetime) -> list[str]:
    """The time terms of an event time: year, month, month name, day, weekday.

    The date is the one of ``at``'s own offset (a time stored with ``+02:00`` is indexed
    under its local day).

    Example::

        >>> time_terms(datetime(2022, 12, 31, 23, 0))
        ['@2022', '@2022-12', '@december', '@2022-12-31', '@saturday']
    """
    p = TIME_TERM_PREFIX
    d = at.date()
    return [
        f"{p}{d.year:04d}",
        f"{p}{d.year:04d}-{d.month:02d}",
        f"{p}{MONTHS[d.month - 1]}",
        f"{p}{d.isoformat()}",
        f"{p}{WEEKDAYS[d.weekday()]}",
    ]


def mentioned_time_terms(text: str, at: datetime, known: Sequence[str] = ()) -> list[str]:
    """The time terms of the times ``text``, said at ``at``, names ("yesterday", "two weeks
    ago", "last Friday", "on 8 May"), read as a query's are with ``at`` for its now; those
    in ``known`` (the event time's own) left out.

    "Yesterday I went bowling", said on 17 March 2022, is then found by "What did James
    do on March 16, 2022?".

    Example::

        >>> said = datetime(2022, 3, 17, 19, 0, tzinfo=timezone.utc)
        >>> mentioned_time_terms("By the way, yesterday I went bowling!", said, time_terms(said))
        ['@2022-03-16']
    """
    skip = set(known)
    found, _ = _time_expressions(text, at)
    return [term for term, weight in found.items() if weight >= 1.0 and term not in skip]


def _day_start(d: date, tz: timezone | None) -> datetime:
    return datetime.combine(d, time(0), tzinfo=tz or timezone.utc)


def _month_window(year: int, month: int, tz: timezone | None) -> Window:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return Window(_day_start(date(year, month, 1), tz), _day_start(nxt, tz))


def _year_window(year: int, tz: timezone | None) -> Window:
    return Window(_day_start(date(year, 1, 1), tz), _day_start(date(year + 1, 1, 1), tz))


def _days_window(first: date, days: int, tz: timezone | None) -> Window:
    return Window(_day_start(first, tz), _day_start(first + timedelta(days=days), tz))


def _window_terms(window: Window) -> list[str]:
    """Terms that together cover ``window``: its days, months or years."""
    p = TIME_TERM_PREFIX
    first = window.start.date()
    last = (window.end - timedelta(microseconds=1)).date()
    days = (last - first).days + 1
    if days <= _DAY_TERMS_DAYS:
        return [f"{p}{(first + timedelta(days=i)).isoformat()}" for i in range(days)]
    if days <= _MONTH_TERMS_DAYS:
        out, y, m = [], first.year, first.month
        while (y, m) <= (last.year, last.month):
            out.append(f"{p}{y:04d}-{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        return out
    return [f"{p}{y:04d}" for y in range(first.year, min(last.year, first.year + 50) + 1)]


def _number(raw: str) -> int:
    raw = raw.lower()
    return int(raw) if raw.isdigit() else _NUMBER_WORDS[re.sub(r"\s+", " ", raw)]


def _shift_months(d: date, months: int) -> tuple[int, int]:
    index = d.year * 12 + d.month - 1 + months
    return index // 12, index % 12 + 1


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _latest(month: int, day: int | None, today: date) -> date | None:
    """The latest ``month`` (and ``day``) on or before ``today``."""
    for year in (today.year, today.year - 1):
        found = _valid_date(year, month, day or 1)
        if found is not None and found <= today:
            return found
    return None


def parse_time_query(query: str, now: datetime) -> TimeQuery:
    """The time terms, window and present-tense intent of ``query``, relative to ``now``.

    Absolute dates ("8 May 2023", "May 8, 2023", "2023-05-08"), months with or without a year
    ("May 2023", "in June"), years ("in 2022"), weekdays ("on Monday", "last Friday") and
    relative expressions ("today", "yesterday", "N days/weeks/months/years ago", "last
    week/month/year/weekend", "this week", "the past N days") are recognised, in English.
    When several are present, the window is the first most specific one (a day before a
    month before a year); every expression contributes its terms.

    A month without a year ("in March") matches every March by its term and means the latest
    March up to ``now`` for the window; a weekday the latest such day (``last Monday``:
    before today).

    Example::

        >>> from datetime import datetime, timezone
        >>> now = datetime(2024, 3, 14, 9, 30, tzinfo=timezone.utc)  # a Thursday
        >>> q = parse_time_query("What did we decide last week?", now)
        >>> q.window.start.date(), q.window.end.date(), len(q.terms)
        (datetime.date(2024, 3, 4), datetime.date(2024, 3, 11), 7)
        >>> q = parse_time_query("When did Melanie go camping in June?", now)
        >>> sorted(q.terms), q.window.start.date()
        (['@june'], datetime.date(2023, 6, 1))
        >>> sorted(parse_time_query("What happened in May 2023?", now).terms)
        ['@2023-05']
        >>> q = parse_time_query("Who did I meet on Monday?", now)
        >>> q.window.start.date(), sorted(q.terms)
        (datetime.date(2024, 3, 11), ['@2024-03-11', '@monday'])
        >>> parse_time_query("You may like this", now)
        TimeQuery(terms={}, window=None, present=False, asks_when=False)
        >>> parse_time_query("When did Jo move to Lisbon?", now).asks_when
        True
    """
    terms, window = _time_expressions(query, now)
    return TimeQuery(
        terms, window, bool(_PRESENT.search(query)), _ASKS_WHEN.match(query) is not None
    )


def says_when(text: str) -> bool:
    """Whether ``text`` places what it tells in time: a relative day, week or month
    ("yesterday", "last week", "two years ago", "for 3 years", "next month"), a weekday, a
    month or a year.

    Example::

        >>> says_when("Last week I went on a trip to Canada"), says_when("Canada is huge")
        (True, False)
        >>> says_when("You may like it"), says_when("We met in May"), says_when("Since 2021")
        (False, True, True)
    """
    lowered = text.lower()
    words = set(_WORD.findall(lowered))
    if not words.isdisjoint(_WHEN_WORDS):
        return True
    if _DIGIT.search(text) is not None and _YEAR_SAID.search(text) is not None:
        return True
    # The phrases' pattern is tried only where a word it needs occurs.
    return ("may" in words or not words.isdisjoint(_WHEN_UNITS)) and (
        _WHEN_PHRASE.search(lowered) is not None
    )


def _time_expressions(query: str, now: datetime) -> tuple[dict[str, float], Window | None]:
    """The terms and the window of :func:`parse_time_query`."""
    tz = now.tzinfo if isinstance(now.tzinfo, timezone) else timezone.utc
    today = now.astimezone(tz).date() if now.tzinfo else now.date()
    f = _Found(query, tz, today)
    # Each pattern is tried only where the words it needs occur: a scan of a pattern of
    # month names costs more than splitting the text into words once. The order matters:
    # what one finds, those after it do not read.
    lowered = query.lower()
    words = set(_WORD.findall(lowered))
    digits = _DIGIT.search(query) is not None
    months = not words.isdisjoint(_MONTH_ALIASES)
    units = not words.isdisjoint(_UNIT_WORDS)
    leads = units and not words.isdisjoint(("last", "this", "past", "previous"))
    if digits:
        _find_dates(f, months)
    if months:
        _find_months_alone(f)
    if digits:
        _find_years_alone(f)
    if any(word in lowered for word in ("yesterday", "today", "tonight")):
        _find_day_words(f)
    if units and "ago" in words:
        _find_ago(f)
    if leads:
        _find_past_n(f)
        _find_relative(f)
    if any(day in lowered for day in WEEKDAYS):
        _find_weekdays(f)
    found = f.found
    window = min(found, key=lambda x: (x[0], x[1]))[2] if found else None
    return f.terms, window


class _Found:
    """The time expressions of a query found so far (their terms, and each window with its
    granularity, 0 day .. 3 year, and position), and the query's text with each blanked."""

    __slots__ = ("found", "terms", "text", "today", "tz")

    def __init__(self, query: str, tz: timezone, today: date) -> None:
        self.text = query
        self.tz = tz
        self.today = today
        self.terms: dict[str, float] = {}
        self.found: list[tuple[int, int, Window]] = []

    def add(
        self, window: Window, granularity: int, position: int, extra: tuple[str, ...] = ()
    ) -> None:
        """Record ``window``, found at ``position``, with its terms and the ``extra`` ones."""
        for term in _window_terms(window):
            self.terms[term] = max(self.terms.get(term, 0.0), 1.0)
        for term in extra:
            self.terms.setdefault(term, 0.5)
        self.found.append((granularity, position, window))

    def consume(self, match: re.Match[str]) -> None:
        """Blank the text of ``match``: no later pattern reads it again."""
        a, b = match.span()
        self.text = self.text[:a] + " " * (b - a) + self.text[b:]


def _find_dates(f: _Found, months: bool) -> None:
    """Days with their month (and year, or the latest such day), then months of a year."""
    tz, today = f.tz, f.today
    for pattern in (_ISO_DATE, _DAY_MONTH_YEAR, _MONTH_DAY_YEAR) if months else (_ISO_DATE,):
        for m in list(pattern.finditer(f.text)):
            with suppress(*_OUT_OF_RANGE):
                month = m.group("month")
                month_n = int(month) if month.isdigit() else _MONTH_ALIASES[month.lower()]
                d = _valid_date(int(m.group("year")), month_n, int(m.group("day")))
                if d is not None:
                    f.add(_days_window(d, 1, tz), 0, m.start())
                    f.consume(m)
    if not months:
        return
    for m in list(_MONTH_YEAR.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            f.add(
                _month_window(int(m.group("year")), _MONTH_ALIASES[m.group("month").lower()], tz),
                2,
                m.start(),
            )
            f.consume(m)
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        for m in list(pattern.finditer(f.text)):
            with suppress(*_OUT_OF_RANGE):
                month_n = _MONTH_ALIASES[m.group("month").lower()]
                d = _latest(month_n, int(m.group("day")), today)
                if d is not None and 1 <= int(m.group("day")) <= 31:
                    f.add(
                        _days_window(d, 1, tz),
                        0,
                        m.start(),
                        (f"{TIME_TERM_PREFIX}{MONTHS[month_n - 1]}",),
                    )
                    f.consume(m)


def _find_months_alone(f: _Found) -> None:
    """Month names alone: the latest such month, or the next or last one."""
    tz, today = f.tz, f.today
    for m in list(_MONTH_ALONE.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            word = m.group("month").lower()
            if (word in ("may", "march") or len(word) <= 4) and not m.group("lead"):
                continue  # "you may", "march on", "Jan": words before they are months
            month_n = _MONTH_ALIASES[word]
            lead = (m.group("lead") or "").lower()
            if lead == "next":
                year = today.year + (month_n <= today.month)
            elif lead == "last":
                year = today.year - (month_n >= today.month)
            else:
                year = today.year - (month_n > today.month)
            month_window = _month_window(year, month_n, tz)
            f.terms[f"{TIME_TERM_PREFIX}{MONTHS[month_n - 1]}"] = 1.0
            f.found.append((2, m.start(), month_window))
            f.consume(m)


def _find_years_alone(f: _Found) -> None:
    """Years alone."""
    tz = f.tz
    for m in list(_YEAR_ALONE.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            f.add(_year_window(int(m.group("year")), tz), 3, m.start())
            f.consume(m)


def _find_day_words(f: _Found) -> None:
    """Today, tonight, yesterday and the day before it."""
    tz, today = f.tz, f.today
    for m in list(_DAY_WORDS.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            word = re.sub(r"\s+", " ", m.group("word").lower())
            back = {"today": 0, "tonight": 0, "yesterday": 1}.get(word, 2)
            f.add(_days_window(today - timedelta(days=back), 1, tz), 0, m.start())
            f.consume(m)


def _find_ago(f: _Found) -> None:
    """Days, weeks, months or years ago."""
    tz, today = f.tz, f.today
    for m in list(_AGO.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            n, unit = _number(m.group("n")), m.group("unit").lower()
            if unit == "day":
                f.add(_days_window(today - timedelta(days=n), 1, tz), 0, m.start())
            elif unit == "week":
                f.add(_days_window(today - timedelta(days=7 * n + 3), 7, tz), 1, m.start())
            elif unit == "month":
                f.add(_month_window(*_shift_months(today, -n), tz), 2, m.start())
            else:
                f.add(_year_window(today.year - n, tz), 3, m.start())
            f.consume(m)


def _find_past_n(f: _Found) -> None:
    """The past (last, previous) n days, weeks, months or years."""
    tz, today = f.tz, f.today
    for m in list(_PAST_N.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            n, unit = _number(m.group("n")), m.group("unit").lower()
            days = {"day": n, "week": 7 * n, "month": 31 * n, "year": 366 * n}[unit]
            f.add(
                _days_window(today - timedelta(days=days - 1), days, tz),
                1 if days <= 7 else 2,
                m.start(),
            )
            f.consume(m)


def _find_relative(f: _Found) -> None:
    """This or last week, weekend, month or year."""
    tz, today = f.tz, f.today
    for m in list(_RELATIVE.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            which, unit = m.group("which").lower(), m.group("unit").lower()
            this = which == "this"
            monday = today - timedelta(days=today.weekday())
            if unit == "week":
                first = monday if this else monday - timedelta(days=7)
                f.add(_days_window(first, 7, tz), 1, m.start())
            elif unit == "weekend":
                # "this weekend": the one of this week; "last weekend": the one before this week.
                saturday = monday + timedelta(days=5 if this else -2)
                f.add(_days_window(saturday, 2, tz), 1, m.start())
            elif unit == "month":
                f.add(_month_window(*_shift_months(today, 0 if this else -1), tz), 2, m.start())
            else:
                f.add(_year_window(today.year - (0 if this else 1), tz), 3, m.start())
            f.consume(m)


def _find_weekdays(f: _Found) -> None:
    """Weekdays: the latest such day (a week back after "last")."""
    tz, today = f.tz, f.today
    for m in list(_WEEKDAY.finditer(f.text)):
        with suppress(*_OUT_OF_RANGE):
            target = WEEKDAYS.index(m.group("weekday").lower())
            back = (today.weekday() - target) % 7
            lead = (m.group("lead") or "").lower()
            if back == 0 and lead in ("last", "past", "previous"):
                back = 7
            day = today - timedelta(days=back)
            f.add(
                _days_window(day, 1, tz), 0, m.start(), (f"{TIME_TERM_PREFIX}{WEEKDAYS[target]}",)
            )
            f.consume(m)


def window_fit(at: datetime, window: Window) -> float:
    """How well an event time fits a window: 1 inside, decaying with distance outside.

    Outside, the fit halves for every window length (at least a day) of distance, so "two
    days ago" still favours the day before over last month.

    Example::

        >>> from datetime import datetime, timezone
        >>> w = Window(datetime(2024, 3, 12, tzinfo=timezone.utc), datetime(2024, 3, 13, tzinfo=timezone.utc))
        >>> window_fit(datetime(2024, 3, 12, 18, tzinfo=timezone.utc), w)
        1.0
        >>> round(window_fit(datetime(2024, 3, 14, tzinfo=timezone.utc), w), 3)
        0.5
    """
    if window.contains(at):
        return 1.0
    distance = (window.start - at) if at < window.start else (at - window.end)
    scale = max((window.end - window.start).total_seconds(), 86_400.0)
    return math.exp(-math.log(2.0) * distance.total_seconds() / scale)


#: How much of its score a memory far outside the query's window keeps less than one inside.
TIME_BOOST = 0.5
#: How much of its score the oldest candidate of a present-tense query keeps less than the newest.
PRESENT_BOOST = 0.3
#: How much of its score a candidate that does not say when (:func:`says_when`) keeps less
#: than one that does, for a question that asks when.
WHEN_BOOST = 0.3


def time_boosts(times: Mapping[K, datetime], query: TimeQuery) -> dict[K, float]:
    """Score multipliers in (0, 1] for candidates with these event times (empty: no change).

    With a window, a candidate keeps ``1 - TIME_BOOST * (1 - fit)`` of its score
    (:func:`window_fit`), but only when some candidate falls inside the window: a window
    nothing falls in (a month named for a year with no memories) says nothing about the
    candidates. For a present-tense query, the newest candidate keeps all of its score and
    the oldest ``1 - PRESENT_BOOST``, by the rank of their times.

    Example::

        >>> from datetime import datetime, timezone
        >>> utc = timezone.utc
        >>> times = {"old": datetime(2020, 1, 1, tzinfo=utc), "new": datetime(2024, 1, 1, tzinfo=utc)}
        >>> time_boosts(times, TimeQuery({}, None, True))
        {'old': 0.7, 'new': 1.0}
    """
    out = dict.fromkeys(times, 1.0)
    window = query.window
    if window is not None and any(window.contains(t) for t in times.values()):
        for key, at in times.items():
            out[key] *= 1.0 - TIME_BOOST * (1.0 - window_fit(at, window))
    if query.present and len(times) > 1:
        order = sorted(set(times.values()))
        span = max(1, len(order) - 1)
        position = {t: i / span for i, t in enumerate(order)}
        for key, at in times.items():
            out[key] *= 1.0 - PRESENT_BOOST * (1.0 - position[at])
    if all(v == 1.0 for v in out.values()):
        return {}
    return out


def when_boosts(told: Mapping[K, bool]) -> dict[K, float]:
    """Score multipliers for the candidates of a question that asks when (``told``: whether
    each one's text says when, :func:`says_when`): those that do keep their score, the
    others ``1 - WHEN_BOOST`` (empty: no change).

    The answer to "When did Jo move?" is a time, so the memory that tells the move with
    its time ("Jo moved here last spring") is the evidence, more than one that only talks
    about it ("Jo loves the new flat").

    Example::

        >>> when_boosts({"told": says_when("We moved last spring"), "other": False})
        {'told': 1.0, 'other': 0.7}
    """
    if all(told.values()) or not any(told.values()):
        return {}
    return {key: 1.0 if said else 1.0 - WHEN_BOOST for key, said in told.items()}
