"""What the demo measures: where a question's evidence was in the prompt, the baselines, tables.

For every turn the demo records the prompt the model was sent and, beside it, the prompts
two plain memories would send in the same conversation (each with a one-line system
prompt, :data:`BASELINE_SYSTEM`):

- **full history**: every earlier message of every session, verbatim;
- **last N messages**: a plain window of the newest ``N`` messages (across sessions).

For a question (a turn with an expected fact) it checks whether the expected fact is in
each prompt (case, spaces and thousands separators aside: ``12,000`` is ``12000``) and,
for the tiered memory, which part of the prompt holds it (:func:`locate`).

Example:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> prompt = [SystemMessage("What you know about the user from earlier conversations:\\n"
    ...                         "- The budget is 12,000 euros."), HumanMessage("Budget?")]
    >>> locate(prompt, "12000")
    Evidence(source='user_context', line='The budget is 12,000 euros.')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any, NamedTuple

import snowballstemmer
from langchain_core.messages import BaseMessage, SystemMessage

from langmem_tiers.graph.prompts import SEARCH_RESULTS_HEADER, USER_CONTEXT_HEADER
from langmem_tiers.short_term.context import MEMORY_HEADER
from langmem_tiers.tiers.extraction import content_words, split_sentences

__all__ = [
    "BASELINE_SYSTEM",
    "Evidence",
    "QuestionStats",
    "TurnStats",
    "baseline_prompt",
    "comparison_table",
    "holds",
    "locate",
    "plot_tokens",
    "session_table",
    "targets",
    "token_table",
]

BASELINE_SYSTEM = "You are a helpful assistant."
"""The system prompt the baselines are given (the tiered graph has its own)."""

_PREFIX = re.compile(r"^\[(?P<id>[\w.\-]+)\|t(?P<tier>[123])\]\s*")
_SECTIONS = {
    USER_CONTEXT_HEADER: "user_context",
    SEARCH_RESULTS_HEADER: "episodic search",
    MEMORY_HEADER: "session summaries",
}


class TurnStats(NamedTuple):
    """Tokens of one turn, for the tiered memory and the baselines."""

    turn: int
    session: str
    prompt_tokens: int
    """The first prompt of the turn (what every turn costs at least)."""
    calls: int
    """Model calls (1 + regenerations after tier requests or searches)."""
    raw_session_tokens: int
    """The session's raw history plus the question (what a plain chat would send)."""
    raw_all_tokens: int
    """Every earlier session too (what remembering everything verbatim would cost)."""
    full_history_tokens: int = 0
    """The full-history baseline's prompt (its system prompt, everything, the question)."""
    window_tokens: int = 0
    """The last-N-messages baseline's prompt."""


class Evidence(NamedTuple):
    """Where the expected fact was in a prompt."""

    source: str
    """``raw message``, ``tier 1 line``, ``tier 2 line``, ``user_context``, ``episodic
    search``, ``session summaries`` or ``system prompt``."""
    line: str
    """The line (or message) that holds it."""


class QuestionStats(NamedTuple):
    """One question of the conversation and what each memory gave the model."""

    turn: int
    session: str
    question: str
    expected: str
    answer: str
    answered: bool
    """The tiered run's answer holds the expected fact."""
    evidence: Evidence | None
    """Where the tiered prompt held it (None: not in the prompt)."""
    in_full_history: bool
    in_window: bool


def _normal(text: str) -> str:
    text = re.sub(r"(?<=\d)[,\u202f](?=\d{3}\b)", "", text.lower())
    return " ".join(text.split())


def holds(text: str, expected: str, question: str | None = None, *, answer: bool = False) -> bool:
    """Whether ``text`` holds ``expected`` (case, spaces and thousands separators aside).

    With ``question``, the fact the question asks for, not only its value: a sentence of
    ``text`` holds ``expected`` and is about what the question asks (it shares one of the
    question's words that carry meaning, names left aside: "Tomas" in "Who covers on-call
    while Tomas is away?" says whom it is about, not what). With ``answer``, a bare answer
    (at most four words: "Leo.", "It is Leo") holds it too.

    >>> holds("The budget is 12000 euros.", "12,000"), holds("April 20", "May 4")
    (True, False)
    >>> question = "Who covers on-call while Tomas is away?"
    >>> [holds(t, "Leo", question, answer=True) for t in (
    ...     "Tomas does the backend and Leo Okafor does QA.", "Leo.",
    ...     "During his vacation Leo covers the on-call duty.")]
    [False, True, True]
    """
    value = _normal(expected)
    if question is None:
        return value in _normal(text)
    asked = _asked(question) - _stems(expected)
    for sentence in split_sentences(text) or [text]:
        if value not in _normal(sentence):
            continue
        if (answer and len(_WORDS.findall(sentence)) <= 4) or _stems(sentence) & asked:
            return True
    return False


def _asked(question: str) -> set[str]:
    """The stems of what ``question`` asks about: its meaningful words that are not names."""
    words = [w for w in _WORDS.findall(question) if not w[:1].isupper()]
    return _stems(" ".join(words)) or _stems(question)


_WORDS = re.compile(r"[\w'-]+")


def _stems(text: str) -> set[str]:
    return set(_stemmer().stemWords(content_words(text)))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def locate(
    prompt: Sequence[BaseMessage], expected: str, question: str | None = None
) -> Evidence | None:
    """The first part of ``prompt`` (the memories, then the messages) that holds ``expected``
    (the fact ``question`` asks for, with it: see :func:`holds`)."""
    found: list[tuple[int, Evidence]] = []
    for message in prompt:
        text = str(message.text)
        if message.type == "system":
            section = "system prompt"
            for line in text.splitlines():
                if not line.startswith("- "):  # a header starts a section; text ends it
                    if line.strip():
                        section = _SECTIONS.get(line.strip(), "system prompt")
                    continue
                if holds(line, expected, question):
                    rank = 0 if section == "user_context" else 1
                    found.append((rank, Evidence(section, line[2:].strip())))
            continue
        if message.type == "tool":
            for line in text.splitlines():
                if holds(line, expected, question):
                    found.append((1, Evidence("episodic search", line.lstrip("- ").strip())))
            continue
        if not holds(text, expected, question):
            continue
        match = _PREFIX.match(text)
        tier = int(match.group("tier")) if match else 3
        body = text[match.end() :] if match else text
        source = "raw message" if tier == 3 else f"tier {tier} line"
        label = f"[{match.group('id')}|t{tier}] " if match else ""
        found.append((2, Evidence(source, label + body.strip())))
    if not found:
        return None
    return min(found, key=lambda f: f[0])[1]


def baseline_prompt(
    history: Sequence[BaseMessage], question: BaseMessage, window: int | None = None
) -> list[BaseMessage]:
    """A plain memory's prompt: its system prompt, the history (or its last ``window``
    messages), the question."""
    kept = list(history) if window is None else list(history)[-window:] if window else []
    return [SystemMessage(BASELINE_SYSTEM), *kept, question]


# -- tables ------------------------------------------------------------------------------
def _sampled(rows: Sequence[TurnStats], count: int) -> list[TurnStats]:
    if len(rows) <= count:
        return list(rows)
    step = (len(rows) - 1) / (count - 1)
    picks = sorted({round(i * step) for i in range(count)})
    return [rows[i] for i in picks]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def token_table(rows: Sequence[TurnStats], count: int, window: int = 20) -> list[str]:
    """Sampled turns: the tiered prompt beside the raw session, full history and window."""
    last = f"last {window}"
    header = (
        f"{'turn':>5}  {'session':<16} {'prompt':>7} {'calls':>5} {'raw session':>12} "
        f"{'full history':>13} {last:>8}"
    )
    lines = [header, "-" * len(header)]

    def row(first: str, second: str, values: Sequence[float], calls: str) -> str:
        prompt, raw, full, win = values
        return (
            f"{first:>5}  {second[:16]:<16} {prompt:>7,.0f} {calls:>5} {raw:>12,.0f} "
            f"{full:>13,.0f} {win:>8,.0f}"
        )

    for r in _sampled(rows, count):
        values = (r.prompt_tokens, r.raw_session_tokens, r.full_history_tokens, r.window_tokens)
        lines.append(row(str(r.turn), r.session, values, str(r.calls)))
    if rows:
        n = len(rows)
        means = [
            _mean([float(getattr(r, f)) for r in rows])
            for f in ("prompt_tokens", "raw_session_tokens", "full_history_tokens", "window_tokens")
        ]
        calls = f"{_mean([float(r.calls) for r in rows]):.2f}"
        lines.append("-" * len(header))
        lines.append(row("mean", f"over {n} turns", means, calls))
        peaks = [
            float(max(getattr(r, f) for r in rows))
            for f in ("prompt_tokens", "raw_session_tokens", "full_history_tokens", "window_tokens")
        ]
        lines.append(row("max", "", peaks, str(max(r.calls for r in rows))))
    return lines


def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.0f} %)" if total else "-"


def comparison_table(
    rows: Sequence[TurnStats], questions: Sequence[QuestionStats], window: int
) -> list[str]:
    """The tiered memory beside the two baselines: tokens, calls, evidence in the prompt,
    and answers that hold the expected fact (the baselines' prompts are built, not sent:
    they have no answers)."""
    header = (
        f"{'memory':<22} {'mean prompt':>11} {'last prompt':>11} {'model calls':>11} "
        f"{'evidence in the prompt':>23} {'answers with the fact':>22}"
    )
    lines = [header, "-" * len(header)]
    if not rows:
        return lines
    total = len(questions)
    entries: list[tuple[str, list[int], int, int, int | None]] = [
        (
            "tiered memory",
            [r.prompt_tokens for r in rows],
            sum(r.calls for r in rows),
            sum(1 for q in questions if q.evidence is not None),
            sum(1 for q in questions if q.answered),
        ),
        (
            "full history",
            [r.full_history_tokens for r in rows],
            len(rows),
            sum(1 for q in questions if q.in_full_history),
            None,
        ),
        (
            f"last {window} messages",
            [r.window_tokens for r in rows],
            len(rows),
            sum(1 for q in questions if q.in_window),
            None,
        ),
    ]
    for name, tokens, calls, hits, answered in entries:
        answers = "-" if answered is None else _share(answered, total)
        lines.append(
            f"{name:<22} {_mean([float(t) for t in tokens]):>11,.0f} {tokens[-1]:>11,} "
            f"{calls:>11,} {_share(hits, total):>23} {answers:>22}"
        )
    return lines


def session_table(rows: Sequence[TurnStats]) -> list[str]:
    """Per session: the mean tiered prompt against the mean raw session and full history."""
    header = (
        f"{'session':<18} {'turns':>5} {'mean prompt':>11} {'mean raw session':>16} "
        f"{'mean full history':>17}"
    )
    lines = [header, "-" * len(header)]
    for session in dict.fromkeys(r.session for r in rows):
        mine = [r for r in rows if r.session == session]
        lines.append(
            f"{session[:18]:<18} {len(mine):>5} "
            f"{_mean([float(r.prompt_tokens) for r in mine]):>11,.0f} "
            f"{_mean([float(r.raw_session_tokens) for r in mine]):>16,.0f} "
            f"{_mean([float(r.full_history_tokens) for r in mine]):>17,.0f}"
        )
    return lines


class Target(NamedTuple):
    """One of the demo's targets and how this run did."""

    name: str
    measured: str
    met: bool


def targets(rows: Sequence[TurnStats], questions: Sequence[QuestionStats]) -> list[Target]:
    """The demo's offline targets, measured on this run."""
    found: list[Target] = []
    if questions:
        share = sum(1 for q in questions if q.evidence is not None) / len(questions)
        found.append(
            Target("expected fact in the prompt >= 90 %", f"{100 * share:.0f} %", share >= 0.9)
        )
    sessions = list(dict.fromkeys(r.session for r in rows))
    below = [
        s
        for s in sessions
        if _mean([float(r.prompt_tokens) for r in rows if r.session == s])
        < _mean([float(r.raw_session_tokens) for r in rows if r.session == s])
    ]
    if sessions:
        found.append(
            Target(
                "mean prompt below the raw session's, per session",
                f"{len(below)}/{len(sessions)} sessions",
                len(below) == len(sessions),
            )
        )
    if rows:
        last = rows[-1]
        ratio = last.prompt_tokens / max(1, last.raw_all_tokens)
        found.append(
            Target("last prompt <= 25 % of the raw history", f"{100 * ratio:.0f} %", ratio <= 0.25)
        )
    return found


# -- the plot ------------------------------------------------------------------------------
def plot_tokens(rows: Sequence[TurnStats], path: str, window: int, title: str) -> str | None:
    """Prompt tokens per turn for the three memories, as an image at ``path``.

    Answers why it was not drawn (matplotlib missing), or ``None`` when it was.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib); no plot drawn"
    turns = [r.turn for r in rows]
    figure, axes = plt.subplots(figsize=(9, 4.5))
    series: list[tuple[str, list[int], dict[str, Any]]] = [
        ("full history", [r.full_history_tokens for r in rows], {"color": "tab:red"}),
        (f"last {window} messages", [r.window_tokens for r in rows], {"color": "tab:gray"}),
        ("tiered memory", [r.prompt_tokens for r in rows], {"color": "tab:blue"}),
    ]
    for label, values, style in series:
        axes.plot(turns, values, label=label, linewidth=1.6, **style)
    for previous, row in pairwise(rows):
        if row.session != previous.session:
            axes.axvline(row.turn - 0.5, color="lightgray", linewidth=0.8, zorder=0)
    axes.set_xlabel("turn (vertical lines: a new session)")
    axes.set_ylabel("prompt tokens")
    axes.set_title(title)
    axes.legend(loc="upper left")
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return None
