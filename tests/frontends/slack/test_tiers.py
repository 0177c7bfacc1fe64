"""The budget that keeps rigops inside Slack's rate tiers: a window per method (per channel for posts), edits
that coalesce and give way, and SlackReply against an emulator that enforces the same tiers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.core.talk import Place
from bot.frontends.slack.reply import SlackReply
from bot.frontends.slack.tiers import Budget, Edits, Tier, Window
from bot.text.message import Message
from slackemu import SlackEmulator
from slackemu import Tier as SlackTier

OPS = "C0OPS"


async def test_a_window_admits_its_tier_then_waits_for_the_oldest_answer_to_age() -> None:
    window = Window(Tier(2, 0.3))
    started = time.monotonic()
    for _ in range(2):
        await window.take()
        await window.sent()
    assert window.delay() > 0.2 and not window.try_take()
    await window.take()
    assert 0.25 <= time.monotonic() - started < 1.0


async def test_a_call_being_sent_holds_its_place_until_answered() -> None:
    window = Window(Tier(1, 0.05))
    await window.take()
    assert window.delay() == float("inf")
    waiter = asyncio.create_task(window.take())
    await asyncio.sleep(0.1)
    assert not waiter.done()
    await window.sent()
    await asyncio.wait_for(waiter, 1.0)


async def test_posts_count_per_channel_other_methods_per_app() -> None:
    budget = Budget({"chat.postMessage": Tier(1, 60.0, per_channel=True), "chat.update": Tier(1, 60.0)})
    assert budget.window("chat.postMessage", "C1") is not budget.window("chat.postMessage", "C2")
    assert budget.window("chat.update", "C1") is budget.window("chat.update", "C2")
    assert budget.window("auth.test") is None
    async with budget.call("chat.postMessage", channel="C1"):
        pass
    async with asyncio.timeout(1.0):  # another channel's posts are not held back by C1's
        async with budget.call("chat.postMessage", channel="C2"):
            pass


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def send(self, place: Place, message_id: str, message: Message) -> bool:
        self.sent.append((message_id, message.text))
        return True


async def test_edits_of_one_message_coalesce_to_the_newest_text() -> None:
    recorder = Recorder()
    edits = Edits(Window(Tier(1, 0.2)), recorder.send)
    place = Place(OPS)
    started = time.monotonic()
    for n in range(1, 6):
        assert await edits.update(place, "card", Message(f"step {n}"))
    assert time.monotonic() - started < 0.1  # nobody waited for the budget
    await edits.close(wait=2.0)
    assert recorder.sent == [("card", "step 1"), ("card", "step 5")]


async def test_the_message_edited_longest_ago_goes_first() -> None:
    recorder = Recorder()
    edits = Edits(Window(Tier(1, 0.1)), recorder.send)
    place = Place(OPS)
    await edits.update(place, "busy", Message("busy 1"))
    await edits.update(place, "busy", Message("busy 2"))
    await edits.update(place, "quiet", Message("quiet 1"))
    await edits.update(place, "busy", Message("busy 3"))
    await edits.close(wait=2.0)
    assert recorder.sent == [("busy", "busy 1"), ("quiet", "quiet 1"), ("busy", "busy 3")]


@pytest.fixture
async def client() -> AsyncIterator[tuple[SlackEmulator, AsyncWebClient]]:
    tiers = {"chat.update": SlackTier(2, 2.0), "chat.postMessage": SlackTier(4, 2.0, per_channel=True)}
    async with SlackEmulator(tiers=tiers) as emu, aiohttp.ClientSession() as session:
        web = AsyncWebClient(token=emu.bot_token, base_url=emu.api_url, session=session)
        web.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=3))
        yield emu, web


async def test_posts_never_wait_behind_edits_and_slack_never_says_429(
        client: tuple[SlackEmulator, AsyncWebClient]) -> None:
    emu, web = client
    reply = SlackReply(web, tiers={"chat.update": Tier(2, 2.0), "chat.postMessage": Tier(4, 2.0, per_channel=True)})
    place = Place(OPS)
    cards = [await reply.post(place, Message(f"card {n}")) for n in range(3)]
    started = time.monotonic()
    for step in range(1, 4):
        for n, card in enumerate(cards):
            assert card is not None and await reply.update(place, card, Message(f"card {n} step {step}"))
    result = await reply.post(place, Message("build 7 succeeded"))
    waited = time.monotonic() - started
    assert result is not None and waited < 1.0  # nine edits asked for, two allowed: none held the post up
    await emu.wait_for(lambda: all("step 3" in emu.message(OPS, c).text for c in cards if c), timeout=10)
    await reply.close()
    updates = emu.calls_to("chat.update")
    assert [c.status for c in emu.calls].count(429) == 0
    assert len(updates) <= 5  # each card's newest text once, and the first two edits


@pytest.mark.parametrize("shared", [True, False])
async def test_rigops_sharing_one_app_split_its_budget_and_slack_never_says_429(
        shared: bool, client: tuple[SlackEmulator, AsyncWebClient]) -> None:
    """Two rigops (replicas) post in one channel at once; the limit is the app's. Told they are two, each keeps to
    half of it and Slack never answers 429; not told (the control), they overrun it together."""
    emu, web = client
    tiers = {"chat.postMessage": Tier(4, 2.0, per_channel=True)}
    replies = [SlackReply(web, tiers=tiers) for _ in range(2)]
    if shared:
        for reply in replies:
            reply.budget.set_share(2)

    async def post_all(reply: SlackReply, name: str) -> list[str | None]:
        return [await reply.post(Place(OPS), Message(f"{name} {n}")) for n in range(4)]

    posted = await asyncio.gather(*(post_all(r, name) for r, name in zip(replies, "ab", strict=True)))
    for reply in replies:
        await reply.close()
    statuses = [c.status for c in emu.calls_to("chat.postMessage")]
    if shared:
        assert all(ts is not None for ts in posted[0] + posted[1]) and statuses.count(429) == 0
    else:
        assert statuses.count(429) > 0


def test_a_shared_budget_keeps_at_least_one_call_per_window() -> None:
    budget = Budget({"chat.update": Tier(50), "conversations.list": Tier(20)})
    update = budget.window("chat.update")
    assert update is not None and update.tier.calls == 50
    budget.set_share(3)
    assert update.tier.calls == 16 and budget.window("conversations.list").tier.calls == 6  # type: ignore[union-attr]
    budget.set_share(100)
    assert update.tier.calls == 1
    budget.set_share(1)
    assert update.tier.calls == 50
