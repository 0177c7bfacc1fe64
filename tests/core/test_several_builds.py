"""Several builds on one host, the whole bot against the Slack emulator, on this machine and over SSH: a stop or
a rebuild of one build leaves the others running; status, the live card, the OOM guard and the -j advisor count
per build; a build stopped by a signal is told as stopped (by whom, when rigops knows), never diagnosed.

The builds are real processes (copies of tests/fakes/hog.c named like ninja and compilers). Over SSH they run
as a user of these tests alone (tests.fakes.users.SEVERAL_USER), so a stop by name reaches nobody else's.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from bot.core.app import Core
from bot.core.guard import Guard
from bot.store import BuildRun
from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.fakes.tools import kill_session, session_members, start_fake_build, stop
from tests.fakes.users import needs_own_build_user, several_builds_user
from tests.harness import HUMAN, OPS, make_config, running_bot
from tests.scenario import thread_text
from tests.waiting import eventually

MIB = 1 << 20
IS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def user() -> str:
    return several_builds_user()


@pytest.fixture
def workdir(user: str) -> Iterator[Path]:
    """Where the builds run and log: writable by the build user."""
    path = Path(tempfile.mkdtemp(prefix="rigops-several-"))
    path.chmod(0o777)
    if IS_ROOT:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
def host_table(request: pytest.FixtureRequest, user: str) -> dict[str, Any]:
    """b200 as this machine or as the test sshd, its builds run by the several-builds user either way."""
    if request.param == "local":
        return local_table(user)
    table: SshTable = request.getfixturevalue("ssh_table")
    return table(user=user)


def local_table(user: str) -> dict[str, Any]:
    """This machine, whose build user is the several-builds user (config() makes its builds drop to that user):
    a first start of a build stops only that user's stray tools by name, never another test's."""
    return {"address": "local", "user": user}


@pytest.fixture
def ssh_host(ssh_table: SshTable, user: str) -> dict[str, Any]:
    return ssh_table(user=user)


def fake_build(fake_bin: Path, compilers: int, mb: int = 4) -> str:
    """A build's command: ninja holding 1 MiB with ``compilers`` cc1plus of ``mb`` MiB each, running until stopped."""
    return f"exec {fake_bin}/ninja 1" + "".join(f" -- {fake_bin}/cc1plus {mb}" for _ in range(compilers))


def config(table: dict[str, Any], workdir: Path, commands: dict[str, str], **host: Any) -> Config:
    """b200 with these builds. On this machine the agent runs as us: as root, each build's shell first becomes
    the host's build user (the same process: its identity stays the run's root)."""
    if table["address"] == "local" and IS_ROOT:
        user = table["user"]
        commands = {name: f"exec setpriv --reuid={user} --regid={user} --init-groups /bin/sh -c {shlex.quote(c)}"
                    for name, c in commands.items()}
    builds = {name: {"workdir": str(workdir), "command": command, "jobs": 2, "log_dir": str(workdir / "logs")}
              for name, command in commands.items()}
    return make_config({"b200": {**table, **host, "builds": builds}}, confirm=False)


async def say(emu: SlackEmulator, core: Core, text: str, *, thread_ts: str | None = None) -> str:
    """Say ``text`` in the ops channel and wait until the bot has dealt with it; the thread's ts."""
    before = core.activity.finished
    event = await emu.send_message(text, channel=OPS, thread_ts=thread_ts)
    await core.activity.wait_finished(before + 1)
    return thread_ts or str(event["ts"])


def live(core: Core, build: str) -> BuildRun:
    [run] = core.store.runs(host="b200", build=build, live=True)
    return run


def tree(run: BuildRun) -> list[int]:
    """The processes of a run's build: its supervisor's session, less the supervisor."""
    return sorted(p for p in session_members(run.supervisor_pid or 0) if p != run.supervisor_pid)


async def started(emu: SlackEmulator, core: Core, build: str, processes: int, *, text: str | None = None) -> BuildRun:
    """Start ``build`` and wait until its ``processes`` processes run: one ninja, the rest compilers (a child
    ninja has forked but not yet exec'd is still called ninja, and a status taken then would count it so)."""
    await say(emu, core, text or f"rebuild {build} -j2")
    run = live(core, build)
    await eventually(lambda: running(run, processes), what=f"{build}'s ninja and compilers", timeout=20)
    return run


def running(run: BuildRun, processes: int) -> bool:
    """Whether the run's ninja and all its compilers run (each compiler exec'd: not a second ninja)."""
    members = tree(run)
    return len(members) == processes and [_comm(pid) for pid in members].count("ninja") == 1


async def sampled_after(core: Core, run: BuildRun, after: float) -> Guard:
    """The guard of ``run`` once it has a sample taken after ``after`` (a time.time())."""

    def fresh() -> Guard | None:
        guard = core.guards.get(run.id)
        return guard if guard is not None and guard.last is not None and guard.last.time > after else None

    guard: Guard = await eventually(fresh, what=f"a sample of {run.build}", timeout=20)
    return guard


def end_all(core: Core) -> None:
    for run in core.store.runs(host="b200"):
        if run.supervisor_pid:
            kill_session(run.supervisor_pid)


async def thread_says(emu: SlackEmulator, root: str, needle: str, *, timeout: float = 30) -> str:
    """Wait until the thread of ``root`` holds ``needle``; its text."""
    await emu.wait_for(lambda: needle in thread_text(emu, OPS, root), timeout=timeout)
    return thread_text(emu, OPS, root)


async def test_kill_one_leaves_two_running(emulator: SlackEmulator, host_table: dict[str, Any], workdir: Path,
                                           fake_bin: Path, state_dir: Path) -> None:
    cfg = config(host_table, workdir, {"one": fake_build(fake_bin, 2), "two": fake_build(fake_bin, 2)})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            one = await started(emulator, core, "one", 3)
            one_root = core.store.runs(build="one")[0].thread_id
            one_procs = tree(one)
            two_thread = await say(emulator, core, "rebuild two -j2")
            two = live(core, "two")
            await eventually(lambda: running(two, 3), what="two's ninja and compilers")
            assert "first stopped" not in thread_text(emulator, OPS, two_thread)  # starting two stopped nothing
            assert tree(one) == one_procs
            two_procs = tree(two)

            kill_thread = await say(emulator, core, "kill one")
            text = thread_text(emulator, OPS, kill_thread)
            print(f"\n--- the thread of `kill one` with `two` running ({host_table['address']}) ---\n{text}\n---")
            assert "stop `one` (its own processes; other builds are spared) — stopped 3 processes" in text
            assert "stopped 3 processes (2 × cc1plus, 1 × ninja) in " in text  # one's, none of two's
            assert "SIGTERM): its own process tree" in text
            assert "`two` still running, untouched" in text
            await eventually(lambda: tree(one) == [], what="one's processes to be gone")
            assert tree(two) == two_procs
            assert [r.state for r in core.store.runs(build="two")] == ["running"]
            stopped = core.store.run(one.id)
            assert stopped is not None and (stopped.state, stopped.stopped_by) == ("stopped", HUMAN)

            # one's own thread says who stopped it, and gives no diagnosis
            assert one_root is not None
            told = await thread_says(emulator, one_root, "was stopped by")
            print(f"--- the thread of `rebuild one` ---\n{told}\n---")
            assert f"`one` on *b200* was stopped by <@{HUMAN}> after" in told
            assert "No error line found" not in told and "failed" not in told
            status = thread_text(emulator, OPS, await say(emulator, core, "status one"))
            assert f"stopped by <@{HUMAN}> after" in status
            assert "Also running here: `two` -j2" in status and ": 3 build processes (2 × cc1plus, 1 × ninja)" in status
        finally:
            end_all(core)


async def test_of_three_builds_a_rebuild_and_a_kill_each_touch_one(
        emulator: SlackEmulator, host_table: dict[str, Any], workdir: Path, fake_bin: Path, state_dir: Path) -> None:
    cfg = config(host_table, workdir, {name: fake_build(fake_bin, n) for name, n in
                                       (("one", 1), ("two", 2), ("three", 3))})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            one = await started(emulator, core, "one", 2)
            two = await started(emulator, core, "two", 3)
            three = await started(emulator, core, "three", 4)
            before = {r.build: tree(r) for r in (one, two, three)}

            text = thread_text(emulator, OPS, await say(emulator, core, "rebuild two -j1"))
            assert "first stopped 3 processes (2 × cc1plus, 1 × ninja)" in text and "its own process tree" in text
            assert "`one`, `three` still running, untouched" in text and "started `two` at -j1" in text
            new_two = live(core, "two")
            assert new_two.id != two.id
            await eventually(lambda: running(new_two, 3), what="the new two")
            assert tree(one) == before["one"] and tree(three) == before["three"]

            text = thread_text(emulator, OPS, await say(emulator, core, "kill three"))
            assert "stopped 4 processes (3 × cc1plus, 1 × ninja)" in text
            assert "`one`, `two` still running, untouched" in text
            await eventually(lambda: tree(three) == [], what="three to be gone")
            assert tree(one) == before["one"] and len(tree(new_two)) == 3
            assert {r.build for r in core.store.runs(host="b200", live=True)} == {"one", "two"}
        finally:
            end_all(core)


@pytest.mark.ssh
@pytest.mark.skipif(not IS_ROOT, reason="needs root: the stop by name must reach a user of this test alone")
async def test_a_build_started_by_hand_is_stopped_by_name_and_another_build_is_spared(
        emulator: SlackEmulator, ssh_host: dict[str, Any], user: str, workdir: Path, fake_bin: Path,
        state_dir: Path) -> None:
    cfg = config(ssh_host, workdir, {"one": fake_build(fake_bin, 2), "two": fake_build(fake_bin, 2)})
    async with running_bot(emulator, cfg, state_dir) as core:
        by_hand = None
        try:
            two = await started(emulator, core, "two", 3)
            two_procs = tree(two)
            by_hand = start_fake_build(fake_bin, compilers=2, mb=4, user=user)  # `one`, started at a terminal
            await eventually(lambda: len(session_members(by_hand.pid)) == 4, what="the build started by hand")
            text = thread_text(emulator, OPS, await say(emulator, core, "kill one"))
            print(f"\n--- the thread of `kill one` (started by hand) with `two` running ---\n{text}\n---")
            assert "SIGTERM): the build user's build tools by name, as rigops did not start it" in text
            assert "stopped 3 processes (1 × cc1plus, 1 × ninja, 1 × nvcc)" in text
            assert "spared 3 build processes of `two` (2 × cc1plus, 1 × ninja); `two` still running" in text
            assert session_members(by_hand.pid) in ([], [by_hand.pid])  # its shell may still be ending
            assert tree(two) == two_procs
        finally:
            end_all(core)
            if by_hand is not None:
                stop(by_hand)


async def test_status_counts_each_build_apart(emulator: SlackEmulator, host_table: dict[str, Any], workdir: Path,
                                              fake_bin: Path, state_dir: Path) -> None:
    cfg = config(host_table, workdir, {"one": fake_build(fake_bin, 1), "two": fake_build(fake_bin, 3)})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            await started(emulator, core, "one", 2)
            await started(emulator, core, "two", 4)
            text = thread_text(emulator, OPS, await say(emulator, core, "status"))
            assert "`one` -j2 — running for" in text and ": 2 build processes (1 × cc1plus, 1 × ninja) using" in text
            assert "`two` -j2 — running for" in text and ": 4 build processes (3 × cc1plus, 1 × ninja) using" in text
            text = thread_text(emulator, OPS, await say(emulator, core, "status two"))
            assert "`one` -j2" not in text.split("Also running here")[0]
            assert "Also running here: `one` -j2 (run 1): 2 build processes (1 × cc1plus, 1 × ninja)" in text
        finally:
            end_all(core)


@pytest.mark.ssh
@needs_own_build_user
async def test_the_guard_and_the_card_count_per_build_and_a_pause_stops_only_its_own(
        emulator: SlackEmulator, ssh_host: dict[str, Any], workdir: Path, fake_bin: Path, state_dir: Path) -> None:
    # two's compilers are the heavier: a guard that counted them as one's would pause them
    cfg = config(ssh_host, workdir, {"one": fake_build(fake_bin, 1, mb=4), "two": fake_build(fake_bin, 3, mb=24)})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            one = await started(emulator, core, "one", 2)
            two = await started(emulator, core, "two", 4)
            one_root = one.thread_id
            assert one_root is not None
            guard = await sampled_after(core, one, time.time() + 0.5)  # both builds up, their memory held
            assert (guard.last.compilers.count, guard.last.drivers.count) == (1, 1)  # not two's 3 compilers
            [other] = guard.last.others
            assert (other.root, other.compilers, other.tools) == (two.proc_id, 3, 4) and other.rss >= 72 * MIB
            assert [p.pid for p in guard.last.top_compilers] == [p for p in tree(one) if p != one.pid]
            await thread_says(emulator, one_root, "other builds here now: `two`")
            card = next(m.text for m in emulator.thread(OPS, one_root) if "`one` on *b200* —" in m.text)
            assert "(this build's tools" in card

            assert await core.guards.pause(guard, user=HUMAN) == 1
            assert [p for p, _ in guard.paused] == [p for p in tree(one) if p != one.pid]  # its cc1plus, not two's
            assert all(_state(p) != "T" for p in tree(two))
            await core.guards.resume(guard, user=HUMAN)
        finally:
            end_all(core)


@pytest.mark.skipif(not (IS_ROOT and os.access("/dev/kmsg", os.R_OK)), reason="needs the kernel log (root)")
async def test_an_oom_kill_in_another_build_is_told_as_that_build_s(
        emulator: SlackEmulator, user: str, workdir: Path, fake_bin: Path, state_dir: Path, cgroups: Any,
        public_tmp: Path) -> None:
    cg = cgroups.make("two", 48 * MIB)
    fifo = public_tmp / "go"
    os.mkfifo(fifo, 0o666)
    # two, in a 48 MiB cgroup: on "go", its shell becomes an nvcc that wants 96 MiB, and the kernel kills it
    two = (f"echo $$ > {cg}/cgroup.procs || exit 99\n{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 4 &\n"
           f"read go < {fifo}\nexec {fake_bin}/nvcc 96")
    if IS_ROOT:
        os.chown(cg / "cgroup.procs", pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    cfg = config(local_table(user), workdir, {"one": fake_build(fake_bin, 1), "two": two})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            one = await started(emulator, core, "one", 2)
            await started(emulator, core, "two", 3)
            assert one.thread_id is not None
            await sampled_after(core, one, time.time())  # one's guard has seen two's tree
            with open(fifo, "w"):
                pass
            told = await thread_says(emulator, one.thread_id, "An OOM kill on *b200* hit `nvcc`")
            assert "of `two` — not this build" in told
            assert "OOM killer killed" not in told  # never blamed on one
        finally:
            end_all(core)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the advice is capped at the cores: needs two")
async def test_the_advisor_leaves_room_for_the_other_build(emulator: SlackEmulator, user: str, workdir: Path,
                                                           fake_bin: Path, state_dir: Path) -> None:
    total = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                 if line.startswith("MemTotal:"))
    per_job = int(total * 0.9 / 2.5)  # two jobs fit in the host, one beside two's
    cfg = config(local_table(user), workdir, {"one": fake_build(fake_bin, 1), "two": fake_build(fake_bin, 1)})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            core.store.record_job_memory("b200", "one", [per_job])
            core.store.record_job_memory("b200", "two", [per_job])
            await started(emulator, core, "two", 2, text="rebuild two -j1")
            text = thread_text(emulator, OPS, await say(emulator, core, "rebuild one"))
            assert "for `two` → -j1" in text and "started `one` at -j1" in text
            assert live(core, "one").jobs == 1
        finally:
            end_all(core)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja")
@pytest.mark.parametrize(("target", "evidence"), [
    ("ninja", "its log says `ninja: build stopped: interrupted by user.`"),
    ("root", "it ended on SIGTERM"),
])
async def test_a_build_stopped_by_someone_else_is_stopped_not_failed(
        emulator: SlackEmulator, user: str, workdir: Path, state_dir: Path, target: str, evidence: str) -> None:
    (workdir / "build.ninja").write_text("rule wait\n  command = sleep 600\nbuild out: wait\n")
    cfg = config(local_table(user), workdir, {"one": "echo started; ninja"})
    async with running_bot(emulator, cfg, state_dir) as core:
        try:
            await say(emulator, core, "rebuild one -j2")
            one = live(core, "one")
            await eventually(lambda: "sleep" in map(_comm, tree(one)), what="ninja's job to run")
            assert one.thread_id is not None
            ninja = next(p for p in tree(one) if _comm(p) == "ninja")
            os.kill(ninja if target == "ninja" else one.pid, signal.SIGINT if target == "ninja" else signal.SIGTERM)
            told = await thread_says(emulator, one.thread_id, "was stopped after")
            assert "`one` on *b200* was stopped after" in told and "not by rigops" in told and evidence in told
            assert "failed" not in told and "First error" not in told and "No error line found" not in told
            run = core.store.run(one.id)
            assert run is not None and (run.state, run.stopped_by) == ("stopped", None)
        finally:
            end_all(core)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
