"""The schedules' table: what each schedule posts where and what it last posted, the numbers given to schedules
added from Slack, and the claims on each run that keep two leaders from posting it twice. APScheduler's own job
table is beside it (in the same SQLite file, ``schedules.sqlite3`` in the state dir, or the same PostgreSQL
database); ``bot.scheduler`` runs the jobs."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from bot.config import ScheduleConfig
from bot.store.engine import Database, Row
from bot.store.migrations import POSTGRES_SCHEDULE_MIGRATIONS, SCHEDULE_MIGRATIONS
from bot.store.sqlite import Database as SqliteDatabase

DB_NAME = "schedules.sqlite3"
CLAIMS_KEPT = 7 * 24 * 3600  # seconds a schedule run's claim is kept


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
    """The schedules' rows, beside APScheduler's own table (in the same SQLite file, or the same PostgreSQL
    database). Raises StateError."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def open(cls, path: Path, *, timeout: float) -> ScheduleTable:
        return cls(SqliteDatabase.open(path, what="schedules", migrations=SCHEDULE_MIGRATIONS, timeout=timeout))

    @classmethod
    def open_shared(cls, url: str, *, timeout: float) -> ScheduleTable:
        """The schedules in the state's PostgreSQL database."""
        from bot.store.postgres import PostgresDatabase

        return cls(PostgresDatabase.open(url, what="schedules", migrations=POSTGRES_SCHEDULE_MIGRATIONS,
                                         timeout=timeout))

    def close(self) -> None:
        self._db.close()

    def new_id(self) -> str:
        """The next number for a schedule added from Slack; numbers are never reused."""
        with self._db.transaction() as db:
            return str(db.execute("INSERT INTO rigops_schedule_ids DEFAULT VALUES RETURNING n").fetchall()[0][0])

    def claim(self, schedule_id: str, due_at: float, *, replica: str) -> bool:
        """Claim one run of a schedule before posting it; False when it was claimed already (posted, or being
        posted, by another leader)."""
        now = time.time()
        with self._db.transaction() as db:
            db.execute("DELETE FROM rigops_schedule_runs WHERE claimed_at < ?", (now - CLAIMS_KEPT,))
            cur = db.execute("INSERT INTO rigops_schedule_runs (schedule_id, due_at, replica, claimed_at) "
                             "VALUES (?, ?, ?, ?) ON CONFLICT (schedule_id, due_at) DO NOTHING",
                             (schedule_id, due_at, replica, now))
            return cur.rowcount == 1

    def done(self, schedule_id: str, due_at: float) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE rigops_schedule_runs SET done_at = ? WHERE schedule_id = ? AND due_at = ?",
                       (time.time(), schedule_id, due_at))

    def retake(self, *, replica: str, since: float, busy: set[tuple[str, float]]) -> list[tuple[str, float]]:
        """Take over the runs claimed since ``since`` and never finished (their leader died mid-post), but for the
        ``busy`` ones this process is posting now."""
        with self._db.transaction() as db:
            rows = db.execute("SELECT schedule_id, due_at, replica FROM rigops_schedule_runs WHERE done_at IS NULL "
                              "AND claimed_at >= ?", (since,)).fetchall()
            taken = []
            for schedule_id, due_at, before in rows:
                if (str(schedule_id), float(due_at)) in busy:
                    continue
                cur = db.execute("UPDATE rigops_schedule_runs SET replica = ?, claimed_at = ? WHERE schedule_id = ? "
                                 "AND due_at = ? AND replica = ? AND done_at IS NULL",
                                 (replica, time.time(), schedule_id, due_at, before))
                if cur.rowcount == 1:
                    taken.append((str(schedule_id), float(due_at)))
            return taken

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


def _schedule(r: Row) -> Schedule:
    hosts = json.loads(r["hosts"]) if r["hosts"] is not None else None
    return Schedule(id=r["id"], when=r["when_text"], channel=r["channel"],
                    hosts=tuple(hosts) if hosts is not None else None, timezone=r["timezone"],
                    only_changes=bool(r["only_changes"]), source=r["source"], created_by=r["created_by"],
                    created_at=r["created_at"], last_post_at=r["last_post_at"],
                    last_fingerprint=r["last_fingerprint"], last_error=r["last_error"],
                    last_error_at=r["last_error_at"])
