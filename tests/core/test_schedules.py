"""Scheduled status posts: the schedule words, `/rigops schedule ...`, and APScheduler driven with near-future run
times (never a real minute of waiting): firing, restarts, coalesced missed runs, two bots on one state dir."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import subprocess
import sys
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]

from bot.config import Config, ScheduleConfig, parse
from bot.core.schedules import parse_add
from bot.frontends.slack.app import RigopsApp
from bot.language.schedule_text import parse_when
from bot.scheduler import LOCK_NAME, ScheduleRunner
from bot.store.schedules import DB_NAME
from bot.util.errors import ConfigError, PlanError
from slackemu import Message, SlackEmulator
from tests.fakes.nvidia_smi import install_nvidia_smi, path_with
from tests.harness import ADMIN, OPS, make_config, record_run, running_app
from tests.store.pgserver import PostgresServer
from tests.waiting import eventually

DIGEST = "C0DIGEST"


@pytest.fixture
def emulator(emulator: SlackEmulator) -> SlackEmulator:
    """The workspace, with the digest channel rigops was invited to."""
    emulator.add_channel(DIGEST, "digest")
    return emulator
BERLIN = ZoneInfo("Europe/Berlin")


def two_hosts(**extra: Any) -> Config:
    return make_config({"b200": {"address": "local"}, "h100": {"address": "local"}}, **extra)


def runner(app: RigopsApp) -> ScheduleRunner:
    assert app.core.schedules.runner is not None
    return app.core.schedules.runner


async def schedule(emu: SlackEmulator, app: RigopsApp, args: str, *, user: str = ADMIN, channel: str = OPS) -> str:
    """`/rigops schedule <args>`; returns what the bot answered."""
    seen, before = len(emu.messages(channel)), app.core.activity.finished
    await emu.send_slash(f"schedule {args}", channel=channel, user=user)
    await app.core.activity.wait_finished(before + 1)
    return "\n".join(m.text for m in emu.messages(channel)[seen:] if not is_digest(m))


def is_digest(message: Message) -> bool:
    return message.text.startswith("rigops status")


def digests(emu: SlackEmulator, channel: str = DIGEST) -> list[Message]:
    return [m for m in emu.messages(channel) if is_digest(m)]


def fire(app: RigopsApp, schedule_id: str, *, at: datetime | None = None) -> None:
    """Move the job's next run to now (or ``at``): the running scheduler wakes up for it."""
    runner(app).scheduler.modify_job(schedule_id, next_run_time=at or datetime.now(UTC))


# -- the words ----------------------------------------------------------------------------------------------
JUNE_1 = datetime(2026, 6, 1, 10, 1, tzinfo=BERLIN)  # a Monday


@pytest.mark.parametrize(("text", "first"), [
    ("0 9 * * 1-5", datetime(2026, 6, 2, 9, 0, tzinfo=BERLIN)),
    ("*/15 * * * *", datetime(2026, 6, 1, 10, 15, tzinfo=BERLIN)),
    ("hourly", datetime(2026, 6, 1, 11, 0, tzinfo=BERLIN)),
    ("@daily", datetime(2026, 6, 2, 0, 0, tzinfo=BERLIN)),
    ("daily at 09:00", datetime(2026, 6, 2, 9, 0, tzinfo=BERLIN)),
    ("Daily at 18:30", datetime(2026, 6, 1, 18, 30, tzinfo=BERLIN)),
    ("weekdays at 8:05", datetime(2026, 6, 2, 8, 5, tzinfo=BERLIN)),
])
def test_schedule_words_become_triggers_in_their_timezone(text: str, first: datetime) -> None:
    assert parse_when(text, timezone="Europe/Berlin").get_next_fire_time(None, JUNE_1) == first


FRIDAY = datetime(2026, 6, 5, 10, 1, tzinfo=BERLIN)


@pytest.mark.parametrize(("text", "days"), [
    ("0 9 * * 1-5", ["Mon", "Tue", "Wed", "Thu", "Fri"]),  # crontab's numbers, not APScheduler 3's (0 = Monday)
    ("0 9 * * 0", ["Sun"]), ("0 9 * * 7", ["Sun"]), ("0 9 * * sat,sun", ["Sat", "Sun"]),
    ("0 9 * * */2", ["Sun", "Tue", "Thu", "Sat"]), ("0 9 * * 5-7", ["Fri", "Sat", "Sun"]), ("@weekly", ["Sun"]),
])
def test_crontab_weekdays_mean_what_crontab_says(text: str, days: list[str]) -> None:
    trigger, at, seen = parse_when(text, timezone="Europe/Berlin"), FRIDAY, []
    for _ in range(len(days)):
        at = trigger.get_next_fire_time(None, at)
        seen.append(at.strftime("%a"))
        at += timedelta(minutes=1)
    assert sorted(seen) == sorted(days) and seen[0] == next(d for d in ["Sat", "Sun", "Mon", "Tue", "Wed", "Thu",
                                                                         "Fri"] if d in days)


def test_every_is_an_interval() -> None:
    assert parse_when("every 30m", timezone="UTC").interval == timedelta(minutes=30)
    assert parse_when("every 2 hours", timezone="UTC").interval == timedelta(hours=2)
    assert parse_when("every 1d", timezone="UTC").interval == timedelta(days=1)


@pytest.mark.parametrize(("text", "timezone", "error"), [
    ("61 * * * *", "UTC", "'61 * * * *' is not a valid crontab line"),
    ("* * *", "UTC", "cannot read '* * *' as a schedule"),
    ("sometimes", "UTC", "cannot read 'sometimes' as a schedule"),
    ("every 0m", "UTC", "too often"),
    ("every 30s", "UTC", "cannot read 'every 30s'"),
    ("daily at 25:00", "UTC", "there is no 25:00"),
    ("0 9 1 * 1", "UTC", "names both days of the month and weekdays"),
    ("0 9 * * 8", "UTC", "not a valid crontab line"),
    ("hourly", "Mars/Olympus", "unknown timezone 'Mars/Olympus'"),
])
def test_bad_schedule_words_are_refused_clearly(text: str, timezone: str, error: str) -> None:
    with pytest.raises(PlanError, match=error.replace("*", r"\*")):
        parse_when(text, timezone=timezone)


@pytest.mark.parametrize(("args", "want"), [
    ('"0 9 * * 1-5"', ("0 9 * * 1-5", None, OPS, "UTC", False)),
    ("every 30m b200 <#C0DIGEST|digest>", ("every 30m", ("b200",), DIGEST, "UTC", False)),
    ("daily at 09:00 b200,h100 tz=Europe/Berlin only-changes", ("daily at 09:00", ("b200", "h100"), OPS,
                                                                  "Europe/Berlin", True)),
    ("“*/5 * * * *” all <#C0DIGEST>", ("*/5 * * * *", None, DIGEST, "UTC", False)),  # a Mac's curly quotes
    ("hourly h100 C0DIGEST", ("hourly", ("h100",), DIGEST, "UTC", False)),
    ("hourly h100 <#C0DIGEST|>", ("hourly", ("h100",), DIGEST, "UTC", False)),  # Slack may leave the name out
    ("hourly h100 #gpu-ops", ("hourly", ("h100",), None, "UTC", False)),  # as typed: looked up by its name
])
def test_schedule_add_arguments(args: str, want: tuple[Any, ...]) -> None:
    req = parse_add(args, config=two_hosts(), channel=OPS)
    assert (req.when, req.hosts, req.channel, req.timezone, req.only_changes) == want
    assert req.channel_name == (None if req.channel else "gpu-ops")


@pytest.mark.parametrize(("args", "error"), [
    ('"0 9 * * *" h200', "unknown host 'h200' (known: b200, h100, or all)"),
    ('"0 9 * * *" #General!', "I can't tell which channel #General! is"),
    ('"0 9 * * *', "no closing quote"),
    ("0 9 * * *", "put a crontab line in quotes"),
    ("", "say when"),
])
def test_bad_schedule_add_arguments(args: str, error: str) -> None:
    with pytest.raises(PlanError, match=re.escape(error)):
        parse_add(args, config=two_hosts(), channel=OPS)


def test_config_schedules() -> None:
    config = two_hosts(schedules=[
        {"cron": "0 9 * * 1-5", "channel": DIGEST, "hosts": "all", "timezone": "Europe/Berlin"},
        {"cron": "every 30m", "channel": OPS, "hosts": "b200", "only_changes": True},
        {"cron": "hourly", "channel": OPS, "hosts": ["b200", "h100"]}])
    assert config.schedules == (
        ScheduleConfig(cron="0 9 * * 1-5", channel=DIGEST, hosts=None, timezone="Europe/Berlin"),
        ScheduleConfig(cron="every 30m", channel=OPS, hosts=("b200",), only_changes=True),
        ScheduleConfig(cron="hourly", channel=OPS, hosts=("b200", "h100")))


@pytest.mark.parametrize(("entry", "error"), [
    ({"cron": "61 * * * *", "channel": OPS}, r"key 'schedules\[0\].cron': '61 \* \* \* \*' is not a valid crontab"),
    ({"cron": "hourly", "channel": OPS, "hosts": ["h200"]}, r"schedules\[0\].hosts': unknown host or group 'h200'"),
    ({"cron": "hourly", "channel": OPS, "hosts": 3}, r"schedules\[0\].hosts': expected a host name"),
    ({"cron": "hourly", "channel": "#ops"}, r"schedules\[0\].channel': expected a channel id"),
    ({"cron": "hourly", "channel": OPS, "timezone": "CEST"}, r"schedules\[0\].timezone': unknown timezone"),
    ({"channel": OPS}, r"schedules\[0\].cron': required"),
    ({"cron": "hourly", "channel": OPS, "when": "now"}, r"schedules\[0\].when': unknown key"),
])
def test_bad_config_schedules_name_the_key(entry: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        parse({"hosts": {"b200": {}}, "schedules": [entry]})


# -- in Slack ---------------------------------------------------------------------------------------------------
async def test_a_schedule_fires_and_posts_the_digest_in_its_channel(
        emulator: SlackEmulator, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_with(install_nvidia_smi(tmp_path / "bin", "rtx-pro-6000")))
    async with running_app(emulator, two_hosts(), state_dir) as app:
        reply = await schedule(emulator, app, 'add "every 30m" b200 <#C0DIGEST|digest>')
        assert reply.startswith(":alarm_clock: Schedule `1`: a status digest of b200 in <#C0DIGEST>, *every 30m*")
        listed = await schedule(emulator, app, "list")
        assert "• `1` *every 30m* (UTC) — b200 → <#C0DIGEST> · next " in listed and f"<@{ADMIN}>" in listed
        fire(app, "1")
        await emulator.wait_for(lambda: digests(emulator))
        await eventually(lambda: runner(app).runs == 1, timeout=20, what="the run to be counted")
        post = digests(emulator)[0]
        assert post.text == "rigops status: 1 host, 0 builds running"
        assert "*b200* — `" in post.rendered and "h100" not in post.rendered
        assert ("`0` RTX PRO 6000 Blackwell Workstation Edition · 42% · 23.3/95.6 GiB · 51°C · "
                "n/a (pid 7719)") in post.rendered
        assert "`1` RTX PRO 6000 Blackwell Workstation Edition · 0% · 0.0/95.6 GiB · idle" in post.rendered
        assert "Schedule `1` · every 30m · times in UTC" in post.rendered
        assert digests(emulator, OPS) == []
        assert runner(app).scheduler.get_job("1").next_run_time > datetime.now(UTC) + timedelta(minutes=29)
        entries = app.core.store.audit_entries()
    assert [e["what"] for e in entries if e["what"].startswith("schedule")] == ["schedule add"]


async def test_a_digest_of_a_big_fleet_goes_on_in_its_thread(
        emulator: SlackEmulator, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_with(install_nvidia_smi(tmp_path / "bin", "b200")))
    config = make_config({f"node{i:02d}": {"address": "local"} for i in range(64)})  # 8 GPUs each
    async with running_app(emulator, config, state_dir) as app:
        await schedule(emulator, app, 'add "every 30m" all <#C0DIGEST|digest>')
        fire(app, "1")
        await eventually(lambda: runner(app).runs == 1, timeout=60, what="the run to be counted")
    first = digests(emulator)[0]
    thread = emulator.thread(DIGEST, first.ts)
    assert "*node00* · mem " in first.rendered and "every host in detail in the thread" in first.rendered
    rows = [ln for m in (first, *thread) for ln in m.rendered.splitlines() if " · mem " in ln]
    assert len(rows) == 64  # one line per host, up top (and continued in the thread when they do not fit)
    [detail] = [f for m in thread for f in m.files]  # 64 hosts × 8 GPUs in detail: a file, not a wall of posts
    assert detail.text.count("B200") == 64 * 8 and detail.name.endswith(".txt")
    assert emulator.refused == []


async def test_a_schedule_survives_a_restart_and_fires(emulator: SlackEmulator, state_dir: Path) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "daily at 09:00" all <#C0DIGEST> tz=Europe/Berlin')
    async with running_app(emulator, two_hosts(), state_dir) as app:
        listed = await schedule(emulator, app, "list")
        assert "`1` *daily at 09:00* (Europe/Berlin) — all hosts → <#C0DIGEST> · next " in listed
        assert " 09:00 CE" in listed  # CET or CEST
        fire(app, "1")
        await emulator.wait_for(lambda: digests(emulator))
        assert "*b200* — `" in digests(emulator)[0].rendered and "*h100* — `" in digests(emulator)[0].rendered


async def move_next_run(state_dir: Path, schedule_id: str, at: datetime) -> None:
    """What a bot that was down looks like to the job store: the next run is in the past."""
    scheduler = AsyncIOScheduler(jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{state_dir / DB_NAME}")},
                                 timezone=UTC)
    scheduler.start(paused=True)
    scheduler.modify_job(schedule_id, next_run_time=at)
    scheduler.shutdown(wait=False)
    await asyncio.sleep(0)  # AsyncIOScheduler shuts down on the loop's next turn


async def test_missed_runs_after_downtime_are_coalesced_into_one_post(emulator: SlackEmulator,
                                                                      state_dir: Path) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "every 1h" h100 <#C0DIGEST>')
    missed_from = datetime.now(UTC) - timedelta(hours=3, minutes=10)  # four runs missed, the last 10 min ago
    await move_next_run(state_dir, "1", missed_from)
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await eventually(lambda: runner(app).runs == 1, timeout=20, what="the missed runs to run once")
        assert len(digests(emulator)) == 1
        next_run = runner(app).scheduler.get_job("1").next_run_time
        assert next_run == missed_from + timedelta(hours=4)  # on the old beat, 50 min from now


async def test_a_removed_schedule_is_gone(emulator: SlackEmulator, state_dir: Path) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "every 30m"')
        await schedule(emulator, app, 'add "hourly" h100')
        assert await schedule(emulator, app, "remove 1") == (
            ":wastebasket: Removed schedule `1` (*every 30m* → <#C0OPS>).")
        listed = await schedule(emulator, app, "list")
        assert "`2` *hourly*" in listed and "`1`" not in listed
        assert runner(app).scheduler.get_job("1") is None
        assert await schedule(emulator, app, "remove 1") == (
            ":no_entry: there is no schedule `1`; `/rigops schedule list` shows them")
        assert "which schedule?" in await schedule(emulator, app, "rm")
    async with running_app(emulator, two_hosts(), state_dir) as app:
        assert [s.id for s in runner(app).list()] == ["2"]


@pytest.mark.parametrize(("args", "error"), [
    ('add "61 * * * *" all', ":no_entry: '61 * * * *' is not a valid crontab line"),
    ('add "every 5 fortnights"', ":no_entry: cannot read 'every 5 fortnights' as a schedule"),
    ('add "0 9 * * *" h200', ":no_entry: unknown host 'h200' (known: b200, h100, or all)"),
    ('add "0 9 * * *" b200,gpu-box', ":no_entry: unknown host 'gpu-box'"),
    ('add "0 9 * * *" all tz=Moon/Base', ":no_entry: unknown timezone 'Moon/Base'"),
    ("add 0 9 * * *", ":no_entry: cannot tell where the schedule ends"),
])
async def test_bad_schedules_get_a_clear_reply_and_nothing_is_stored(
        emulator: SlackEmulator, state_dir: Path, args: str, error: str) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        assert (await schedule(emulator, app, args)).startswith(error)
        assert runner(app).list() == [] and runner(app).scheduler.get_jobs() == []
        assert not [e for e in app.core.store.audit_entries() if e["what"].startswith("schedule")]


async def test_only_admins_add_or_remove_schedules(emulator: SlackEmulator, state_dir: Path) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "hourly"')
        assert "only rigops admins may add or remove" in await schedule(emulator, app, 'add "hourly"', user="U0HUMAN")
        assert "only rigops admins" in await schedule(emulator, app, "remove 1", user="U0HUMAN")
        assert "`1` *hourly*" in await schedule(emulator, app, "list", user="U0HUMAN")
        assert "`/rigops schedule remove ID`" in await schedule(emulator, app, "help", user="U0HUMAN")


async def test_config_schedules_are_kept_and_changed_only_in_the_config(emulator: SlackEmulator,
                                                                        state_dir: Path) -> None:
    entry = {"cron": "0 9 * * 1-5", "channel": DIGEST, "hosts": ["h100"], "timezone": "Europe/Berlin"}
    async with running_app(emulator, two_hosts(schedules=[entry]), state_dir) as app:
        [configured] = runner(app).list()
        assert configured.source == "config" and configured.id.startswith("cfg-")
        listed = await schedule(emulator, app, "list")
        assert f"`{configured.id}` *0 9 * * 1-5* (Europe/Berlin) — h100 → <#C0DIGEST>" in listed
        assert "from the config" in listed
        refused = await schedule(emulator, app, f"remove {configured.id}")
        assert "comes from the config file ([[schedules]]); remove it there" in refused
        fire(app, configured.id)
        await emulator.wait_for(lambda: digests(emulator))
    async with running_app(emulator, two_hosts(schedules=[entry]), state_dir) as app:
        assert [s.id for s in runner(app).list()] == [configured.id]  # the same job, not a new one
        assert runner(app).list()[0].last_post_at is not None
    async with running_app(emulator, two_hosts(), state_dir) as app:
        assert runner(app).list() == [] and runner(app).scheduler.get_jobs() == []


async def test_only_changes_skips_a_post_when_nothing_changed(emulator: SlackEmulator, state_dir: Path) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "every 30m" b200 <#C0DIGEST> only-changes')
        for run in (1, 2):
            fire(app, "1")
            await eventually(lambda run=run: runner(app).runs == run, timeout=20,  # type: ignore[misc]
                             what=f"run {run}")
        assert len(digests(emulator)) == 1 and runner(app).list()[0].last_post_at is not None
        store = app.core.store
        done = record_run(store, "b200", "sgl-kernel", jobs=8)
        store.finish_run(done.id, state="succeeded", exit_status=0)
        fire(app, "1")
        await emulator.wait_for(lambda: len(digests(emulator)) == 2)
        finished = "Finished since the last post:\n:white_check_mark: `sgl-kernel` succeeded"
        assert finished in digests(emulator)[1].rendered


async def test_two_bots_on_one_state_dir_post_once(emulator: SlackEmulator, state_dir: Path) -> None:
    async with AsyncExitStack() as first_stack:
        first = await first_stack.enter_async_context(running_app(emulator, two_hosts(), state_dir))
        async with running_app(emulator, two_hosts(), state_dir) as second:
            assert runner(first).running and not runner(second).running
            other_process = subprocess.run(
                [sys.executable, "-c", "import sys; from pathlib import Path; from bot.scheduler import SchedulerLock; "
                 f"print(SchedulerLock(Path({str(state_dir / LOCK_NAME)!r})).acquire())"],
                capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2])
            assert other_process.stdout.strip() == "False", other_process.stderr
            # each command goes to one of the two connections, as Slack does: whichever bot gets it adds it
            done = (first.core.activity.finished, second.core.activity.finished)
            await emulator.send_slash('schedule add "every 30m" b200 <#C0DIGEST>', channel=OPS, user=ADMIN)
            await eventually(lambda: (first.core.activity.finished, second.core.activity.finished) != done,
                             timeout=20, what="one bot to add the schedule")
            await eventually(lambda: len(runner(first).list()) == 1, timeout=20, what="the schedule in the state")
            fire(first, "1")
            await eventually(lambda: runner(first).runs == 1, timeout=20, what="the first bot's run")
            await runner(second).tick()  # the paused one tries the lock again, and still does not run
            assert (runner(first).runs, runner(second).runs, len(digests(emulator))) == (1, 0, 1)
            await first_stack.aclose()  # the first bot stops: the second takes over on its next refresh
            await runner(second).tick()
            assert runner(second).running
            fire(second, "1")
            await eventually(lambda: runner(second).runs == 1, timeout=20, what="the second bot's run")
            assert len(digests(emulator)) == 2


@pytest.mark.postgres
async def test_rigops_on_one_database_post_each_run_once_and_a_new_leader_makes_up_a_lost_one(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    config = two_hosts(state=postgres.fresh_state())
    stacks = [AsyncExitStack(), AsyncExitStack()]
    apps = [await stack.enter_async_context(running_app(emulator, config, tmp_path / f"rigops-{i}"))
            for i, stack in enumerate(stacks)]
    try:
        leading = [runner(app).running for app in apps]
        assert sorted(leading) == [False, True]  # one leader, by the database's advisory lock
        lead = leading.index(True)
        leader, other = apps[lead], apps[1 - lead]
        await emulator.send_slash('schedule add "every 30m" b200 <#C0DIGEST>', channel=OPS, user=ADMIN)
        await eventually(lambda: all(len(runner(app).list()) == 1 for app in apps), timeout=20,
                         what="the schedule seen by both")  # added by either, in the database for both
        fire(leader, "1")
        await eventually(lambda: runner(leader).runs == 1, timeout=20, what="the leader's run")
        await runner(other).tick()
        assert (runner(other).runs, len(digests(emulator))) == (0, 1)
        assert runner(other).table.claim("1", 1.0e9, replica="gone-1")  # a run claimed by a leader that then died

        await stacks[lead].aclose()  # the leader stops: the other takes the lock on its next tick
        await runner(other).tick()
        assert runner(other).running
        await eventually(lambda: len(digests(emulator)) == 2, timeout=20, what="the lost run, made up")
        fire(other, "1")
        await eventually(lambda: len(digests(emulator)) == 3, timeout=20, what="the next run, by the new leader")
        await eventually(lambda: runner(other).runs == 2, timeout=20, what="both runs to be counted")
        assert not runner(other).table.claim("1", 1.0e9, replica="late-1")  # done: never posted again
    finally:
        for stack in stacks:
            await stack.aclose()


async def test_a_locked_database_is_logged_and_the_scheduler_goes_on(
        emulator: SlackEmulator, state_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with running_app(emulator, two_hosts(), state_dir) as app:
        await schedule(emulator, app, 'add "every 30m" b200 <#C0DIGEST>')
        runner(app).scheduler.jobstore_retry_interval = 0.1
        fire(app, "1", at=datetime.now(UTC) + timedelta(seconds=0.3))
        locker = sqlite3.connect(state_dir / DB_NAME, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another writer holds the database while the job comes due
        try:
            await eventually(lambda: "processing the schedules failed" in caplog.text, timeout=20,
                             what="the failure to be logged")
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        # the run whose next time could not be written is run again (at least once), then the job moves on
        await eventually(lambda: runner(app).scheduler.get_job("1").next_run_time > datetime.now(UTC), timeout=20,
                         what="the job to move on")
        await eventually(lambda: runner(app).list()[0].last_post_at is not None, timeout=20,
                         what="the post to be recorded")
        assert digests(emulator) and runner(app).scheduler.running
    assert any(r.levelno == logging.ERROR and "processing the schedules failed" in r.message for r in caplog.records)


def test_the_console_takes_schedule_lines(tmp_path: Path) -> None:
    config = tmp_path / "rigops.toml"
    config.write_text('[hosts.local]\naddress = "local"\n')
    out = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(tmp_path / "s"),
                          "console"], input='/rigops schedule add "every 2h"\n/rigops schedule list\n'
                                           "/rigops schedule remove 1\n", capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert "Schedule `1`: a status digest of all hosts in #console, every 2h" in out.stdout  # the console's plain text
    assert "• `1` every 2h (UTC) — all hosts → #console" in out.stdout
    assert "Removed schedule `1`" in out.stdout
