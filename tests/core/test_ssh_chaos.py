"""sshd on the build host restarted while rigops stops a build there (the build ignores SIGTERM, so the stop is in
its grace period, its agent's answer still to come): as ``systemctl restart ssh`` does (the connection lives on),
and as a host whose sshd dies with its connections does. Either way the stop completes — the build is gone — or
the thread says it did not, and the build is still followed; nothing is left claiming to be under way."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from slackemu import SlackEmulator
from tests.fakes.sshd import SshServer, start_sshd
from tests.harness import OPS, make_config, running_bot
from tests.scenario import thread_text

pytestmark = [pytest.mark.ssh, pytest.mark.timeout(300)]


@pytest.fixture
def own_sshd(tmp_path: Path) -> Iterator[SshServer]:
    server = start_sshd(tmp_path / "sshd")  # its own: this test restarts it
    yield server
    server.stop()


@pytest.mark.parametrize("drop_sessions", [False, True], ids=["sessions-live-on", "sessions-dropped"])
async def test_sshd_restarted_during_a_kill(emulator: SlackEmulator, tmp_path: Path, state_dir: Path,
                                            own_sshd: SshServer, open_tmp: Path, build_user: str,
                                            drop_sessions: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="bot")
    host = own_sshd.host_table(user=build_user, kill_grace=4, connect_timeout=5, command_timeout=30)
    config = make_config({"b200": {**host, "builds": {"app": {
        "workdir": str(open_tmp), "command": "trap '' TERM; echo started; while :; do sleep 0.1; done",
        "log_dir": str(open_tmp / "logs")}}}}, confirm=False)
    async with running_bot(emulator, config, state_dir) as core:
        root = str((await emulator.send_message("rebuild app on b200 -j2", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "started `app` at -j2" in thread_text(emulator, OPS, root), timeout=60)
        (run,) = core.store.runs(live=True)
        await emulator.send_message("kill it", channel=OPS, thread_ts=root)
        await emulator.wait_for(lambda: ":hourglass_flowing_sand: stop" in thread_text(emulator, OPS, root),
                                timeout=30)
        await asyncio.sleep(1)  # SIGTERM sent and ignored: the stop waits out its grace
        restarted = time.monotonic()
        await asyncio.to_thread(own_sshd.restart, drop_sessions=drop_sessions)

        def settled() -> bool:
            text = thread_text(emulator, OPS, root)
            return ":hourglass_flowing_sand: stop" not in text and ("was stopped by" in text or ":x: stop" in text)

        await emulator.wait_for(settled, timeout=90)
        took = time.monotonic() - restarted
        text = thread_text(emulator, OPS, root)
        gone = not psutil.pid_exists(run.pid) or psutil.Process(run.pid).status() == "zombie"
        print(f"sshd restarted during a kill ({'sessions dropped' if drop_sessions else 'sessions live on'}): "
              f"settled {took:.1f} s later; build {'stopped' if gone else 'still running'}")
        if gone:
            assert "was stopped by" in text, text
            await emulator.wait_for(lambda: core.store.run(run.id) is not None
                                    and core.store.run(run.id).state == "stopped", timeout=30)  # type: ignore[union-attr]
        else:  # the stop did not go through: the thread says so, and the build is still followed as running
            assert ":x: stop" in text, text
            assert core.store.run(run.id).state == "running"  # type: ignore[union-attr]
        if not drop_sessions:
            assert gone, text  # a restart that keeps the connection changes nothing
            assert "was cut off" not in caplog.text
        elif gone:
            assert "was cut off" in caplog.text  # the stop was sent again on a new connection
