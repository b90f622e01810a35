"""Whether a new statement contradicts a remembered one, and the offline rules that judge it.

:class:`RuleContradictionChecker` needs no model: it finds

* a relation slot the new statement fills again or a value it ends
  (:mod:`~langmem_tiers.tiers.slots`: "Jo lives in Berlin" / "Jo moved to Munich", "my
  manager is Sarah" / "Sarah left; my new manager is Tom", "I quit Acme"), and statements
  that only add ("I also have a cat") or fill another slot ("my work phone") change nothing;
* a negation or an antonym of the same statement ("Jo likes tea" / "Jo does not like
  tea", "Jo loves jazz" / "Jo hates jazz");
* different numbers for the same attribute of the same statement ("Jo is 30 years old" /
  "... 31 years old", "the budget is $5,000" / "the budget is now $7,000"), calendar dates
  read as one value ("the launch date is April 20" / "... is May 4");
* the same subject and attribute with another value ("Jo lives in Berlin" / "Jo lives
  in Paris", "my favourite colour is blue" / "... is green");
* a change from the old value ("the launch is April 20" / "the launch moves from
  April 20 to May 4").

Example:
    >>> checker = RuleContradictionChecker()
    >>> [v.conflict for v in checker.check(Statement("Jo lives in Paris"),
    ...                                    [Statement("Jo lives in Berlin"),
    ...                                     Statement("Jo likes jazz")])]
    [True, False]
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import snowballstemmer

from langmem_tiers.tiers.slots import read_claims, slot_verdict

__all__ = ["ContradictionChecker", "RuleContradictionChecker", "Statement", "Verdict"]


class Statement(NamedTuple):
    """The text of a memory and its subject, when one is known."""

    text: str
    subject: str | None = None


class Verdict(NamedTuple):
    """Whether two statements contradict, how sure the checker is, and why."""

    conflict: bool
    confidence: float
    explanation: str


class ContradictionChecker(ABC):
    """Checks a new statement against existing ones."""

    name = "checker"

    @abstractmethod
    def check(self, new: Statement, existing: Sequence[Statement]) -> list[Verdict]:
        """One verdict per existing statement, in order."""

    async def acheck(self, new: Statement, existing: Sequence[Statement]) -> list[Verdict]:
        """Async twin of :meth:`check` (the rules need no I/O)."""
        return self.check(new, existing)


# -- the offline rules -------------------------------------------------------------------
_STEMMER = snowballstemmer.stemmer("english")
_TOKEN = re.compile(r"\$?\d+(?:[.,:]\d+)*%?|[a-z]+")
_MONTH = (
    r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
    r"(?:uary|ruary|ch|il|e|y|ust|t|tember|ober|ember)?\.?"
)
# A calendar date is one value ("April 20", "20th of May, 2026"): its month name is not a
# word of the statement ("may" would be a modal verb) and its day is not a bare number.
_DATE = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?"
    rf"|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}}\b)?"
)
_CONTRACTIONS = (
    ("can't", "can not"),
    ("won't", "will not"),
    ("n't", " not"),
    ("'m", " am"),
    ("'re", " are"),
    ("'ve", " have"),
    ("'ll", " will"),
    ("'d", " would"),
    ("'s", ""),
)
_NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot"}
)
_COPULAS = frozenset({"is", "are", "was", "were", "am", "be", "been", "being", "become", "became"})
_STOP = frozenset(
    {
        *_COPULAS,
        "a", "an", "the", "to", "of", "in", "on", "at", "for", "with", "by", "from", "as",
        "and", "or", "but", "that", "this", "these", "those", "it", "its", "there", "here",
        "do", "does", "did", "has", "have", "had", "will", "would", "can", "could", "should",
        "shall", "may", "might", "must", "now", "currently", "still", "already", "anymore",
        "longer", "actually", "really", "also", "just", "very", "so", "then", "today",
        "since", "recently", "new", "newly",
    }
)  # fmt: skip
# word -> (canonical word, flips the statement). Each entry: words of one sense, then
# words of the opposite sense.
_ANTONYM_WORDS: dict[str, tuple[str, bool]] = {}
for _same, _opposite in (
    (("like", "love", "enjoy", "adore"), ("dislike", "hate", "detest", "loathe")),
    (("true",), ("false",)),
    (("open",), ("closed", "close", "shut")),
    (("alive",), ("dead",)),
    (("married",), ("single", "divorced", "unmarried")),
    (("enable", "enabled"), ("disable", "disabled")),
    (("accept", "accepted"), ("reject", "rejected", "refuse", "decline", "declined")),
    (("agree",), ("disagree",)),
    (("allow", "allowed"), ("forbid", "forbidden", "prohibit", "ban", "banned")),
    (("increase", "increased"), ("decrease", "decreased")),
    (("win", "won"), ("lose", "lost")),
    (("hot",), ("cold",)),
    (("happy",), ("sad", "unhappy")),
    (("present",), ("absent",)),
    (("available",), ("unavailable",)),
    (("possible",), ("impossible",)),
    (("correct", "right"), ("incorrect", "wrong")),
    (("good",), ("bad",)),
    (("employed",), ("unemployed",)),
    (("online",), ("offline",)),
    (("start", "started"), ("stop", "stopped", "quit")),
    (("include", "included"), ("exclude", "excluded")),
    (("safe",), ("dangerous", "unsafe")),
    (("full",), ("empty",)),
    (("early",), ("late",)),
    (("success", "succeed", "succeeded"), ("failure", "fail", "failed")),
    (("active",), ("inactive",)),
    (("complete", "completed", "finished"), ("incomplete", "unfinished")),
    (("approve", "approved"), ("disapprove", "disapproved", "denied")),
):
    _canonical = _STEMMER.stemWord(_same[0])
    for _word in _same:
        _ANTONYM_WORDS[_STEMMER.stemWord(_word)] = (_canonical, False)
    for _word in _opposite:
        _ANTONYM_WORDS[_STEMMER.stemWord(_word)] = (_canonical, True)
# Predicates that hold one value at a time: "lives in X" and "lives in Y" contradict,
# "likes X" and "likes Y" do not.
_SINGLE_VALUE_CUES = frozenset(
    _STEMMER.stemWord(w)
    for w in (
        "live", "lives", "living", "work", "works", "born", "name", "named", "called",
        "prefer", "prefers", "favorite", "favourite", "moved", "located", "based",
        "age", "deadline", "capital", "ceo", "head", "leads", "reports", "salary",
        "budget", "price", "cost", "costs", "birthday", "address", "email", "phone",
        "scheduled", "due", "set", "title", "role", "status", "uses", "main", "primary",
    )
)  # fmt: skip
# Words of a new statement that say its value replaces one ("switched to", "instead").
_CHANGE_WORDS = frozenset(
    _STEMMER.stemWord(w)
    for w in ("switched", "switch", "changed", "replaced", "instead", "nowadays")
)
_NUMBER_NAMES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty",
)  # fmt: skip
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_NUMBER_NAMES)}


# "<subject> moves from <old value> to <new value>": the old value no longer holds.
_CHANGE = re.compile(
    r"\b(?:mov(?:e|es|ed|ing)|chang(?:e|es|ed|ing)|postpon\w*|reschedul\w*|shift\w*|"
    r"push(?:ed|es)?|delay\w*|switch\w*|bump\w*|upgrad\w*|downgrad\w*|"
    r"went|goes|go(?:ne)?|rais\w*|lower\w*|cut|increas\w*|decreas\w*|reduc\w*)\b"
    r"[^.;!?]*?\bfrom\s+(?P<old>[^.;!?]+?)\s+to\s+(?P<new>[^.;!?]+)",
    re.IGNORECASE,
)


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[^\w$%:]+", " ", text.lower()).split())


def _changed_from(new: str, old: str) -> tuple[str, str] | None:
    """``(old value, new value)`` when ``new`` moves something ``old`` says away from it."""
    found = _CHANGE.search(new)
    if found is None:
        return None
    before, after = _flat(found.group("old")), _flat(found.group("new"))
    said = f" {_flat(old)} "
    if not before or f" {before} " not in said or f" {after} " in said:
        return None
    # The thing that changes is named in both: a content word before "from".
    topic = set(_parse(new[: found.start("old")]).words)
    if not topic & set(_parse(old).words):
        return None
    return found.group("old").strip(), found.group("new").strip()


class _Parsed(NamedTuple):
    words: tuple[str, ...]  # canonical content words, numbers left out, in order
    surface: tuple[str, ...]  # the same words as written
    copula_before: tuple[bool, ...]  # a copula stood between the previous word and this one
    numbers: dict[str, frozenset[str]]  # attribute word -> numbers said of it
    negations: int
    flips: int

    @property
    def negated(self) -> bool:
        return (self.negations + self.flips) % 2 == 1


def _number(token: str) -> str | None:
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    core = token.lstrip("$").rstrip("%")
    if not core or not core[0].isdigit():
        return None
    if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", core):
        core = core.replace(",", "")
    try:
        value = float(core)
    except ValueError:
        return core  # a time like 10:30, a version like 1.2.3
    return repr(int(value)) if value.is_integer() else repr(value)


@lru_cache(maxsize=4096)
def _parse(text: str) -> _Parsed:
    lowered = text.lower().replace("\u2019", "'")
    for short, long in _CONTRACTIONS:
        lowered = lowered.replace(short, long)
    dates = {f"{m[0] or m[3]} {int(m[1] or m[2])}" for m in _DATE.findall(lowered)}
    lowered = _DATE.sub(" ", lowered)
    words: list[str] = []
    surface: list[str] = []
    copula_before: list[bool] = []
    numbered: list[tuple[int, str]] = []  # (index into words at the time, number)
    negations = flips = 0
    copula = False
    for token in _TOKEN.findall(lowered):
        number = _number(token)
        if number is not None:
            numbered.append((len(words), number))
            continue
        if token in _NEGATIONS:
            negations += 1
            continue
        if token in _STOP:
            copula = copula or token in _COPULAS
            continue
        stem = _STEMMER.stemWord(token)
        canonical, flipped = _ANTONYM_WORDS.get(stem, (stem, False))
        flips += flipped
        words.append(canonical)
        surface.append(token)
        copula_before.append(copula)
        copula = False
    numbers: dict[str, set[str]] = {}
    for position, number in numbered:
        # The attribute of a number is the word after it ("30 years") or, at the end of
        # a clause, the word before it ("the budget is 5000", "March 15").
        if position < len(words):
            attribute = words[position]
        elif position > 0:
            attribute = words[position - 1]
        else:
            attribute = ""
        numbers.setdefault(attribute, set()).add(number)
    if dates:
        numbers.setdefault("date", set()).update(dates)
    return _Parsed(
        tuple(words),
        tuple(surface),
        tuple(copula_before),
        {k: frozenset(v) for k, v in numbers.items()},
        negations,
        flips,
    )


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def _substitution(a: _Parsed, b: _Parsed) -> tuple[list[str], list[str], int] | None:
    """The differing middle spans of two word sequences (as written), and the shared prefix."""
    wa, wb = a.words, b.words
    prefix = 0
    while prefix < min(len(wa), len(wb)) and wa[prefix] == wb[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(wa), len(wb)) - prefix
        and wa[len(wa) - 1 - suffix] == wb[len(wb) - 1 - suffix]
    ):
        suffix += 1
    da = list(a.surface[prefix : len(wa) - suffix])
    db = list(b.surface[prefix : len(wb) - suffix])
    if not da or not db or len(da) > 3 or len(db) > 3:
        return None
    shared = prefix + suffix
    if prefix == 0 or shared < max(1, min(len(wa), len(wb)) // 2):
        return None
    return da, db, prefix


class RuleContradictionChecker(ContradictionChecker):
    """Offline contradiction rules: negation and antonyms, numbers, one value per attribute.

    Example:
        >>> check = RuleContradictionChecker().compare
        >>> check(Statement("Jo is 30 years old"), Statement("Jo is 31 years old")).conflict
        True
        >>> check(Statement("Jo likes tea"), Statement("Jo doesn't like tea")).conflict
        True
        >>> check(Statement("Jo likes tea"), Statement("Jo likes coffee")).conflict
        False
        >>> check(Statement("The launch date is May 4"),
        ...       Statement("The launch date is April 20")).explanation
        "launch date: 'may 4' now, 'april 20' before"
        >>> check(Statement("The launch moves from April 20 to May 4."),
        ...       Statement("The launch date is April 20, 2026.")).explanation
        "the new statement changes 'April 20' to 'May 4'"
    """

    name = "rules"

    def check(self, new: Statement, existing: Sequence[Statement]) -> list[Verdict]:
        """One verdict per existing statement, in order."""
        return [self.compare(new, old) for old in existing]

    def compare(self, new: Statement, old: Statement) -> Verdict:
        """Whether ``new`` contradicts ``old``."""
        if new.subject and old.subject and new.subject.casefold() != old.subject.casefold():
            return Verdict(False, 0.9, f"different subjects ({new.subject!r}, {old.subject!r})")
        slotted = slot_verdict(read_claims(new.text), read_claims(old.text))
        if slotted is not None:
            return Verdict(*slotted)
        a, b = _parse(new.text), _parse(old.text)
        similar = _jaccard(a.words, b.words)
        if a.negated != b.negated and similar >= 0.75:
            cause = "negates" if a.negations != b.negations else "says the opposite of"
            return Verdict(True, 0.85, f"the new statement {cause} the existing one")
        if a.negated == b.negated:
            change = _changed_from(new.text, old.text)
            if change is not None:
                return Verdict(
                    True, 0.8, f"the new statement changes {change[0]!r} to {change[1]!r}"
                )
            said = set().union(*a.numbers.values()) if a.numbers else set()
            for attribute in sorted(set(a.numbers) & set(b.numbers)):
                if similar < 0.5 or b.numbers[attribute] <= said:
                    # Two statements about different things, or a new one that still
                    # states the old value ("1,500 euros of the 12,000"), change nothing.
                    continue
                if a.numbers[attribute] != b.numbers[attribute]:
                    new_n = ", ".join(sorted(a.numbers[attribute]))
                    old_n = ", ".join(sorted(b.numbers[attribute]))
                    return Verdict(
                        True,
                        0.85 if similar >= 0.75 else 0.75,
                        f"different numbers for {attribute or 'the value'!r}: "
                        f"{new_n} now, {old_n} before",
                    )
            span = _substitution(a, b)
            if span is not None:
                da, db, prefix = span
                # The predicate is shared (it is in the prefix): "is X", "lives in X".
                single = a.copula_before[prefix] or b.copula_before[prefix]
                # "switched to Linux on the laptop" in place of "uses Windows on the laptop".
                changed = bool(set(a.words) & _CHANGE_WORDS) and not set(b.words) & _CHANGE_WORDS
                if single or changed or set(a.words[:prefix]) & _SINGLE_VALUE_CUES:
                    return Verdict(
                        True,
                        0.65,
                        f"same statement with {' '.join(da)!r} instead of {' '.join(db)!r}",
                    )
        return Verdict(False, 0.6, "no contradiction found")
