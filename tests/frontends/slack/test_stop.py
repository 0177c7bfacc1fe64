"""A stop that Slack's closing handshake cuts short still runs to its end (the replica's goodbye, the paused
compilers' resume): what ``disconnect`` and ``run_bot``'s stop do with a close that never answers."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from slack_sdk.socket_mode.aiohttp import SocketModeClient

from bot.frontends.slack import app as slack_app


class Handler:
    """Bolt's Socket Mode handler at its edge: a close that raises, or never ends, over slack_sdk's real client."""

    def __init__(self, close: Any) -> None:
        self._close = close
        self.client = SocketModeClient(app_token="xapp-1-A0TEST-1-stop")

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
    handler = Handler(close)
    session, processor = handler.client.aiohttp_client_session, handler.client.message_processor
    await slack_app.disconnect(handler)  # type: ignore[arg-type]
    assert "did not close cleanly" in caplog.text
    # what the client's own close would have done: no unclosed aiohttp session, no task left receiving
    await asyncio.wait([processor], timeout=2)
    assert session.closed and processor.done()

