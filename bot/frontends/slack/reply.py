"""Slack's side of the core's :class:`~bot.core.talk.Reply`: the Web API calls, with Slack's errors logged, not
raised (the core goes on; the log says why a post is missing), each inside its method's rate tier
(:mod:`bot.frontends.slack.tiers`): posts wait for their channel's budget, edits coalesce and give way to them."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.core.talk import Place
from bot.frontends.slack.blocks import message_text, to_blocks
from bot.frontends.slack.tiers import SLACK_TIERS, Budget, Edits, Tier
from bot.text import messages
from bot.text.message import Message

log = logging.getLogger(__name__)
MEMBERSHIP_SECONDS = 60.0  # how long rigops believes it is in a channel without asking again
NOT_THERE = frozenset({"channel_not_found", "not_in_channel", "is_archived"})
LIST_PAGE = 1000  # channels per conversations.list page (Slack's most)
LIST_PAGES = 20  # pages looked through for a channel's name before giving up
UPLOAD_METHODS = ("files.getUploadURLExternal", "files.completeUploadExternal")  # what files_upload_v2 calls
CLOSE_WAIT = 5.0  # seconds the edits still waiting may take to go out when rigops stops


class SlackReply:
    def __init__(self, client: AsyncWebClient, *, tiers: Mapping[str, Tier] = SLACK_TIERS) -> None:
        self.client = client
        self.budget = Budget(tiers)
        self.edits = Edits(self.budget.window("chat.update"), self._edit)
        self._member: dict[str, float] = {}  # channels rigops was in, and when that was last seen
        self._absent: dict[str, float] = {}  # channels where Slack refused a post as not there, and when

    async def close(self) -> None:
        await self.edits.close(wait=CLOSE_WAIT)

    async def post(self, place: Place, message: Message) -> str | None:
        blocks = None if message.plain else to_blocks(message)
        try:
            async with self.budget.call("chat.postMessage", channel=place.channel):
                resp = await self.client.chat_postMessage(channel=place.channel, thread_ts=place.thread,
                                                          text=message_text(message.text), blocks=blocks,
                                                          unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.error("chat.postMessage to %s failed: %s", place.channel, error)
            if error in NOT_THERE:
                self._member.pop(place.channel, None)
                self._absent[place.channel] = time.monotonic()
                if place.private_route:  # a slash command's answer: the person still gets it, privately
                    await self._answer_privately(place, message)
            return None
        self._absent.pop(place.channel, None)
        return str(resp["ts"])

    async def _answer_privately(self, place: Place, message: Message) -> None:
        """A slash command's answer that Slack would not post in the channel, through its response_url: the text
        (buttons need a message in the channel to act on), after a line saying why only they see it."""
        assert place.private_route
        log.info("answered a slash command privately: rigops is not in %s", place.channel)
        text = f"{messages.not_in_channel_answer(place.channel)}\n{message.text}"
        await self._respond(place.private_route, text)

    async def _respond(self, route: str, text: str) -> None:
        webhook = AsyncWebhookClient(route, session=self.client.session)
        try:
            resp = await webhook.send(text=message_text(text), response_type="ephemeral", replace_original=False)
        except (TimeoutError, aiohttp.ClientError) as exc:
            log.error("response_url answer failed: %s", type(exc).__name__)
            return
        if resp.status_code != 200:
            log.error("response_url answer failed: %s %s", resp.status_code, resp.body)

    async def update(self, place: Place, message_id: str, message: Message) -> bool:
        """Edit a message, at once or, when chat.update's budget is short, as soon as it allows (True then)."""
        return await self.edits.update(place, message_id, message)

    async def _edit(self, place: Place, message_id: str, message: Message) -> bool:
        blocks = [] if message.plain else to_blocks(message)
        try:
            await self.client.chat_update(channel=place.channel, ts=message_id, text=message_text(message.text),
                                          blocks=blocks)
        except SlackApiError as exc:
            log.error("chat.update of %s failed: %s", message_id, exc.response.get("error"))
            return False
        return True

    async def react(self, place: Place, message_id: str, name: str) -> None:
        try:
            async with self.budget.call("reactions.add"):
                await self.client.reactions_add(channel=place.channel, timestamp=message_id, name=name)
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                log.warning("reactions.add failed: %s", exc.response.get("error"))

    async def upload(self, place: Place, content: str | bytes, *, filename: str, title: str) -> None:
        try:
            async with self.budget.call(*UPLOAD_METHODS):
                await self.client.files_upload_v2(channel=place.channel, thread_ts=place.thread, filename=filename,
                                                  content=content, title=title)
        except SlackApiError as exc:
            log.error("files upload failed: %s", exc.response.get("error"))
            await self.post(place, Message(f"(could not attach {filename}: {exc.response.get('error')})"))

    async def private(self, place: Place, user: str, text: str) -> None:
        """An ephemeral message; through the slash command's response_url when there is one, which works in
        channels rigops is not in."""
        if place.private_route:
            await self._respond(place.private_route, text)
            return
        try:
            async with self.budget.call("chat.postEphemeral"):
                await self.client.chat_postEphemeral(channel=place.channel, user=user, text=message_text(text),
                                                     thread_ts=place.thread)
        except SlackApiError as exc:
            log.error("chat.postEphemeral failed: %s", exc.response.get("error"))

    async def can_post(self, channel: str) -> bool:
        """Whether rigops is in the channel (conversations.info's is_member; a DM it can see is its own)."""
        seen = self._member.get(channel)
        if seen is not None and time.monotonic() - seen < MEMBERSHIP_SECONDS:
            return True
        try:
            async with self.budget.call("conversations.info"):
                info = (await self.client.conversations_info(channel=channel)).get("channel") or {}
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in NOT_THERE:
                return False
            refused = self._absent.get(channel)
            if refused is not None and time.monotonic() - refused < MEMBERSHIP_SECONDS:
                return False  # it cannot tell, but Slack refused a post there a moment ago
            log.warning("conversations.info for %s failed (%s); trying to post there anyway", channel, error)
            return True
        member = bool(info.get("is_member") or info.get("is_im"))
        if member:  # only a yes is kept: an invite must count at once
            self._member[channel] = time.monotonic()
        return member

    async def direct(self, user: str) -> str | None:
        try:
            async with self.budget.call("conversations.open"):
                resp = await self.client.conversations_open(users=user)
        except SlackApiError as exc:
            log.error("conversations.open with %s failed: %s", user, exc.response.get("error"))
            return None
        channel = (resp.get("channel") or {}).get("id")
        if channel:
            self._member[str(channel)] = time.monotonic()
        return str(channel) if channel else None

    async def find_channel(self, name: str) -> str | None:
        """conversations.list, page by page: public channels, and private ones rigops is in."""
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            try:
                async with self.budget.call("conversations.list"):
                    resp = await self.client.conversations_list(types="public_channel,private_channel",
                                                                exclude_archived=True, limit=LIST_PAGE,
                                                                cursor=cursor)
            except SlackApiError as exc:
                log.warning("conversations.list failed: %s", exc.response.get("error"))
                return None
            for channel in resp.get("channels") or ():
                if name in (channel.get("name"), channel.get("name_normalized")):
                    return str(channel["id"])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                return None
        log.warning("no channel #%s in the first %d channels rigops can see", name, LIST_PAGE * LIST_PAGES)
        return None
