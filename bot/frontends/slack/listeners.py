"""Bolt listeners: acknowledge what Slack sends and hand it to the core, translated into the core's terms.

Nothing is decided here beyond what only Slack knows: which events are a person writing, which channels are read,
which of two events for one message (``message`` and ``app_mention``) answers it, and whether a payload is for this
installation at all. Every well-signed request is acknowledged with a 2xx, whatever it holds: Slack counts any
other answer as a failed delivery, retries it, and turns off an app's events when most deliveries fail. No
listener raises: bolt answers an error to Slack when one does, even after its ack.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.core.app import Core
from bot.frontends.slack import inbound
from bot.frontends.slack.blocks import message_text
from bot.text import messages
from bot.util.errors import StateError

log = logging.getLogger(__name__)
# Message subtypes that are still a person writing; edits, joins, bot posts and deletions are not.
HUMAN_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
ANY = re.compile(".*", re.S)


def register(app: AsyncApp, core: Core) -> None:
    listeners = Listeners(core)
    app.middleware(listeners.only_ours)
    app.event("message")(listeners.on_message)
    app.event("app_mention")(listeners.on_mention)
    app.command(ANY)(listeners.on_command)  # /rigops, or whatever a workspace named rigops' command
    app.action(ANY)(listeners.on_action)
    app.error(listeners.on_error)


class Listeners:
    def __init__(self, core: Core) -> None:
        self.core = core

    async def only_ours(self, body: dict[str, Any], context: AsyncBoltContext,
                        next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        """Events for this installation go on; an event for another one, and Slack's ``app_rate_limited`` notice
        (which has no inner event for a listener), are acknowledged here."""
        kind = body.get("type")
        if kind == "app_rate_limited":
            log.warning("Slack rate-limited this app's events (more than 30,000 an hour from team %s): events of "
                        "minute %s on were dropped", inbound.slack_id(body.get("team_id")),
                        body.get("minute_rate_limited"))
            return BoltResponse(status=200, body="")
        if kind == "event_callback" and not inbound.is_ours(body, _installation(context)):
            log.info("ignored an event of another installation (team %s)", inbound.slack_id(body.get("team_id")))
            return BoltResponse(status=200, body="")
        await next()
        return None

    async def on_message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        async with self.core.activity.track():
            await _safely(self._message(event, context), "a message event")

    async def _message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        if event.get("subtype") not in HUMAN_SUBTYPES or event.get("bot_id"):
            return
        if event.get("channel") not in self.core.services.config.slack.ops_channels:
            return
        bot_user = context.get("bot_user_id")
        if bot_user and f"<@{bot_user}>" in inbound.text_of(event.get("text")):
            return  # the app_mention event answers it
        said = inbound.said(event, addressed=False)
        if said is not None:
            await self.core.said(said)

    async def on_mention(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        async with self.core.activity.track():
            said = None if event.get("bot_id") else inbound.said(event, addressed=True,
                                                                  bot_user=context.get("bot_user_id"))
            if said is not None:
                await _safely(self.core.said(said), "a mention")

    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        cmd = inbound.command(command)
        if cmd is None:
            await ack(text=message_text(messages.UNREADABLE_COMMAND))
            return
        try:  # claimed before the ack: Slack never sends it again, so a rigops that dies now leaves it to another
            fresh = self.core.claim_command(cmd)
        except StateError as exc:  # answered all the same: a look needs no state, an action says it cannot record
            log.warning("a slash command could not be claimed (answered here without a claim: should this rigops "
                        "stop before answering, nobody will): %s", exc)
            fresh = True
        await ack()
        if not fresh:
            log.info("a slash command delivered again was left to the rigops that claimed it first")
            return
        async with self.core.activity.track():
            await _safely(self.core.command(cmd), "a slash command")

    async def on_action(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        if body.get("type") != "block_actions":
            return  # rigops posts only Block Kit buttons
        async with self.core.activity.track():
            await _safely(self._button(body, client), "a button press")

    async def _button(self, body: dict[str, Any], client: AsyncWebClient) -> None:
        click = inbound.click(body)
        if click is None:
            log.warning("ignored a button press without a user or channel Slack could have sent")
            return
        press = inbound.pressed(click)
        if press is None:
            log.warning("refused a press of %s with a value rigops did not put there",
                        f"a {click.kind} button" if click.kind else "a button that is not rigops'")
            await _tell(client, click, messages.FORGED_PRESS if click.kind else messages.UNKNOWN_CHOICE)
            return
        await self.core.pressed(press)

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("unhandled error in a listener", exc_info=error)


async def _safely(work: Awaitable[None], what: str) -> None:
    """Run a listener's work; a failure is logged, never raised into bolt (which would answer Slack 404/500)."""
    try:
        await work
    except Exception:
        log.exception("handling %s failed", what)


async def _tell(client: AsyncWebClient, click: inbound.Click, text: str) -> None:
    try:
        await client.chat_postEphemeral(channel=click.place.channel, user=click.user, text=message_text(text),
                                        thread_ts=click.place.thread)
    except SlackApiError as exc:
        log.warning("chat.postEphemeral failed: %s", exc.response.get("error"))


def _installation(context: AsyncBoltContext) -> inbound.Installation:
    auth = context.authorize_result
    if auth is None:
        return inbound.Installation(team_id=context.team_id, enterprise_id=context.enterprise_id,
                                    bot_user_id=context.bot_user_id)
    return inbound.Installation(team_id=auth.team_id, enterprise_id=auth.enterprise_id,
                                bot_user_id=auth.bot_user_id)
