"""The flow driver that runs blocking requests in a worker thread, a run at a time."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import pytest

from langmem_tiers.effects import adrive, adrive_offloaded, drive


class Read(NamedTuple):
    key: str


class Ask(NamedTuple):
    question: str


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _on_loop_with(executor: ThreadPoolExecutor, coroutine: Any) -> Any:
    async def main() -> Any:
        asyncio.get_running_loop().set_default_executor(executor)
        return await coroutine

    return asyncio.run(main())


def _flow() -> Generator[Any, Any, list[Any]]:
    seen = [(yield Read("a")), (yield Read("b")), (yield Read("c"))]
    seen.append((yield Ask("why?")))
    seen.append((yield Read("d")))
    return seen


def _read(request: Read) -> tuple[str, bool]:
    return request.key, threading.current_thread() is threading.main_thread()


async def _ask(request: Ask) -> tuple[str, bool]:
    return "because", threading.current_thread() is threading.main_thread()


def test_a_run_of_blocking_requests_costs_one_hop_and_awaited_ones_stay_on_the_loop() -> None:
    executor = CountingExecutor()

    seen = _on_loop_with(executor, adrive_offloaded(_flow(), {Read: _read}, {Ask: _ask}))

    assert seen == [("a", False), ("b", False), ("c", False), ("because", True), ("d", False)]
    assert executor.submitted == 2  # a, b, c in one run; d in the next


def test_the_answers_are_those_of_the_blocking_driver() -> None:
    def blocking_ask(request: Ask) -> tuple[str, bool]:
        return "because", True

    expected = drive(_flow(), {Read: lambda r: (r.key, False), Ask: blocking_ask})

    assert asyncio.run(adrive_offloaded(_flow(), {Read: _read}, {Ask: _ask})) == expected


def test_a_failing_request_is_thrown_into_the_flow_at_its_yield() -> None:
    def flow() -> Generator[Any, Any, list[str]]:
        handled = []
        try:
            yield Read("broken")
        except KeyError as err:
            handled.append(f"read: {err.args[0]}")
        try:
            yield Ask("broken")
        except ValueError as err:
            handled.append(f"ask: {err}")
        handled.append((yield Read("fine"))[0])
        return handled

    def read(request: Read) -> tuple[str, bool]:
        if request.key == "broken":
            raise KeyError("no such key")
        return _read(request)

    async def ask(request: Ask) -> str:
        raise ValueError("the model failed")

    assert asyncio.run(adrive_offloaded(flow(), {Read: read}, {Ask: ask})) == [
        "read: no such key",
        "ask: the model failed",
        "fine",
    ]


def test_an_error_the_flow_lets_through_reaches_the_caller_and_closes_the_flow() -> None:
    closed = []

    def flow() -> Generator[Any, Any, None]:
        try:
            yield Read("a")
            raise RuntimeError("the flow gave up")
        finally:
            closed.append(True)

    with pytest.raises(RuntimeError, match="the flow gave up"):
        asyncio.run(adrive_offloaded(flow(), {Read: _read}, {Ask: _ask}))
    assert closed == [True]


def test_a_request_nobody_answers_names_itself() -> None:
    def flow() -> Generator[Any, Any, None]:
        yield "something else"

    with pytest.raises(TypeError, match="no handler for flow request 'something else'"):
        asyncio.run(adrive_offloaded(flow(), {Read: _read}, {Ask: _ask}))
    with pytest.raises(TypeError, match="no handler for flow request 'something else'"):
        drive(flow(), {Read: _read})
    with pytest.raises(TypeError, match="no handler for flow request 'something else'"):
        asyncio.run(adrive(flow(), {Ask: _ask}))


def test_cancellation_waits_for_the_run_then_reaches_the_flow_at_its_next_request() -> None:
    inside, release = threading.Event(), threading.Event()
    events: list[str] = []

    def slow_read(request: Read) -> str:
        if request.key == "slow":
            inside.set()
            release.wait(10)
            events.append("the slow read finished")
        else:
            events.append(f"read {request.key}")
        return request.key

    def flow() -> Generator[Any, Any, str]:
        yield Read("slow")
        try:
            yield Read("next")
        except asyncio.CancelledError:
            events.append("the flow saw the cancellation")
            yield Read("rollback")
            raise
        return "not cancelled"

    async def main() -> None:
        task = asyncio.create_task(adrive_offloaded(flow(), {Read: slow_read}, {Ask: _ask}))
        await asyncio.to_thread(inside.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # still waiting for the thread to leave the flow
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # The run in progress answers its request and stops at the next one ("next" is
    # never read): the flow sees the cancellation there and its clean-up runs.
    assert events == ["the slow read finished", "the flow saw the cancellation", "read rollback"]


def test_blocking_requests_see_the_callers_context() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")

    def flow() -> Generator[Any, Any, list[str]]:
        return [(yield Read("a")), (yield Ask("b")), (yield Read("c"))]

    async def main() -> list[str]:
        request_id.set("r-1")
        return await adrive_offloaded(
            flow(),
            {Read: lambda r: f"{r.key}:{request_id.get()}"},
            {Ask: lambda r: asyncio.sleep(0, f"{r.question}:{request_id.get()}")},
        )

    assert asyncio.run(main()) == ["a:r-1", "b:r-1", "c:r-1"]
