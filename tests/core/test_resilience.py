"""Surviving faults: the Socket Mode connection drops, the bot is killed with SIGKILL mid-build or mid-spawn,
and the disk under the state fills up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bot.config import Config
from bot.hosts import make_host
from bot.store import Store
from slackemu import SlackEmulator
from tests.fakes.replicas import write_toml
from tests.harness import HUMAN, OPS, make_config, running_bot
from tests.scenario import thread_text, wait_done
from tests.waiting import wait_until


async def test_a_dropped_socket_reconnects_and_nothing_is_lost_or_doubled(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    config = make_config({"b200": {"address": "local"}}, confirm=False)
    async with running_bot(emulator, config, state_dir) as core:
        opened = emulator.connections_opened
        await emulator.drop_connections()
        first = await emulator.send_message("free -h", channel=OPS)  # queued until the bot is back
        second = await emulator.send_message("how's memory?", channel=OPS)
        for event in (first, second):
            assert await wait_done(emulator, OPS, str(event["ts"]), timeout=30) == "white_check_mark"
        assert emulator.connections_opened > opened
        await core.activity.wait_finished(2)
        for event in (first, second):
            replies = emulator.thread(OPS, str(event["ts"]))
            assert len(replies) == 1 and "Memory on b200" in replies[0].text


def write_config(path: Path, workdir: Path, command: str) -> Path:
    return write_toml(path, {"confirm": False, "slack": {"ops_channels": [OPS]}, "policy": {"operators": [HUMAN]},
                             "hosts": {"b200": {"address": "local", "builds": {"app": {
                                 "workdir": str(workdir), "command": command, "log_dir": f"{workdir}/logs"}}}}})


def kill_9(bot: subprocess.Popen[bytes]) -> None:
    """SIGKILL, as the OOM killer or a crashed machine stops rigops: nothing of it gets to clean up."""
    if bot.poll() is None:
        bot.send_signal(signal.SIGKILL)
    bot.wait(10)


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
    finally:
        kill_9(bot)
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


async def test_a_bot_killed_during_a_kill_tells_the_stop_once_it_is_back(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    """rigops is killed with SIGKILL while it stops a build (the build ignores SIGTERM, so the stop is in its
    grace period), then started again: the build is stopped — by the stop that was under way, or found stopped —
    and its end is told in its thread, once; the stop's own message says that rigops stopped while it ran."""
    config = write_config(tmp_path / "rigops.toml", tmp_path,
                          "trap '' TERM; echo started; while :; do sleep 0.1; done")
    bot = start_bot(emulator, config, state_dir)
    try:
        await emulator.wait_connected(timeout=30)
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "started `app` at -j2" in thread_text(emulator, OPS, root), timeout=30)
        await emulator.send_message("kill it", channel=OPS, thread_ts=root)
        await emulator.wait_for(lambda: ":hourglass_flowing_sand: stop" in thread_text(emulator, OPS, root),
                                timeout=30)
        await asyncio.sleep(1)  # inside the stop's grace period (SIGTERM sent, ignored)
    finally:
        kill_9(bot)
    killed = time.monotonic()
    bot = start_bot(emulator, config, state_dir)
    try:
        await emulator.wait_for(lambda: "stopped" in thread_text(emulator, OPS, root).split("kill it")[-1]
                                and "after" in thread_text(emulator, OPS, root), timeout=60)
        told = time.monotonic() - killed
        store = Store.open(state_dir)
        try:
            runs = store.runs()
        finally:
            store.close()
        assert len(runs) == 1 and runs[0].state in ("stopped", "failed"), runs
        assert not psutil.pid_exists(runs[0].pid) or psutil.Process(runs[0].pid).status() == "zombie"
        print(f"rigops killed during a kill: the end told {told:.1f} s after, by the rigops started again")
        await asyncio.sleep(2)  # a second telling would come now
    finally:
        bot.terminate()
        bot.wait(20)
    text = thread_text(emulator, OPS, root)
    assert text.count("started `app`") == 1, text
    # the stop's own message no longer says it is under way: rigops could not see it through
    assert ":hourglass_flowing_sand: stop" not in text and "rigops stopped while this ran" in text, text
    assert text.count("was stopped by <@U0HUMAN>") == 1, text


# --- a bot killed between the spawn and recording its answer ----------------------------------------------

def gated_config(tmp_path: Path) -> Config:
    gate = tmp_path / "go"
    return make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": f"echo started; while [ ! -f {gate} ]; do sleep 0.05; done; echo done",
        "jobs": 2, "log_dir": str(tmp_path / "logs")}}}}, confirm=False)


async def starting_row(emulator: SlackEmulator, state_dir: Path, log: str) -> tuple[str, int]:
    """What a bot killed mid-spawn leaves in its state: a run "starting", in a thread of the ops channel."""
    root = str((await emulator.send_message("the build is going again, fingers crossed", channel=OPS))["ts"])
    store = Store.open(state_dir)
    try:
        run = store.begin_run(host="b200", build="app", jobs=2, log=log, exit_file=f"{log}.exit", boot_id=None,
                              started_by=HUMAN, channel=OPS, thread_id=root)
    finally:
        store.close()
    return root, run.id


async def test_a_build_spawned_just_before_the_bot_died_is_adopted_not_started_twice(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    cfg = gated_config(tmp_path)
    log = str(tmp_path / "logs" / "app-1.log")
    root, run_id = await starting_row(emulator, state_dir, log)
    host = make_host(cfg.hosts["b200"])  # the spawn went out; its answer never got recorded
    try:
        build = cfg.hosts["b200"].builds["app"]
        spawned = await host.spawn(workdir=build.workdir, command=build.command, env={}, log_path=log,
                                   exit_file=f"{log}.exit")
    finally:
        await host.close()
    async with running_bot(emulator, cfg, state_dir) as core:
        await emulator.wait_for(lambda: "I follow it" in thread_text(emulator, OPS, root), timeout=30)
        run = core.store.run(run_id)
        assert run is not None and run.state == "running"
        assert (run.pid, run.start, run.supervisor_pid) == (spawned.pid, spawned.start, spawned.supervisor_pid)
        (tmp_path / "go").touch()
        await emulator.wait_for(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=30)
        assert [(r.id, r.state) for r in core.store.runs()] == [(run_id, "succeeded")]
    assert f"pid {spawned.pid}" in thread_text(emulator, OPS, root)


async def test_a_spawn_that_never_happened_is_recorded_as_such(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    cfg = gated_config(tmp_path)
    root, run_id = await starting_row(emulator, state_dir, str(tmp_path / "logs" / "app-1.log"))
    async with running_bot(emulator, cfg, state_dir) as core:
        await emulator.wait_for(lambda: "never started" in thread_text(emulator, OPS, root), timeout=30)
        run = core.store.run(run_id)
        assert run is not None and run.state == "lost" and not core.store.runs(live=True)
    assert not (tmp_path / "logs").exists()  # nothing was started behind anyone's back


# --- a full disk under the state ------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs for the state dir, so the disk can really fill up."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    return filler


async def test_a_full_disk_is_reported_and_nothing_runs_or_is_half_written(
        emulator: SlackEmulator, tmp_path: Path, small_disk: Path) -> None:
    """With the state's disk full, a look is answered without its record (saying so), a request that acts is
    refused with the reason, nothing is half-written, and all is as before once there is room again."""
    state = small_disk / "state"
    config = make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}}}}, confirm=False)
    async with running_bot(emulator, config, state) as core:
        first = await emulator.send_message("free -h", channel=OPS)
        assert await wait_done(emulator, OPS, str(first["ts"]), timeout=30) == "white_check_mark"
        before = core.store.audit_entries(500)
        filler = fill(small_disk)
        root = str((await emulator.send_message("how's memory?", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "Memory on b200" in thread_text(emulator, OPS, root), timeout=30)
        text = thread_text(emulator, OPS, root)
        assert "cannot write its state right now" in text and "answered without a record" in text, text
        assert "full" in text, text
        act = str((await emulator.send_message("rebuild app on b200 -j2", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "cannot use its state right now" in thread_text(emulator, OPS, act),
                                timeout=30)
        assert "nothing was run" in thread_text(emulator, OPS, act)
        assert "started `app`" not in thread_text(emulator, OPS, act)
        filler.unlink()
        again = await emulator.send_message("how's memory?", channel=OPS)
        assert await wait_done(emulator, OPS, str(again["ts"]), timeout=30) == "white_check_mark"
        after = core.store.audit_entries(500)
        assert not core.store.runs(host="b200")  # the refused rebuild started nothing
    db = sqlite3.connect(state / "rigops.sqlite3")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    # the requests that met the full disk left no row; the ones before and after did
    assert not [e for e in after if e["thread_ts"] in (root, act)]
    assert [e for e in after if e["thread_ts"] == str(again["ts"])] and before == after[-len(before):]


def counter(text: str) -> int:
    """The highest [n/24] a thread's card has shown."""
    return max((int(n) for n in re.findall(r"\[(\d+)/24\]", text)), default=0)


async def test_a_build_followed_while_the_state_disk_is_full_is_told_once_there_is_room(
        emulator: SlackEmulator, tmp_path: Path, small_disk: Path) -> None:
    """The state's disk fills in the middle of a followed build and the build ends while it is full: the card
    goes on, and the end, which cannot be recorded, is told once there is room again — once."""
    script = tmp_path / "build.sh"
    script.write_text('for i in $(seq 1 24); do echo "[$i/24] Building CXX object src/f$i.o"; sleep 0.4; done\n')
    config = make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": f"sh {script}", "log_dir": str(tmp_path / "logs")}}}}, confirm=False)
    async with running_bot(emulator, config, small_disk / "state") as core:
        root = str((await emulator.send_message("rebuild app on b200 -j2", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "/24] · " in thread_text(emulator, OPS, root), timeout=30)  # the card
        filler = fill(small_disk)
        at_fill = counter(thread_text(emulator, OPS, root))
        (run,) = core.store.runs(host="b200", live=True)  # reading a full disk works
        await emulator.wait_for(lambda: Path(run.exit_file).exists(), timeout=30)  # the build ends meanwhile
        assert counter(thread_text(emulator, OPS, root)) > at_fill + 5  # its card went on
        assert len(core.store.runs(host="b200", live=True)) == 1  # its end is not written yet
        await asyncio.sleep(2)  # the end cannot be recorded, so it is not told
        assert "succeeded in" not in thread_text(emulator, OPS, root)
        filler.unlink()
        await emulator.wait_for(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=30)
        await emulator.wait_for(lambda: core.store.runs(host="b200")[0].reported, timeout=10)
        await asyncio.sleep(1)  # a second telling would come now
    texts = [m.text for m in emulator.thread(OPS, root)]
    assert sum("succeeded in" in t and "`app` on *b200* —" not in t for t in texts) == 1, texts
