"""Schema versions: files an older rigops wrote open with every row, a newer rigops's files are refused, and a
failing step leaves the file as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.language.plan import Plan, Step, ThreadContext
from bot.scheduler import ScheduleRunner
from bot.store import DB_NAME, Store
from bot.store.migrations import SCHEDULE_MIGRATIONS, STATE_MIGRATIONS
from bot.store.schedules import DB_NAME as SCHEDULES_DB
from bot.store.schedules import Posted, Schedule
from bot.store.sqlite import Database, Migration
from bot.util.errors import StateError
from tests.store.files import dump, rows, set_user_version, user_version


async def no_post(schedule: Schedule) -> Posted | None:
    return None


def test_the_old_files_are_from_before_schema_versions(old_state: Path) -> None:
    assert user_version(old_state / DB_NAME) == 0 and user_version(old_state / SCHEDULES_DB) == 0
    assert rows(old_state / DB_NAME, "SELECT rss FROM job_memory WHERE id = 1") == [("[300, 100, 200]",)]


def test_an_old_state_keeps_every_row(old_state: Path) -> None:
    store = Store.open(old_state)
    try:
        done, live = store.run(1), store.run(2)
        assert done is not None and live is not None
        assert (done.host, done.build, done.jobs, done.pid, done.start, done.supervisor_pid, done.boot_id) == (
            "b200", "sgl-kernel", 8, 4100, 900001, 4099, "boot-a")
        assert (done.state, done.exit_status, done.started_by, done.channel, done.thread_id) == (
            "succeeded", 0, "U0HUMAN", "C0OPS", "1700000000.000100")
        assert (live.host, live.build, live.jobs, live.state, live.ended_at) == ("h100", "flash-attn", None,
                                                                                  "running", None)
        assert store.runs(live=True) == [live] and store.runs() == [live, done]
        assert store.thread_context("C0OPS", "1700000000.000100") == ThreadContext("b200", "sgl-kernel", 8)
        pending, finished = store.plan(1), store.plan(2)
        assert pending is not None and finished is not None
        assert pending.plan == Plan(host="b200", build="sgl-kernel", steps=(Step("rebuild", jobs=4),))
        assert (pending.state, pending.message_id, pending.user) == ("pending", "1700000001.000200", "U0HUMAN")
        assert (finished.state, finished.plan.steps) == ("done", (Step("kill"),))
        audit = store.audit_entries()
        assert [(e["what"], e["user"], e["host"]) for e in audit] == [("rebuild", "U0HUMAN", "b200"),
                                                                      ("kill", "U0OTHER", "h100")]
        assert json.loads(audit[1]["detail"]) == {"pid": 5200} and audit[0]["detail"] is None
        kills = store.oom_kills("b200", since=0)
        assert [k[2:] for k in kills] == [(1, "build", "dmesg", "cicc", 4321), (None, "other", "counter", None, None)]
        assert store.run_memory(1) == {"t": [0, 5, 10], "used": [1.5, 2.5, 3.5]}
        assert store.paused(2) == [(5201, 900003), (5202, 900004)]
    finally:
        store.close()


def test_old_job_memory_rows_get_the_labelled_shape(old_state: Path) -> None:
    store = Store.open(old_state)
    try:
        assert sorted(store.job_memory("b200", "sgl-kernel")) == [100, 200, 300, 400, 500, 600, 900]
        assert store.job_memory_runs("b200", "sgl-kernel") == 4
        assert store.job_memory_label("b200", "sgl-kernel") == "nvcc"
        assert store.job_memory("h100", "flash-attn") == [7000, 5000]
        assert store.job_memory_label("h100", "flash-attn") is None
    finally:
        store.close()
    stored = [json.loads(str(text)) for text, in rows(old_state / DB_NAME, "SELECT rss FROM job_memory ORDER BY id")]
    assert stored == [{"rss": [300, 100, 200], "label": None}, {"rss": [7000, 5000], "label": None},
                      {"rss": [400, 900], "label": "nvcc"}, {"rss": [500], "label": "nvcc"},
                      {"rss": [600], "label": "compile"}]


def test_an_old_state_reaches_the_latest_version_once(old_state: Path) -> None:
    Store.open(old_state).close()
    migrated = dump(old_state / DB_NAME)
    assert migrated[0] == len(STATE_MIGRATIONS)
    store = Store.open(old_state)
    store.runs(), store.job_memory("b200", "sgl-kernel")
    store.close()
    assert dump(old_state / DB_NAME) == migrated


def test_an_old_state_takes_new_writes(old_state: Path) -> None:
    store = Store.open(old_state)
    try:
        assert store.first_delivery("Ev0001") is False and store.first_delivery("Ev0003") is True
        at = store.oom_kills("b200", since=0)[0][1] - 10  # the kills came 10 s after the counter's reading
        assert store.oom_kills_counted("b200", at=at + 60, boot_id="boot-a", count=5, since=at - 1) == 2
        store.record_job_memory("b200", "sgl-kernel", [700], label="nvcc")
        assert store.job_memory_runs("b200", "sgl-kernel") == 5
        run = store.begin_run(host="b200", build="sgl-kernel", jobs=2, log="l", exit_file="e", boot_id=None,
                              started_by=None, channel="C0OPS", thread_id="1700000000.000100")
        assert run.id == 3 and store.thread_context("C0OPS", "1700000000.000100") == ThreadContext(
            "b200", "sgl-kernel", 2)
    finally:
        store.close()


async def test_old_schedules_keep_their_rows_and_jobs(old_state: Path) -> None:
    path = old_state / SCHEDULES_DB
    jobs = rows(path, "SELECT id, next_run_time, job_state FROM apscheduler_jobs")
    runner = ScheduleRunner(old_state, post=no_post)
    [schedule] = runner.table.all()
    await runner.close()
    assert (schedule.id, schedule.when, schedule.channel, schedule.hosts, schedule.timezone) == (
        "1", "daily at 09:00", "C0DIGEST", ("b200", "h100"), "Europe/Berlin")
    assert (schedule.only_changes, schedule.source, schedule.created_by, schedule.last_fingerprint) == (
        True, "slack", "U0ADMIN", "f1ngerpr1nt")
    assert schedule.last_post_at is not None
    assert rows(path, "SELECT id, next_run_time, job_state FROM apscheduler_jobs") == jobs  # APScheduler's alone
    migrated = dump(path)
    assert migrated[0] == len(SCHEDULE_MIGRATIONS)
    await ScheduleRunner(old_state, post=no_post).close()
    assert dump(path) == migrated


async def test_old_schedules_run_on(old_state: Path) -> None:
    runner = ScheduleRunner(old_state, post=no_post)
    await runner.start(())
    try:
        [schedule] = runner.list()
        assert schedule.id == "1" and schedule.next_run is not None
        added = runner.add(when="every 2h", channel="C0OPS", hosts=None, timezone="UTC", only_changes=False,
                           created_by="U0ADMIN")
        assert added.id == "2" and [s.id for s in runner.list()] == ["1", "2"]  # numbers are never reused
    finally:
        await runner.close()


def test_a_fresh_state_dir_gets_the_latest_versions(state_dir: Path) -> None:
    Store.open(state_dir).close()
    assert user_version(state_dir / DB_NAME) == len(STATE_MIGRATIONS)


async def test_fresh_schedules_get_the_latest_version(state_dir: Path) -> None:
    await ScheduleRunner(state_dir, post=no_post).close()
    assert user_version(state_dir / SCHEDULES_DB) == len(SCHEDULE_MIGRATIONS)


def test_a_state_from_a_newer_rigops_is_refused(state_dir: Path) -> None:
    Store.open(state_dir).close()
    newer = len(STATE_MIGRATIONS) + 1
    set_user_version(state_dir / DB_NAME, newer)
    before = dump(state_dir / DB_NAME)
    with pytest.raises(StateError, match=f"has schema version {newer}, but this rigops knows only up to "
                                         f"{newer - 1}: rigops is older than its state; upgrade rigops or point it "
                                         "at another state dir"):
        Store.open(state_dir)
    assert dump(state_dir / DB_NAME) == before


async def test_schedules_from_a_newer_rigops_are_refused(state_dir: Path) -> None:
    await ScheduleRunner(state_dir, post=no_post).close()
    set_user_version(state_dir / SCHEDULES_DB, len(SCHEDULE_MIGRATIONS) + 1)
    with pytest.raises(StateError, match="rigops is older than its state; upgrade rigops or point it at another"):
        ScheduleRunner(state_dir, post=no_post)


def half_done(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM runs")
    db.execute("CREATE TABLE half_done (n INTEGER)")
    db.execute("INSERT INTO no_such_table VALUES (1)")


@pytest.mark.parametrize("known", [1, len(STATE_MIGRATIONS)])
def test_a_failing_migration_leaves_the_file_at_its_last_version(old_state: Path, known: int) -> None:
    path = old_state / DB_NAME
    steps = [*STATE_MIGRATIONS[:known], Migration("breaks halfway", half_done)]
    with pytest.raises(StateError, match=rf"cannot bring the state database {path} to schema version {known + 1} "
                                         r"\(breaks halfway\): no such table: no_such_table"):
        Database.open(path, what="state", migrations=steps, timeout=1.0)
    assert user_version(path) == known
    assert rows(path, "SELECT id FROM runs") == [(1,), (2,)]
    assert rows(path, "SELECT name FROM sqlite_master WHERE name = 'half_done'") == []
    store = Store.open(old_state)  # the real steps still finish the job
    assert len(store.runs()) == 2 and store.job_memory_label("h100", "flash-attn") is None
    store.close()
