"""Surviving faults: the Socket Mode connection drops, and the bot is killed with SIGKILL mid-build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from bot.emulator import SlackEmulator
from bot.store import Store
from tests.harness import HUMAN, OPS, make_config, running_bot
from tests.scenario import thread_text, wait_done, wait_until


async def test_a_dropped_socket_reconnects_and_nothing_is_lost_or_doubled(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    config = make_config({"b200": {"address": "local"}}, confirm=False)
    async with running_bot(emulator, config, state_dir) as services:
        opened = emulator.connections_opened
        await emulator.drop_connections()
        first = await emulator.send_message("free -h", channel=OPS)  # queued until the bot is back
        second = await emulator.send_message("how's memory?", channel=OPS)
        for event in (first, second):
            assert await wait_done(emulator, OPS, str(event["ts"]), timeout=30) == "white_check_mark"
        assert emulator.connections_opened > opened
        await services.activity.wait_finished(2)
        for event in (first, second):
            replies = emulator.thread(OPS, str(event["ts"]))
            assert len(replies) == 1 and "Memory on b200" in replies[0].text


def write_config(path: Path, workdir: Path, command: str) -> Path:
    path.write_text(f"""confirm = false
[slack]
ops_channels = ["{OPS}"]
[policy]
operators = ["{HUMAN}"]
[hosts.b200]
address = "local"
[hosts.b200.builds.app]
workdir = "{workdir}"
command = "{command}"
log_dir = "{workdir}/logs"
""")
    return path


def start_bot(emu: SlackEmulator, config: Path, state: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SLACK_BOT_TOKEN": emu.bot_token, "SLACK_APP_TOKEN": emu.app_token,
           "SLACK_API_URL": emu.api_url}
    return subprocess.Popen([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(state), "run"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_a_bot_killed_mid_build_resumes_without_a_second_build(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    config = write_config(tmp_path / "rigops.toml", tmp_path,
                          f"echo started; while [ ! -f {gate} ]; do sleep 0.05; done; echo finished")
    bot = start_bot(emulator, config, state_dir)
    try:
        await emulator.wait_connected(timeout=30)
        event = await emulator.send_message("rebuild -j2", channel=OPS)
        root = str(event["ts"])
        await emulator.wait_for(lambda: "started `app` at -j2" in thread_text(emulator, OPS, root), timeout=30)
        bot.send_signal(signal.SIGKILL)
        bot.wait(10)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    store = Store.open(state_dir)
    try:
        runs = store.runs()
        assert len(runs) == 1 and runs[0].state == "running"
    finally:
        store.close()
    gate.touch()
    wait_until(lambda: Path(runs[0].exit_file).exists(), timeout=30, what="the build to end while the bot is down")
    bot = start_bot(emulator, config, state_dir)
    try:
        await emulator.wait_for(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=60)
    finally:
        bot.terminate()
        bot.wait(20)
    store = Store.open(state_dir)
    try:
        runs = store.runs()
        assert [(r.state, r.exit_status) for r in runs] == [("succeeded", 0)]  # no second build
    finally:
        store.close()
    assert thread_text(emulator, OPS, root).count("started `app`") == 1
