"""The real bot (AsyncApp + Socket Mode) running against the Slack emulator, for scenario tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.config import Config, parse
from bot.core.app import Core
from bot.frontends.slack.app import RigopsApp, connect, create_app, disconnect, socket_mode_handler
from bot.frontends.slack.run import serve_http
from bot.frontends.slack.tiers import Tier
from bot.store import BuildRun, Store
from slackemu import SlackEmulator

OPS = "C0OPS"
HUMAN = "U0HUMAN"


OPERATORS = [HUMAN, "U0OTHER", "U0SECOND"]
ADMIN = "U0ADMIN"


def make_config(hosts: dict[str, Any], *, confirm: bool = True, **extra: Any) -> Config:
    """A config with an ops channel and, unless given, a policy where the usual test users are operators."""
    extra.setdefault("policy", {"operators": OPERATORS, "admins": [ADMIN]})
    return parse({"confirm": confirm, "slack": {"ops_channels": [OPS]}, "hosts": hosts, **extra})


@asynccontextmanager
async def running_app(emu: SlackEmulator, config: Config, state_dir: Path, *, poll: float = 0.2,
                      card_interval: float = 0.5, sample_interval: float = 0.2,
                      tiers: Mapping[str, Tier] | None = None) -> AsyncIterator[RigopsApp]:
    """The whole bot, following builds quickly (polls every 0.2 s) so tests need not wait long. ``tiers``: the
    app's rate budget; none by default, as the emulator enforces Slack's tiers only when a test asks (the tests of
    the budget run it against tiers the emulator enforces, scaled to seconds)."""
    app = create_app(config, state_dir, bot_token=emu.bot_token, api_url=emu.api_url, poll=poll,
                     card_interval=card_interval, sample_interval=sample_interval, tiers=tiers or {})
    handler = socket_mode_handler(app, app_token=emu.app_token, ping_interval=0.5)
    await connect(handler)
    await emu.wait_connected()
    await app.start()
    try:
        yield app
    finally:
        await disconnect(handler)
        await app.close()


SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # Slack's documented example secret


@asynccontextmanager
async def running_http_app(emu: SlackEmulator, config: Config, state_dir: Path) -> AsyncIterator[RigopsApp]:
    """The whole bot in HTTP mode (``rigops run --http``): the emulator POSTs every event, command and click to its
    Request URL, signed, and judges the answers as Slack does (``emu.http`` records them)."""
    from tests.fakes.sshd import free_port

    app = create_app(config, state_dir, bot_token=emu.bot_token, api_url=emu.api_url, poll=0.2, card_interval=0.5,
                     sample_interval=0.2, tiers={})
    port = free_port()
    await app.start()
    server = asyncio.create_task(serve_http(app.bolt.server(port=port, host="127.0.0.1"), port=port,
                                            signing_secret=SIGNING_SECRET))
    try:
        await _listening(port)
        emu.deliver_over_http(f"http://127.0.0.1:{port}/slack/events", SIGNING_SECRET)
        yield app
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
        await app.close()


async def _listening(port: int, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.02)
                continue
            writer.close()
            return


@asynccontextmanager
async def running_bot(emu: SlackEmulator, config: Config, state_dir: Path) -> AsyncIterator[Core]:
    async with running_app(emu, config, state_dir) as app:
        yield app.core


def record_run(store: Store, host: str, build: str, *, jobs: int = 20, started_by: str | None = None) -> BuildRun:
    """A running build in the state, for tests about what rigops shows of runs (no process behind it)."""
    run = store.begin_run(host=host, build=build, jobs=jobs, log="/tmp/none.log", exit_file="/tmp/none.exit",
                          boot_id=None, started_by=started_by, channel=None, thread_id=None)
    return store.started_run(run.id, pid=999_999, start=1, supervisor_pid=None, log=run.log, exit_file=run.exit_file)
