"""The slack-bolt AsyncApp, wired to the core, and how it connects (Socket Mode or HTTP)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.config import DEFAULT_TIMEZONE, Config
from bot.core.app import Core
from bot.core.follow import CARD_INTERVAL, POLL_INTERVAL
from bot.core.guard import SAMPLE_INTERVAL
from bot.core.metrics import Metrics
from bot.frontends.slack.groups import SlackGroups
from bot.frontends.slack.home import home_view
from bot.frontends.slack.ids import check_ids
from bot.frontends.slack.listeners import register
from bot.frontends.slack.reply import SlackReply
from bot.frontends.slack.tiers import SLACK_TIERS, Tier
from bot.language.schedule_text import zone

log = logging.getLogger(__name__)
RATE_LIMIT_RETRIES = 3


@dataclass
class RigopsApp:
    """The bolt app in front of the core."""

    bolt: AsyncApp
    core: Core
    reply: SlackReply
    session: aiohttp.ClientSession

    async def start(self) -> None:
        await self.core.start()

    async def close(self) -> None:
        """Stop the core (and with it the hosts and the state), send the edits still waiting for their rate
        tier, then close the HTTP session."""
        await self.core.close()
        await self.reply.close()
        await self.session.close()


def create_app(config: Config, state_dir: Path, *, bot_token: str, api_url: str | None = None,
               poll: float = POLL_INTERVAL, card_interval: float = CARD_INTERVAL,
               sample_interval: float = SAMPLE_INTERVAL, tiers: Mapping[str, Tier] = SLACK_TIERS) -> RigopsApp:
    """rigops on bolt; ``api_url`` points the Web API elsewhere (the emulator); ``tiers`` are the rate tiers its
    Web API calls keep within (Slack's own unless a test scales them down). Raises ConfigError when the config
    names a channel or a person by an id Slack never sends."""
    check_ids(config)
    # one HTTP session for every Web API call: without it slack_sdk opens a connection per call
    session = aiohttp.ClientSession()
    metrics = Metrics()
    client = CountingClient(metrics, token=bot_token, base_url=api_url or AsyncWebClient.BASE_URL, session=session)
    client.retry_handlers.append(CountingRateLimitRetry(metrics, max_retry_count=RATE_LIMIT_RETRIES))
    # HTTP mode checks signatures before bolt sees a request (bot/frontends/slack/signing.py), not with bolt's own check
    app = RigopsBolt(client=client, signing_secret="", process_before_response=False,
                     request_verification_enabled=False)
    reply = SlackReply(client, tiers=tiers)
    core = Core.open(config, state_dir, reply, members=SlackGroups(client).members,
                     poll=poll, card_interval=card_interval, sample_interval=sample_interval,
                     sharing=reply.budget.set_share, metrics=metrics)
    register(app, core)
    app.event("app_home_opened")(Home(core).on_opened)
    return RigopsApp(bolt=app, core=core, reply=reply, session=session)


class CountingClient(AsyncWebClient):
    """slack_sdk's client, each Web API call counted by method and outcome (for /metrics)."""

    def __init__(self, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.metrics = metrics

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        try:
            response = await super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            self.metrics.slack_call(api_method, "ratelimited" if exc.response.status_code == 429 else "error")
            raise
        except Exception:
            self.metrics.slack_call(api_method, "error")
            raise
        self.metrics.slack_call(api_method, "ok")
        return response


class CountingRateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """Retries a 429 after its Retry-After, as slack_sdk's handler does, and counts it."""

    def __init__(self, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.metrics = metrics

    async def prepare_for_next_attempt_async(self, *, state: Any, request: Any, response: Any = None,
                                             error: Any = None) -> None:
        method = str(getattr(request, "url", "")).rsplit("/", 1)[-1] or "unknown"
        self.metrics.slack_call(method, "ratelimited")
        await super().prepare_for_next_attempt_async(state=state, request=request, response=response, error=error)


class RigopsBolt(AsyncApp):
    """bolt, answering 200 to a well-signed request no listener takes (an event type rigops does not read, a
    modal or shortcut it never offered) instead of bolt's 404: Slack counts a 404 as a failed delivery, retries
    it, and turns an app's events off when most deliveries fail."""

    def _handle_unmatched_requests(self, req: AsyncBoltRequest, resp: BoltResponse) -> BoltResponse:
        body = req.body if isinstance(req.body, dict) else {}
        event = body.get("event")
        event = event if isinstance(event, dict) else {}
        log.debug("acknowledged a request rigops does not read: %s %s", str(body.get("type"))[:40],
                  str(event.get("type") or "")[:40])
        return BoltResponse(status=200, body="")


class Home:
    """The App Home tab: the dashboard of every host, fresh each time the tab opens."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def on_opened(self, event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab", "home") != "home" or not event.get("user"):
            return
        async with self.core.activity.track():
            digest, schedules = await self.core.schedules.dashboard()
            view = home_view(digest, tz=zone(DEFAULT_TIMEZONE), schedules=schedules)
            try:
                await client.views_publish(user_id=str(event["user"]), view=view)
            except SlackApiError as exc:
                log.error("views.publish for %s failed: %s", event["user"], exc.response.get("error"))


def socket_mode_handler(app: RigopsApp, *, app_token: str, ping_interval: float = 10) -> AsyncSocketModeHandler:
    """Socket Mode over the app's own Web API client; a dropped socket is noticed within ``ping_interval``."""
    return AsyncSocketModeHandler(app.bolt, app_token, web_client=app.bolt.client, ping_interval=ping_interval)


# bolt's handler methods carry no annotations; these give the rest of rigops typed calls.
async def connect(handler: AsyncSocketModeHandler) -> None:
    await handler.connect_async()  # type: ignore[no-untyped-call]


async def serve_forever(handler: AsyncSocketModeHandler) -> None:
    await handler.start_async()  # type: ignore[no-untyped-call]


DISCONNECT_TIMEOUT = 5.0  # seconds for Slack to answer the closing handshake


async def disconnect(handler: AsyncSocketModeHandler) -> None:
    """Close the Socket Mode connection. A close cut short (a closing handshake that never answers, the stop's own
    cancellation reaching aiohttp's reader) is logged and never keeps the rest of the stop from running: the
    replica's goodbye, the paused compilers' resume, the sessions' close."""
    try:
        await asyncio.wait_for(handler.close_async(), DISCONNECT_TIMEOUT)  # type: ignore[no-untyped-call]
    except (asyncio.CancelledError, TimeoutError, OSError, aiohttp.ClientError) as exc:
        log.warning("the Socket Mode connection did not close cleanly: %r", exc)
        await _abandon(handler.client)


async def _abandon(client: Any) -> None:
    """What the Socket Mode client's close leaves undone when its closing handshake never ends: its receiving and
    monitoring tasks cancelled and its HTTP session closed (else aiohttp reports an unclosed session at exit)."""
    client.closed = True
    client.auto_reconnect_enabled = False
    for task in (client.message_processor, client.current_session_monitor, client.message_receiver):
        if task is not None:
            task.cancel()
    session = client.aiohttp_client_session
    if session is not None and not session.closed:
        try:
            await asyncio.wait_for(session.close(), DISCONNECT_TIMEOUT)
        except (asyncio.CancelledError, TimeoutError, OSError, aiohttp.ClientError) as exc:
            log.warning("the Socket Mode HTTP session did not close: %r", exc)
