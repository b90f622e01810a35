"""Loading helpers for the LoCoMo benchmark (long conversational memory).

The data file is not part of the package (its licence allows evaluation only); point
:func:`load_locomo` at a local copy of ``locomo10.json``. The helpers turn it into plain
records the retrieval and memory benchmarks share, so every benchmark reads the
conversations, turns and questions the same way.

Example::

    from benchmarks.locomo import load_locomo, retrieval_questions
    conversations = load_locomo("locomo10.json")
    questions = retrieval_questions(conversations[0])
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_DATA_PATH",
    "Conversation",
    "Question",
    "Reach",
    "Turn",
    "evidence_reach",
    "load_locomo",
    "normalise_evidence",
    "retrieval_questions",
]

#: Where the benchmarks look for the data when no path is given (``LOCOMO_PATH`` overrides).
DEFAULT_DATA_PATH = Path(
    os.environ.get("LOCOMO_PATH", Path(__file__).resolve().parents[2] / "shared/data/locomo10.json")
)

#: Category numbers as the dataset's own evaluation code reads them.
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation, with the text a memory store would index."""

    dia_id: str
    session: int
    speaker: str
    date: str
    text: str
    caption: str | None

    @property
    def indexed_text(self) -> str:
        """``[session date] speaker: text`` plus ``[shares <caption>]`` on image turns."""
        body = f"[{self.date}] {self.speaker}: {self.text}"
        return f"{body} [shares {self.caption}]" if self.caption else body


@dataclass(frozen=True)
class Question:
    """A question with its category, answer and the ids of its evidence turns."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """A LoCoMo conversation: its turns in order and its questions."""

    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def normalise_evidence(raw: Sequence[str], known_ids: set[str]) -> tuple[str, ...]:
    """Canonical evidence ids: split multi-id strings, fix ``D:11:26``/``D30:05``, drop unknown.

    Example::

        >>> normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"], {"D8:6", "D11:26"})
        ('D8:6', 'D11:26')
    """
    out: list[str] = []
    for item in raw:
        for session, turn in _DIA_ID.findall(item):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known_ids and dia_id not in out:
                out.append(dia_id)
    return tuple(out)


def _parse(sample: dict[str, object]) -> Conversation:
    conv = sample["conversation"]
    assert isinstance(conv, dict)
    turns: list[Turn] = []
    session_numbers = sorted(
        int(key.split("_")[1])
        for key in conv
        if re.fullmatch(r"session_\d+", key) and conv.get(key)
    )
    for number in session_numbers:
        date = str(conv.get(f"session_{number}_date_time", ""))
        for raw in conv[f"session_{number}"]:
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    session=number,
                    speaker=str(raw["speaker"]),
                    date=date,
                    text=str(raw["text"]),
                    caption=raw.get("blip_caption") or None,
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    qa = sample["qa"]
    assert isinstance(qa, list)
    for raw_q in qa:
        answer = raw_q.get("answer", raw_q.get("adversarial_answer", ""))
        questions.append(
            Question(
                question=str(raw_q["question"]),
                answer=str(answer),
                category=int(raw_q["category"]),
                evidence=normalise_evidence(raw_q.get("evidence", []), known),
            )
        )
    return Conversation(
        sample_id=str(sample["sample_id"]),
        speakers=(str(conv["speaker_a"]), str(conv["speaker_b"])),
        turns=tuple(turns),
        questions=tuple(questions),
    )


def load_locomo(path: str | Path | None = None) -> list[Conversation]:
    """Read ``locomo10.json`` into :class:`Conversation` records, in file order."""
    data_path = Path(path) if path is not None else DEFAULT_DATA_PATH
    with data_path.open(encoding="utf-8") as fh:
        samples = json.load(fh)
    return [_parse(sample) for sample in samples]


def retrieval_questions(conversation: Conversation) -> list[Question]:
    """The questions retrieval recall is measured on: categories 1-4 with evidence."""
    return [q for q in conversation.questions if q.category in (1, 2, 3, 4) and q.evidence]


class _Archive(Protocol):
    def search_archive(self, query: str, *, limit: int) -> Sequence[Any]: ...


@dataclass(frozen=True)
class Reach:
    """How a question's evidence turns reach the model at the end of a conversation."""

    evidence: int
    """Evidence turns of every question."""
    in_view: int
    """Those the model is shown."""
    by_search: int
    """Those not shown that a search of the archive for the question finds."""

    @property
    def reached(self) -> int:
        """Evidence turns shown or found."""
        return self.in_view + self.by_search


def evidence_reach(
    questions: Sequence[Question],
    message_of: Mapping[str, str],
    shown: Container[str],
    archive: _Archive,
    *,
    limit: int,
) -> Reach:
    """Count the evidence turns of ``questions`` (``message_of``: a turn's stored message id)
    that are ``shown``, or else found by ``archive.search_archive(question, limit=limit)``."""
    evidence = in_view = by_search = 0
    for question in questions:
        found = {
            str(hit.value.get("message_id"))
            for hit in archive.search_archive(question.question, limit=limit)
        }
        for dia in question.evidence:
            evidence += 1
            if message_of[dia] in shown:
                in_view += 1
            elif message_of[dia] in found:
                by_search += 1
    return Reach(evidence, in_view, by_search)
