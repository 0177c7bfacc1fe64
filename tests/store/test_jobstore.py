"""The schedules' job store while another process holds the SQLite file locked: a job that comes due runs once,
its next run is written when the lock goes, and the scheduler goes on running jobs after."""

from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.scheduler import ScheduleRunner
from bot.store.schedules import DB_NAME, Posted, Schedule
from tests.waiting import eventually


async def test_processing_goes_on_after_the_job_store_was_locked(state_dir: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    posted: list[str] = []

    async def post(schedule: Schedule) -> Posted:
        posted.append(schedule.id)
        return Posted(at=time.time(), fingerprint="f")

    runner = ScheduleRunner(state_dir, post=post, retry=0.1)
    await runner.start(())
    try:
        runner.add(when="every 30m", channel="C0DIGEST", hosts=None, timezone="UTC", only_changes=False,
                   created_by=None)
        runner.scheduler.modify_job("1", next_run_time=datetime.now(UTC) + timedelta(seconds=0.3))
        with closing(sqlite3.connect(state_dir / DB_NAME, isolation_level=None)) as locker:
            locker.execute("BEGIN EXCLUSIVE")  # another process writes while the job comes due
            await eventually(lambda: posted and runner.jobstore.unsaved == ["1"], timeout=30,
                             what="the job to run with its next run unsaved")
            errors = [r.message for r in caplog.records if r.levelno == logging.ERROR]
            assert any(e.startswith("processing the schedules failed: cannot write schedule 1's next run")
                       for e in errors)
            caplog.clear()
            await eventually(lambda: "Error getting due jobs" in caplog.text, timeout=30,
                             what="a later round, still locked")
            assert posted == ["1"] and runner.jobstore.unsaved == ["1"]  # due once, run once
            locker.execute("ROLLBACK")
        await eventually(lambda: not runner.jobstore.unsaved, timeout=30, what="the next run to be written")
        assert runner.scheduler.get_job("1").next_run_time > datetime.now(UTC) + timedelta(minutes=29)
        assert posted == ["1"]
        runner.scheduler.modify_job("1", next_run_time=datetime.now(UTC))
        await eventually(lambda: posted == ["1", "1"], timeout=30, what="the second run")
        await eventually(lambda: (s := runner.table.get("1")) is not None and s.last_post_at is not None, timeout=30,
                         what="the post to be recorded")
        assert runner.scheduler.running
    finally:
        await runner.close()
