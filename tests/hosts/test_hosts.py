"""Contract tests run over every Host implementation: this machine (subprocess) and SSH (a real sshd)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import HostConfig, parse
from bot.hosts import Host, make_host
from bot.memory import parse_meminfo
from tests.fakes.sshd import SshServer
from tests.fakes.tools import kill_session, read_stat_fields, session_members, start_decoy, start_fake_build, stop
from tests.scenario import alive, wait_until


def host_config(kind: str, sshd: SshServer | None, user: str) -> HostConfig:
    if kind == "local":
        return parse({"hosts": {"here": {"address": "local", "user": user}}}).hosts["here"]
    assert sshd is not None
    return parse({"hosts": {"there": sshd.host_table(user=user)}}).hosts["there"]


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
async def host(request: pytest.FixtureRequest, build_user: str) -> AsyncIterator[Host]:
    sshd = request.getfixturevalue("sshd") if request.param == "ssh" else None
    h = make_host(host_config(request.param, sshd, build_user))
    yield h
    await h.close()


async def test_info_describes_the_host(host: Host) -> None:
    info = await host.info()
    assert info.cores == os.cpu_count()
    assert info.boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert info.pid > 0 and alive(info.pid)


async def test_snapshot_memory_matches_proc_meminfo(host: Host) -> None:
    snap = await host.snapshot()
    now = parse_meminfo(Path("/proc/meminfo").read_text())
    assert snap.memory.total == now["MemTotal"]
    assert abs(snap.memory.available - now["MemAvailable"]) < now["MemTotal"] * 0.05
    assert snap.top and snap.top[0].rss >= snap.top[-1].rss


async def test_kill_by_name_stops_the_build_user_compilers_and_spares_the_decoy(
        host: Host, fake_bin: Path, build_user: str) -> None:
    build = start_fake_build(fake_bin, compilers=4, mb=16, user=build_user)
    decoy = start_decoy(user=build_user)
    try:
        wait_until(lambda: len(read_stat_fields(build.pid) or [""]) > 0 and _tools_of(build.pid) >= 5,
                   what="fake build running")
        snap = await host.snapshot(user=build_user)
        assert {"ninja", "cc1plus", "nvcc"} <= {p.name for p in snap.tools}
        members = set(session_members(build.pid)) - {build.pid}
        result = await host.kill(roots=[], user=build_user, grace=2)
        assert members <= {t.pid for t in result.targets}
        assert build.pid not in {t.pid for t in result.targets}  # /bin/sh is no build tool
        assert {"ninja", "cc1plus", "nvcc", "g++"} <= set(result.counts) and not result.survivors
        assert set(session_members(build.pid)) <= {build.pid}
        assert alive(decoy.pid)
    finally:
        stop(build)
        stop(decoy)


async def test_spawned_build_is_detached_reports_exit_and_can_be_killed_by_identity(
        host: Host, open_tmp: Path, fake_bin: Path) -> None:
    log = open_tmp / "b.log"
    spawned = await host.spawn(workdir=str(open_tmp), command=f"echo jobs=$MAX_JOBS; exec {fake_bin}/ninja 4",
                               env={"MAX_JOBS": "7"}, log_path=str(log), exit_file=f"{log}.exit")
    sid = int((read_stat_fields(spawned.pid) or ["", "", "", "0"])[3])
    try:
        assert sid != os.getsid(0)
        (status,), _ = await host.run_status([(spawned.pid, spawned.start, spawned.exit_file, spawned.log)])
        assert status.alive
        wait_until(lambda: "jobs=7" in log.read_text(), what="the build's output")
        tail = await host.tail(str(log), lines=5)
        assert tail.lines == ("jobs=7",)
        result = await host.kill(roots=[(spawned.pid, spawned.start)], user=None, names=[], grace=2)
        assert [t.pid for t in result.targets] == [spawned.pid]
        wait_until(lambda: Path(spawned.exit_file).exists(), what="the exit file")
        (status,), _ = await host.run_status([(spawned.pid, spawned.start, spawned.exit_file, spawned.log)])
        assert not status.alive and status.finished and status.signal == signal.SIGTERM
    finally:
        kill_session(sid)


async def test_a_stale_identity_is_never_signalled(host: Host, open_tmp: Path) -> None:
    decoy = start_decoy()
    try:
        start = int((read_stat_fields(decoy.pid) or [""] * 20)[19])
        result = await host.kill(roots=[(decoy.pid, start + 1)], user=None, names=[], grace=1)
        assert result.targets == () or all(t.pid != decoy.pid for t in result.targets if t.pid)
        assert alive(decoy.pid)
    finally:
        stop(decoy)


async def test_the_agent_comes_back_when_its_process_dies(host: Host) -> None:
    first = await host.info()
    os.kill(first.pid, signal.SIGKILL)
    wait_until(lambda: not alive(first.pid), what="the agent to die")
    snap = await host.snapshot()
    assert snap.memory.total > 0
    assert (await host.info()).pid != first.pid


def _tools_of(sid: int) -> int:
    return len(session_members(sid)) - 1  # less the /bin/sh parent
