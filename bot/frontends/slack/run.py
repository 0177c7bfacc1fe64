"""``rigops run``: the bot against real Slack, over Socket Mode (default) or HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from slack_bolt.app.async_server import AsyncSlackAppServer

from bot.config import Config
from bot.core import metrics as metrics_mod
from bot.frontends.slack.app import RigopsApp, create_app, disconnect, serve_forever, socket_mode_handler
from bot.frontends.slack.signing import signed_requests
from bot.util.errors import StateError

log = logging.getLogger(__name__)


async def run_bot(config: Config, state_dir: Path, *, bot_token: str, app_token: str | None,
                  http_port: int | None, signing_secret: str | None, http_bind: str = "127.0.0.1",
                  api_url: str | None = None, metrics: str | None = None) -> None:
    """Serve until cancelled: Ctrl-C, or SIGTERM (systemd's stop, docker stop), which stops as cleanly: paused
    compilers resumed, and the builds this rigops followed left to the others at once."""
    main = asyncio.current_task()
    if main is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on the main thread, or no signals here
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main.cancel)
    if http_port is None:
        assert app_token
        app = create_app(config, state_dir, bot_token=bot_token, api_url=api_url)
        handler = socket_mode_handler(app, app_token=app_token)
        log.info("connecting to Slack over Socket Mode")
        runner = None
        try:  # a start that fails closes what it opened (no "Unclosed client session" after the error)
            await app.start()
            runner = await start_metrics(app, metrics, connected=handler.client.is_connected) if metrics else None
            await serve_forever(handler)
        finally:
            _stopping()
            if runner is not None:
                await runner.cleanup()
            await disconnect(handler)
            await app.close()
    else:
        assert signing_secret
        app = create_app(config, state_dir, bot_token=bot_token, api_url=api_url)
        serving = asyncio.Event()

        async def listening() -> bool:
            return serving.is_set()

        runner = None
        try:
            await app.start()
            runner = await start_metrics(app, metrics, connected=listening) if metrics else None
            await serve_http(app.bolt.server(port=http_port, host=http_bind), port=http_port,
                             signing_secret=signing_secret, serving=serving)
        finally:
            _stopping()
            if runner is not None:
                await runner.cleanup()
            await app.close()


def _stopping() -> None:
    """The stop's cancellation is taken: what the stop awaits (closing handshakes, timeouts inside aiohttp) runs
    as it would at any other time, instead of reading the pending cancellation as its own and giving up half way.
    The CancelledError being handled still ends ``run_bot`` once the stop is done."""
    task = asyncio.current_task()
    while task is not None and task.cancelling():
        task.uncancel()


async def start_metrics(app: RigopsApp, address: str, *,
                        connected: Callable[[], Awaitable[bool]]) -> web.AppRunner:
    """/metrics and /healthz for ``app`` on ``address``: healthy when the state answers and Slack is reachable
    (the Socket Mode connection up, or the HTTP listener serving)."""
    core = app.core
    core.services.metrics.watch(core)

    async def health() -> str | None:
        try:
            core.store.answers()  # the store is used from the loop thread only (SQLite holds it to that)
        except StateError as exc:
            return f"the state does not answer: {exc}"
        if not await connected():
            return "not connected to Slack"
        return None

    return await metrics_mod.serve(core.services.metrics, health, address=address)


async def serve_http(server: AsyncSlackAppServer, *, port: int, signing_secret: str,
                     serving: asyncio.Event | None = None) -> None:
    """Serve bolt's web app, every request checked against the signing secret before bolt sees it."""
    server.web_app.middlewares.append(signed_requests(signing_secret))
    runner = web.AppRunner(server.web_app)
    await runner.setup()
    site = web.TCPSite(runner, host=server.host, port=port)
    await site.start()
    if serving is not None:
        serving.set()
    log.info("serving Slack requests on port %d at /slack/events", port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
