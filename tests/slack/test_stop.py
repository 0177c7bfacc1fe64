"""A stop that Slack's closing handshake cuts short still runs to its end (the replica's goodbye, the paused
compilers' resume): what ``disconnect`` and ``run_bot``'s stop do with a close that never answers."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.slack import app as slack_app


class Handler:
    """Bolt's Socket Mode handler at its edge: a close that raises, or never ends."""

    def __init__(self, close: Any) -> None:
        self._close = close

    async def close_async(self) -> None:
        await self._close()


async def _cancelled() -> None:
    raise asyncio.CancelledError


async def _forever() -> None:
    await asyncio.Event().wait()


@pytest.mark.parametrize("close", [_cancelled, _forever])
async def test_a_close_cut_short_is_logged_and_the_stop_goes_on(close: Any, monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(slack_app, "DISCONNECT_TIMEOUT", 0.05)
    await slack_app.disconnect(Handler(close))  # type: ignore[arg-type]
    assert "did not close cleanly" in caplog.text

