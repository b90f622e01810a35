"""Engine operations written once, as generators of steps, driven sync or async.

An operation of the memory engine mixes database work (a store flow, itself driven
by the backend's I/O) with model work (a contradiction check, a summary, a merge).
It is written as a generator that yields :class:`Db`, :class:`Judge`,
:class:`Summarize` or :class:`Combine` and receives each result; :func:`drive` runs
it with blocking calls and :func:`adrive` with awaits, so ``engine.x`` and
``engine.ax`` share every line of logic. A step that raises is thrown back into the
generator at its ``yield``.

Example:
    >>> from langmem_tiers.sql.flow import Flow
    >>> def answer() -> Flow[int]:
    ...     return 42
    ...     yield
    >>> def operation():
    ...     n = yield Db(answer())
    ...     return n + 1
    >>> class FakeDb:
    ...     def run(self, flow):
    ...         try:
    ...             next(flow)
    ...         except StopIteration as stop:
    ...             return stop.value
    >>> drive(operation(), Services(FakeDb(), None, None, None))
    43
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import BaseMessage

from langmem_tiers import effects
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.engine.conflicts import Merger
from langmem_tiers.long_term.engine.contradiction import ContradictionChecker, Statement
from langmem_tiers.sql.flow import Flow
from langmem_tiers.tiers.base import Summarizer

__all__ = ["Combine", "Db", "Judge", "Services", "Step", "Steps", "Summarize", "adrive", "drive"]

T = TypeVar("T")
_T = TypeVar("_T")


class Db(NamedTuple):
    """Run a store flow; the result is the flow's return."""

    flow: Flow[Any]


class Judge(NamedTuple):
    """Check a new statement against existing ones; the result is a list of Verdict."""

    new: Statement
    existing: Sequence[Statement]


class Summarize(NamedTuple):
    """Summarise messages; the result is a Summary."""

    messages: Sequence[BaseMessage]


class Combine(NamedTuple):
    """Merge an existing statement with a new one; the result is the merged text."""

    old: str
    new: str


Step = Db | Judge | Summarize | Combine
Steps = Generator[Step, Any, T]


class Services(NamedTuple):
    """What steps run on: the database and the model-backed (or offline) helpers."""

    db: Any
    checker: ContradictionChecker | None
    summarizer: Summarizer | None
    merger: Merger | None


def _needs(what: str, value: _T | None) -> _T:
    if value is None:
        raise ConfigurationError(f"this engine operation needs a {what}, and none was given.")
    return value


def drive(steps: Steps[T], services: Services) -> T:
    """Run an operation to its end with blocking calls."""
    return effects.drive(
        steps,
        {
            Db: lambda s: services.db.run(s.flow),
            Judge: lambda s: _needs("checker", services.checker).check(s.new, s.existing),
            Summarize: lambda s: _needs("summarizer", services.summarizer).summarize(s.messages),
            Combine: lambda s: _needs("merger", services.merger).merge(s.old, s.new),
        },
    )


async def adrive(steps: Steps[T], services: Services) -> T:
    """Async twin of :func:`drive`: the same operation, each step awaited.

    On a database whose I/O blocks (SQLite, sync psycopg), the database steps between
    two model steps run in one worker thread (:func:`effects.adrive_offloaded`), not in a
    thread each.
    """
    model_steps: effects.AsyncHandlers = {
        Judge: lambda s: _needs("checker", services.checker).acheck(s.new, s.existing),
        Summarize: lambda s: _needs("summarizer", services.summarizer).asummarize(s.messages),
        Combine: lambda s: _needs("merger", services.merger).amerge(s.old, s.new),
    }
    if not services.db.is_async:
        return await effects.adrive_offloaded(
            steps, {Db: lambda s: services.db.run(s.flow)}, model_steps
        )
    return await effects.adrive(steps, {Db: lambda s: services.db.arun(s.flow), **model_steps})
