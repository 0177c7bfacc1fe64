"""The seed, end to end: a hand-started build is OOM-ing; "oom-ing pretty bad, try -j20" in the ops channel
stops it over SSH, shows memory, and restarts the configured build at -j20 — a real sshd, real processes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.fakes.tools import kill_session, read_stat_fields, session_members, start_decoy, start_fake_build, stop
from tests.fakes.users import needs_own_build_user
from tests.harness import OPS, make_config, running_bot
from tests.scenario import alive, run_confirmed, thread_text
from tests.waiting import wait_until

pytestmark = pytest.mark.ssh


def fake_build_command(fake_bin: Path) -> str:
    """What the configured build runs: it prints its parallelism, then is a ninja with two compilers."""
    return ("echo MAX_JOBS=$MAX_JOBS CMAKE_BUILD_PARALLEL_LEVEL=$CMAKE_BUILD_PARALLEL_LEVEL MAKEFLAGS=$MAKEFLAGS "
            f"command-jobs={{jobs}}; exec {fake_bin}/ninja 4 -- {fake_bin}/cc1plus 16 -- {fake_bin}/nvcc 16")


@needs_own_build_user
async def test_oom_try_j20_stops_the_build_shows_memory_and_restarts(
        emulator: SlackEmulator, ssh_table: SshTable, build_user: str, fake_bin: Path, open_tmp: Path,
        state_dir: Path) -> None:
    config = make_config({"b200": ssh_table(builds={"sgl-kernel": {
        "workdir": str(open_tmp), "command": fake_build_command(fake_bin), "jobs": 64,
        "log_dir": str(open_tmp / "logs"), "env": {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}}})})
    build = start_fake_build(fake_bin, compilers=6, mb=48, user=build_user)
    decoy = start_decoy(user=build_user)
    wait_until(lambda: len(session_members(build.pid)) >= 8, what="the hand-started build to start")
    spawned_sid = None
    try:
        async with running_bot(emulator, config, state_dir) as core:
            root, mark = await run_confirmed(emulator, "oom-ing pretty bad, try -j20", channel=OPS)
            text = thread_text(emulator, OPS, root)
            runs = core.store.runs(host="b200", live=True)

        assert mark == "white_check_mark", text
        # every process of the hand-started build is gone; the decoy that merely mentions them lives
        assert session_members(build.pid) == []
        assert decoy.poll() is None and alive(decoy.pid)
        assert re.search(r"stopped \d+ processes \(.*cc1plus.*\)", text), text
        assert "ninja" in text
        # the memory table, as free -h prints it on that host
        free = subprocess.run(["free", "-h"], capture_output=True, text=True, check=True).stdout.splitlines()
        assert free[0] in text
        mem_row = next(line for line in text.splitlines() if line.startswith("Mem:"))
        assert mem_row.split()[1] == free[1].split()[1]  # total
        assert "Top memory users" in text
        # a new build runs at -j20, recorded with pid, start time and log
        assert len(runs) == 1
        run = runs[0]
        assert run.jobs == 20 and run.build == "sgl-kernel" and run.started_by == "U0HUMAN"
        fields = read_stat_fields(run.pid)
        assert fields is not None and int(fields[19]) == run.start
        spawned_sid = int(fields[3])
        wait_until(lambda: "command-jobs=20" in Path(run.log).read_text(), what="the build to print its env")
        assert ("MAX_JOBS=20 CMAKE_BUILD_PARALLEL_LEVEL=20 MAKEFLAGS=-j20 command-jobs=20"
                in Path(run.log).read_text())
        assert "-j20" in text and run.log in text
    finally:
        stop(build)
        stop(decoy)
        if spawned_sid is not None:
            kill_session(spawned_sid)
