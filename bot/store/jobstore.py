"""APScheduler's SQLAlchemy job store, made to outlast a database that another process holds locked.

APScheduler 3's job processing (``BaseScheduler._process_jobs``) catches a failing ``get_due_jobs``: it logs a
warning and tries again after ``jobstore_retry_interval``. It catches nothing else in the round: after it hands a
due job to the executor it writes the job's next run time (``update_job``), and it asks for the store's next run
time (``get_next_run_time``). When either raises (SQLite's "database is locked" while another process writes the
file) the exception leaves ``wakeup`` before the next timer is set, and no schedule runs until something else
wakes the scheduler. This store, a subclass through APScheduler's public ``BaseJobStore`` interface, keeps the
round from failing:

* every call is tried JOBSTORE_ATTEMPTS times; each attempt already waits SQLite's busy timeout;
* a job removed (by another rigops on the state dir) while it ran has no next run time to write;
* a next run time that still cannot be written is kept in memory, logged as an error, read back by lookups and
  written first on the next round. Until it is written ``get_due_jobs`` raises (APScheduler waits
  ``jobstore_retry_interval`` and asks again), so a job whose new time is not saved does not run twice;
* ``get_next_run_time`` never raises: without an answer from the database it says "look again after
  ``jobstore_retry_interval``".

``add_job`` and ``remove_job`` still raise once their attempts fail: only rigops' own calls make them (the
round removes a job only when its trigger has no next time, and rigops' cron and interval triggers always
have one), and rigops tells the user that the change was not stored.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from apscheduler.job import Job  # type: ignore[import-untyped]
from apscheduler.jobstores.base import JobLookupError  # type: ignore[import-untyped]
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from sqlalchemy.exc import OperationalError

log = logging.getLogger(__name__)
JOBSTORE_ATTEMPTS = 2  # tries of one job store call before it gives up (or keeps a write for the next round)
T = TypeVar("T")


class RetryingJobStore(SQLAlchemyJobStore):  # type: ignore[misc]
    """A SQLAlchemyJobStore whose failures never stop the scheduler's processing (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._unsaved: dict[str, Job] = {}  # job id -> the job with a next run time not yet written

    @property
    def unsaved(self) -> list[str]:
        """The ids of jobs whose changes wait in memory for the database."""
        return list(self._unsaved)

    def update_job(self, job: Job) -> None:
        """Write the job; when the database stays locked, keep it and write it on the next round."""
        self._unsaved.pop(job.id, None)
        try:
            _attempts(super().update_job, job)
        except JobLookupError:
            log.info("schedule %s was removed (by another rigops) while it ran", job.id)
        except OperationalError as exc:
            self._unsaved[job.id] = job
            log.error("processing the schedules failed: cannot write schedule %s's next run (%s); writing it "
                      "again in %g s", job.id, exc.orig, self._retry_interval)

    def get_due_jobs(self, now: datetime) -> list[Job]:
        self.write_unsaved()
        jobs: list[Job] = _attempts(super().get_due_jobs, now)
        return jobs

    def get_next_run_time(self) -> datetime | None:
        if self._unsaved:
            return self._retry_at()
        try:
            when: datetime | None = _attempts(super().get_next_run_time)
        except OperationalError as exc:
            log.warning("cannot read when the next schedule runs (%s); looking again in %g s", exc.orig,
                        self._retry_interval)
            return self._retry_at()
        return when

    def lookup_job(self, job_id: str) -> Job | None:
        if job_id in self._unsaved:
            return self._unsaved[job_id]
        job: Job | None = _attempts(super().lookup_job, job_id)
        return job

    def get_all_jobs(self) -> list[Job]:
        return [self._unsaved.get(job.id, job) for job in _attempts(super().get_all_jobs)]

    def add_job(self, job: Job) -> None:
        _attempts(super().add_job, job)

    def remove_job(self, job_id: str) -> None:
        _attempts(super().remove_job, job_id)
        self._unsaved.pop(job_id, None)

    def shutdown(self) -> None:
        try:
            self.write_unsaved()
        except OperationalError as exc:
            log.warning("stopping with unwritten next runs of schedules %s (%s): they run again on the next start",
                        ", ".join(self._unsaved), exc.orig)
        super().shutdown()

    def write_unsaved(self) -> None:
        """Write the changes kept from earlier rounds. Raises sqlalchemy's OperationalError if still locked."""
        for job_id, job in list(self._unsaved.items()):
            with contextlib.suppress(JobLookupError):  # removed meanwhile by another rigops: nothing to write
                _attempts(super().update_job, job)
            del self._unsaved[job_id]

    @property
    def _retry_interval(self) -> float:
        return float(self._scheduler.jobstore_retry_interval)  # the scheduler that started this store

    def _retry_at(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self._retry_interval)


def _attempts(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, tried again while the database is locked; the last attempt's error is raised."""
    for _ in range(JOBSTORE_ATTEMPTS - 1):
        try:
            return call(*args)
        except OperationalError as exc:
            log.debug("job store call failed, trying again: %s", exc.orig)
    return call(*args)
