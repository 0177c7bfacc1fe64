"""Scheduled status posts on APScheduler 3: an AsyncIOScheduler whose jobs persist in the state dir.

Every schedule is a row of ``schedules.sqlite3`` (what to post, where) plus an APScheduler job in the same
file's SQLAlchemyJobStore that calls ``bot.scheduler:run_schedule(schedule_id)``. Only the process holding
``scheduler.lock`` runs jobs; another rigops on the same state dir keeps its scheduler paused (it may still
add and remove schedules) and takes over when the lock frees, so nothing is posted twice. Runs missed while
no rigops was up are coalesced into one post; a run missed by more than MISFIRE_GRACE is skipped.

The rigops tables of that file have their own schema versions (``bot.store.migrations.SCHEDULE_MIGRATIONS``,
applied by ``bot.store.sqlite``); APScheduler's ``apscheduler_jobs`` table is APScheduler's alone. A locked
database never stops the processing of jobs: ``bot.store.jobstore.RetryingJobStore`` says how.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from apscheduler.events import (  # type: ignore[import-untyped]
    EVENT_JOB_ERROR,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    EVENT_JOB_SUBMITTED,
    EVENT_SCHEDULER_SHUTDOWN,
)
from apscheduler.jobstores.base import JobLookupError  # type: ignore[import-untyped]
from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError

from bot.config import ScheduleConfig
from bot.errors import PlanError, StateError
from bot.schedule_text import parse_when
from bot.store.jobstore import RetryingJobStore
from bot.store.migrations import SCHEDULE_MIGRATIONS
from bot.store.sqlite import Database

log = logging.getLogger(__name__)
DB_NAME = "schedules.sqlite3"
LOCK_NAME = "scheduler.lock"
JOB_FUNC = "bot.scheduler:run_schedule"
MISFIRE_GRACE = 6 * 3600  # seconds a missed run may be late and still be posted (once) on start
REFRESH_INTERVAL = 30.0  # how often a paused rigops tries the lock, and the running one looks for new jobs
JOBSTORE_RETRY = 10.0  # after the job store failed (the database locked), try again this much later
SHUTDOWN_TIMEOUT = 5.0
DB_TIMEOUT = 1.0  # seconds SQLite waits for another process's write; the event loop waits with it


def config_id(schedule: ScheduleConfig) -> str:
    """A stable id for a config schedule: the same entry keeps its job (and its missed runs) across restarts."""
    spec = [schedule.cron, schedule.channel, schedule.hosts, schedule.timezone, schedule.only_changes]
    return "cfg-" + hashlib.sha1(json.dumps(spec).encode()).hexdigest()[:6]


@dataclass(frozen=True)
class Schedule:
    """What one schedule posts where, and what it last posted."""

    id: str
    when: str  # as the user or the config wrote it
    channel: str
    hosts: tuple[str, ...] | None  # None: every configured host
    timezone: str
    only_changes: bool
    source: Literal["config", "slack"]
    created_by: str | None
    created_at: float
    last_post_at: float | None = None
    last_fingerprint: str | None = None
    last_error: str | None = None  # why the last post failed; None once a post went out
    last_error_at: float | None = None
    next_run: datetime | None = None

    @classmethod
    def from_config(cls, schedule_id: str, conf: ScheduleConfig, *, created_at: float) -> Schedule:
        return cls(id=schedule_id, when=conf.cron, channel=conf.channel, hosts=conf.hosts, timezone=conf.timezone,
                   only_changes=conf.only_changes, source="config", created_by=None, created_at=created_at)

    def with_next_run(self, when: datetime | None) -> Schedule:
        return replace(self, next_run=when)


@dataclass(frozen=True)
class Posted:
    """A digest went out: when its data was taken, and what it showed (for "only when something changed"); or,
    with ``error``, it could not go out, and why."""

    at: float
    fingerprint: str
    error: str | None = None


class ScheduleTable:
    """The schedules' rows, beside APScheduler's own table in the same SQLite file. Raises StateError."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def open(cls, path: Path, *, timeout: float) -> ScheduleTable:
        return cls(Database.open(path, what="schedules", migrations=SCHEDULE_MIGRATIONS, timeout=timeout))

    def close(self) -> None:
        self._db.close()

    def new_id(self) -> str:
        """The next number for a schedule added from Slack; numbers are never reused."""
        with self._db.transaction() as db:
            return str(db.execute("INSERT INTO rigops_schedule_ids DEFAULT VALUES").lastrowid)

    def insert(self, s: Schedule) -> None:
        with self._db.transaction() as db:
            db.execute("INSERT INTO rigops_schedules (id, when_text, channel, hosts, timezone, only_changes, source, "
                       "created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (s.id, s.when, s.channel, json.dumps(s.hosts) if s.hosts is not None else None, s.timezone,
                        int(s.only_changes), s.source, s.created_by, s.created_at))

    def delete(self, schedule_id: str) -> None:
        with self._db.transaction() as db:
            db.execute("DELETE FROM rigops_schedules WHERE id = ?", (schedule_id,))

    def record_post(self, schedule_id: str, posted: Posted) -> None:
        with self._db.transaction() as db:
            if posted.error is not None:
                db.execute("UPDATE rigops_schedules SET last_error = ?, last_error_at = ? WHERE id = ?",
                           (posted.error, posted.at, schedule_id))
            else:
                db.execute("UPDATE rigops_schedules SET last_post_at = ?, last_fingerprint = ?, last_error = NULL, "
                           "last_error_at = NULL WHERE id = ?", (posted.at, posted.fingerprint, schedule_id))

    def get(self, schedule_id: str) -> Schedule | None:
        rows = self._db.query("SELECT * FROM rigops_schedules WHERE id = ?", (schedule_id,))
        return _schedule(rows[0]) if rows else None

    def all(self) -> list[Schedule]:
        """Config schedules first, then Slack's in the order they were added."""
        rows = self._db.query("SELECT * FROM rigops_schedules ORDER BY source, created_at")
        return [_schedule(r) for r in rows]


def _schedule(r: sqlite3.Row) -> Schedule:
    hosts = json.loads(r["hosts"]) if r["hosts"] is not None else None
    return Schedule(id=r["id"], when=r["when_text"], channel=r["channel"],
                    hosts=tuple(hosts) if hosts is not None else None, timezone=r["timezone"],
                    only_changes=bool(r["only_changes"]), source=r["source"], created_by=r["created_by"],
                    created_at=r["created_at"], last_post_at=r["last_post_at"],
                    last_fingerprint=r["last_fingerprint"], last_error=r["last_error"],
                    last_error_at=r["last_error_at"])


class SchedulerLock:
    """An exclusive flock on a file in the state dir, held while this process runs the scheduler."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock if no other process (or other opener) holds it; never waits."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


Poster = Callable[[Schedule], Awaitable[Posted | None]]


# The running bot that submitted each schedule's job; the job finds it here by its schedule id.
_RUNNERS: dict[str, ScheduleRunner] = {}


async def run_schedule(schedule_id: str) -> None:
    """The job of every schedule: post its digest through the bot whose scheduler submitted it. Never raises."""
    runner = _RUNNERS.get(schedule_id)
    if runner is None:
        log.warning("schedule %s fired but no running rigops in this process owns it", schedule_id)
        return
    try:
        await runner.run(schedule_id)
    except Exception:
        log.exception("schedule %s failed; the scheduler goes on", schedule_id)


class ScheduleRunner:
    """This process's side of the schedules: the table, the job store, the lock and the scheduler."""

    def __init__(self, state_dir: Path, *, post: Poster, refresh: float = REFRESH_INTERVAL,
                 retry: float = JOBSTORE_RETRY) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.table = ScheduleTable.open(state_dir / DB_NAME, timeout=DB_TIMEOUT)
        self.lock = SchedulerLock(state_dir / LOCK_NAME)
        self.post = post
        self.refresh = refresh
        self.runs = 0  # schedule runs this process finished (tests check that only one process runs them)
        engine = create_engine(f"sqlite:///{state_dir / DB_NAME}", connect_args={"timeout": DB_TIMEOUT})
        self.jobstore = RetryingJobStore(engine=engine)
        self.scheduler = AsyncIOScheduler(jobstores={"default": self.jobstore}, timezone=UTC,
                                          jobstore_retry_interval=retry)
        self._configured: Sequence[ScheduleConfig] = ()
        self._ticker: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()

    @property
    def running(self) -> bool:
        """True when this process holds the lock and runs the jobs."""
        return self.lock.held

    async def start(self, configured: Sequence[ScheduleConfig]) -> None:
        """Start paused; run the jobs if the lock is free, else keep trying every ``refresh`` seconds."""
        self._configured = configured
        self.scheduler.add_listener(self._on_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_SUBMITTED
                                    | EVENT_JOB_MAX_INSTANCES | EVENT_SCHEDULER_SHUTDOWN)
        self.scheduler.start(paused=True)
        await self.tick()
        self._ticker = asyncio.create_task(self._tick_forever(), name="rigops-scheduler-refresh")

    async def tick(self) -> None:
        """Take the lock when it is free (then sync the config and run); look for jobs others added."""
        if not self.lock.held:
            if not self.lock.acquire():
                return
            log.info("this rigops runs the schedules (lock %s)", self.lock.path)
            try:
                self._sync()
            except (SQLAlchemyError, StateError, PlanError):
                log.exception("could not bring the schedules in line with the config; running what is stored")
            self.scheduler.resume()
        try:
            _RUNNERS.update((s.id, self) for s in self.table.all())
        except StateError as exc:
            log.warning("cannot read the schedules: %s", exc)
        self.scheduler.wakeup()  # also restarts processing if anything ever stopped its timer

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh)
            try:
                await self.tick()
            except Exception:
                log.exception("scheduler refresh failed; trying again in %g s", self.refresh)

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)  # runs on the loop soon; we wait for its event
            try:
                await asyncio.wait_for(self._stopped.wait(), SHUTDOWN_TIMEOUT)
            except TimeoutError:
                log.warning("the scheduler did not say it stopped within %g s", SHUTDOWN_TIMEOUT)
        for sid in [sid for sid, runner in _RUNNERS.items() if runner is self]:
            del _RUNNERS[sid]
        self.lock.release()
        self.table.close()

    def _on_event(self, event: Any) -> None:
        code = event.code
        if code == EVENT_SCHEDULER_SHUTDOWN:
            self._stopped.set()
        elif code == EVENT_JOB_SUBMITTED:
            _RUNNERS[event.job_id] = self  # before the job's coroutine takes its first step
        elif code == EVENT_JOB_ERROR:
            log.error("schedule %s raised: %s\n%s", event.job_id, event.exception, event.traceback)
        elif code == EVENT_JOB_MISSED:
            log.warning("schedule %s missed its run at %s (more than %d s late)", event.job_id,
                        event.scheduled_run_time, MISFIRE_GRACE)
        elif code == EVENT_JOB_MAX_INSTANCES:
            log.warning("schedule %s is still posting its last digest; skipped this run", event.job_id)

    async def run(self, schedule_id: str) -> None:
        """Post one schedule's digest now and remember when (the job's body)."""
        schedule = self.table.get(schedule_id)
        if schedule is None:
            log.warning("schedule %s has a job but no row; removing the job", schedule_id)
            self._remove_job(schedule_id)
            return
        try:
            posted = await self.post(schedule)
            if posted is not None:
                self.table.record_post(schedule_id, posted)
        finally:
            self.runs += 1

    # -- what users change ----------------------------------------------------------------------------
    def add(self, *, when: str, channel: str, hosts: tuple[str, ...] | None, timezone: str, only_changes: bool,
            created_by: str | None) -> Schedule:
        """Store a new schedule and its job. Raises PlanError (bad text) or StateError."""
        trigger = parse_when(when, timezone=timezone)
        schedule = Schedule(id=self.table.new_id(), when=" ".join(when.split()), channel=channel, hosts=hosts,
                            timezone=timezone, only_changes=only_changes, source="slack", created_by=created_by,
                            created_at=datetime.now(UTC).timestamp())
        self.table.insert(schedule)
        try:
            self._add_job(schedule.id, trigger)
        except SQLAlchemyError as exc:
            self.table.delete(schedule.id)
            raise StateError(f"cannot store the schedule: {exc}") from exc
        if self.running:
            _RUNNERS[schedule.id] = self
        return self.get(schedule.id) or schedule

    def remove(self, schedule_id: str) -> None:
        """Delete a schedule and its job. Raises StateError."""
        try:
            self._remove_job(schedule_id)
        except SQLAlchemyError as exc:
            raise StateError(f"cannot remove the schedule's job: {exc}") from exc
        self.table.delete(schedule_id)

    def get(self, schedule_id: str) -> Schedule | None:
        found = [s for s in self.list() if s.id == schedule_id]
        return found[0] if found else None

    def list(self) -> list[Schedule]:
        """Every schedule with its next run. Raises StateError."""
        try:
            next_runs = {job.id: job.next_run_time for job in self.scheduler.get_jobs()}
        except SQLAlchemyError as exc:
            raise StateError(f"cannot read the schedules' jobs: {exc}") from exc
        return [s.with_next_run(next_runs.get(s.id)) for s in self.table.all()]

    # -- jobs -------------------------------------------------------------------------------------------
    def _add_job(self, schedule_id: str, trigger: Any) -> None:
        self.scheduler.add_job(JOB_FUNC, trigger, id=schedule_id, name=f"rigops schedule {schedule_id}",
                               kwargs={"schedule_id": schedule_id}, coalesce=True, max_instances=1,
                               misfire_grace_time=MISFIRE_GRACE, replace_existing=True)

    def _remove_job(self, schedule_id: str) -> None:
        with contextlib.suppress(JobLookupError):
            self.scheduler.remove_job(schedule_id)

    def _sync(self) -> None:
        """Rows for the config's schedules (new ones added, dropped ones removed), and a job for every row."""
        wanted = {config_id(c): c for c in self._configured}
        rows = {s.id: s for s in self.table.all()}
        for sid, schedule in rows.items():
            if schedule.source == "config" and sid not in wanted:
                self.remove(sid)
        for sid, conf in wanted.items():
            if sid not in rows:
                self.table.insert(Schedule.from_config(sid, conf, created_at=datetime.now(UTC).timestamp()))
        jobs = {job.id for job in self.scheduler.get_jobs()}
        stored = self.table.all()
        for schedule in stored:
            if schedule.id not in jobs:
                self._add_job(schedule.id, parse_when(schedule.when, timezone=schedule.timezone))
        for orphan in jobs - {s.id for s in stored}:
            self._remove_job(orphan)
