"""OfflineChatModel: a deterministic, extractive chat model for demos, Studio and tests.

It needs no network and no weights, and answers only from the messages it is given, in
the layout the tiered chat graph gives them (see :mod:`~langmem_tiers.graph.prompts`):

1. **A statement** (the user's message is not a question) is acknowledged with the facts
   heard in it: ``Noted: user_name=Jordan, deadline=March 1 2026.``
2. **A question**: each piece of evidence is scored by how many of the question's
   content words (stemmed, stop words and "what/tell/remember" words left out) it shares.
   Evidence is: the user's messages of the view (a tier-3 message sentence by sentence, a
   tier-1 or tier-2 message as one piece), the ``- `` lines of the known sections of system
   messages (what is known about the user, this conversation's long-term memory, search
   results) and of ``search_episodic`` tool results. Its own earlier answers are never
   evidence.
3. When the best pieces are all from messages shown at **tier 1 or 2**, or one of them is
   a tiered message newer than every piece shown in full (the conversation may have said
   something later than what memory holds), it answers from them tentatively and asks for
   the newest one in full: ``... [REQUEST_TIER:3:m1]`` (a ``request_tier`` tool call when
   tools are bound). A message already asked for, or refused, is not asked for again.
   A question about the latest state ("now", "currently", "still") is answered from the
   conversation's own messages when they are among the best pieces shown in full.
4. When **nothing** shares a word, it asks to search the archive,
   ``[SEARCH_EPISODIC: <question>]`` (a ``search_episodic`` tool call), unless a search
   was already done this turn; then it says it does not know.
5. Otherwise it answers with the best one or two pieces, as written. Among pieces that
   share as many words, a "when" question prefers those that name a time (a date, a
   weekday, a clock time) and a "how many / how much" question those with a number, in a
   clause that holds a word of the question; a "when" question is answered with one piece,
   the newest (two would name two times).

Example:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> model = OfflineChatModel()
    >>> tiered = HumanMessage("[m1|t1] deadline=March 1 2026, entity=RAI Chat")
    >>> model.invoke([SystemMessage("You are helpful."), tiered,
    ...               HumanMessage("When is the RAI Chat deadline?")]).content
    'deadline=March 1 2026, entity=RAI Chat [REQUEST_TIER:3:m1]'
    >>> raw = HumanMessage("[m1|t3] The deadline for RAI Chat is March 1, 2026.")
    >>> model.invoke([raw, HumanMessage("When is the RAI Chat deadline?")]).content
    'The deadline for RAI Chat is March 1, 2026.'
    >>> model.invoke([HumanMessage("Where did I park?")]).content
    '[SEARCH_EPISODIC: Where did I park?]'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import snowballstemmer
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langmem_tiers.graph.prompts import (
    NOTICES_HEADER,
    SEARCH_RESULTS_HEADER,
    USER_CONTEXT_HEADER,
)
from langmem_tiers.short_term.context import MEMORY_HEADER
from langmem_tiers.tiers import OfflineTierer, parse_tier1
from langmem_tiers.tiers.markers import MAX_QUERY_CHARS, episodic_search_marker

__all__ = ["OFFLINE_UNKNOWN", "Evidence", "OfflineChatModel", "read_evidence"]

OFFLINE_UNKNOWN = "I don't have anything about that in our conversation or in my memory."
"""The offline model's answer when nothing it was given is relevant, even after a search."""

_PREFIX = re.compile(r"^\[(?P<id>[A-Za-z0-9][\w.\-]{0,63})\|t(?P<tier>[123])\]\s*")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_REFUSED = re.compile(r"request for message (?P<id>[\w.\-]+)", re.IGNORECASE)


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_EVIDENCE_SECTIONS = frozenset({USER_CONTEXT_HEADER, SEARCH_RESULTS_HEADER, MEMORY_HEADER})
_STOP_WORDS = _word_set(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    just me more most my no nor not now of off on once only or other our out over own same
    she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your yours i'm it's don't"""
)
_QUESTION_WORDS = _word_set(
    """tell remind say said know remember mention mentioned again exactly please recall
    give show us let"""
)
_QUESTION_STARTS = _word_set(
    """what when where who whom whose which why how do does did is are was were can could
    should would will have has tell remind"""
)


_TIME = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mondays|Tuesdays|"
    r"Wednesdays|Thursdays|Fridays|Saturdays|Sundays|today|tomorrow|yesterday|tonight|"
    r"\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}|(?:19|20)\d{2})\b"
)
_NUMBER = re.compile(r"\d")


def _answer_shape(question: str) -> re.Pattern[str] | None:
    """What the answer to ``question`` names: a time, a number, or nothing in particular."""
    lowered = " ".join(_WORD.findall(question.lower()))
    if lowered.startswith("when ") or any(
        cue in lowered for cue in ("what time", "what date", "which day", "what day")
    ):
        return _TIME
    if "how many" in lowered or "how much" in lowered:
        return _NUMBER
    return None


#: Where one clause of a sentence ends: what a time or a number of another clause says is
#: about that clause's subject ("the launch moves because the audit is on April 8").
_CLAUSE = re.compile(
    r"[,;:()]|\s(?:because|since|while|whereas|but|although|though|after|before|and)\s",
    re.IGNORECASE,
)


#: How many words open a clause: where its subject is ("the launch moves ...", "our
#: launch date is ...").
_CLAUSE_HEAD = 4


def _fits(text: str, terms: set[str], shape: re.Pattern[str]) -> bool:
    """Whether ``text`` names what the question asks for (``shape``) in a clause about one
    of the question's ``terms`` (a term among the words that open the clause): a date in
    a clause about something else ("Ruth invited them to the launch on April 25", "the
    launch moves because the audit is on April 8") does not say when the launch is."""
    for clause in _CLAUSE.split(text):
        if shape.search(clause) is None:
            continue
        head = " ".join(_WORD.findall(clause.lower())[:_CLAUSE_HEAD])
        if terms & _terms(head):
            return True
    return False


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")


def _terms(text: str, drop: frozenset[str] = frozenset()) -> set[str]:
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS and w not in drop]
    return set(_stemmer().stemWords(words))


def _is_question(text: str) -> bool:
    stripped = text.strip()
    words = _WORD.findall(stripped.lower())
    return stripped.endswith("?") or (bool(words) and words[0] in _QUESTION_STARTS)


class Evidence(NamedTuple):
    """One piece of what the model was given."""

    text: str
    order: int
    """Position in the prompt (larger is newer)."""
    message_id: str | None
    """The message it comes from (None: a memory or search line)."""
    tier: int
    """The tier the message was shown at (3 for memory and search lines)."""


class _Reading(NamedTuple):
    question: str
    evidence: list[Evidence]
    searched: bool
    asked: set[str]  # message ids already asked for (or refused) this turn


def _section_lines(text: str, order: int, out: list[Evidence], asked: set[str]) -> bool:
    """Evidence lines of a system text; answers whether it holds search results or notes."""
    searched = False
    section: str | None = None
    for line in text.splitlines():
        if not line.startswith("- "):
            section = line.strip()
            searched = searched or section == SEARCH_RESULTS_HEADER
            continue
        body = line[2:].strip()
        if section in _EVIDENCE_SECTIONS and body:
            out.append(Evidence(body, order, None, 3))
        elif section == NOTICES_HEADER:
            asked.update(m.group("id") for m in _REFUSED.finditer(body))
            searched = searched or "search" in body.lower()
    return searched


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def read_evidence(messages: Sequence[BaseMessage]) -> tuple[str, list[Evidence]]:
    """The question (the last user message) and the evidence the model would use.

    >>> from langchain_core.messages import HumanMessage
    >>> question, evidence = read_evidence(
    ...     [HumanMessage("[m1|t1] place=Lisbon"), HumanMessage("Where do I live?")])
    >>> question, [(e.text, e.message_id, e.tier) for e in evidence]
    ('Where do I live?', [('place=Lisbon', 'm1', 1)])
    """
    reading = _read(messages)
    return reading.question, reading.evidence


def _read(messages: Sequence[BaseMessage]) -> _Reading:
    last_human = max((i for i, m in enumerate(messages) if m.type == "human"), default=-1)
    question = messages[last_human].text if last_human >= 0 else ""
    evidence: list[Evidence] = []
    asked: set[str] = set()
    searched = False
    for order, message in enumerate(messages):
        if order == last_human:
            continue
        if message.type == "system":
            searched = _section_lines(message.text, order, evidence, asked) or searched
        elif message.type == "human" and order < last_human:
            text = message.text
            match = _PREFIX.match(text)
            message_id = match.group("id") if match else message.id
            tier = int(match.group("tier")) if match else 3
            body = text[match.end() :] if match else text
            if tier < 3:
                evidence.append(Evidence(body.strip(), order, message_id, tier))
            else:
                evidence.extend(Evidence(s, order, message_id, 3) for s in _sentences(body))
        elif message.type == "tool" and order > last_human:
            if message.name == "search_episodic":
                searched = True
                evidence.extend(
                    Evidence(line[2:].strip(), order, None, 3)
                    for line in message.text.splitlines()
                    if line.startswith("- ")
                )
        elif isinstance(message, AIMessage) and order > last_human:
            for call in message.tool_calls:
                if call["name"] == "request_tier":
                    asked.add(str(call["args"].get("message_id")))
                elif call["name"] == "search_episodic":
                    searched = True
    return _Reading(question, evidence, searched, asked)


class OfflineChatModel(BaseChatModel):
    """A deterministic chat model that answers extractively from its context (no network).

    See the module docstring for the rules. Bind the graph's tools with
    :meth:`bind_tools` and it calls them instead of writing markers.

    Args:
        max_pieces: most pieces of evidence an answer quotes.
    """

    max_pieces: int = 2

    @property
    def _llm_type(self) -> str:
        return "langmem-tiers-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"max_pieces": self.max_pieces}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with tools: it calls ``request_tier`` / ``search_episodic`` when bound."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = {
            str(tool.get("function", {}).get("name"))
            for tool in kwargs.get("tools") or []
            if isinstance(tool, dict)
        }
        reply = self.reply(messages, tools=tools)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def reply(
        self, messages: Sequence[BaseMessage], *, tools: set[str] | frozenset[str] = frozenset()
    ) -> AIMessage:
        """The answer to ``messages``; tool calls instead of markers for the tools named."""
        reading = _read(messages)
        if not _is_question(reading.question):
            return AIMessage(_acknowledge(reading.question))
        terms = _terms(reading.question, _QUESTION_WORDS)
        shape = _answer_shape(reading.question)
        scored: list[tuple[float, Evidence]] = []
        for e in reading.evidence:
            shared = len(terms & _terms(e.text))
            # A tie is broken by the kind of answer asked for, never a missing word.
            fits = shared > 0 and shape is not None and _fits(e.text, terms, shape)
            scored.append((shared + (0.5 if fits else 0.0), e))
        best = max((score for score, _ in scored), default=0)
        if best == 0:
            if reading.searched:
                return AIMessage(OFFLINE_UNKNOWN)
            query = " ".join(reading.question.split())[:MAX_QUERY_CHARS]
            if "search_episodic" in tools:
                count = sum(1 for m in messages if m.type == "tool") + 1
                call = ToolCall(
                    name="search_episodic", args={"query": query}, id=f"call_search_{count}"
                )
                return AIMessage("", tool_calls=[call])
            return AIMessage(episodic_search_marker(query))
        top = [e for score, e in scored if score == best]
        plain = [e for e in top if e.tier == 3]
        wanted = [e for e in top if e.tier < 3 and e.message_id not in reading.asked]
        newest_plain = max((e.order for e in plain), default=-1)
        fresher = [e for e in wanted if e.order > newest_plain]
        if fresher:  # the conversation said something later than what is shown in full
            target = max(fresher, key=lambda e: e.order)
            draft = _join(top, self.max_pieces)
            if "request_tier" in tools:
                call = ToolCall(
                    name="request_tier",
                    args={"message_id": target.message_id, "level": 3},
                    id=f"call_tier_{target.message_id}",
                )
                return AIMessage(draft, tool_calls=[call])
            return AIMessage(f"{draft} [REQUEST_TIER:3:{target.message_id}]")
        if _asks_for_the_latest(reading.question):
            # "When is the launch now?": what this conversation said beats older memory.
            said = [e for e in plain if e.message_id is not None]
            plain = said or plain
        chosen = plain or top
        if shape is _TIME:
            # One time answers "when" (two pieces naming two times would contradict each
            # other): the newest, and of pieces shown together the most specific.
            chosen = [max(chosen, key=lambda e: (e.order, -len(e.text)))]
        return AIMessage(_join(chosen, self.max_pieces))


_LATEST = _word_set("now currently current latest still anymore")


def _asks_for_the_latest(question: str) -> bool:
    return bool(_LATEST & set(_WORD.findall(question.lower())))


def _join(pieces: Sequence[Evidence], limit: int) -> str:
    texts = list(dict.fromkeys(e.text for e in sorted(pieces, key=lambda e: e.order)))
    return " ".join(texts[:limit])


def _acknowledge(text: str) -> str:
    if not text.strip():
        return "Noted."
    tier1 = OfflineTierer().tier_text(text).tier1
    facts = [f for f in parse_tier1(tier1) if f.key not in ("topic", "note")]
    if not facts:
        return "Noted."
    return "Noted: " + ", ".join(f"{f.key}={f.value}" for f in facts) + "."
