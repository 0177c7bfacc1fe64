"""/metrics and /healthz: a real ``rigops run --http PORT --metrics ADDR:PORT`` answers a request from the Slack
emulator, then its metrics parse with prometheus_client's own parser; health is 503 when Slack or the state is
away."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.frontends.slack.app import connect, create_app, disconnect, socket_mode_handler
from bot.frontends.slack.run import start_metrics
from slackemu import SlackEmulator
from tests.fakes.replicas import write_toml
from tests.fakes.sshd import free_port
from tests.harness import OPS, SIGNING_SECRET, make_config
from tests.store.pgserver import PostgresServer

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and labels (parsed by prometheus_client, as Prometheus would)."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


@contextmanager
def rigops_http(emu: SlackEmulator, config: Path, folder: Path, port: int, metrics: int) -> Iterator[Path]:
    env = {**os.environ, "SLACK_BOT_TOKEN": emu.bot_token, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "SLACK_API_URL": emu.api_url}
    env.pop("SLACK_APP_TOKEN", None)
    log = folder / "rigops.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bot", "--config", str(config), "--state-dir",
                                 str(folder / "state"), "--log-format", "json", "run", "--http", str(port),
                                 "--metrics", f"127.0.0.1:{metrics}"], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def wait_listening(url: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _ = await get(url)
            if status == 200:
                return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"{url} never answered 200; rigops said:\n{log.read_text()[-3000:]}")


async def test_a_real_rigops_counts_what_it_answered(emulator: SlackEmulator, tmp_path: Path) -> None:
    port, mport = free_port(), free_port()
    config = write_toml(tmp_path / "rigops.toml", {
        "confirm": False, "slack": {"ops_channels": [OPS]}, "hosts": {"b200": {"address": "local"}}})
    with rigops_http(emulator, config, tmp_path, port, mport) as log:
        await wait_listening(f"http://127.0.0.1:{mport}/healthz", log)
        emulator.deliver_over_http(f"http://127.0.0.1:{port}/slack/events", SIGNING_SECRET)
        event = await emulator.send_message("free -h", channel=OPS)
        await emulator.wait_for(lambda: any("available" in m.text for m in emulator.thread(OPS, str(event["ts"]))),
                                timeout=60)
        await emulator.send_message("lunch, anyone?", channel=OPS)

        async def counted() -> Samples | None:
            found = samples((await get(f"http://127.0.0.1:{mport}/metrics"))[1])
            done = value(found, "rigops_requests_total", kind="message", action="mem", outcome="done")
            ignored = value(found, "rigops_requests_total", kind="message", action="none", outcome="ignored")
            return found if done and ignored else None  # counted once each request is over

        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline:
            found = await counted()
            await asyncio.sleep(0.2)
        assert found is not None, log.read_text()[-3000:]
        assert value(found, "rigops_requests_total", kind="message", action="mem", outcome="done") == 1
        assert value(found, "rigops_host_up", host="b200") == 1
        assert (value(found, "rigops_slack_api_calls_total", method="chat.postMessage", outcome="ok") or 0) >= 1
        assert value(found, "rigops_builds_followed") == 0 and value(found, "rigops_replica_leader") == 1
        assert not any("lunch" in str(labels) for _, labels in found)  # no chat text in any label
        assert await get(f"http://127.0.0.1:{mport}/healthz") == (200, "ok\n")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]  # every line is JSON
    assert any(line["message"].startswith("serving /metrics") for line in lines), lines
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    assert emulator.bot_token not in log.read_text()


async def test_health_is_503_without_slack(emulator: SlackEmulator, tmp_path: Path) -> None:
    app = create_app(make_config({"b200": {"address": "local"}}), tmp_path / "state", bot_token=emulator.bot_token,
                     api_url=emulator.api_url, tiers={})
    handler = socket_mode_handler(app, app_token=emulator.app_token, ping_interval=0.5)
    await connect(handler)
    await emulator.wait_connected()
    await app.start()
    mport = free_port()
    runner = await start_metrics(app, f"127.0.0.1:{mport}", connected=handler.client.is_connected)
    try:
        assert await get(f"http://127.0.0.1:{mport}/healthz") == (200, "ok\n")
        await disconnect(handler)
        assert await get(f"http://127.0.0.1:{mport}/healthz") == (503, "not connected to Slack\n")
    finally:
        await runner.cleanup()
        await app.close()


@pytest.mark.postgres
async def test_health_is_503_while_the_state_is_down(emulator: SlackEmulator, tmp_path: Path,
                                                     postgres: PostgresServer) -> None:
    from dataclasses import replace

    config = replace(make_config({"b200": {"address": "local"}}), state=postgres.fresh_state())
    app = create_app(config, tmp_path / "state", bot_token=emulator.bot_token, api_url=emulator.api_url, tiers={})
    await app.start()
    mport = free_port()

    async def connected() -> bool:
        return True

    runner = await start_metrics(app, f"127.0.0.1:{mport}", connected=connected)
    try:
        assert await get(f"http://127.0.0.1:{mport}/healthz") == (200, "ok\n")
        back = postgres.down_for(12)  # longer than a new connection waits for a restarting server (4 s)
        status, text = await get(f"http://127.0.0.1:{mport}/healthz")
        assert status == 503 and text.startswith("the state does not answer"), text
        await asyncio.to_thread(back.join)
        deadline = time.monotonic() + 30
        while (await get(f"http://127.0.0.1:{mport}/healthz"))[0] != 200:
            assert time.monotonic() < deadline, "still unhealthy with the state back"
            await asyncio.sleep(0.5)
        found = samples((await get(f"http://127.0.0.1:{mport}/metrics"))[1])
        assert value(found, "rigops_builds_followed") == 0
    finally:
        await runner.cleanup()
        await app.close()
