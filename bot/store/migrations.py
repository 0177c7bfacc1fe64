"""The schema history of rigops' two SQLite files, oldest step first. Never edit a released step: add one.

Files written before schema versions (user_version 0) already hold step 1's tables: step 1 creates only what
is missing, so their rows stay. ``schedules.sqlite3`` also holds APScheduler's ``apscheduler_jobs`` table, which
APScheduler creates and owns; no step here touches it.

The state on PostgreSQL has the same history, step for step (same count, same names: version n means the same
schema on both engines), in PostgreSQL's types: 64-bit integers and identity ids, double precision times,
``"user"`` quoted. A new step goes at the end of both lists; a data step is one function for both engines.
"""

from __future__ import annotations

import json
import sqlite3

from bot.store import engine
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


def label_job_memory(db: engine.Connection) -> None:
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


# Several rigops on one state: each says it is alive (a heartbeat); a live run is followed by the one that owns it,
# and its card is edited in place by whoever follows it next; a run's end is told once (``reported``); a button
# of a run's OOM guard pressed on another rigops is handed to the owner (``handoffs``).
REPLICAS_V4 = """
CREATE TABLE IF NOT EXISTS replicas (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, pid INTEGER NOT NULL, started_at REAL NOT NULL, seen_at REAL NOT NULL,
    leader INTEGER NOT NULL DEFAULT 0, following INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS handoffs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, replica TEXT NOT NULL, run_id INTEGER NOT NULL, press TEXT NOT NULL,
    at REAL NOT NULL
);
"""
RUN_OWNERS = (("owner", "TEXT"), ("card_ts", "TEXT"), ("reported", "INTEGER NOT NULL DEFAULT 0"))


def add_replicas(db: sqlite3.Connection) -> None:
    """The replicas' tables, and who follows each run (a file set back to an older version may have them)."""
    for statement in REPLICAS_V4.split(";"):
        if statement.strip():
            db.execute(statement)
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for column, kind in RUN_OWNERS:
        if column not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
            if column == "reported":  # what ended before is not told again
                db.execute("UPDATE runs SET reported = 1 WHERE state NOT IN ('starting', 'running')")


# A slash command is claimed in the state before it is acknowledged and done once answered: Slack never sends
# a command twice, so one whose rigops died in between is answered by another.
COMMANDS_V5 = """
CREATE TABLE IF NOT EXISTS commands (
    key TEXT PRIMARY KEY, replica TEXT NOT NULL, command TEXT NOT NULL, claimed_at REAL NOT NULL, done_at REAL
);
"""

# When a rigops could not reach its state, and for how long: written once it can again (``rigops check`` lists them).
OUTAGES_V6 = """
CREATE TABLE IF NOT EXISTS outages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, replica TEXT NOT NULL, began_at REAL NOT NULL, lasted REAL NOT NULL,
    problem TEXT
);
"""

def add_plan_runners(db: sqlite3.Connection) -> None:
    """Plans say which rigops runs them and since when: a plan left running by a rigops that died (or by this
    one before a restart) is told as interrupted."""
    have = {row[1] for row in db.execute("PRAGMA table_info(plans)")}
    for column, kind in (("replica", "TEXT"), ("ran_at", "REAL")):
        if column not in have:
            db.execute(f"ALTER TABLE plans ADD COLUMN {column} {kind}")


STATE_MIGRATIONS: tuple[Migration, ...] = (
    sql_migration("the tables written before schema versions", STATE_V1),
    Migration("job_memory rows all labelled", label_job_memory),
    Migration("runs say who stopped them", add_stopped_by),
    Migration("replicas, and who follows each run", add_replicas),
    sql_migration("slash commands claimed before their ack", COMMANDS_V5),
    sql_migration("the state's outages", OUTAGES_V6),
    Migration("plans say which rigops runs them", add_plan_runners),
)

POSTGRES_STATE_V1 = (
    """CREATE TABLE runs (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        host TEXT NOT NULL, build TEXT NOT NULL, jobs INTEGER,
        pid BIGINT NOT NULL, start BIGINT NOT NULL, supervisor_pid BIGINT,
        log TEXT NOT NULL, exit_file TEXT NOT NULL, boot_id TEXT,
        started_at DOUBLE PRECISION NOT NULL, started_by TEXT, channel TEXT, thread_ts TEXT,
        state TEXT NOT NULL DEFAULT 'running', exit_status INTEGER, ended_at DOUBLE PRECISION)""",
    "CREATE INDEX runs_by_build ON runs (host, build, id)",
    """CREATE TABLE threads (
        channel TEXT NOT NULL, thread_ts TEXT NOT NULL, host TEXT, build TEXT, updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (channel, thread_ts))""",
    "CREATE TABLE events (event_id TEXT PRIMARY KEY, seen_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX events_by_age ON events (seen_at)",
    """CREATE TABLE plans (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        channel TEXT NOT NULL, thread_ts TEXT NOT NULL, message_ts TEXT, request_ts TEXT,
        "user" TEXT NOT NULL, plan TEXT NOT NULL, state TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE audit (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at DOUBLE PRECISION NOT NULL, "user" TEXT,
        channel TEXT, thread_ts TEXT, host TEXT, build TEXT, what TEXT NOT NULL, detail TEXT)""",
    """CREATE TABLE job_memory (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, host TEXT NOT NULL, build TEXT NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL, rss TEXT NOT NULL)""",
    "CREATE INDEX job_memory_by_build ON job_memory (host, build, id)",
    """CREATE TABLE oom_events (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, host TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
        run_id BIGINT, whose TEXT NOT NULL, evidence TEXT NOT NULL, victim TEXT, victim_pid BIGINT)""",
    "CREATE INDEX oom_events_by_host ON oom_events (host, at)",
    """CREATE TABLE oom_counters (
        host TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, boot_id TEXT NOT NULL, count BIGINT NOT NULL)""",
    "CREATE INDEX oom_counters_by_host ON oom_counters (host, at)",
    "CREATE TABLE run_memory (run_id BIGINT PRIMARY KEY, series TEXT NOT NULL)",
    """CREATE TABLE paused (run_id BIGINT NOT NULL, pid BIGINT NOT NULL, start BIGINT NOT NULL,
        PRIMARY KEY (run_id, pid, start))""",
)

POSTGRES_STATE_MIGRATIONS: tuple[engine.Migration, ...] = (
    engine.sql_migration("the tables written before schema versions", *POSTGRES_STATE_V1),
    engine.Migration("job_memory rows all labelled", label_job_memory),
    engine.sql_migration("runs say who stopped them", "ALTER TABLE runs ADD COLUMN stopped_by TEXT"),
    engine.sql_migration(
        "replicas, and who follows each run",
        """CREATE TABLE replicas (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, pid BIGINT NOT NULL, started_at DOUBLE PRECISION NOT NULL,
            seen_at DOUBLE PRECISION NOT NULL, leader INTEGER NOT NULL DEFAULT 0,
            following INTEGER NOT NULL DEFAULT 0)""",
        """CREATE TABLE handoffs (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, replica TEXT NOT NULL, run_id BIGINT NOT NULL,
            press TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)""",
        "ALTER TABLE runs ADD COLUMN owner TEXT",
        "ALTER TABLE runs ADD COLUMN card_ts TEXT",
        "ALTER TABLE runs ADD COLUMN reported INTEGER NOT NULL DEFAULT 0",
        "UPDATE runs SET reported = 1 WHERE state NOT IN ('starting', 'running')"),
    engine.sql_migration(
        "slash commands claimed before their ack",
        """CREATE TABLE commands (
            key TEXT PRIMARY KEY, replica TEXT NOT NULL, command TEXT NOT NULL,
            claimed_at DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION)"""),
    engine.sql_migration(
        "the state's outages",
        """CREATE TABLE outages (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, replica TEXT NOT NULL,
            began_at DOUBLE PRECISION NOT NULL, lasted DOUBLE PRECISION NOT NULL, problem TEXT)"""),
    engine.sql_migration("plans say which rigops runs them", "ALTER TABLE plans ADD COLUMN replica TEXT",
                         "ALTER TABLE plans ADD COLUMN ran_at DOUBLE PRECISION"),
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

# Each run of a schedule is claimed before its digest is posted, done after: a leader taking over from one that
# died mid-post makes that run up, and no run is posted twice.
SCHEDULES_V3 = """
CREATE TABLE rigops_schedule_runs (
    schedule_id TEXT NOT NULL, due_at REAL NOT NULL, replica TEXT NOT NULL, claimed_at REAL NOT NULL,
    done_at REAL, PRIMARY KEY (schedule_id, due_at)
);
"""

SCHEDULE_MIGRATIONS: tuple[Migration, ...] = (
    sql_migration("the schedule tables written before schema versions", SCHEDULES_V1),
    sql_migration("why a schedule's last post failed", SCHEDULES_V2),
    sql_migration("each run of a schedule claimed", SCHEDULES_V3),
)

# The schedules on PostgreSQL, in the state's database beside it (``rigops_schema`` counts them as "schedules"),
# and APScheduler's job table made here, under the migration lock, so that replicas starting together do not race
# to create it (APScheduler then finds it: the same columns its SQLAlchemyJobStore declares).
POSTGRES_SCHEDULE_MIGRATIONS: tuple[engine.Migration, ...] = (
    engine.sql_migration(
        "the schedule tables written before schema versions",
        """CREATE TABLE rigops_schedules (
            id TEXT PRIMARY KEY, when_text TEXT NOT NULL, channel TEXT NOT NULL, hosts TEXT, timezone TEXT NOT NULL,
            only_changes INTEGER NOT NULL, source TEXT NOT NULL, created_by TEXT,
            created_at DOUBLE PRECISION NOT NULL, last_post_at DOUBLE PRECISION, last_fingerprint TEXT)""",
        "CREATE TABLE rigops_schedule_ids (n BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY)",
        """CREATE TABLE IF NOT EXISTS apscheduler_jobs (
            id VARCHAR(191) PRIMARY KEY, next_run_time DOUBLE PRECISION, job_state BYTEA NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS ix_apscheduler_jobs_next_run_time ON apscheduler_jobs (next_run_time)"),
    engine.sql_migration("why a schedule's last post failed",
                         "ALTER TABLE rigops_schedules ADD COLUMN last_error TEXT",
                         "ALTER TABLE rigops_schedules ADD COLUMN last_error_at DOUBLE PRECISION"),
    engine.sql_migration(
        "each run of a schedule claimed",
        """CREATE TABLE rigops_schedule_runs (
            schedule_id TEXT NOT NULL, due_at DOUBLE PRECISION NOT NULL, replica TEXT NOT NULL,
            claimed_at DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION, PRIMARY KEY (schedule_id, due_at))"""),
)
