"""The schema history of rigops' two SQLite files, oldest step first. Never edit a released step: add one.

Files written before schema versions (user_version 0) already hold step 1's tables: step 1 creates only what
is missing, so their rows stay. ``schedules.sqlite3`` also holds APScheduler's ``apscheduler_jobs`` table, which
APScheduler creates and owns; no step here touches it.
"""

from __future__ import annotations

import json
import sqlite3

from bot.store.sqlite import Migration, sql_migration

STATE_V1 = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT NOT NULL, build TEXT NOT NULL, jobs INTEGER,
    pid INTEGER NOT NULL, start INTEGER NOT NULL, supervisor_pid INTEGER,
    log TEXT NOT NULL, exit_file TEXT NOT NULL, boot_id TEXT,
    started_at REAL NOT NULL, started_by TEXT, channel TEXT, thread_ts TEXT,
    state TEXT NOT NULL DEFAULT 'running', exit_status INTEGER, ended_at REAL
);
CREATE INDEX IF NOT EXISTS runs_by_build ON runs (host, build, id);
CREATE TABLE IF NOT EXISTS threads (
    channel TEXT NOT NULL, thread_ts TEXT NOT NULL, host TEXT, build TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (channel, thread_ts)
);
CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, seen_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL, thread_ts TEXT NOT NULL, message_ts TEXT, request_ts TEXT,
    user TEXT NOT NULL, plan TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, user TEXT, channel TEXT, thread_ts TEXT,
    host TEXT, build TEXT, what TEXT NOT NULL, detail TEXT
);
CREATE TABLE IF NOT EXISTS job_memory (
    id INTEGER PRIMARY KEY AUTOINCREMENT, host TEXT NOT NULL, build TEXT NOT NULL, recorded_at REAL NOT NULL,
    rss TEXT NOT NULL  -- one run's peak RSS per compiler process, bytes, as a JSON list
);
CREATE INDEX IF NOT EXISTS job_memory_by_build ON job_memory (host, build, id);
CREATE TABLE IF NOT EXISTS oom_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, host TEXT NOT NULL, at REAL NOT NULL, run_id INTEGER,
    whose TEXT NOT NULL, evidence TEXT NOT NULL, victim TEXT, victim_pid INTEGER
);
CREATE INDEX IF NOT EXISTS oom_events_by_host ON oom_events (host, at);
CREATE TABLE IF NOT EXISTS oom_counters (
    host TEXT NOT NULL, at REAL NOT NULL, boot_id TEXT NOT NULL, count INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS oom_counters_by_host ON oom_counters (host, at);
CREATE TABLE IF NOT EXISTS run_memory (run_id INTEGER PRIMARY KEY, series TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS paused (run_id INTEGER NOT NULL, pid INTEGER NOT NULL, start INTEGER NOT NULL,
    PRIMARY KEY (run_id, pid, start));
"""


def label_job_memory(db: sqlite3.Connection) -> None:
    """Rows from before job labels hold a bare JSON list of peaks; give them the ``{"rss", "label"}`` shape."""
    rows = db.execute("SELECT id, rss FROM job_memory").fetchall()
    for row_id, text in rows:
        peaks = json.loads(text)
        if isinstance(peaks, list):
            db.execute("UPDATE job_memory SET rss = ? WHERE id = ?",
                       (json.dumps({"rss": peaks, "label": None}), row_id))


def add_stopped_by(db: sqlite3.Connection) -> None:
    """Runs say who asked rigops to stop them (a file set back to an older version may have the column)."""
    if "stopped_by" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}:
        db.execute("ALTER TABLE runs ADD COLUMN stopped_by TEXT")


STATE_MIGRATIONS: tuple[Migration, ...] = (
    sql_migration("the tables written before schema versions", STATE_V1),
    Migration("job_memory rows all labelled", label_job_memory),
    Migration("runs say who stopped them", add_stopped_by),
)

SCHEDULES_V1 = """
CREATE TABLE IF NOT EXISTS rigops_schedules (
    id TEXT PRIMARY KEY, when_text TEXT NOT NULL, channel TEXT NOT NULL, hosts TEXT, timezone TEXT NOT NULL,
    only_changes INTEGER NOT NULL, source TEXT NOT NULL, created_by TEXT, created_at REAL NOT NULL,
    last_post_at REAL, last_fingerprint TEXT
);
CREATE TABLE IF NOT EXISTS rigops_schedule_ids (n INTEGER PRIMARY KEY AUTOINCREMENT);
"""

SCHEDULES_V2 = """
ALTER TABLE rigops_schedules ADD COLUMN last_error TEXT;
ALTER TABLE rigops_schedules ADD COLUMN last_error_at REAL;
"""

SCHEDULE_MIGRATIONS: tuple[Migration, ...] = (
    sql_migration("the schedule tables written before schema versions", SCHEDULES_V1),
    sql_migration("why a schedule's last post failed", SCHEDULES_V2),
)
