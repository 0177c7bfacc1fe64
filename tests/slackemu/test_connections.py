"""Several Socket Mode connections at once, as replicas of one app hold them: each envelope goes to one, an event
not acked is retried (on another connection if there is one), and an 11th connection is turned away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from slackemu import MAX_CONNECTIONS, MAX_RETRIES, SlackEmulator

pytestmark = pytest.mark.timeout(10)


class Replica:
    """One real slack_sdk Socket Mode client; it records what it is given and acks it unless told not to."""

    def __init__(self, emu: SlackEmulator, *, acks: bool) -> None:
        self.acks = acks
        self.number: int | None = None  # its connection, from hello's debug_info.host
        self.received: list[tuple[str, int | None, str | None]] = []  # envelope id, retry_attempt, retry_reason
        self.client = SocketModeClient(
            app_token=emu.app_token, web_client=AsyncWebClient(base_url=emu.api_url), ping_interval=0.5
        )
        self.client.message_listeners.append(self._on_message)
        self.client.socket_mode_request_listeners.append(self._on_request)

    async def _on_message(self, client: Any, message: dict[str, Any], raw: str | None) -> None:
        if message.get("type") == "hello":
            self.number = int(message["debug_info"]["host"].rsplit("-", 1)[1])

    async def _on_request(self, client: Any, request: SocketModeRequest) -> None:
        self.received.append((request.envelope_id, request.retry_attempt, request.retry_reason))
        if self.acks:
            await self.client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    @property
    def envelope_ids(self) -> set[str]:
        return {eid for eid, _, _ in self.received}


@asynccontextmanager
async def replicas(emu: SlackEmulator, *acks: bool) -> AsyncIterator[list[Replica]]:
    """Connected replicas, one per flag (does it ack?), each known by its connection number."""
    started = [Replica(emu, acks=a) for a in acks]
    try:
        for replica in started:
            await replica.client.connect()
        await emu.wait_for(lambda: all(r.number is not None for r in started), timeout=5)
        yield started
    finally:
        for replica in started:
            await replica.client.close()


async def burst(emu: SlackEmulator, count: int) -> list[str]:
    """``count`` messages in #ops at once; their envelope ids."""
    before = len(emu.envelopes)
    for i in range(count):
        await emu.send_message(f"message {i}")
    return list(emu.envelopes)[before:]


def acks_per_envelope(emu: SlackEmulator) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ack in emu.acks:
        counts[ack.envelope_id] = counts.get(ack.envelope_id, 0) + 1
    return counts


async def all_acked(emu: SlackEmulator, sent: list[str], timeout: float = 5) -> None:
    await emu.wait_for(lambda: all(emu.ack_for(eid) for eid in sent), timeout=timeout)


@pytest.fixture
async def emu() -> AsyncIterator[SlackEmulator]:
    async with SlackEmulator() as emulator:
        yield emulator


async def test_a_burst_goes_once_each_across_three_connections(emu: SlackEmulator) -> None:
    async with replicas(emu, True, True, True) as three:
        sent = await burst(emu, 100)
        await all_acked(emu, sent)
    got = [r.envelope_ids for r in three]
    assert sum(len(g) for g in got) == 100 and set().union(*got) == set(sent)  # each exactly once, none lost
    assert all(len(g) >= 20 for g in got), [len(g) for g in got]  # spread, not all on one connection
    assert acks_per_envelope(emu) == dict.fromkeys(sent, 1)
    for replica in three:
        assert replica.number is not None and set(emu.delivered_on(replica.number)) == replica.envelope_ids
    assert all(len(emu.envelopes[eid].connections) == 1 for eid in sent)


def bolt_app(emu: SlackEmulator, seen: list[str]) -> AsyncApp:
    """A bolt app noting the event_id of each message event it handles."""
    app = AsyncApp(client=AsyncWebClient(token=emu.bot_token, base_url=emu.api_url))

    @app.event("message")
    async def on_message(body: dict[str, Any]) -> None:
        seen.append(body["event_id"])

    return app


async def test_two_bolt_apps_each_handle_part_of_a_burst(emu: SlackEmulator) -> None:
    handled: list[list[str]] = [[], []]
    handlers = [AsyncSocketModeHandler(bolt_app(emu, seen), emu.app_token, ping_interval=0.5) for seen in handled]
    try:
        for handler in handlers:
            await handler.connect_async()
        await emu.wait_for(lambda: emu.connection_count == 2, timeout=5)
        sent = await burst(emu, 100)
        await emu.wait_for(lambda: len(handled[0]) + len(handled[1]) >= 100, timeout=5)
    finally:
        for handler in handlers:
            await handler.close_async()
    events = {emu.envelopes[eid].payload["event_id"] for eid in sent}
    assert sorted(handled[0] + handled[1]) == sorted(events)  # every event handled, and by one app only
    assert handled[0] and handled[1]


async def test_an_event_not_acked_is_retried_on_another_connection() -> None:
    async with SlackEmulator(ack_timeout=0.3) as emu, replicas(emu, False, True) as (silent, acking):
        start = time.monotonic()
        sent = await burst(emu, 4)
        await all_acked(emu, sent)
        waited = time.monotonic() - start
    first_on_silent = [eid for eid in sent if emu.envelopes[eid].connections[0] == silent.number]
    assert first_on_silent and silent.envelope_ids == set(first_on_silent)
    for eid in first_on_silent:
        assert emu.envelopes[eid].connections == [silent.number, acking.number]
        assert (eid, 0, "") in silent.received and (eid, 1, "timeout") in acking.received
    assert acks_per_envelope(emu) == dict.fromkeys(sent, 1)
    assert 0.3 <= waited < 2  # the retry waits for the ack timeout, not longer


async def test_an_event_nobody_acks_is_given_up_after_three_retries() -> None:
    async with SlackEmulator(ack_timeout=0.1) as emu, replicas(emu, False, False) as two:
        [eid] = await burst(emu, 1)
        await emu.wait_for(lambda: eid in emu.abandoned, timeout=5)
        await asyncio.sleep(0.3)  # no fifth delivery after giving up
    env = emu.envelopes[eid]
    assert env.deliveries == MAX_RETRIES + 1 and env.retry_attempt == MAX_RETRIES
    assert sorted(attempt for r in two for e, attempt, _ in r.received if e == eid) == [0, 1, 2, 3]
    assert set(env.connections) == {r.number for r in two} and env.connections[0] != env.connections[1]
    assert emu.ack_for(eid) is None


async def test_closing_a_connection_mid_burst_loses_nothing(emu: SlackEmulator) -> None:
    async def send_in_waves() -> list[str]:
        ids: list[str] = []
        for _ in range(10):
            ids += await burst(emu, 10)
            await asyncio.sleep(0.02)
        return ids

    async with replicas(emu, True, True, False) as (first, second, holding):
        sending = asyncio.create_task(send_in_waves())
        await emu.wait_for(lambda: len(holding.received) >= 5, timeout=5)
        await holding.client.close()  # goes away without acking what it holds, while the burst goes on
        closed_mid_burst = not sending.done()
        sent = await sending
        await all_acked(emu, sent)
    assert closed_mid_burst and len(sent) == 100
    assert holding.number is not None and set(emu.delivered_on(holding.number)) == holding.envelope_ids
    assert acks_per_envelope(emu) == dict.fromkeys(sent, 1)
    assert first.envelope_ids | second.envelope_ids == set(sent)
    for eid in holding.envelope_ids:
        env = emu.envelopes[eid]
        assert (env.retry_attempt, env.retry_reason, env.connections[0]) == (1, "timeout", holding.number)


async def test_the_eleventh_connection_is_turned_away(emu: SlackEmulator) -> None:
    web = AsyncWebClient(base_url=emu.api_url)
    async with replicas(emu, *[True] * MAX_CONNECTIONS) as ten, aiohttp.ClientSession() as session:
        assert emu.connection_count == MAX_CONNECTIONS
        url = (await web.apps_connections_open(app_token=emu.app_token))["url"]  # the URL is still handed out
        async with session.ws_connect(url) as ws:
            refused = await ws.receive_json(timeout=5)
            assert refused["type"] == "disconnect" and refused["reason"] == "too_many_websockets"
            assert (await ws.receive(timeout=5)).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert emu.refused_connections == 1 and emu.connection_count == MAX_CONNECTIONS
        sent = await burst(emu, 20)
        await all_acked(emu, sent)
        assert set().union(*(r.envelope_ids for r in ten)) == set(sent)

        await ten[0].client.close()
        await emu.wait_for(lambda: emu.connection_count == MAX_CONNECTIONS - 1, timeout=5)
        url = (await web.apps_connections_open(app_token=emu.app_token))["url"]
        async with session.ws_connect(url) as ws:
            hello = await ws.receive_json(timeout=5)
            assert hello["type"] == "hello" and hello["num_connections"] == MAX_CONNECTIONS
