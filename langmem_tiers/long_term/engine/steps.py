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

from langmem_tiers.long_term.engine.conflicts import ContradictionChecker, Merger, Statement
from langmem_tiers.sql.flow import Flow
from langmem_tiers.tiers.base import Summarizer

__all__ = ["Combine", "Db", "Judge", "Services", "Step", "Steps", "Summarize", "adrive", "drive"]

T = TypeVar("T")


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


def _perform(step: Step, services: Services) -> Any:
    if isinstance(step, Db):
        return services.db.run(step.flow)
    if isinstance(step, Judge):
        assert services.checker is not None
        return services.checker.check(step.new, step.existing)
    if isinstance(step, Summarize):
        assert services.summarizer is not None
        return services.summarizer.summarize(step.messages)
    if isinstance(step, Combine):
        assert services.merger is not None
        return services.merger.merge(step.old, step.new)
    raise TypeError(f"unknown engine step {step!r}")


async def _aperform(step: Step, services: Services) -> Any:
    if isinstance(step, Db):
        return await services.db.arun(step.flow)
    if isinstance(step, Judge):
        assert services.checker is not None
        return await services.checker.acheck(step.new, step.existing)
    if isinstance(step, Summarize):
        assert services.summarizer is not None
        return await services.summarizer.asummarize(step.messages)
    if isinstance(step, Combine):
        assert services.merger is not None
        return await services.merger.amerge(step.old, step.new)
    raise TypeError(f"unknown engine step {step!r}")


def drive(steps: Steps[T], services: Services) -> T:
    """Run an operation to its end with blocking calls."""
    try:
        step = next(steps)
        while True:
            try:
                result = _perform(step, services)
            except Exception as err:  # the operation decides (a retry, or it re-raises)
                step = steps.throw(err)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(steps: Steps[T], services: Services) -> T:
    """Async twin of :func:`drive`: the same operation, each step awaited."""
    try:
        step = next(steps)
        while True:
            try:
                result = await _aperform(step, services)
            except Exception as err:  # the operation decides (a retry, or it re-raises)
                step = steps.throw(err)
            else:
                step = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
