"""The OOM guard in a build's thread, with real memory pressure: builds the bot started run inside a cgroup v1
memory cgroup with a limit, so the alert, the pause, the restart and the kernel's OOM kills are all real.

The thresholds are per host (``memory_alert_pct``, ``memory_reserve``), so a 96 MiB cgroup behaves like a
big host near its limit without these tests needing gigabytes.
"""

from __future__ import annotations

import os
import re
import signal
import struct
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from bot.core.talk import Place, Pressed
from bot.frontends.slack.app import RigopsApp
from bot.store import BuildRun, Store
from slackemu import Message, SlackEmulator, text_of
from tests.fakes.cgroups import Cgroups, in_cgroup
from tests.fakes.replicas import process_of, query, rigops_processes, write_toml
from tests.harness import OPS, make_config, running_app
from tests.scenario import IGNORE_ACTION, PAUSE_ACTION, RESTART_ACTION, RESUME_ACTION, has_buttons, thread_text
from tests.store.pgserver import PostgresServer

MIB = 1 << 20
PNG = b"\x89PNG\r\n\x1a\n"
VIEWER = "U0VIEWER"
OPERATOR = "U0HUMAN"


def hosts(workdir: Path, cg: Path, script: str, **host: Any) -> dict[str, Any]:
    """One local host whose build moves itself into ``cg`` and runs ``script``."""
    command = f"echo $$ > {cg}/cgroup.procs || exit 99\n{script}"
    return {"b200": {"address": "local", "memory_alert_pct": 20, **host, "builds": {"hello": {
        "workdir": str(workdir), "command": command, "jobs": 4, "log_dir": str(workdir / "logs")}}}}


def config(workdir: Path, cg: Path, script: str, **host: Any) -> Config:
    return make_config(hosts(workdir, cg, script, **host), confirm=False)


def members(cg: Path) -> list[int]:
    return [int(p) for p in (cg / "cgroup.procs").read_text().split()]


def name_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def state_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


async def end_build(emu: SlackEmulator, cg: Path, root: int, *, expect: tuple[str, ...] = ("ninja",)) -> None:
    """Let the build finish: once its tools are up, every process in its cgroup but its shell is killed, so
    the shell exits 0."""
    await emu.wait_for(lambda: set(expect) <= {name_of(p) for p in members(cg)}, timeout=20)
    for pid in members(cg):
        if pid != root:
            os.kill(pid, signal.SIGKILL)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def start(emu: SlackEmulator, app: RigopsApp, text: str = "rebuild -j4") -> tuple[str, BuildRun]:
    root = str((await emu.send_message(text, channel=OPS))["ts"])
    store = app.core.store
    runs: list[BuildRun] = await emu.wait_for(lambda: store.runs(live=True), timeout=30)
    return root, runs[0]


async def alert_message(emu: SlackEmulator, root: str, *, timeout: float = 30) -> Message:
    def find() -> Message | None:
        return next((m for m in emu.thread(OPS, root) if "Memory pressure on b200" in m.text), None)

    found: Message = await emu.wait_for(find, timeout=timeout)
    return found


async def wait_text(emu: SlackEmulator, root: str, needle: str, *, timeout: float = 30) -> Message:
    def find() -> Message | None:
        return next((m for m in emu.thread(OPS, root) if needle in text_of(m)), None)

    found: Message = await emu.wait_for(find, timeout=timeout)
    return found


def charts(emu: SlackEmulator, root: str) -> list[bytes]:
    return [f.content for m in emu.thread(OPS, root) for f in m.files if f.name.endswith("-memory.png")]


def labels(message: Message) -> list[str]:
    return [str(e["text"]["text"]) for b in message.blocks if b.get("type") == "actions" for e in b["elements"]]


def action_ids(message: Message) -> list[str]:
    return [str(e["action_id"]) for b in message.blocks if b.get("type") == "actions" for e in b["elements"]]


@pytest.fixture
def build_cg(cgroups: Cgroups) -> Iterator[Path]:
    yield cgroups.make("guard", 96 * MIB)


async def test_an_alert_comes_before_the_real_oom_kill_and_the_kill_is_blamed_on_the_build(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, build_cg: Path, cgroups: Cgroups,
        fake_bin: Path, public_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.core.guard.KILLS_EVERY", 0.5)  # kills are told together at most every 10 s
    fifo = public_tmp / "go"
    os.mkfifo(fifo, 0o666)
    # compilers of 40, 20 and 20 MiB in a 96 MiB cgroup; on "go" a 20 MiB ptxas joins and the kernel kills one
    script = (f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 40 -- {fake_bin}/nvcc 20 -- {fake_bin}/cicc 20 &\n"
              f"read go < {fifo}\n{fake_bin}/ptxas 20 &\nwait")
    async with running_app(emulator, config(tmp_path, build_cg, script), state_dir) as app:
        root, run = await start(emulator, app)
        alert = await alert_message(emulator, root)
        assert re.search(r"\d+% of the build's memory limit left \(\d+ MiB of 96 MiB\)", alert.text), alert.text
        assert "3 compilers at ~" in alert.text
        assert action_ids(alert) == [PAUSE_ACTION, IGNORE_ACTION]  # three would not fit fewer: no restart offer
        await emulator.wait_for(lambda: charts(emulator, root), timeout=20)
        assert png_size(charts(emulator, root)[0]) == (900, 400)

        # An OOM kill elsewhere on the host is told, and not blamed on this build.
        other_cg = cgroups.make("elsewhere", 32 * MIB)
        other = in_cgroup(other_cg, f"exec {fake_bin}/hog 64")
        readable = os.access("/dev/kmsg", os.R_OK)
        other_text = "hit `hog`" if readable else "cannot tell whose process"
        told = await wait_text(emulator, root, other_text)
        assert other.wait(timeout=10) == -signal.SIGKILL
        assert "not this build" in told.text or not readable

        # The build's own OOM kill, after the alert, blamed on the build.
        with open(fifo, "w"):
            pass
        boom = await wait_text(emulator, root, "OOM killer killed")
        assert "of `hello` on *b200*" in boom.text
        if readable:
            assert "`cc1plus`" in boom.text
        assert float(alert.ts) < float(boom.ts)
        store = app.core.store
        kills = store.oom_kills("b200", since=0)
        assert [k[3] for k in kills if k[2] == run.id and k[3] == "build"]
        assert any(k[3] != "build" for k in kills)

        await end_build(emulator, build_cg, run.pid)
        await wait_text(emulator, root, "succeeded in")
        await emulator.wait_for(lambda: len(charts(emulator, root)) >= 2, timeout=20)
        series = store.run_memory(run.id)
        assert series is not None and any(k[1] == "build" for k in series["kills"])
    text = thread_text(emulator, OPS, root)
    assert text.count("Memory pressure on b200") == 1, text  # one alert for the episode


def tight_build(fake_bin: Path, hog_pid: Path) -> str:
    """Compilers of 30 and 20 MiB beside a 30 MiB hog (its pid in ``hog_pid``): killing the hog ends the
    pressure in a 96 MiB cgroup while the build goes on."""
    return (f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 30 -- {fake_bin}/nvcc 20 &\n"
            f"{fake_bin}/hog 30 &\necho $! > {hog_pid}\nwait")


async def test_pause_stops_the_heaviest_compiler_and_resumes_it_when_memory_is_back(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, build_cg: Path, fake_bin: Path,
        public_tmp: Path) -> None:
    hog_pid = public_tmp / "hog.pid"
    async with running_app(emulator, config(tmp_path, build_cg, tight_build(fake_bin, hog_pid)), state_dir) as app:
        root, run = await start(emulator, app)
        alert = await alert_message(emulator, root)

        await emulator.click(alert.ts, PAUSE_ACTION, user=VIEWER, value=str(run.id))
        denied = await emulator.wait_for(lambda: emulator.ephemerals(OPS, user=VIEWER), timeout=10)
        assert "not an operator" in denied[0].text
        assert all(state_of(p) != "T" for p in members(build_cg))

        await emulator.click(alert.ts, PAUSE_ACTION, user=OPERATOR, value=str(run.id))
        paused = await wait_text(emulator, root, "paused the 1 heaviest compiler")
        assert f"<@{OPERATOR}>" in paused.text
        # SIGSTOP takes hold when the process next runs: on a busy machine, a moment after the agent sent it
        stopped = await emulator.wait_for(lambda: [p for p in members(build_cg) if state_of(p) == "T"], timeout=10)
        assert [name_of(p) for p in stopped] == ["cc1plus"]
        assert [pid for pid, _ in app.core.store.paused(run.id)] == stopped  # kept, should we die
        card = await wait_text(emulator, root, "1 compiler paused")  # the live card says so too
        assert "`hello` on *b200* — running" in card.text and "memory pressure:" in card.text
        settled = next(m for m in emulator.thread(OPS, root) if m.ts == alert.ts)
        assert not has_buttons(settled) and "paused the heaviest compilers" in thread_text(emulator, OPS, root)

        os.kill(int(hog_pid.read_text()), signal.SIGKILL)  # memory comes back
        resumed = await wait_text(emulator, root, "Resumed 1 paused compiler")
        assert "memory is back" in resumed.text
        assert state_of(stopped[0]) not in ("T", "gone")
        assert app.core.store.paused(run.id) == []
        await end_build(emulator, build_cg, run.pid)
        await wait_text(emulator, root, "succeeded in")


async def test_resume_now_lets_paused_compilers_go_on_while_memory_is_still_tight(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, build_cg: Path, fake_bin: Path,
        public_tmp: Path) -> None:
    hog_pid = public_tmp / "hog.pid"
    async with running_app(emulator, config(tmp_path, build_cg, tight_build(fake_bin, hog_pid)), state_dir) as app:
        root, run = await start(emulator, app)
        alert = await alert_message(emulator, root)
        await emulator.click(alert.ts, PAUSE_ACTION, user=OPERATOR, value=str(run.id))
        paused = await wait_text(emulator, root, "paused the 1 heaviest compiler")
        assert action_ids(paused) == [RESUME_ACTION]
        stopped = await emulator.wait_for(lambda: [p for p in members(build_cg) if state_of(p) == "T"], timeout=10)
        assert len(stopped) == 1

        await emulator.click(paused.ts, RESUME_ACTION, user=VIEWER, value=str(run.id))
        await emulator.wait_for(lambda: emulator.ephemerals(OPS, user=VIEWER), timeout=10)
        assert state_of(stopped[0]) == "T"  # a viewer may not
        await emulator.click(paused.ts, RESUME_ACTION, user=OPERATOR, value=str(run.id))
        resumed = await wait_text(emulator, root, "Resumed 1 paused compiler")
        assert "<@U0HUMAN> resumed them" in resumed.text
        guard = app.core.guards.get(run.id)
        assert guard is not None and guard.watch.in_episode  # memory is still tight: this was the button
        assert state_of(stopped[0]) not in ("T", "gone") and app.core.store.paused(run.id) == []
        assert ("resume", OPERATOR) in [(e["what"], e["user"]) for e in app.core.store.audit_entries(50)]
        await end_build(emulator, build_cg, run.pid)
        await wait_text(emulator, root, "succeeded in")


@pytest.mark.postgres
async def test_a_pause_pressed_on_another_rigops_is_handed_to_the_one_following_the_build(
        emulator: SlackEmulator, tmp_path: Path, build_cg: Path, fake_bin: Path, public_tmp: Path,
        postgres: PostgresServer) -> None:
    hog_pid = public_tmp / "hog.pid"
    cfg = replace(config(tmp_path, build_cg, tight_build(fake_bin, hog_pid)), state=postgres.fresh_state())
    async with (running_app(emulator, cfg, tmp_path / "one") as one,
                running_app(emulator, cfg, tmp_path / "two") as two):
        root, run = await start(emulator, one)
        owner, other = (one, two) if run.owner == one.core.store.replicas.me else (two, one)
        alert = await alert_message(emulator, root)
        assert other.core.guards.get(run.id) is None  # only the rigops following the build guards it

        await other.core.pressed(Pressed(kind="oom_pause", value=str(run.id), user=OPERATOR,
                                         place=Place(OPS, root), message=alert.ts))
        await wait_text(emulator, root, "paused the 1 heaviest compiler")
        stopped = await emulator.wait_for(lambda: [p for p in members(build_cg) if state_of(p) == "T"], timeout=10)
        assert [name_of(p) for p in stopped] == ["cc1plus"]
        guard = owner.core.guards.get(run.id)
        assert guard is not None and [pid for pid, _ in guard.paused] == stopped
        assert not emulator.ephemerals(OPS, user=OPERATOR)  # not "no longer running"

        os.kill(int(hog_pid.read_text()), signal.SIGKILL)
        await wait_text(emulator, root, "Resumed 1 paused compiler")
        await end_build(emulator, build_cg, run.pid)
        await wait_text(emulator, root, "succeeded in")


@pytest.mark.postgres
async def test_compilers_paused_by_a_rigops_that_is_killed_are_resumed_by_the_one_that_adopts_the_build(
        emulator: SlackEmulator, tmp_path: Path, build_cg: Path, fake_bin: Path, public_tmp: Path,
        postgres: PostgresServer) -> None:
    """Two real rigops processes; Pause is pressed (on whichever Slack gives it to: the other hands it over), and
    the rigops that paused is killed with SIGKILL: the survivor adopts the build and resumes what it left
    stopped."""
    hog_pid, url = public_tmp / "hog.pid", postgres.fresh_state()
    toml = write_toml(tmp_path / "rigops.toml", {
        "confirm": False, "state": url, "slack": {"ops_channels": [OPS]}, "policy": {"operators": [OPERATOR]},
        "hosts": hosts(tmp_path, build_cg, tight_build(fake_bin, hog_pid))})
    with rigops_processes(emulator, toml, tmp_path, 2) as procs:
        await emulator.wait_for(lambda: len(emulator.open_connections) == 2, timeout=60)
        root = str((await emulator.send_message("rebuild -j4", channel=OPS))["ts"])
        alert = await alert_message(emulator, root, timeout=60)
        (run_id,), = query(url, "SELECT id FROM runs")
        await emulator.click(alert.ts, PAUSE_ACTION, user=OPERATOR, value=str(run_id))
        await wait_text(emulator, root, "paused the 1 heaviest compiler")
        stopped = await emulator.wait_for(lambda: [p for p in members(build_cg) if state_of(p) == "T"], timeout=10)
        assert query(url, "SELECT pid FROM paused") == [(stopped[0],)]

        (owner,), = query(url, "SELECT owner FROM runs")
        process_of(url, owner, procs).send_signal(signal.SIGKILL)  # it can resume nothing now
        resumed = await wait_text(emulator, root, "Resumed 1 paused compiler", timeout=60)
        assert "paused by a rigops that stopped" in resumed.text
        assert state_of(stopped[0]) not in ("T", "gone") and query(url, "SELECT pid FROM paused") == []
        assert query(url, "SELECT owner FROM runs") != [(owner,)]

        os.kill(int(hog_pid.read_text()), signal.SIGKILL)
        await end_build(emulator, build_cg, int(query(url, "SELECT pid FROM runs")[0][0]))  # type: ignore[arg-type]
        await wait_text(emulator, root, "succeeded in", timeout=60)


@pytest.mark.parametrize("how", ["button", "policy"])
async def test_stop_and_restart_at_the_suggested_jobs(
        how: str, emulator: SlackEmulator, tmp_path: Path, state_dir: Path, build_cg: Path,
        fake_bin: Path) -> None:
    # four 15 MiB compilers and a 20 MiB hog; with 30% kept in reserve fewer compilers fit
    script = (f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 15 -- {fake_bin}/nvcc 15 -- {fake_bin}/cicc 15 "
              f"-- {fake_bin}/ptxas 15 &\n{fake_bin}/hog 20 &\nwait")
    extra: dict[str, Any] = {"memory_reserve": 0.3}
    if how == "policy":
        extra["on_memory_pressure"] = "restart"
    async with running_app(emulator, config(tmp_path, build_cg, script, **extra), state_dir) as app:
        root, run = await start(emulator, app)
        alert = await alert_message(emulator, root)
        found = re.search(r"suggest -j(\d+)\.", alert.text)
        assert found is not None and 1 <= int(found.group(1)) < 4, alert.text
        jobs = int(found.group(1))
        if how == "button":
            assert labels(alert) == [f"Stop & restart at -j{jobs}", "Pause the heaviest compilers", "Ignore"]
            await emulator.click(alert.ts, RESTART_ACTION, user=VIEWER, value=f"{run.id}:{jobs}")
            await emulator.wait_for(lambda: emulator.ephemerals(OPS, user=VIEWER), timeout=10)
            await emulator.click(alert.ts, RESTART_ACTION, user=OPERATOR, value=f"{run.id}:5000")  # not ours
            await emulator.click(alert.ts, RESTART_ACTION, user=OPERATOR, value=f"{run.id}:{jobs}")
        else:
            assert f"restarts the build at -j{jobs} by itself" in alert.text and RESTART_ACTION not in action_ids(alert)
        await wait_text(emulator, root, f"started `hello` at -j{jobs}")
        store = app.core.store
        runs = store.runs(host="b200")
        assert [(r.jobs, r.state) for r in runs] == [(jobs, "running"), (4, "stopped")]
        audit = [(e["what"], e["user"]) for e in store.audit_entries(50)]
        who = OPERATOR if how == "button" else "rigops"
        assert ("spawn", who) in audit
        if how == "button":
            assert ("request", VIEWER) in audit and f"Restart at -j{jobs} pressed by <@U0HUMAN>" in thread_text(
                emulator, OPS, root)
        else:
            assert "this host's policy" in thread_text(emulator, OPS, root)
        await end_build(emulator, build_cg, runs[0].pid)
        await wait_text(emulator, root, "succeeded in")


async def test_ignore_silences_the_next_episode(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, build_cg: Path, fake_bin: Path,
        public_tmp: Path) -> None:
    hog_pid = public_tmp / "hog.pid"
    async with running_app(emulator, config(tmp_path, build_cg, tight_build(fake_bin, hog_pid)), state_dir) as app:
        root, run = await start(emulator, app)
        alert = await alert_message(emulator, root)
        await emulator.click(alert.ts, IGNORE_ACTION, user=OPERATOR, value=str(run.id))
        await wait_text(emulator, root, "Ignored by <@U0HUMAN>")
        guard = app.core.guards.get(run.id)
        assert guard is not None and guard.ignored_by == OPERATOR

        os.kill(int(hog_pid.read_text()), signal.SIGKILL)  # the episode ends ...
        await emulator.wait_for(lambda: not guard.watch.in_episode, timeout=20)
        again = in_cgroup(build_cg, f"exec {fake_bin}/hog 30")  # ... and a second one begins
        try:
            first = guard.alert
            await emulator.wait_for(lambda: guard.alert is not first, timeout=20)  # the second episode's alert
            seen = guard.last
            await emulator.wait_for(lambda: guard.last is not seen, timeout=10)  # ... and the guard went past it
            assert thread_text(emulator, OPS, root).count("Memory pressure on b200") == 1
        finally:
            again.kill()
            again.wait()
        await end_build(emulator, build_cg, run.pid)
        await wait_text(emulator, root, "succeeded in")


async def test_the_advisor_picks_the_jobs_from_the_last_run_and_the_chart_comes_on_request(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, fake_bin: Path) -> None:
    # compilers of 24 MiB that live two seconds: their peaks are what the advisor learns
    script = (f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 24 2 -- {fake_bin}/nvcc 24 2 -- {fake_bin}/cicc 24 2")
    cfg = make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(tmp_path), "command": script, "jobs": 4, "log_dir": str(tmp_path / "logs")}}}},
        confirm=False)
    async with running_app(emulator, cfg, state_dir) as app:
        root = str((await emulator.send_message("memory chart for hello", channel=OPS))["ts"])
        await wait_text(emulator, root, "no memory chart yet")

        root = str((await emulator.send_message("rebuild", channel=OPS))["ts"])
        started = await wait_text(emulator, root, "started `hello` at -j4")
        assert "past runs" not in started.text  # no data yet: the configured jobs
        await wait_text(emulator, root, "succeeded in")
        store = app.core.store
        peaks = await emulator.wait_for(lambda: store.job_memory("b200", "hello"), timeout=10)
        assert len(peaks) == 3 and all(24 * MIB <= p < 40 * MIB for p in peaks)
        await emulator.wait_for(lambda: charts(emulator, root), timeout=10)  # the chart at the end

        await emulator.send_message("memory chart", channel=OPS, thread_ts=root)
        await emulator.wait_for(lambda: len(charts(emulator, root)) == 2, timeout=20)
        assert png_size(charts(emulator, root)[1]) == (900, 400)

        await emulator.send_message("oom-ing, retry", channel=OPS, thread_ts=root)
        advised = await wait_text(emulator, root, "-j from memory of past runs")
        cores = os.cpu_count() or 1
        assert re.search(r"~\d+ MiB per (?:compile|nvcc) job at p95 over 1 run, \d+(?:\.\d)? GiB usable of "
                         rf"\d+(?:\.\d)? GiB on the host → -j{cores} \(capped at {cores} cores\)", advised.text), \
            advised.text
        assert f"started `hello` at -j{cores}" in advised.text
        await emulator.wait_for(lambda: len(store.runs(host="b200")) == 2 and not store.runs(live=True),
                                timeout=30)


async def test_compilers_left_paused_by_a_dead_bot_are_resumed_when_it_comes_back(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, fake_bin: Path) -> None:
    cfg = make_config({"b200": {"address": "local", "builds": {"hello": {
        "workdir": str(tmp_path), "command": f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 8 -- {fake_bin}/nvcc 8",
        "jobs": 2, "log_dir": str(tmp_path / "logs")}}}}, confirm=False)
    async with running_app(emulator, cfg, state_dir) as app:
        root, run = await start(emulator, app, "rebuild -j2")
    compilers = await emulator.wait_for(lambda: compilers_of(run.pid), timeout=20)
    # what a rigops that died mid-pause leaves: stopped compilers, and their identities in its state
    for pid, _ in compilers:
        os.kill(pid, signal.SIGSTOP)
    state = Store.open(state_dir)
    try:
        state.set_paused(run.id, compilers)
    finally:
        state.close()
    await emulator.wait_for(lambda: all(state_of(pid) == "T" for pid, _ in compilers), timeout=10)
    async with running_app(emulator, cfg, state_dir) as app:
        told = await wait_text(emulator, root, "Resumed 2 paused compilers")
        assert "paused by a rigops that stopped" in told.text
        assert all(state_of(pid) not in ("T", "gone") for pid, _ in compilers)
        assert app.core.store.paused(run.id) == []
        for pid, _ in compilers:
            os.kill(pid, signal.SIGKILL)
        await wait_text(emulator, root, "succeeded in")


def compilers_of(root: int) -> list[tuple[int, int]]:
    """(pid, start) of the two fake compilers below ``root``, once both are up."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                data = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = data.rsplit(")", 1)[1].split()
            parents[int(entry)], stats[int(entry)] = int(fields[1]), fields
    found = []
    for pid in parents:
        up = pid
        while up in parents and up != root and up > 1:
            up = parents[up]
        if up == root and name_of(pid) in ("cc1plus", "nvcc"):
            found.append((pid, int(stats[pid][19])))
    return sorted(found) if len(found) == 2 else []
