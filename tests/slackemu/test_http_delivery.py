"""The emulator sends and refuses what Slack sends and refuses: the Events API over HTTP (signatures, retries with
their headers, no retries for commands, X-Slack-No-Retry, subscriptions turned off after too many failures),
what an edit sends, conversations.info without its scope, and a response_url's five uses."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from slackemu import SlackEmulator
from slackemu.http import DISABLE_AFTER, HTTP_RETRIES

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class App:
    """A Request URL that answers as told and keeps what it got."""

    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    got: list[tuple[dict[str, str], str]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        self.got.append((dict(request.headers), body))
        await asyncio.sleep(self.delay)
        return web.Response(status=self.status, headers=self.headers, text="")


@pytest.fixture
async def app() -> AsyncIterator[App]:
    target = App()
    web_app = web.Application()
    web_app.router.add_post("/slack/events", target.handle)
    runner = web.AppRunner(web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    target.url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    yield target
    await runner.cleanup()


async def sent(emu: SlackEmulator, text: str) -> str:
    """A person's message; the envelope id it went out in."""
    await emu.send_message(text)
    return list(emu.envelopes)[-1]


async def test_events_are_signed_json_and_commands_and_clicks_are_forms(emulator: SlackEmulator, app: App) -> None:
    http = emulator.deliver_over_http(app.url, SECRET)
    await emulator.send_message("status")
    await emulator.send_slash("mem")
    await emulator.send_action("rigops_run", "1")
    await emulator.wait_for(lambda: len(http.deliveries) == 3)
    verifier = SignatureVerifier(SECRET)
    for headers, body in app.got:
        assert verifier.is_valid(body=body, timestamp=headers["X-Slack-Request-Timestamp"],
                                 signature=headers["X-Slack-Signature"])
    (h1, event), (h2, command), (_, click) = app.got
    assert h1["Content-Type"] == "application/json" and json.loads(event)["event"]["text"] == "status"
    assert h2["Content-Type"] == "application/x-www-form-urlencoded" and "text=mem" in command
    assert click.startswith("payload=")
    assert all(d.ok for d in http.deliveries) and http.retries == []


async def test_a_failed_event_is_retried_three_times_with_slacks_headers(emulator: SlackEmulator, app: App) -> None:
    app.status = 500
    http = emulator.deliver_over_http(app.url, SECRET)
    eid = await sent(emulator, "status")
    await emulator.wait_for(lambda: eid in emulator.abandoned)
    assert [h.get("X-Slack-Retry-Num") for h, _ in app.got] == [None, "1", "2", "3"]
    assert {h.get("X-Slack-Retry-Reason") for h, _ in app.got[1:]} == {"http_error"}
    assert len({json.loads(b)["event_id"] for _, b in app.got}) == 1  # the same event each time
    assert len(http.retries) == HTTP_RETRIES


async def test_a_slow_answer_is_a_timeout_and_retried(emulator: SlackEmulator, app: App) -> None:
    app.delay = 0.5
    http = emulator.deliver_over_http(app.url, SECRET, timeout=0.1)
    eid = await sent(emulator, "status")
    await emulator.wait_for(lambda: eid in emulator.abandoned, timeout=20)
    assert [d.reason for d in http.deliveries] == ["http_timeout"] * (HTTP_RETRIES + 1)
    assert app.got[1][0]["X-Slack-Retry-Reason"] == "http_timeout"


async def test_no_retry_when_asked_nor_for_commands_and_clicks(emulator: SlackEmulator, app: App) -> None:
    app.status, app.headers = 503, {"X-Slack-No-Retry": "1"}
    http = emulator.deliver_over_http(app.url, SECRET)
    eid = await sent(emulator, "status")
    await emulator.wait_for(lambda: eid in emulator.abandoned)
    app.headers = {}
    await emulator.send_slash("mem")
    await emulator.send_action("rigops_run", "1")
    await emulator.wait_for(lambda: len(emulator.abandoned) == 3)
    assert len(app.got) == 3 and http.retries == []


async def test_too_many_failures_turn_the_events_off(emulator: SlackEmulator, app: App) -> None:
    app.status, app.headers = 500, {"X-Slack-No-Retry": "1"}
    http = emulator.deliver_over_http(app.url, SECRET)
    for _ in range(DISABLE_AFTER):
        eid = await sent(emulator, "status")
        await emulator.wait_for(lambda eid=eid: eid in emulator.abandoned)  # type: ignore[misc]
    assert http.disabled
    assert json.loads(app.got[-1][1])["type"] == "app_rate_limited"  # Slack says so
    dropped = await sent(emulator, "status")
    await emulator.wait_for(lambda: dropped in http.dropped)
    assert len(app.got) == DISABLE_AFTER + 1


async def test_an_edit_sends_message_changed_and_the_mention_again(emulator: SlackEmulator, app: App) -> None:
    http = emulator.deliver_over_http(app.url, SECRET)
    first = await emulator.send_mention("status")
    await emulator.edit_message("C0OPS", str(first["ts"]), f"<@{emulator.bot_user_id}> free -h")
    await emulator.wait_for(lambda: len(http.deliveries) == 4)
    events = [json.loads(b) for _, b in app.got]
    changed = next(e["event"] for e in events if e["event"].get("subtype") == "message_changed")
    assert changed["message"]["text"].endswith("free -h") and changed["previous_message"]["text"].endswith("status")
    mentions = [e for e in events if e["event"]["type"] == "app_mention"]
    assert len(mentions) == 2 and mentions[0]["event_id"] != mentions[1]["event_id"]
    assert mentions[1]["event"]["ts"] == first["ts"] and "edited" in mentions[1]["event"]


async def test_conversations_info_needs_its_scope() -> None:
    scopes = ("chat:write", "commands", "groups:read")
    async with SlackEmulator(scopes=scopes) as emu, aiohttp.ClientSession() as http:
        emu.add_channel("G0PRIV", "priv", is_private=True)

        async def info(channel: str) -> dict[str, Any]:
            async with http.post(f"{emu.api_url}conversations.info", data={"channel": channel},
                                 headers={"Authorization": f"Bearer {emu.bot_token}"}) as resp:
                answer: dict[str, Any] = await resp.json()
                return answer

        assert (await info("C0OPS"))["error"] == "missing_scope"  # a public channel needs channels:read
        assert (await info("G0PRIV"))["ok"] is True


async def test_a_response_url_takes_five_messages() -> None:
    async with SlackEmulator() as emu, aiohttp.ClientSession() as http:
        url = emu._new_response_url(channel="C0OPS", user="U0HUMAN")
        statuses = []
        for n in range(6):
            async with http.post(url, json={"text": f"answer {n}"}) as resp:
                statuses.append((resp.status, await resp.text()))
        assert statuses[:5] == [(200, "ok")] * 5 and statuses[5] == (404, "used_url")
        assert len(emu.ephemerals("C0OPS", user="U0HUMAN")) == 5
