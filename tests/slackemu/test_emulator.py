"""The Slack emulator, driven by the real slack_sdk clients and a real slack-bolt AsyncApp."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from slackemu import ApiCall, SlackEmulator, render_blocks, text_of

BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Rebuild* `api` on gpu-01?"}},
    {
        "type": "actions",
        "block_id": "confirm",
        "elements": [
            {
                "type": "button",
                "action_id": "run",
                "text": {"type": "plain_text", "text": "Run"},
                "value": "job-7",
            },
            {"type": "button", "action_id": "cancel", "text": {"type": "plain_text", "text": "Cancel"}},
        ],
    },
]


@pytest.fixture
async def emu() -> AsyncIterator[SlackEmulator]:
    async with SlackEmulator() as emulator:
        yield emulator


@pytest.fixture
def web(emu: SlackEmulator) -> AsyncWebClient:
    return AsyncWebClient(token=emu.bot_token, base_url=emu.api_url)


@pytest.fixture
async def bolt(emu: SlackEmulator) -> AsyncIterator[tuple[AsyncApp, AsyncSocketModeHandler]]:
    """A real bolt app wired to the emulator; the test registers listeners, then connects."""
    app = AsyncApp(client=AsyncWebClient(token=emu.bot_token, base_url=emu.api_url))
    handler = AsyncSocketModeHandler(app, emu.app_token, ping_interval=0.5)
    try:
        yield app, handler
    finally:
        await handler.close_async()


# --------------------------------------------------------------------------- Web API


async def test_post_thread_update_reactions_and_errors(emu: SlackEmulator, web: AsyncWebClient) -> None:
    first = await web.chat_postMessage(channel="C0OPS", text="deploying api")
    second = await web.chat_postMessage(channel="C0OPS", text="step 1 done", thread_ts=first["ts"])
    with pytest.raises(SlackApiError) as under_a_reply:  # Slack threads only under top-level messages
        await web.chat_postMessage(channel="C0OPS", text="all done", thread_ts=second["ts"])
    assert under_a_reply.value.response["error"] == "invalid_thread_ts"
    third = await web.chat_postMessage(
        channel="C0OPS", text="all done", thread_ts=first["ts"], reply_broadcast=True
    )
    assert first["ts"] == "1700000000.000100"
    assert float(first["ts"]) < float(second["ts"]) < float(third["ts"])
    assert first["message"]["bot_id"] == emu.bot_id and first["message"]["user"] == emu.bot_user_id

    await web.chat_update(channel="C0OPS", ts=first["ts"], text="deployed api", blocks=BUTTONS)
    await web.reactions_add(channel="C0OPS", timestamp=first["ts"], name="white_check_mark")
    with pytest.raises(SlackApiError) as dup:
        await web.reactions_add(channel="C0OPS", timestamp=first["ts"], name="white_check_mark")
    assert dup.value.response["error"] == "already_reacted"
    with pytest.raises(SlackApiError) as missing:
        await web.chat_update(channel="C0OPS", ts="1.000000", text="x")
    assert missing.value.response["error"] == "message_not_found"

    messages = emu.messages("C0OPS")
    assert [m.text for m in messages] == ["deployed api", "step 1 done", "all done"]
    parent = messages[0]
    assert parent.blocks == BUTTONS and [e.text for e in parent.edits] == ["deploying api"]
    assert parent.reactions == {"white_check_mark"} == emu.reactions("C0OPS", first["ts"])
    thread = emu.thread("C0OPS", first["ts"])
    assert [(m.text, m.thread_ts, m.reply_broadcast) for m in thread] == [
        ("step 1 done", first["ts"], False),
        ("all done", first["ts"], True),
    ]
    assert text_of(parent) == "*Rebuild* `api` on gpu-01?\n[Run] [Cancel]"

    await web.reactions_remove(channel="C0OPS", timestamp=first["ts"], name="white_check_mark")
    await web.chat_delete(channel="C0OPS", ts=third["ts"])
    assert emu.reactions("C0OPS", first["ts"]) == set()
    assert [m.text for m in emu.messages("C0OPS")] == ["deployed api", "step 1 done"]
    assert [c.method for c in emu.calls].count("chat.postMessage") == 4  # the refused one too


async def test_auth_unknown_methods_and_form_bodies(emu: SlackEmulator, web: AsyncWebClient) -> None:
    auth = await web.auth_test()
    assert (auth["user_id"], auth["bot_id"], auth["team_id"]) == (emu.bot_user_id, emu.bot_id, emu.team_id)

    with pytest.raises(SlackApiError) as bad:
        await AsyncWebClient(token="xoxb-wrong", base_url=emu.api_url).chat_postMessage(
            channel="C0OPS", text="x"
        )
    assert bad.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as wrong_kind:
        await web.apps_connections_open(app_token=emu.bot_token)
    assert wrong_kind.value.response["error"] == "not_allowed_token_type"
    with pytest.raises(SlackApiError) as unknown:
        await web.api_call("pins.add", json={"channel": "C0OPS"})
    assert unknown.value.response["error"] == "unknown_method"
    assert emu.calls[-1].method == "pins.add" and emu.calls[-1].params == {"channel": "C0OPS"}

    # Form-encoded body with the token as a parameter, and a GET with a query string.
    async with aiohttp.ClientSession() as session:
        form = {
            "token": emu.bot_token,
            "channel": "C0OPS",
            "text": "form post",
            "blocks": json.dumps(BUTTONS),
        }
        async with session.post(emu.api_url + "chat.postMessage", data=form) as resp:
            posted = await resp.json()
        async with session.get(
            emu.api_url + "users.info", params={"token": emu.bot_token, "user": "U0HUMAN"}
        ) as r:
            user = await r.json()
    assert posted["ok"] and emu.messages("C0OPS")[-1].blocks == BUTTONS
    assert "token" not in emu.calls_to("chat.postMessage")[-1].params
    assert user["user"]["name"] == "human"

    info = await web.conversations_info(channel="C0OPS")
    assert info["channel"]["name"] == "ops"
    with pytest.raises(SlackApiError) as nobody:
        await web.users_info(user="U0NOBODY")
    assert nobody.value.response["error"] == "user_not_found"


async def test_ephemeral_and_views(emu: SlackEmulator, web: AsyncWebClient) -> None:
    sent = await web.chat_postEphemeral(channel="C0OPS", user="U0HUMAN", text="only you can see this")
    assert emu.messages("C0OPS") == []
    [eph] = emu.ephemerals("C0OPS", user="U0HUMAN")
    assert (eph.ts, eph.text) == (sent["message_ts"], "only you can see this")

    home = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]}
    await web.views_publish(user_id="U0HUMAN", view=home)
    assert emu.home_views["U0HUMAN"]["blocks"] == home["blocks"]
    with pytest.raises(SlackApiError) as bad_trigger:
        await web.views_open(trigger_id="123.456.abc", view={"type": "modal", "title": {}, "blocks": []})
    assert bad_trigger.value.response["error"] == "invalid_trigger_id"


async def test_files_upload_v2_end_to_end(emu: SlackEmulator, web: AsyncWebClient) -> None:
    parent = await web.chat_postMessage(channel="C0OPS", text="build log follows")
    result = await web.files_upload_v2(
        channel="C0OPS",
        thread_ts=parent["ts"],
        content="line 1\nerror: boom\n",
        filename="build.log",
        title="api build log",
        initial_comment="here is the log",
    )
    file_id = result["file"]["id"]
    [reply] = emu.thread("C0OPS", parent["ts"])
    assert reply.text == "here is the log"
    [shared] = reply.files
    assert (shared.id, shared.name, shared.title, shared.text) == (
        file_id,
        "build.log",
        "api build log",
        "line 1\nerror: boom\n",
    )
    assert emu.files[file_id].content == b"line 1\nerror: boom\n"
    assert text_of(reply) == "here is the log\n[file: api build log (build.log)]"
    methods = [c.method for c in emu.calls]
    assert methods[-3:] == ["files.getUploadURLExternal", "(upload)", "files.completeUploadExternal"]
    # url_private serves the bytes to the bot token only, as Slack does.
    url = emu.file_url(file_id)
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers={"Authorization": f"Bearer {emu.bot_token}"}) as resp:
            assert await resp.read() == b"line 1\nerror: boom\n"
        async with session.get(url) as resp:
            assert resp.status == 403


async def test_rate_limit_is_retried_by_slack_sdk(emu: SlackEmulator, web: AsyncWebClient) -> None:
    web.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=2))
    emu.fail_next("chat.postMessage", retry_after=0)
    posted = await web.chat_postMessage(channel="C0OPS", text="after a 429")
    attempts = emu.calls_to("chat.postMessage")
    assert [(c.status, c.ok) for c in attempts] == [(429, False), (200, True)]
    assert attempts[0].response == {"ok": False, "error": "ratelimited"}
    assert emu.messages("C0OPS")[-1].ts == posted["ts"]

    emu.fail_next("reactions.add", error="channel_not_found", count=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as err:
            await web.reactions_add(channel="C0OPS", timestamp=posted["ts"], name="eyes")
        assert err.value.response["error"] == "channel_not_found"
    await web.reactions_add(channel="C0OPS", timestamp=posted["ts"], name="eyes")
    assert emu.reactions("C0OPS", posted["ts"]) == {"eyes"}


async def test_rate_limit_without_retry_handler_surfaces(emu: SlackEmulator, web: AsyncWebClient) -> None:
    emu.fail_next("chat.postMessage", retry_after=7)
    with pytest.raises(SlackApiError) as err:
        await web.chat_postMessage(channel="C0OPS", text="x")
    assert err.value.response.status_code == 429
    assert err.value.response.headers["Retry-After"] == "7"
    assert emu.messages("C0OPS") == []


async def test_on_call_hook_sees_every_call(emu: SlackEmulator, web: AsyncWebClient) -> None:
    seen: list[ApiCall] = []
    emu.on_call.append(seen.append)
    await web.chat_postMessage(channel="C0OPS", text="hello")
    await web.auth_test()
    assert [(c.method, c.params.get("text")) for c in seen] == [
        ("chat.postMessage", "hello"),
        ("auth.test", None),
    ]


# --------------------------------------------------------------------------- Socket Mode, raw


async def test_socket_mode_protocol_hello_queue_ack_and_redelivery(
    emu: SlackEmulator, web: AsyncWebClient
) -> None:
    """Speak the protocol by hand: hello shape, queued envelope, unacked event redelivered."""
    queued = await emu.send_message("sent while nobody is connected")
    async with aiohttp.ClientSession() as session:
        url = (await web.apps_connections_open(app_token=emu.app_token))["url"]
        assert url.startswith(f"ws://127.0.0.1:{emu.port}/link/?ticket=")
        async with session.ws_connect(url) as ws:
            hello = await ws.receive_json(timeout=5)
            assert hello["type"] == "hello" and hello["num_connections"] == 1
            assert hello["connection_info"] == {"app_id": emu.app_id}
            assert set(hello["debug_info"]) == {"host", "build_number", "approximate_connection_time"}
            first = await ws.receive_json(timeout=5)
            assert first["type"] == "events_api" and first["accepts_response_payload"] is False
            assert (first["retry_attempt"], first["retry_reason"]) == (0, "")
            payload = first["payload"]
            assert payload["type"] == "event_callback" and payload["api_app_id"] == emu.app_id
            assert payload["authorizations"][0]["user_id"] == emu.bot_user_id
            assert payload["event"] == queued
            assert queued["blocks"][0]["type"] == "rich_text"
            # close without acking: Slack retries the event on the next connection
        url = (await web.apps_connections_open(app_token=emu.app_token))["url"]
        async with session.ws_connect(url) as ws:
            await ws.receive_json(timeout=5)  # hello
            again = await ws.receive_json(timeout=5)
            assert again["envelope_id"] == first["envelope_id"]
            assert (again["retry_attempt"], again["retry_reason"]) == (1, "timeout")
            assert again["payload"]["event_id"] == payload["event_id"]
            await ws.send_json({"envelope_id": again["envelope_id"]})
            ack = await emu.wait_ack(again["envelope_id"])
            assert ack == {"envelope_id": first["envelope_id"]}
            eid = await emu.send_slash("status gpu-01")
            slash = await ws.receive_json(timeout=5)
            assert slash["envelope_id"] == eid and slash["type"] == "slash_commands"
            assert slash["accepts_response_payload"] is True and "retry_attempt" not in slash
            assert slash["payload"]["command"] == "/rigops" and slash["payload"]["text"] == "status gpu-01"
    assert emu.ack_for(first["envelope_id"]) is not None


async def test_wait_for_times_out_with_a_useful_message(emu: SlackEmulator, web: AsyncWebClient) -> None:
    await web.chat_postMessage(channel="C0OPS", text="something else")
    with pytest.raises(TimeoutError, match=r"(?s)timed out after 0.2s.*chat.postMessage.*something else"):
        await emu.wait_for(lambda: emu.thread("C0OPS", "1.0"), timeout=0.2)


async def test_click_errors_are_clear(emu: SlackEmulator, web: AsyncWebClient) -> None:
    posted = await web.chat_postMessage(channel="C0OPS", text="pick", blocks=BUTTONS)
    with pytest.raises(LookupError, match=r"no element with action_id='nope'.*'run', 'cancel'"):
        await emu.click(posted["ts"], "nope", channel="C0OPS")
    with pytest.raises(LookupError, match=r"no message ts=9\.9"):
        await emu.click("9.9", "run", channel="C0OPS")


# --------------------------------------------------------------------------- Socket Mode, real bolt


async def test_bolt_message_gets_a_thread_reply(
    emu: SlackEmulator, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt
    seen: list[dict[str, Any]] = []

    @app.event("message")
    async def on_message(event: dict[str, Any], say: Any) -> None:
        seen.append(event)
        await say(text=f"you said: {event['text']}", thread_ts=event["ts"])

    await handler.connect_async()
    await emu.wait_connected()
    await emu.wait_for(lambda: emu.pings >= 1)  # slack_sdk pings right after connecting; we pong
    event = await emu.send_message("status gpu-01", user="U0ALICE")
    replies = await emu.wait_for(lambda: emu.thread("C0OPS", event["ts"]))
    assert [r.text for r in replies] == ["you said: status gpu-01"]
    assert replies[0].bot_id == emu.bot_id
    assert seen[0]["user"] == "U0ALICE" and seen[0]["channel_type"] == "channel"
    assert emu.calls[0].method == "apps.connections.open"
    assert "auth.test" in [c.method for c in emu.calls]  # bolt authorizes lazily, on the first event


async def test_bolt_mention_delivers_app_mention_and_message(
    emu: SlackEmulator, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt
    kinds: list[tuple[str, str]] = []

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        kinds.append(("app_mention", body["event_id"]))

    @app.event("message")
    async def on_message(event: dict[str, Any], body: dict[str, Any]) -> None:
        kinds.append(("message", body["event_id"]))

    await handler.connect_async()
    mention = await emu.send_mention("rebuild api", channel="C0OPS", user="U0HUMAN")
    assert mention["text"] == f"<@{emu.bot_user_id}> rebuild api"
    assert mention["blocks"][0]["elements"][0]["elements"][0] == {"type": "user", "user_id": emu.bot_user_id}
    await emu.wait_for(lambda: len(kinds) == 2)
    assert sorted(k for k, _ in kinds) == ["app_mention", "message"]
    assert kinds[0][1] != kinds[1][1]
    assert len(emu.messages("C0OPS")) == 1


async def test_bolt_slash_command_ack_is_recorded(
    emu: SlackEmulator, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt

    @app.command("/rigops")
    async def on_command(ack: Any, command: dict[str, Any]) -> None:
        await ack(f"on it: {command['text']}")

    await handler.connect_async()
    eid = await emu.send_slash("rebuild api -j 8", user="U0BOB")
    ack = await emu.wait_ack(eid)
    assert ack["envelope_id"] == eid and ack["payload"] == {"text": "on it: rebuild api -j 8"}
    assert emu.envelopes[eid].delivered_at is not None
    # Slack shows an ack's text to the invoking user only.
    [shown] = emu.ephemerals("C0OPS", user="U0BOB")
    assert shown.text == "on it: rebuild api -j 8"


async def test_bolt_slash_command_opens_a_modal_with_its_trigger(
    emu: SlackEmulator, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Rebuild"},
             "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Rebuild `api`?"}}]}

    @app.command("/rigops")
    async def on_command(ack: Any, command: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=command["trigger_id"], view=modal)

    await handler.connect_async()
    await emu.send_slash("rebuild")
    [opened] = await emu.wait_for(lambda: emu.views)
    assert opened["title"] == modal["title"] and opened["id"].startswith("V")


async def test_bolt_button_click_reaches_action_listener(
    emu: SlackEmulator, web: AsyncWebClient, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt
    bodies: list[dict[str, Any]] = []

    @app.action("run")
    async def on_run(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        bodies.append(body)
        await client.chat_update(
            channel=body["channel"]["id"], ts=body["container"]["message_ts"], text="running", blocks=[]
        )

    await handler.connect_async()
    posted = await web.chat_postMessage(channel="C0OPS", text="confirm?", blocks=BUTTONS)
    eid = await emu.click(posted["ts"], "run", channel="C0OPS", user="U0CAROL")
    assert await emu.wait_ack(eid) == {"envelope_id": eid}
    await emu.wait_for(lambda: emu.messages("C0OPS")[0].text == "running")
    body = bodies[0]
    assert body["type"] == "block_actions" and body["user"]["id"] == "U0CAROL"
    assert body["actions"][0]["value"] == "job-7" and body["actions"][0]["block_id"] == "confirm"
    assert body["message"]["blocks"] == BUTTONS and body["container"]["is_ephemeral"] is False
    assert body["trigger_id"].count(".") == 2
    # The message was edited: its buttons are gone, so clicking again is an error.
    assert emu.messages("C0OPS")[0].blocks == []
    with pytest.raises(LookupError):
        await emu.click(posted["ts"], "run", channel="C0OPS")


async def test_bolt_respond_uses_the_emulated_response_url(
    emu: SlackEmulator, web: AsyncWebClient, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt

    @app.action("cancel")
    async def on_cancel(ack: Any, respond: Any) -> None:
        await ack()
        await respond(text="cancelled", replace_original=True)

    await handler.connect_async()
    posted = await web.chat_postMessage(channel="C0OPS", text="confirm?", blocks=BUTTONS)
    await emu.click(posted["ts"], "cancel", channel="C0OPS")
    await emu.wait_for(lambda: emu.calls_to("response_url"))
    [message] = emu.messages("C0OPS")
    assert (message.text, message.blocks, len(message.edits)) == ("cancelled", [], 1)


async def test_bolt_reconnects_after_drop_and_disconnect(
    emu: SlackEmulator, bolt: tuple[AsyncApp, AsyncSocketModeHandler]
) -> None:
    app, handler = bolt
    texts: list[str] = []

    @app.event("message")
    async def on_message(event: dict[str, Any]) -> None:
        texts.append(event["text"])

    await handler.connect_async()
    await emu.wait_connected()
    first = await emu.send_message("before the drop")
    await emu.wait_for(lambda: "before the drop" in texts)
    await emu.wait_ack(next(reversed(emu.envelopes)))

    await emu.drop_connections()
    assert not emu.connected
    await emu.send_message("while disconnected")  # queued until the client is back
    await emu.wait_for(lambda: emu.connections_opened == 2 and emu.connected)
    await emu.wait_for(lambda: "while disconnected" in texts)

    await emu.send_disconnect()
    await emu.send_message("during the refresh")
    await emu.wait_for(lambda: emu.connections_opened == 3 and emu.connected)
    await emu.wait_for(lambda: "during the refresh" in texts)
    assert texts == ["before the drop", "while disconnected", "during the refresh"]
    assert first["ts"] < emu.messages("C0OPS")[-1].ts
    assert [c.method for c in emu.calls].count("apps.connections.open") == 3


# --------------------------------------------------------------------------- rendering


def test_render_blocks_is_readable() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "gpu-01"}},
        {"type": "divider"},
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": "*GPU* 0"}, {"type": "mrkdwn", "text": "*Util* 97%"}],
            "accessory": {
                "type": "button",
                "action_id": "kill",
                "text": {"type": "plain_text", "text": "Kill"},
            },
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "updated 10:02"}]},
        {
            "type": "rich_text",
            "elements": [
                {
                    "type": "rich_text_section",
                    "elements": [{"type": "text", "text": "hi "}, {"type": "user", "user_id": "U1"}],
                },
                {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "make -j8"}]},
            ],
        },
        {"type": "actions", "elements": BUTTONS[1]["elements"]},
    ]
    assert render_blocks(blocks) == (
        "gpu-01\n---\n[Kill]\n*GPU* 0\n*Util* 97%\nupdated 10:02\n"
        "hi <@U1>\n```\nmake -j8\n```\n[Run] [Cancel]"
    )


# --------------------------------------------------------------------------- refusing what Slack refuses


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.mark.parametrize(
    ("text", "blocks", "error"),
    [
        ("x", [{"type": "sektion", "text": {"type": "mrkdwn", "text": "x"}}], "invalid_blocks"),  # no such block
        ("x", [section("x" * 3001)], "invalid_blocks"),  # a section holds 3,000 characters
        ("x", [section("")], "invalid_blocks"),  # "must be more than 0 characters"
        ("x", [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}], "invalid_blocks"),
        ("x", [{"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "y" * 76},
                                                 "action_id": "a"}]}], "invalid_blocks"),  # a button's 75
        ("x", [section("x")] * 51, "too_many_blocks"),
        ("x", [section("x" * 2900)] * 5, "msg_blocks_too_long"),  # 14,500 characters of block text
        ("x" * 40_001, None, "msg_too_long"),
    ],
)
async def test_messages_slack_refuses_are_refused(
    emu: SlackEmulator, web: AsyncWebClient, text: str, blocks: list[dict[str, Any]] | None, error: str
) -> None:
    with pytest.raises(SlackApiError) as posted:
        await web.chat_postMessage(channel="C0OPS", text=text, blocks=blocks)
    first = await web.chat_postMessage(channel="C0OPS", text="fine", blocks=[section("fine")])
    with pytest.raises(SlackApiError) as updated:
        await web.chat_update(channel="C0OPS", ts=first["ts"], text=text, blocks=blocks)
    assert posted.value.response["error"] == updated.value.response["error"] == error
    assert [m.text for m in emu.messages("C0OPS")] == ["fine"] and emu.refused == [error, error]


async def test_views_slack_refuses_are_refused(emu: SlackEmulator, web: AsyncWebClient) -> None:
    await web.views_publish(user_id="U0HUMAN", view={"type": "home", "blocks": [section("x" * 3000)] * 100})
    for blocks, error in (([section("x")] * 101, "too_many_blocks"), ([section("x" * 3001)], "invalid_blocks")):
        with pytest.raises(SlackApiError) as refused:
            await web.views_publish(user_id="U0HUMAN", view={"type": "home", "blocks": blocks})
        assert refused.value.response["error"] == error
    assert len(emu.calls_to("views.publish")) == 3 and emu.refused == ["too_many_blocks", "invalid_blocks"]


async def test_scopes_are_the_manifests(emu: SlackEmulator, web: AsyncWebClient) -> None:
    manifest = json.loads((Path(__file__).resolve().parents[2] / "manifests" / "rigops.json").read_text())
    response = await web.auth_test()
    assert set(response.headers["x-oauth-scopes"].split(",")) == set(manifest["oauth_config"]["scopes"]["bot"])


async def test_conversations_list_shows_what_the_bot_can_see_a_page_at_a_time(
    emu: SlackEmulator, web: AsyncWebClient
) -> None:
    emu.add_channel("C0PUBLIC", "public", bot_member=False)
    emu.add_channel("G0MINE", "mine", is_private=True)
    emu.add_channel("G0THEIRS", "theirs", is_private=True, bot_member=False)
    names, cursor = [], None
    while True:
        page = await web.conversations_list(types="public_channel,private_channel", limit=2, cursor=cursor)
        assert len(page["channels"]) <= 2
        names += [(c["name"], c["is_member"]) for c in page["channels"]]
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            break
    assert names == [("ops", True), ("public", False), ("mine", True)]
    only_public = await web.conversations_list()
    assert [c["name"] for c in only_public["channels"]] == ["ops", "public"]
