"""Lexical analysis and the BM25 reference for the long-term store's hybrid relevance.

The store keeps, per item, the term frequencies of :func:`analyze` (its text) and the
document length (the number of terms). At query time it scores the *filtered candidate
set* (the scope's items that pass the filter) with Okapi BM25, document frequencies and
average length taken within that set::

    idf(t)     = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    norm(d)    = 1 - b + b * dl(d) / avgdl
    score(q,d) = sum_t  w(t) * idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * norm(d))

where ``w(t)`` is the query weight of term ``t`` (its count in the query, or the weight
:func:`expand_query` gave it). :func:`bm25_scores` is the pure-Python reference of exactly
that formula. The store reads the set's statistics and the query terms' postings from SQL
in one round trip (a second one for the feedback terms) and scores them with the same
formula; it is tested against the reference on every backend.

Example::

    >>> analyze("Caroline's paintings of sunrises, 2023!")
    ['carolin', 'paint', 'sunris', '2023']
    >>> docs = [analyze("I painted a sunrise"), analyze("We went hiking")]
    >>> [round(s, 3) for s in bm25_scores(analyze("sunrise painting"), docs)]
    [1.386, 0.0]
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import snowballstemmer

from langmem_tiers.sql.dialect import PACKED_SEPARATOR

__all__ = [
    "BM25_B",
    "BM25_K1",
    "PRF_DOCS",
    "PRF_TERMS",
    "PRF_WEIGHT",
    "QUERY_STOP_WORDS",
    "STOP_WORDS",
    "analyze",
    "analyze_query",
    "bm25_scores",
    "expand_query",
    "pack_terms",
    "query_weights",
    "score_postings",
    "term_frequencies",
    "unpack_terms",
]

#: Term-frequency saturation. Conversation turns are short, so a repeated term adds
#: little; the value was chosen on held-out LoCoMo conversations (see benchmarks/).
BM25_K1 = 1.2
#: Length normalisation. Short turns are not more relevant than long ones just for
#: being short, and long turns often carry the facts, so normalisation is kept mild.
BM25_B = 0.3
#: Pseudo-relevance feedback (:func:`expand_query`): how many top BM25 hits feed it,
#: how many new terms it adds and what share of the query weight they get.
PRF_DOCS = 5
PRF_TERMS = 20
PRF_WEIGHT = 0.5
#: Feedback needs a collection to tell typical terms from chance ones: below this many
#: candidate documents the query is not expanded (on a handful of items the "best hits" are
#: all of them, and expansion would only reorder exact matches).
PRF_MIN_DOCS = 50

#: Function words of English that carry no topic. Removed on both sides (documents and
#: queries). Contractions are reduced before the look-up (``don't`` -> ``do``).
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also am an let may might must shall us yet ever every
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())

#: Words that frame a question rather than name its topic. Removed from queries only, so
#: a memory that says "my favourite kind of tea" still indexes ``kind``.
QUERY_STOP_WORDS: frozenset[str] = frozenset(
    ("tell", "know", "remember", "recall", "mention", "mentioned", "say", "said", "ask", "asked")
)


def _mark_class() -> str:
    """A regex class of the Basic Multilingual Plane's combining marks (Mn, Mc, Me).

    ``\\w`` does not match them, but in Devanagari, Thai, Arabic and others they are part of
    the word (vowel signs, viramas), so a word may continue with them.
    """
    ranges: list[tuple[int, int]] = []
    for code in range(0x300, 0x10000):
        if unicodedata.category(chr(code)).startswith("M"):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


_MARKS = _mark_class()
_TOKEN = re.compile(
    r"\d+(?:[.,]\d+)*"  # numbers, keeping 3.5 and 1,000 whole
    r"|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"  # CJK: one term per character
    # words: a letter, then letters or combining marks, with inner apostrophes
    rf"|[^\W\d_](?:[^\W\d_]|[{_MARKS}])*(?:'[^\W\d_](?:[^\W\d_]|[{_MARKS}])*)*",
)
# The same tokens as _TOKEN in ASCII text, where its alternatives for marks and CJK never
# match, so a match tries fewer alternatives, and most text is ASCII. Over ASCII,
# ``[^\W\d_]`` is exactly ``[A-Za-z]``.
_ASCII_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[A-Za-z]+(?:'[A-Za-z]+)*")
_CONTRACTION = re.compile(r"(?:'s|'d|'ll|'re|'ve|'m|n't|')$")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

_stemmer = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # The Snowball stemmer object keeps state while it works, so calls are serialised;
    # the cache makes the lock rare after warm-up.
    with _stem_lock:
        return str(_stemmer.stemWord(word))


def _fold(text: str) -> str:
    """Case-fold and strip accents from Latin letters (``Café`` -> ``cafe``)."""
    if text.isascii():
        return text.lower().replace("`", "'")
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    kept: list[str] = []
    previous_ascii = False
    for char in decomposed:
        if unicodedata.combining(char):
            # Accents on Latin letters are noise for matching; marks on other scripts
            # (Devanagari vowel signs, ...) are part of the letter and stay.
            if previous_ascii:
                continue
        else:
            previous_ascii = char.isascii()
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept)).translate(_APOSTROPHES)


def _raw_tokens(text: str) -> list[str]:
    """The tokens of folded ``text``, as :data:`_TOKEN` finds them."""
    return (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text)


def _tokens(text: str) -> Iterable[str]:
    for token in _raw_tokens(_fold(text)):
        if token[0].isdigit():
            yield token.replace(",", "")
            continue
        if "'" in token:
            token = _CONTRACTION.sub("", token).replace("'", "")
        if token and token not in STOP_WORDS:
            yield token


def analyze(text: str) -> list[str]:
    """The BM25 terms of ``text``, in order: folded, stop words removed, stemmed.

    Lower-cases (Unicode case folding), strips accents from Latin letters, splits on
    anything that is not a letter or digit (apostrophes inside words are kept and
    contractions reduced: ``Caroline's`` -> ``carolin``), drops English stop words,
    keeps numbers whole (``3.5``, ``1,000`` -> ``1000``) and applies the Snowball
    English stemmer. CJK ideographs and kana become one term per character.

    Example::

        >>> analyze("She didn't go hiking in the Alps in 2023")
        ['go', 'hike', 'alp', '2023']
    """
    return [term for term in map(_term, _raw_tokens(_fold(text))) if term]


@lru_cache(maxsize=200_000)
def _term(token: str) -> str:
    """The term a raw token of folded text becomes ("" for none): what :func:`_tokens` and
    :func:`_stem` do to it, cached whole, since a put's words are mostly words seen before."""
    if token[0].isdigit():
        return token.replace(",", "")
    if "'" in token:
        token = _CONTRACTION.sub("", token).replace("'", "")
    if not token or token in STOP_WORDS:
        return ""
    return _stem(token)


def analyze_query(text: str) -> list[str]:
    """The terms of a search query: :func:`analyze` minus question-framing words.

    Example::

        >>> analyze_query("Do you remember what Jordan said about the RAI Chat project?")
        ['jordan', 'rai', 'chat', 'project']
    """
    return [
        token if token[0].isdigit() else _stem(token)
        for token in _tokens(text)
        if token not in QUERY_STOP_WORDS
    ]


def term_frequencies(terms: Iterable[str]) -> dict[str, int]:
    """How often each term occurs: what the store keeps per item (with ``len(terms)``).

    Example::

        >>> term_frequencies(["paint", "sunris", "paint"])
        {'paint': 2, 'sunris': 1}
    """
    return dict(Counter(terms))


def pack_terms(frequencies: Mapping[str, int]) -> str | None:
    """An item's term frequencies as one text (``term``, count, ``term``, count...), the
    form the items table keeps beside the terms table so a namespace is read one row an
    item; None for no terms.

    Example::

        >>> pack_terms({"paint": 2, "sunris": 1}).split(PACKED_SEPARATOR)
        ['paint', '2', 'sunris', '1']
        >>> unpack_terms(pack_terms({"paint": 2, "sunris": 1}))
        {'paint': 2, 'sunris': 1}
    """
    if not frequencies:
        return None
    return PACKED_SEPARATOR.join(f"{term}{PACKED_SEPARATOR}{n}" for term, n in frequencies.items())


def unpack_terms(packed: str) -> dict[str, int]:
    """The term frequencies :func:`pack_terms` packed."""
    fields = packed.split(PACKED_SEPARATOR)
    return dict(zip(fields[::2], map(int, fields[1::2]), strict=True))


def query_weights(query_terms: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """Query terms as ``{term: weight}``: a list counts repeats, a mapping is kept as is.

    Example::

        >>> query_weights(["paint", "paint", "sunris"])
        {'paint': 2.0, 'sunris': 1.0}
    """
    if isinstance(query_terms, Mapping):
        return {term: float(weight) for term, weight in query_terms.items() if weight > 0}
    return {term: float(count) for term, count in Counter(query_terms).items()}


def bm25_scores(
    query_terms: Sequence[str] | Mapping[str, float],
    docs_terms: Sequence[Sequence[str]],
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> list[float]:
    """Okapi BM25 of every document of the candidate set, statistics from that set.

    ``query_terms`` is a list of terms (a repeated term counts once per repeat) or a
    ``{term: weight}`` mapping such as :func:`expand_query` returns. ``docs_terms`` is the
    whole candidate set: ``N``, document frequencies and the average length come from it.
    Returns one score (>= 0) per document, in order.

    Example::

        >>> docs = [["paint", "sunris"], ["hike", "mountain", "sunris"], ["cook"]]
        >>> [round(s, 4) for s in bm25_scores(["paint"], docs, k1=1.2, b=0.75)]
        [0.9808, 0.0, 0.0]
    """
    weights = query_weights(query_terms)
    n_docs = len(docs_terms)
    if n_docs == 0 or not weights:
        return [0.0] * n_docs
    doc_tfs = [Counter(terms) for terms in docs_terms]
    lengths = [len(terms) for terms in docs_terms]
    avgdl = sum(lengths) / n_docs
    scores = [0.0] * n_docs
    for term, weight in weights.items():
        df = sum(1 for tf in doc_tfs if term in tf)
        if df == 0:
            continue
        idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        for i, tf in enumerate(doc_tfs):
            count = tf.get(term, 0)
            if count:
                norm = 1.0 - b + b * lengths[i] / avgdl if avgdl > 0 else 1.0
                scores[i] += weight * idf * count * (k1 + 1.0) / (count + k1 * norm)
    return scores


def expand_query(
    query_terms: Sequence[str] | Mapping[str, float],
    feedback_docs: Sequence[Mapping[str, int]],
    feedback_scores: Sequence[float],
    *,
    doc_frequencies: Mapping[str, int] | None = None,
    n_docs: int | None = None,
    n_terms: int = PRF_TERMS,
    weight: float = PRF_WEIGHT,
) -> dict[str, float]:
    """Pseudo-relevance feedback: the query plus the terms typical of its best BM25 hits.

    The store runs BM25 once with the query, takes the top :data:`PRF_DOCS` items with a
    positive score (``feedback_docs``: their term frequencies, ``feedback_scores``: their
    BM25 scores, best first), calls this, and runs BM25 again with the returned weights
    over the same candidate set; that second run is the lexical score it fuses.

    Each feedback item contributes its terms' relative frequencies, weighted by its score
    relative to the best one; with ``doc_frequencies`` (document frequency of those terms
    in the candidate set) and ``n_docs`` (the set's size), terms are also weighted by
    their idf, which keeps words common to every memory out of the expansion. The
    ``n_terms`` best new terms share ``weight`` of the query mass, the original query
    terms ``1 - weight``; the result is scaled so the original terms keep their absolute
    weights and BM25 scores stay comparable with an unexpanded query.

    Why: a question names one side of what it asks ("what do Jon and Gina have in
    common?"); the best hits name the rest (the shared topic, the date, the place), and a
    second pass finds the evidence that shares those words but not the question's.

    Example::

        >>> q = expand_query(["dog"], [{"dog": 1, "puppi": 2}], [3.2])
        >>> sorted(q), q["dog"]
        (['dog', 'puppi'], 1.0)
    """
    base = query_weights(query_terms)
    if not base or not feedback_docs or n_terms <= 0 or weight <= 0:
        return base
    best = max(feedback_scores, default=0.0)
    if best <= 0:
        return base
    use_idf = doc_frequencies is not None and n_docs is not None and n_docs > 0
    mass: dict[str, float] = {}
    idf_of: dict[str, float] = {}  # a term of several feedback items: its idf once
    for tfs, score in zip(feedback_docs, feedback_scores, strict=False):
        length = sum(tfs.values())
        if score <= 0 or length <= 0:
            continue
        for term, tf in tfs.items():
            if term in base:
                continue
            value = (score / best) * tf / length
            if use_idf:
                idf = idf_of.get(term)
                if idf is None:
                    assert doc_frequencies is not None
                    assert n_docs is not None
                    df = max(1, min(doc_frequencies.get(term, 1), n_docs))
                    idf = idf_of[term] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                value *= idf
            mass[term] = mass.get(term, 0.0) + value
    chosen = sorted(mass.items(), key=lambda kv: (-kv[1], kv[0]))[:n_terms]
    chosen_total = sum(v for _, v in chosen)
    if chosen_total <= 0:
        return base
    weight = min(weight, 0.95)
    query_total = sum(base.values())
    # (1 - weight) of the mass stays on the query; rescale so its terms keep their weights.
    expansion_total = query_total * weight / (1.0 - weight)
    out = dict(base)
    for term, value in chosen:
        out[term] = expansion_total * value / chosen_total
    return out


def score_postings(
    weights: Mapping[str, float],
    n_docs: int,
    avgdl: float,
    tf: Mapping[str, Mapping[str, int]],
    doc_len: Mapping[str, int],
) -> dict[str, float]:
    """BM25 of every item that has a weighted term, from a set's statistics and postings.

    ``tf`` maps term -> item -> frequency, ``doc_len`` item -> length; ``n_docs`` and
    ``avgdl`` describe the whole set, so the score equals :func:`bm25_scores` over it.

    Terms are summed in sorted order, so a score does not depend on the order rows came in.
    """
    n = n_docs
    k1, b = BM25_K1, BM25_B
    scores: dict[str, float] = {}
    for term in sorted(weights):
        by_item = tf.get(term)
        if not by_item:
            continue
        df = len(by_item)
        idf_weight = weights[term] * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for item, count in by_item.items():
            norm = 1.0 - b + b * doc_len[item] / avgdl
            scores[item] = scores.get(item, 0.0) + idf_weight * count * (k1 + 1.0) / (
                count + k1 * norm
            )
    return scores
