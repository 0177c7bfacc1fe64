"""Small asyncio helpers rigops needs in more than one place."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


async def cancel(task: asyncio.Task[Any] | None) -> None:
    """Cancel a task and wait until it is done. Unlike ``suppress(CancelledError): await task``, a cancellation
    of the caller itself still reaches the caller; the task's own failure is logged, not raised."""
    if task is None or task is asyncio.current_task():
        return
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        log.error("task %s failed", task.get_name(), exc_info=task.exception())


def log_end(task: asyncio.Task[Any]) -> None:
    """A done-callback: a background task that failed says so in one line (its traceback at debug level)."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("%s ended: %s: %s", task.get_name(), type(exc).__name__, exc)
        log.debug("%s failed", task.get_name(), exc_info=exc)


class Tasks:
    """Background tasks with an owner: each is kept until it ends, a failure is logged in one line (never "Task
    exception was never retrieved"), and :meth:`close` cancels and waits for those still running."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(log_end)
        return task

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        for task in list(self._tasks):
            await cancel(task)


_lingering: set[asyncio.Task[Any]] = set()


async def within(work: Awaitable[T], timeout: float) -> T:
    """``work``'s result within ``timeout``, else TimeoutError; the work itself goes on in the background (a probe
    is not cut off halfway through an agent's start) and its end is logged in one line."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout)
    except TimeoutError:
        _lingering.add(task)
        task.add_done_callback(_forget)
        raise


def _forget(task: asyncio.Task[Any]) -> None:
    _lingering.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.info("a late %s ended with: %s", task.get_name(), exc)
