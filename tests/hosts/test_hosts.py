"""Contract tests run over every Host implementation: this machine (subprocess) and SSH (a real sshd)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.hosts import Host
from bot.hosts.agent.protocol import BUILD_TOOL_NAMES
from bot.hosts.meminfo import parse_meminfo
from bot.hosts.models import ProcId, RunRef
from bot.util.errors import ActionFailed, AgentUnavailable
from tests.fakes.tools import (
    kill_session,
    read_stat_fields,
    session_members,
    start_decoy,
    start_fake_build,
    start_tool,
    stop,
)
from tests.hosts.test_agent import IS_ROOT
from tests.waiting import eventually, wait_until


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


async def test_disk_space_matches_statvfs_and_a_dir_not_made_yet_is_measured_where_it_would_be(
        host: Host, open_tmp: Path) -> None:
    from bot.actions.disk import Place, parse_report

    asked = (Place("workdir", str(open_tmp)), Place("logs", str(open_tmp / "logs" / "not-yet")))
    report = parse_report(host.name, asked, await host.request("disk", {"paths": [p.path for p in asked]}))
    [space] = report.spaces  # both on the filesystem of open_tmp
    fs = os.statvfs(open_tmp)
    assert space.total == fs.f_blocks * fs.f_frsize
    assert abs(space.free - fs.f_bavail * fs.f_frsize) < max(space.total // 100, 64 << 20)  # others write meanwhile
    assert [m.exists for m in space.places] == [True, False]
    assert os.path.ismount(space.mount) and str(open_tmp).startswith(space.mount)


@pytest.mark.skipif(not IS_ROOT, reason="needs root: stops every build tool of the build user by name, so the build "
                    "user must be a dedicated one (rigops-build), never the developer running the tests")
async def test_kill_by_name_stops_the_build_user_compilers_and_spares_the_decoy(
        host: Host, fake_bin: Path, build_user: str) -> None:
    build = start_fake_build(fake_bin, compilers=4, mb=16, user=build_user)
    decoy = start_decoy(user=build_user)
    try:
        wait_until(lambda: len(read_stat_fields(build.pid) or [""]) > 0 and _tools_of(build.pid) >= 5,
                   timeout=20, what="fake build running")
        snap = await host.snapshot(user=build_user)
        assert {"ninja", "cc1plus", "nvcc"} <= {p.name for p in snap.tools}
        members = set(session_members(build.pid)) - {build.pid}
        result = await host.kill(roots=[], user=build_user, fallback_names=BUILD_TOOL_NAMES, grace=2)
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
        run = RunRef(spawned.pid, spawned.start, spawned.exit_file, spawned.log)
        (status,), _ = await host.run_status([run])
        assert status.alive and status.proc_id == spawned.proc_id == run.proc_id
        # What a bot that missed the spawn's answer finds: the supervisor's start record.
        found = await host.started(workdir=str(open_tmp), log_path=str(log), exit_file="b.log.exit")
        assert found is not None
        assert (found.proc_id, found.supervisor_pid) == (spawned.proc_id, spawned.supervisor_pid)
        wait_until(lambda: "jobs=7" in log.read_text(), timeout=20, what="the build's output")
        tail = await host.tail(str(log), lines=5)
        assert tail.lines == ("jobs=7",)
        result = await host.kill(roots=[spawned.proc_id], user=None, names=[], grace=2)
        assert [t.proc_id for t in result.targets] == [spawned.proc_id]
        wait_until(lambda: Path(spawned.exit_file).exists(), timeout=20, what="the exit file")
        (status,), _ = await host.run_status([run])
        assert not status.alive and status.finished and status.signal == signal.SIGTERM
    finally:
        kill_session(sid)


async def test_a_stale_identity_is_never_signalled(host: Host, open_tmp: Path) -> None:
    decoy = start_decoy()
    try:
        start = int((read_stat_fields(decoy.pid) or [""] * 20)[19])
        result = await host.kill(roots=[ProcId(decoy.pid, start + 1)], user=None, names=[], grace=1)
        assert result.targets == () or all(t.pid != decoy.pid for t in result.targets if t.pid)
        assert alive(decoy.pid)
    finally:
        stop(decoy)


async def test_the_agent_comes_back_when_its_process_dies(host: Host) -> None:
    first = await host.info()
    os.kill(first.pid, signal.SIGKILL)
    wait_until(lambda: not alive(first.pid), timeout=20, what="the agent to die")
    snap = await host.snapshot()
    assert snap.memory.total > 0
    assert (await host.info()).pid != first.pid


async def test_failures_keep_the_agent_code(host: Host, open_tmp: Path) -> None:
    with pytest.raises(ActionFailed) as failed:
        await host.tail(str(open_tmp / "missing.log"), lines=5)
    assert (failed.value.code, failed.value.op) == ("not_found", "tail")
    # No start record: the spawn started nothing. A record that cannot be read says nothing of the kind.
    assert await host.started(workdir=str(open_tmp), log_path="b.log", exit_file="b.exit") is None
    (open_tmp / "b.exit.start").mkdir()
    with pytest.raises(ActionFailed) as failed:
        await host.started(workdir=str(open_tmp), log_path="b.log", exit_file="b.exit")
    assert failed.value.code == "not_a_file"


async def test_a_link_that_dies_mid_request_leaves_no_task_unowned(host: Host, fake_bin: Path,
                                                                   build_user: str) -> None:
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []  # "Task exception was never retrieved" and the like come here
    loop.set_exception_handler(lambda _, context: unhandled.append(context))
    # A tree whose root dies on SIGTERM and whose child ignores it: a kill of it waits out its grace.
    tree = start_tool(fake_bin, "hog", "1", "--", str(fake_bin / "hog"), "-T", "1",
                      user=build_user if IS_ROOT else None)
    try:
        with logged_lines("bot", "asyncio", "asyncssh") as lines:
            wait_until(lambda: len(session_members(tree.pid)) == 2, timeout=20, what="the hog and its child")
            root = ProcId(tree.pid, int((read_stat_fields(tree.pid) or [""] * 20)[19]))
            agent = (await host.info()).pid
            kill = asyncio.create_task(host.kill(roots=[root], user=build_user, names=[], grace=60))
            await eventually(lambda: not alive(root.pid), timeout=20, what="the tree's root to die", interval=0.01)
            assert not kill.done(), kill  # the agent has signalled the tree and waits for the child to go
            # The link goes: the agent itself here, the sshd process that holds the connection over SSH.
            link = agent if host.config.is_local else int((read_stat_fields(agent) or ["", "0"])[1])
            os.kill(link, signal.SIGKILL)
            with pytest.raises(AgentUnavailable):
                await kill
            del kill  # its exception holds the old agent's pipe (through the traceback), and so the pipe's tasks
            assert (await host.snapshot()).memory.total > 0  # and the host comes back
            await host.close()
            with contextlib.suppress(TimeoutError):  # at most 10 s for the closed host's tasks to end; not a check
                await eventually(lambda: not asyncio.all_tasks() - {asyncio.current_task()}, timeout=10,
                                 what="the other tasks to end", interval=0.01)
            gc.collect()  # a task whose exception nobody retrieved says so when it is collected
    finally:
        loop.set_exception_handler(None)
        stop(tree)
    assert unhandled == []
    assert not [line for line in lines if "Traceback" in line or line.startswith(("WARNING", "ERROR"))], lines
    assert [line for line in lines if line.startswith("INFO bot.hosts")], lines  # one line says what happened


class LineHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name} {self.format(record)}")


@contextlib.contextmanager
def logged_lines(*loggers: str) -> Iterator[list[str]]:
    """What ``loggers`` say, as text: unlike pytest's capture, which keeps each record (and the exception in
    its arguments, and every frame of that exception's traceback) until the test is over."""
    handler = LineHandler()
    saved = []
    for name in loggers:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    try:
        yield handler.lines
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def alive(pid: int) -> bool:
    fields = read_stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _tools_of(sid: int) -> int:
    return len(session_members(sid)) - 1  # less the /bin/sh parent
