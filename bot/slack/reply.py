"""Slack's side of the core's :class:`~bot.core.talk.Reply`: the Web API calls, with Slack's errors logged, not
raised (the core goes on; the log says why a post is missing)."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.core.talk import Message, Place
from bot.slack.blocks import MESSAGE_BLOCKS, to_blocks

log = logging.getLogger(__name__)
MORE_SECTIONS = "{n} more hosts that do not fit in one message"


class SlackReply:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post(self, place: Place, message: Message) -> str | None:
        blocks = None if message.plain else to_blocks(message, limit=MESSAGE_BLOCKS, more=MORE_SECTIONS)
        try:
            resp = await self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread, text=message.text,
                                                      blocks=blocks, unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            log.error("chat.postMessage to %s failed: %s", place.channel, exc.response.get("error"))
            return None
        return str(resp["ts"])

    async def update(self, place: Place, message_id: str, message: Message) -> bool:
        blocks = [] if message.plain else to_blocks(message, limit=MESSAGE_BLOCKS, more=MORE_SECTIONS)
        try:
            await self.client.chat_update(channel=place.channel, ts=message_id, text=message.text, blocks=blocks)
        except SlackApiError as exc:
            log.error("chat.update of %s failed: %s", message_id, exc.response.get("error"))
            return False
        return True

    async def react(self, place: Place, message_id: str, name: str) -> None:
        try:
            await self.client.reactions_add(channel=place.channel, timestamp=message_id, name=name)
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                log.warning("reactions.add failed: %s", exc.response.get("error"))

    async def upload(self, place: Place, content: str | bytes, *, filename: str, title: str) -> None:
        try:
            await self.client.files_upload_v2(channel=place.channel, thread_ts=place.thread, filename=filename,
                                              content=content, title=title)
        except SlackApiError as exc:
            log.error("files upload failed: %s", exc.response.get("error"))
            await self.post(place, Message(f"(could not attach {filename}: {exc.response.get('error')})"))

    async def private(self, place: Place, user: str, text: str) -> None:
        try:
            await self.client.chat_postEphemeral(channel=place.channel, user=user, text=text, thread_ts=place.thread)
        except SlackApiError as exc:
            log.error("chat.postEphemeral failed: %s", exc.response.get("error"))
