"""The emulator keeps Slack's rate tiers when asked: per method per app, chat.postMessage per channel, answering
429 with Retry-After; without tiers it serves every call, as the rest of the suite expects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from slackemu import SLACK_TIERS, SlackEmulator, Tier


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as http:
        yield http


async def call(http: aiohttp.ClientSession, emu: SlackEmulator, method: str, **params: str) -> tuple[int, str | None]:
    async with http.post(f"{emu.api_url}{method}", data=params,
                         headers={"Authorization": f"Bearer {emu.bot_token}"}) as resp:
        await resp.read()
        return resp.status, resp.headers.get("Retry-After")


async def test_calls_past_a_methods_tier_get_429_with_retry_after(session: aiohttp.ClientSession) -> None:
    tiers = {"chat.update": Tier(3, 30.0), "chat.postMessage": Tier(2, 30.0, per_channel=True)}
    async with SlackEmulator(tiers=tiers) as emu:
        emu.add_channel("C0OTHER", "other")
        posts = [await call(session, emu, "chat.postMessage", channel=channel, text="hi")
                 for channel in ("C0OPS", "C0OPS", "C0OPS", "C0OTHER", "C0OTHER")]
        ts = str(emu.messages("C0OPS")[0].ts)
        edits = [await call(session, emu, "chat.update", channel=channel, ts=ts, text="edited")
                 for channel in ("C0OPS", "C0OTHER", "C0OPS", "C0OPS")]
        react = await call(session, emu, "reactions.add", channel="C0OPS", timestamp=ts, name="eyes")
    assert [status for status, _ in posts] == [200, 200, 429, 200, 200]  # posts count per channel
    assert posts[2][1] is not None and 1 <= int(posts[2][1]) <= 30
    assert [status for status, _ in edits] == [200, 200, 200, 429]  # edits count per method, whatever the channel
    assert react == (200, None)  # a method without a tier here is not held back
    refused = [c for c in emu.calls if c.status == 429]
    assert [c.method for c in refused] == ["chat.postMessage", "chat.update"]
    assert all(c.response == {"ok": False, "error": "ratelimited"} for c in refused)


async def test_a_window_that_passed_admits_calls_again(session: aiohttp.ClientSession) -> None:
    async with SlackEmulator(tiers={"chat.postEphemeral": Tier(1, 0.3)}) as emu:
        first = await call(session, emu, "chat.postEphemeral", channel="C0OPS", user="U0HUMAN", text="a")
        second = await call(session, emu, "chat.postEphemeral", channel="C0OPS", user="U0HUMAN", text="b")
        await asyncio.sleep(0.35)  # the window itself is what is tested
        third = await call(session, emu, "chat.postEphemeral", channel="C0OPS", user="U0HUMAN", text="c")
    assert (first[0], second, third[0]) == (200, (429, "1"), 200)


async def test_without_tiers_every_call_is_served(session: aiohttp.ClientSession) -> None:
    async with SlackEmulator() as emu:
        statuses = {(await call(session, emu, "chat.postMessage", channel="C0OPS", text=str(i)))[0] for i in range(30)}
    assert statuses == {200}
    assert SLACK_TIERS["chat.update"] == Tier(50, 60.0) and SLACK_TIERS["chat.postMessage"].per_channel
