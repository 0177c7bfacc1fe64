"""The slack-bolt AsyncApp, wired to rigops' listeners, and how it connects (Socket Mode or HTTP)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.slack.extension import Extension
from bot.slack.follow import CARD_INTERVAL, POLL_INTERVAL, Follower
from bot.slack.groups import SlackGroups
from bot.slack.guard import SAMPLE_INTERVAL
from bot.slack.listeners import register
from bot.slack.schedules import make_schedules

log = logging.getLogger(__name__)
RATE_LIMIT_RETRIES = 3
IDLE_CLOSE = 600.0  # seconds a host connection may sit unused before it is closed
IDLE_CHECK = 60.0
# Features that bring their own subcommands and listeners; each is built with the bolt app and the services.
EXTENSIONS: list[Callable[[AsyncApp, Services], Extension]] = []
EXTENSIONS.append(make_schedules)


@dataclass
class RigopsApp:
    """The bolt app and the build follower that posts into its threads."""

    bolt: AsyncApp
    follower: Follower
    extensions: list[Extension] = field(default_factory=list)
    session: aiohttp.ClientSession | None = None
    _reaper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Pick up the builds rigops left running (after a restart) and start the extensions."""
        await self.follower.resume()
        self._reaper = asyncio.create_task(self._close_idle_hosts(), name="close-idle-hosts")
        for extension in self.extensions:
            await extension.start()

    async def _close_idle_hosts(self) -> None:
        hosts = self.follower.services.hosts
        while True:
            await asyncio.sleep(IDLE_CHECK)
            closed = await hosts.close_idle(IDLE_CLOSE)
            if closed:
                log.info("closed idle connections to %s", ", ".join(closed))

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        for extension in reversed(self.extensions):
            await extension.close()
        await self.follower.close()
        if self.session is not None:
            await self.session.close()


def create_app(services: Services, *, bot_token: str, signing_secret: str | None = None,
               api_url: str | None = None, poll: float = POLL_INTERVAL,
               card_interval: float = CARD_INTERVAL, sample_interval: float = SAMPLE_INTERVAL) -> RigopsApp:
    """rigops on bolt; ``api_url`` points the Web API elsewhere (the emulator)."""
    # one HTTP session for every Web API call: without it slack_sdk opens a connection per call
    session = aiohttp.ClientSession()
    client = AsyncWebClient(token=bot_token, base_url=api_url or AsyncWebClient.BASE_URL, session=session)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    app = AsyncApp(client=client, signing_secret=signing_secret or "", process_before_response=False,
                   request_verification_enabled=signing_secret is not None)
    services.policy.members = SlackGroups(client).members
    follower = Follower(services, client, poll=poll, card_interval=card_interval, sample_interval=sample_interval)
    extensions: list[Extension] = [make(app, services) for make in EXTENSIONS]
    subcommands = {word: handler for ext in extensions for word, handler in ext.subcommands.items()}
    register(app, services, follower, subcommands)
    return RigopsApp(bolt=app, follower=follower, extensions=extensions, session=session)


def socket_mode_handler(app: RigopsApp, *, app_token: str, ping_interval: float = 10) -> AsyncSocketModeHandler:
    """Socket Mode over the app's own Web API client; a dropped socket is noticed within ``ping_interval``."""
    return AsyncSocketModeHandler(app.bolt, app_token, web_client=app.bolt.client, ping_interval=ping_interval)


# bolt's handler methods carry no annotations; these give the rest of rigops typed calls.
async def connect(handler: AsyncSocketModeHandler) -> None:
    await handler.connect_async()  # type: ignore[no-untyped-call]


async def serve_forever(handler: AsyncSocketModeHandler) -> None:
    await handler.start_async()  # type: ignore[no-untyped-call]


async def disconnect(handler: AsyncSocketModeHandler) -> None:
    await handler.close_async()  # type: ignore[no-untyped-call]
