"""Bolt listeners: acknowledge what Slack sends and hand it to the core, translated into the core's terms.

Nothing is decided here beyond what only Slack knows: which events are a person writing, which channels are read,
and which of two events for one message (``message`` and ``app_mention``) answers it.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from bot.core.app import Core
from bot.core.requests import Said, SlashCommand
from bot.core.talk import CHOICE_KINDS, Place, Pressed
from bot.slack.blocks import ACTION_PREFIX

log = logging.getLogger(__name__)
# Message subtypes that are still a person writing; edits, joins, bot posts and deletions are not.
HUMAN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})


def register(app: AsyncApp, core: Core) -> None:
    listeners = Listeners(core)
    app.event("message")(listeners.on_message)
    app.event("app_mention")(listeners.on_mention)
    app.command("/rigops")(listeners.on_command)
    for kind in CHOICE_KINDS:
        app.action(ACTION_PREFIX + kind)(listeners.on_button)
    app.error(listeners.on_error)


class Listeners:
    def __init__(self, core: Core) -> None:
        self.core = core

    async def on_message(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        async with self.core.activity.track():
            await self._message(body, event, context)

    async def _message(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        if event.get("subtype") not in HUMAN_SUBTYPES or event.get("bot_id") or not event.get("user"):
            return
        if event.get("channel") not in self.core.services.config.slack.ops_channels:
            return
        bot_user = context.get("bot_user_id")
        if bot_user and f"<@{bot_user}>" in (event.get("text") or ""):
            return  # the app_mention event answers it
        await self.core.said(_said(body, event, addressed=False))

    async def on_mention(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        async with self.core.activity.track():
            if not event.get("bot_id") and event.get("user"):
                await self.core.said(_said(body, event, addressed=True))

    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        await ack()
        async with self.core.activity.track():
            await self.core.command(SlashCommand(text=str(command.get("text") or ""), user=str(command["user_id"]),
                                                 channel=str(command["channel_id"]),
                                                 private_route=command.get("response_url") or None))

    async def on_button(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        async with self.core.activity.track():
            await self._button(body)

    async def _button(self, body: dict[str, Any]) -> None:
        action = body["actions"][0]
        kind = str(action["action_id"]).removeprefix(ACTION_PREFIX)
        container = body.get("container") or {}
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
        if kind not in CHOICE_KINDS or not channel:
            return
        message = body.get("message") or {}
        # the pressed message's thread; a top-level message is the root of its own thread
        thread = message.get("thread_ts") or container.get("thread_ts") or container.get("message_ts")
        place = Place(str(channel), thread)
        await self.core.pressed(Pressed(kind=kind, value=str(action.get("value") or ""),
                                        user=str(body["user"]["id"]), place=place,
                                        message=container.get("message_ts")))

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("unhandled error in a listener", exc_info=error)


def _said(body: dict[str, Any], event: dict[str, Any], *, addressed: bool) -> Said:
    thread_ts = event.get("thread_ts")
    event_id = body.get("event_id")
    return Said(text=str(event.get("text") or ""), user=str(event["user"]), channel=str(event["channel"]),
                ts=str(event["ts"]), thread_ts=str(thread_ts) if thread_ts else None, addressed=addressed,
                delivery=str(event_id) if event_id else None)
