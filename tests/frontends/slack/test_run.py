"""`rigops run` wiring: Socket Mode and HTTP mode, and `rigops check`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.frontends.slack.run import run_bot
from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.fakes.sshd import free_port
from tests.harness import OPS, make_config
from tests.scenario import thread_text, wait_done
from tests.waiting import eventually


async def test_run_over_socket_mode_answers_in_the_thread(emulator: SlackEmulator, tmp_path: Path) -> None:
    config = make_config({"local": {"address": "local"}}, confirm=False)
    task = asyncio.create_task(run_bot(config, tmp_path / "state", bot_token=emulator.bot_token,
                                       app_token=emulator.app_token, http_port=None, signing_secret=None,
                                       api_url=emulator.api_url))
    try:
        await emulator.wait_connected(timeout=20)
        event = await emulator.send_message("free -h", channel=OPS)
        assert await wait_done(emulator, OPS, str(event["ts"])) == "white_check_mark"
        assert "buff/cache" in thread_text(emulator, OPS, str(event["ts"]))
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def signed(secret: str, body: str, *, timestamp: int) -> dict[str, str]:
    base = f"v0:{timestamp}:{body}".encode()
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": signature,
            "Content-Type": "application/x-www-form-urlencoded"}


async def test_http_mode_verifies_signatures(emulator: SlackEmulator, tmp_path: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    secret = "8f742231b10e8888abcd99yyyzzz85a5"
    port = free_port()
    config = make_config({"local": {"address": "local"}}, confirm=False)
    task = asyncio.create_task(run_bot(config, tmp_path / "state", bot_token=emulator.bot_token, app_token=None,
                                       http_port=port, signing_secret=secret, api_url=emulator.api_url))
    url = f"http://127.0.0.1:{port}/slack/events"
    body = urlencode({"command": "/rigops", "text": "mem", "user_id": "U0HUMAN", "channel_id": OPS,
                      "team_id": "T0EMULATOR", "response_url": f"{emulator.url}response", "trigger_id": "1.2"})
    try:
        async with aiohttp.ClientSession() as http:

            async def listening() -> bool:
                try:
                    async with http.post(url, data="", headers={}):
                        return True
                except aiohttp.ClientConnectionError:
                    return False

            await eventually(listening, timeout=10, what="the bot to listen for HTTP", interval=0.05)
            now = int(time.time())
            caplog.clear()
            caplog.set_level(logging.DEBUG)
            async with http.post(url, data=body, headers=signed("wrong", body, timestamp=now)) as resp:
                assert resp.status == 401
            async with http.post(url, data=body, headers=signed(secret, body, timestamp=now - 600)) as resp:
                assert resp.status == 401
            not_a_number = {**signed(secret, body, timestamp=now), "X-Slack-Request-Timestamp": "soon"}
            async with http.post(url, data=body, headers=not_a_number) as resp:
                assert resp.status == 401  # not a 500 from int() deep in the SDK
            refusals = [r.getMessage() for r in caplog.records if "request" in r.getMessage()]
            assert refusals == ["refused a request to /slack/events: the signature does not match",
                                "refused a request to /slack/events: the timestamp is more than 5 minutes off",
                                "refused a request to /slack/events: the timestamp is not a number"]
            assert "response_url" not in caplog.text  # the body is never logged
            async with http.post(url, data=body, headers=signed(secret, body, timestamp=now)) as resp:
                assert resp.status == 200
        await emulator.wait_for(lambda: any("Memory on local" in m.text for m in emulator.messages(OPS)),
                                timeout=20)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.ssh
def test_check_reaches_every_host_and_says_which_fail(tmp_path: Path, ssh_table: SshTable) -> None:
    good = ssh_table()
    lines = [f"[hosts.good]\naddress = \"127.0.0.1\"\nport = {good['port']}\nuser = \"{good['user']}\"\n"
             f"key = \"{good['key']}\"\nknown_hosts = \"{good['known_hosts']}\"\n",
             f"[hosts.down]\naddress = \"127.0.0.1\"\nport = {free_port()}\nuser = \"{good['user']}\"\n"
             f"key = \"{good['key']}\"\nknown_hosts = \"{good['known_hosts']}\"\nconnect_timeout = 2\n",
             "[hosts.here]\naddress = \"local\"\n"]
    config = tmp_path / "rigops.toml"
    config.write_text("\n".join(lines))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    out = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "check"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 1, out.stderr
    assert "ok   good: ssh" in out.stdout and "host key verified" in out.stdout
    assert "FAIL down: cannot reach 127.0.0.1" in out.stdout
    assert "ok   here: this machine" in out.stdout


def test_explain_prints_the_contract_json() -> None:
    out = subprocess.run([sys.executable, "-m", "bot", "--config", "/nonexistent.toml", "explain", "--json", "x"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "file not found" in out.stderr
    env = {k: v for k, v in os.environ.items() if k != "RIGOPS_CONFIG"}
    out = subprocess.run([sys.executable, "-m", "bot", "explain", "--json", "oom-ing pretty bad, try -j20"],
                         capture_output=True, text=True, timeout=30, env=env, cwd="/")
    assert json.loads(out.stdout) == {"host": "local", "build": None, "steps": [
        {"action": "kill"}, {"action": "mem"}, {"action": "rebuild", "jobs": 20}],
        "error": "no builds configured on host local"}


def test_diagnose_prints_the_contract_json(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("[12/300] Building CXX object a.o\n"
                   "/src/csrc/numa_utils.cpp:3:10: fatal error: numa.h: No such file or directory\n"
                   "compilation terminated.\nninja: build stopped: subcommand failed.\n")
    out = subprocess.run([sys.executable, "-m", "bot", "diagnose", "--json", str(log)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) == {"category", "line", "fix"}
    assert result["category"] == "missing_syshdr"
    assert result["line"] == "/src/csrc/numa_utils.cpp:3:10: fatal error: numa.h: No such file or directory"
    assert "libnuma-dev" in result["fix"]
