"""Scheduled status posts on APScheduler 3: an AsyncIOScheduler whose jobs persist with the state.

Every schedule is a row of the schedules table (what to post, where) plus an APScheduler job in a
SQLAlchemyJobStore beside it that calls ``bot.scheduler:run_schedule(schedule_id)``: in ``schedules.sqlite3`` in
the state dir, or in the state's PostgreSQL database when rigops replicas share one. Only the leader runs jobs:
the process holding ``scheduler.lock`` in the state dir, or, on PostgreSQL, a session advisory lock (PostgreSQL
frees it when the leader's connection ends, kill -9 included). Every other rigops keeps its scheduler paused (it
may still add and remove schedules), tries the lock every few seconds and takes over when it frees.

Each run of a schedule is claimed in the table before its digest goes out and marked done after: a leader never
posts a run another already claimed, and one taking over from a leader that died mid-post makes that run up.
Runs missed while no rigops led are coalesced into one post; a run missed by more than MISFIRE_GRACE is skipped.

The rigops tables have their own schema versions (``bot.store.migrations.SCHEDULE_MIGRATIONS``, and
``POSTGRES_SCHEDULE_MIGRATIONS``); APScheduler's ``apscheduler_jobs`` table is APScheduler's (on PostgreSQL it is
created by the first migration, under the migration lock, so that replicas starting together do not race). A
locked database never stops the processing of jobs: ``bot.store.jobstore.RetryingJobStore`` says how.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

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
from bot.language.schedule_text import parse_when
from bot.store.jobstore import RetryingJobStore
from bot.store.schedules import DB_NAME, Posted, Schedule, ScheduleTable, config_id
from bot.util.aio import Tasks, cancel
from bot.util.errors import PlanError, StateError

log = logging.getLogger(__name__)
LOCK_NAME = "scheduler.lock"
JOB_FUNC = "bot.scheduler:run_schedule"
MISFIRE_GRACE = 6 * 3600  # seconds a missed run may be late and still be posted (once) on start
REFRESH_INTERVAL = 2.0  # how often a paused rigops tries the lock, and the running one looks for new jobs
JOBSTORE_RETRY = 10.0  # after the job store failed (the database locked), try again this much later
SHUTDOWN_TIMEOUT = 5.0
DB_TIMEOUT = 1.0  # seconds SQLite waits for another process's write; the event loop waits with it


class LeaderLock(Protocol):
    """What makes one rigops the leader: held by one process at a time, freed when it dies."""

    @property
    def path(self) -> str | Path:
        """Where the lock is, for people."""
        ...

    @property
    def held(self) -> bool: ...

    def acquire(self) -> bool:
        """Take the lock if it is free; never waits."""
        ...

    def alive(self) -> bool:
        """Whether the lock held is still held (a lost database session loses it)."""
        ...

    def release(self) -> None: ...


LEADER_LOCK = 0x72696730  # "rig0": the PostgreSQL advisory lock's first key (the second: the schema)


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

    def alive(self) -> bool:
        return self._fd is not None  # a flock lasts as long as the process

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
    """This process's side of the schedules: the table, the job store, the lock and the scheduler.

    ``url``: the state's PostgreSQL database (None: SQLite files in ``state_dir``); ``replica``: this rigops' id,
    written on the runs it claims."""

    def __init__(self, state_dir: Path, *, post: Poster, url: str | None = None, replica: str = "",
                 refresh: float = REFRESH_INTERVAL, retry: float = JOBSTORE_RETRY) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.lock: LeaderLock
        if url is None:
            self.table = ScheduleTable.open(state_dir / DB_NAME, timeout=DB_TIMEOUT)
            self.lock = SchedulerLock(state_dir / LOCK_NAME)
            engine = create_engine(f"sqlite:///{state_dir / DB_NAME}", connect_args={"timeout": DB_TIMEOUT})
        else:
            from bot.store.postgres import AdvisoryLock, parse_url

            self.table = ScheduleTable.open_shared(url, timeout=SHUTDOWN_TIMEOUT)
            self.lock = AdvisoryLock(url, key=LEADER_LOCK, timeout=SHUTDOWN_TIMEOUT)
            engine = create_engine(parse_url(url), pool_pre_ping=True)
        self.replica = replica or f"pid-{os.getpid()}"
        self.post = post
        self.refresh = refresh
        self.runs = 0  # schedule runs this process finished (tests check that only one process runs them)
        self._due: dict[str, float] = {}  # schedule id -> the run time of the job just submitted
        self.jobstore = RetryingJobStore(engine=engine)
        self.scheduler = AsyncIOScheduler(jobstores={"default": self.jobstore}, timezone=UTC,
                                          jobstore_retry_interval=retry)
        self._configured: Sequence[ScheduleConfig] = ()
        self._ticker: asyncio.Task[None] | None = None
        self._made_up = Tasks()  # runs a leader before this one left unposted
        self._posting: set[tuple[str, float]] = set()  # (schedule id, due) being posted by this process
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
        """Take the lock when it is free (then sync the config, make up the runs a leader before died posting,
        and run); look for jobs others added. A lock lost (its database session gone) pauses the jobs."""
        if self.lock.held and not self.lock.alive():
            log.warning("this rigops lost the schedules' lock (%s); another may run them now", self.lock.path)
            self.scheduler.pause()
            self.lock.release()
        if not self.lock.held:
            if not self.lock.acquire():
                return
            log.info("this rigops runs the schedules (lock %s)", self.lock.path)
            try:
                self._sync()
            except (SQLAlchemyError, StateError, PlanError):
                log.exception("could not bring the schedules in line with the config; running what is stored")
            self.scheduler.resume()
            self._make_up()
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
        await cancel(self._ticker)
        await self._made_up.close()
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
            if event.scheduled_run_times:
                self._due[event.job_id] = max(event.scheduled_run_times).timestamp()
        elif code == EVENT_JOB_ERROR:
            log.error("schedule %s raised: %s\n%s", event.job_id, event.exception, event.traceback)
        elif code == EVENT_JOB_MISSED:
            log.warning("schedule %s missed its run at %s (more than %d s late)", event.job_id,
                        event.scheduled_run_time, MISFIRE_GRACE)
        elif code == EVENT_JOB_MAX_INSTANCES:
            log.warning("schedule %s is still posting its last digest; skipped this run", event.job_id)

    async def run(self, schedule_id: str, *, due_at: float | None = None, claimed: bool = False) -> None:
        """Post one schedule's digest now and remember when (the job's body): the run due at ``due_at`` (by
        default the one the scheduler just submitted), claimed first unless ``claimed``."""
        schedule = self.table.get(schedule_id)
        if schedule is None:
            log.warning("schedule %s has a job but no row; removing the job", schedule_id)
            self._remove_job(schedule_id)
            return
        due = due_at if due_at is not None else self._due.pop(schedule_id, None)
        due = due if due is not None else time.time()
        try:
            if not claimed and not self.table.claim(schedule_id, due, replica=self.replica):
                log.info("schedule %s's run due at %s was claimed by another rigops; not posted twice", schedule_id,
                         datetime.fromtimestamp(due, UTC).isoformat())
                return
        except StateError as exc:  # the leader's lock already keeps others from posting: post, unclaimed
            log.warning("cannot claim schedule %s's run (posting it all the same): %s", schedule_id, exc)
        self._posting.add((schedule_id, due))
        try:
            posted = await self.post(schedule)
            self.table.done(schedule_id, due)
            if posted is not None:
                self.table.record_post(schedule_id, posted)
        finally:
            self._posting.discard((schedule_id, due))
            self.runs += 1

    def _make_up(self) -> None:
        """Post the runs a leader before this one claimed and died before posting (each once)."""
        try:
            taken = self.table.retake(replica=self.replica, since=time.time() - MISFIRE_GRACE, busy=self._posting)
        except StateError as exc:
            log.warning("cannot look for schedule runs left half done: %s", exc)
            return
        for schedule_id, due in taken:
            log.info("schedule %s's run due at %s was left unposted by a leader that stopped; posting it now",
                     schedule_id, datetime.fromtimestamp(due, UTC).isoformat())
            self._made_up.start(self.run(schedule_id, due_at=due, claimed=True), name=f"make-up-{schedule_id}")

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
