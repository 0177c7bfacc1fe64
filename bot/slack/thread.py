"""A Slack thread to answer in: post, edit, react and upload, with Slack's errors logged, not raised."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.redact import redact

log = logging.getLogger(__name__)


class Thread:
    """The channel and thread a request came from. A slash command's first post starts the thread."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str | None) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts

    async def post(self, text: str, *, blocks: list[dict[str, Any]] | None = None) -> str | None:
        text = redact(text)
        try:
            resp = await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, text=text,
                                                      blocks=blocks, unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            log.error("chat.postMessage to %s failed: %s", self.channel, exc.response.get("error"))
            return None
        ts = str(resp["ts"])
        if self.thread_ts is None:
            self.thread_ts = ts
        return ts

    async def ephemeral(self, user: str, text: str) -> None:
        """A message only ``user`` sees (in the thread when there is one)."""
        try:
            await self.client.chat_postEphemeral(channel=self.channel, user=user, text=redact(text),
                                                  thread_ts=self.thread_ts)
        except SlackApiError as exc:
            log.error("chat.postEphemeral failed: %s", exc.response.get("error"))

    async def update(self, ts: str, text: str, *, blocks: list[dict[str, Any]] | None = None) -> bool:
        try:
            await self.client.chat_update(channel=self.channel, ts=ts, text=redact(text), blocks=blocks or [])
        except SlackApiError as exc:
            log.error("chat.update of %s failed: %s", ts, exc.response.get("error"))
            return False
        return True

    async def react(self, ts: str | None, name: str) -> None:
        if ts is None:
            return
        try:
            await self.client.reactions_add(channel=self.channel, timestamp=ts, name=name)
        except SlackApiError as exc:
            if exc.response.get("error") != "already_reacted":
                log.warning("reactions.add failed: %s", exc.response.get("error"))

    async def upload(self, content: str | bytes, *, filename: str, title: str) -> None:
        """Attach a file: text is redacted first; bytes (a chart) hold no text to redact."""
        try:
            await self.client.files_upload_v2(channel=self.channel, thread_ts=self.thread_ts, filename=filename,
                                              content=redact(content) if isinstance(content, str) else content,
                                              title=title)
        except SlackApiError as exc:
            log.error("files upload failed: %s", exc.response.get("error"))
            await self.post(f"(could not attach {filename}: {exc.response.get('error')})")
