"""Waiting in tests: poll a condition until it holds, or fail saying what did not happen in how long.

For what only polling can see: a process's state in /proc, a file that appears, a host's or a scheduler's
state. ``wait_until`` blocks (for sync code, or for what needs no event loop meanwhile); ``eventually`` is
its twin for coroutines: it lets the loop run between polls, and its condition may be a coroutine function.
What the Slack emulator records is waited on with its own event-driven ``emu.wait_for`` instead.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

POLL = 0.02  # seconds between two looks


def wait_until(condition: Callable[[], T | None], *, timeout: float = 10.0, what: str = "the condition",
               interval: float = POLL) -> T:
    """Call ``condition`` until it returns something truthy, and return that; TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@overload
async def eventually(condition: Callable[[], Awaitable[T | None]], *, timeout: float = ..., what: str = ...,
                     interval: float = ...) -> T: ...


@overload
async def eventually(condition: Callable[[], T | None], *, timeout: float = ..., what: str = ...,
                     interval: float = ...) -> T: ...


async def eventually(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "the condition",
                     interval: float = POLL) -> object:
    """``wait_until`` for coroutines: asyncio.sleep between polls; ``condition`` may be sync or async."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)
