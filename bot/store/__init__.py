"""The state: runs, thread context, pending plans, seen events and the audit log.

One SQLite file (WAL) in the state dir by default; a PostgreSQL database when several rigops share one state
(``state = "postgresql://…"`` in the config). The Store speaks to either through one seam
(``bot.store.engine``): ``bot.store.sqlite`` and ``bot.store.postgres`` answer it. Calls are short and
synchronous; the bot runs them on its event loop thread. The schema is versioned: ``bot.store.migrations``
lists its steps, for each engine, and the database applies the missing ones when it opens.

What must happen once across rigops sharing a database is one statement each engine makes atomic: a seen event
is a row under a primary key (``ON CONFLICT DO NOTHING``), a claimed plan a conditional ``UPDATE``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.hosts.models import ProcId
from bot.language.plan import Plan, ThreadContext
from bot.store.engine import Connection, Database, Row
from bot.store.migrations import POSTGRES_STATE_MIGRATIONS, STATE_MIGRATIONS
from bot.store.models import AuditEntry, BuildRun, PendingPlan, PlanState, RunState
from bot.store.replicas import Identity, Replicas
from bot.store.sqlite import Database as SqliteDatabase
from bot.util.errors import StateError

__all__ = ["DB_NAME", "AuditEntry", "BuildRun", "PendingPlan", "PlanState", "RunState", "Store"]

DB_NAME = "rigops.sqlite3"
BUSY_TIMEOUT = 5.0  # seconds to wait for another writer before giving up
EVENT_RETENTION = 7 * 24 * 3600

OOM_RETENTION = 30 * 24 * 3600
OomKillRow = tuple[str, float, int | None, str, str, str | None, int | None]
JOB_MEMORY_RUNS = 10  # runs of a build whose compiler peaks are kept
JOB_MEMORY_VALUES = 5000  # peaks kept per run: an even spread over the sorted values keeps the percentiles


class Store:
    """The state, on SQLite or PostgreSQL. Raises StateError when the database fails."""

    def __init__(self, db: Database, *, state_dir: Path, url: str | None = None) -> None:
        self._db = db
        self.state_dir = state_dir  # logs, local files and (for now) the schedules, whatever holds the state
        self.path = state_dir / DB_NAME  # the SQLite file (on PostgreSQL, where it would be)
        self.where = where(state_dir, url=url)  # for people: never the password
        self.url = url  # None: SQLite
        self._identity = Identity.of(state_dir)
        self.replicas = Replicas(db, self._identity.id)  # this rigops among the others sharing the state
        self.audit_listeners: list[Callable[[AuditEntry], None]] = []

    @classmethod
    def open(cls, state_dir: Path, *, url: str | None = None) -> Store:
        """Open the state, its schema brought to the latest version: in ``state_dir``, or in the PostgreSQL
        database at ``url`` (the state dir, created if missing, still holds logs and local files).

        Raises StateError, also when the state was written by a newer rigops."""
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(f"cannot open the state in {state_dir}: {exc}") from exc
        if url is not None:
            from bot.store.postgres import PostgresDatabase  # SQLAlchemy and psycopg only for those who use them

            return cls(PostgresDatabase.open(url, what="state", migrations=POSTGRES_STATE_MIGRATIONS,
                                             timeout=BUSY_TIMEOUT), state_dir=state_dir, url=url)
        return cls(SqliteDatabase.open(state_dir / DB_NAME, what="state", migrations=STATE_MIGRATIONS,
                                       timeout=BUSY_TIMEOUT), state_dir=state_dir)

    def close(self) -> None:
        self._db.close()
        self._identity.close()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Make the writes inside one transaction: all of them land, or none."""
        with self._db.transaction():
            yield

    # -- deliveries ---------------------------------------------------------------------------------
    def first_delivery(self, event_id: str) -> bool:
        """True the first time an event id is seen; False for Slack's retries of it."""
        now = time.time()
        with self._db.transaction() as db:
            cur = db.execute("INSERT INTO events (event_id, seen_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING",
                             (event_id, now))
            db.execute("DELETE FROM events WHERE seen_at < ?", (now - EVENT_RETENTION,))
            return cur.rowcount == 1

    # -- threads ------------------------------------------------------------------------------------
    def thread_context(self, channel: str, thread_id: str) -> ThreadContext | None:
        rows = self._db.query("SELECT host, build FROM threads WHERE channel = ? AND thread_ts = ?",
                              (channel, thread_id))
        if not rows:
            return None
        host, build = rows[0]["host"], rows[0]["build"]
        last = self._db.query("SELECT jobs FROM runs WHERE channel = ? AND thread_ts = ? AND host = ? AND build = ? "
                              "ORDER BY id DESC LIMIT 1", (channel, thread_id, host, build))
        return ThreadContext(host=host, build=build, jobs=last[0]["jobs"] if last else None)

    def remember_thread(self, channel: str, thread_id: str, *, host: str | None, build: str | None) -> None:
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO threads (channel, thread_ts, host, build, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (channel, thread_ts) DO UPDATE SET host = excluded.host, "
                "build = COALESCE(excluded.build, threads.build), updated_at = excluded.updated_at",
                (channel, thread_id, host, build, time.time()),
            )

    # -- plans waiting for a button -------------------------------------------------------------
    def add_plan(self, *, channel: str, thread_id: str, request_id: str | None, user: str, plan: Plan,
                 state: PlanState = "pending") -> int:
        """A plan waiting for a button: Run / Cancel ("pending"), or an answer to its question ("asking"); or one
        this rigops runs now ("running")."""
        now = time.time()
        running = state == "running"
        with self._db.transaction() as db:
            return _inserted(db, 'INSERT INTO plans (channel, thread_ts, request_ts, "user", plan, state, created_at, '
                             "replica, ran_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (channel, thread_id, request_id, user, json.dumps(plan.to_json(kept=True)), state,
                              now, self.replicas.me if running else None, now if running else None))

    def set_plan_message(self, plan_id: int, *, message_id: str, thread_id: str) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE plans SET message_ts = ?, thread_ts = ? WHERE id = ?", (message_id, thread_id, plan_id))

    def claim_plan(self, plan_id: int, new_state: PlanState, *, waiting: PlanState = "pending") -> PendingPlan | None:
        """Move a plan still ``waiting`` to ``new_state``; None when it was not (pressed twice, expired). A plan
        moved to "running" is this rigops' to run, from now."""
        with self._db.transaction() as db:
            cur = db.execute("UPDATE plans SET state = ?, replica = ?, ran_at = ? WHERE id = ? AND state = ?",
                             (new_state, self.replicas.me, time.time(), plan_id, waiting))
            if cur.rowcount != 1:
                return None
        return self.plan(plan_id)

    def plan(self, plan_id: int) -> PendingPlan | None:
        rows = self._db.query("SELECT * FROM plans WHERE id = ?", (plan_id,))
        if not rows:
            return None
        return _pending(rows[0])

    def open_question(self, channel: str, thread_id: str) -> PendingPlan | None:
        """The newest question rigops asked in a thread and nobody has answered yet."""
        rows = self._db.query("SELECT * FROM plans WHERE channel = ? AND thread_ts = ? AND state = 'asking' "
                              "ORDER BY id DESC LIMIT 1", (channel, thread_id))
        return _pending(rows[0]) if rows else None

    def interrupted_plans(self, *, since: float, timeout: float) -> list[PendingPlan]:
        """The plans left running by a rigops that stopped before they were done: by this one before ``since``
        (its start: the same replica, restarted), or by one whose heartbeat is older than ``timeout``."""
        now = time.time()
        me = self.replicas.me
        rows = self._db.query(
            "SELECT * FROM plans WHERE state = 'running' AND ((replica = ? AND ran_at < ?) OR (replica IS NULL AND "
            "created_at < ?) OR (replica <> ? AND replica NOT IN (SELECT id FROM replicas WHERE seen_at >= ?))) "
            "ORDER BY id", (me, since, since, me, now - timeout))
        return [_pending(r) for r in rows]  # one query a heartbeat, not one per plan

    def finish_plan(self, plan_id: int) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE plans SET state = 'done' WHERE id = ?", (plan_id,))

    # -- runs ---------------------------------------------------------------------------------------
    def begin_run(self, *, host: str, build: str, jobs: int | None, log: str, exit_file: str,
                  boot_id: str | None, started_by: str | None, channel: str | None,
                  thread_id: str | None) -> BuildRun:
        """Record a run about to be spawned (state "starting", no pid yet): a bot killed between the spawn and
        :meth:`started_run` finds the row on restart and adopts the build from its start record. This rigops
        owns the run (follows it) from the start."""
        with self._db.transaction() as db:
            run_id = _inserted(
                db, "INSERT INTO runs (host, build, jobs, pid, start, log, exit_file, boot_id, started_at, started_by, "
                "channel, thread_ts, state, owner) VALUES (?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?, 'starting', ?)",
                (host, build, jobs, log, exit_file, boot_id, time.time(), started_by, channel, thread_id,
                 self.replicas.me))
        run = self.run(run_id)
        assert run is not None
        return run

    def started_run(self, run_id: int, *, pid: int, start: int, supervisor_pid: int | None, log: str,
                    exit_file: str) -> BuildRun:
        """The spawn of a "starting" run answered: it is running as (pid, start)."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET pid = ?, start = ?, supervisor_pid = ?, log = ?, exit_file = ?, "
                       "state = 'running' WHERE id = ? AND state = 'starting'",
                       (pid, start, supervisor_pid, log, exit_file, run_id))
        run = self.run(run_id)
        assert run is not None
        return run

    def forget_run(self, run_id: int) -> None:
        """Drop a "starting" run whose spawn failed: nothing was started."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM runs WHERE id = ? AND state = 'starting'", (run_id,))

    def run(self, run_id: int) -> BuildRun | None:
        rows = self._db.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    @property
    def engine(self) -> str:
        """The database the state is in: "postgresql" or "sqlite"."""
        return "postgresql" if self.url else "sqlite"

    def answers(self) -> None:
        """A round trip to the database (for /healthz). Raises StateError when it does not answer."""
        self._db.query("SELECT 1", ())

    def runs(self, *, host: str | None = None, build: str | None = None, live: bool = False,
             limit: int = 50) -> list[BuildRun]:
        """Runs, newest first, optionally for one host/build and only those still running."""
        sql, args = "SELECT * FROM runs WHERE 1=1", list[Any]()
        if host is not None:
            sql, args = sql + " AND host = ?", [*args, host]
        if build is not None:
            sql, args = sql + " AND build = ?", [*args, build]
        if live:
            sql += " AND state IN ('starting', 'running')"
        rows = self._db.query(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))
        return [_run(r) for r in rows]

    def finish_run(self, run_id: int, *, state: RunState, exit_status: int | None,
                   ended_at: float | None = None, stopped_by: str | None = None) -> None:
        """Record how a live run ended (``stopped_by``: who asked rigops to stop it); a run already ended
        keeps what it has."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET state = ?, exit_status = ?, ended_at = ?, stopped_by = ? WHERE id = ? "
                       "AND state IN ('starting', 'running')",
                       (state, exit_status, ended_at or time.time(), stopped_by, run_id))

    def restate_run(self, run_id: int, *, state: RunState) -> None:
        """Correct how an ended run is recorded: a "failed" whose log shows it was interrupted was stopped."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET state = ? WHERE id = ? AND state NOT IN ('starting', 'running')",
                       (state, run_id))

    def reopen_run(self, run_id: int, *, state: RunState) -> None:
        """Undo a "stopped" recorded for a kill that failed: the build still runs."""
        with self._db.transaction() as db:
            db.execute("UPDATE runs SET state = ?, exit_status = NULL, ended_at = NULL, stopped_by = NULL "
                       "WHERE id = ? AND state = 'stopped'", (state, run_id))

    # -- audit --------------------------------------------------------------------------------------
    def audit(self, what: str, *, user: str | None, channel: str | None = None, thread_id: str | None = None,
              host: str | None = None, build: str | None = None, detail: dict[str, Any] | None = None) -> None:
        """Write one audit entry; then every ``audit_listeners`` hears it (the audit channel's mirror), whichever
        part of rigops wrote it."""
        with self._db.transaction() as db:
            db.execute(
                'INSERT INTO audit (at, "user", channel, thread_ts, host, build, what, detail) '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), user, channel, thread_id, host, build, what,
                 json.dumps(detail) if detail is not None else None),
            )
        entry = AuditEntry(what, user, channel, thread_id, host, build, dict(detail or {}))
        for listener in self.audit_listeners:
            listener(entry)

    def audit_entries(self, limit: int = 20) -> list[dict[str, Any]]:
        return [dict(r) for r in self._db.query("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))]

    # -- compiler memory per build ------------------------------------------------------------------
    def record_job_memory(self, host: str, build: str, rss_values: Sequence[int], *, label: str | None = None,
                          limit: int | None = None, by_name: Mapping[str, int] | None = None) -> None:
        """Keep one run's peak RSS per compiler process (``label``: what kind of job they were, e.g. "nvcc";
        ``limit``: the memory limit the run ran under, when smaller than the host; ``by_name``: the peak of
        each kind of compiler process); a build keeps its last JOB_MEMORY_RUNS runs."""
        if not rss_values:
            return
        values = sorted(int(v) for v in rss_values)
        if len(values) > JOB_MEMORY_VALUES:
            step = len(values) / JOB_MEMORY_VALUES
            values = [values[int(i * step)] for i in range(JOB_MEMORY_VALUES)]
        with self._db.transaction() as db:
            db.execute("INSERT INTO job_memory (host, build, recorded_at, rss) VALUES (?, ?, ?, ?)",
                       (host, build, time.time(), json.dumps({"rss": values, "label": label, "limit": limit,
                                                     "by_name": dict(by_name or {})})))
            db.execute("DELETE FROM job_memory WHERE host = ? AND build = ? AND id NOT IN (SELECT id FROM "
                       "job_memory WHERE host = ? AND build = ? ORDER BY id DESC LIMIT ?)",
                       (host, build, host, build, JOB_MEMORY_RUNS))

    def job_memory(self, host: str, build: str) -> list[int]:
        """Every kept peak RSS of the build's compiler processes, over its kept runs."""
        rows = self._db.query("SELECT rss FROM job_memory WHERE host = ? AND build = ?", (host, build))
        return [int(v) for r in rows for v in _job_record(r["rss"])[0]]

    def job_memory_label(self, host: str, build: str) -> str | None:
        """What kind of job the build's kept runs mostly were ("nvcc", "compile"), if they said."""
        rows = self._db.query("SELECT rss FROM job_memory WHERE host = ? AND build = ?", (host, build))
        labels = Counter(label for r in rows if (label := _job_record(r["rss"])[1]))
        return labels.most_common(1)[0][0] if labels else None

    def job_memory_limit(self, host: str, build: str) -> int | None:
        """The memory limit the build's last kept run ran under (a cgroup's, smaller than the host), if any."""
        rows = self._db.query("SELECT rss FROM job_memory WHERE host = ? AND build = ? ORDER BY id DESC LIMIT 1",
                              (host, build))
        limit = json.loads(rows[0]["rss"]).get("limit") if rows else None
        return int(limit) if limit is not None else None

    def job_memory_by_name(self, host: str, build: str) -> dict[str, int]:
        """The most each kind of compiler process of the build reached over its kept runs (cc1plus, g++)."""
        found: dict[str, int] = {}
        for r in self._db.query("SELECT rss FROM job_memory WHERE host = ? AND build = ?", (host, build)):
            for name, rss in (json.loads(r["rss"]).get("by_name") or {}).items():
                found[str(name)] = max(found.get(str(name), 0), int(rss))
        return found

    def job_memory_runs(self, host: str, build: str) -> int:
        """How many runs :meth:`job_memory` covers."""
        rows = self._db.query("SELECT COUNT(*) AS n FROM job_memory WHERE host = ? AND build = ?", (host, build))
        return int(rows[0]["n"])

    # -- OOM kills, memory charts, paused compilers -------------------------------------------------
    def add_oom_kills(self, kills: Sequence[OomKillRow]) -> None:
        """Record OOM kills a follower saw: (host, at, run_id, whose, evidence, victim name, victim pid)."""
        if not kills:
            return
        with self._db.transaction() as db:
            db.executemany("INSERT INTO oom_events (host, at, run_id, whose, evidence, victim, victim_pid) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)", kills)
            db.execute("DELETE FROM oom_events WHERE at < ?", (time.time() - OOM_RETENTION,))

    def oom_kills(self, host: str, *, since: float) -> list[OomKillRow]:
        """The OOM kills recorded on a host since a time, oldest first."""
        rows = self._db.query("SELECT host, at, run_id, whose, evidence, victim, victim_pid FROM oom_events "
                              "WHERE host = ? AND at > ? ORDER BY at", (host, since))
        return [tuple(r) for r in rows]

    def oom_kills_counted(self, host: str, *, at: float, boot_id: str, count: int, since: float) -> int | None:
        """Keep a reading of a host's OOM-kill counter; return how many kills it counted since ``since`` (from
        the first reading after it), or None without an earlier reading to compare with."""
        with self._db.transaction() as db:
            rows = db.execute("SELECT boot_id, count FROM oom_counters WHERE host = ? AND at >= ? AND at < ? "
                              "ORDER BY at LIMIT 1", (host, since, at)).fetchall()
            db.execute("INSERT INTO oom_counters (host, at, boot_id, count) VALUES (?, ?, ?, ?)",
                       (host, at, boot_id, count))
            db.execute("DELETE FROM oom_counters WHERE at < ?", (at - OOM_RETENTION,))
        if not rows:
            return None
        before_boot, before = rows[0]["boot_id"], int(rows[0]["count"])
        return count - before if before_boot == boot_id and count >= before else count  # rebooted: since boot

    def save_run_memory(self, run_id: int, series: dict[str, Any]) -> None:
        with self._db.transaction() as db:
            db.execute("INSERT INTO run_memory (run_id, series) VALUES (?, ?) "
                       "ON CONFLICT (run_id) DO UPDATE SET series = excluded.series",
                       (run_id, json.dumps(series, separators=(",", ":"))))

    def run_memory(self, run_id: int) -> dict[str, Any] | None:
        rows = self._db.query("SELECT series FROM run_memory WHERE run_id = ?", (run_id,))
        return dict(json.loads(rows[0]["series"])) if rows else None

    def set_paused(self, run_id: int, targets: Sequence[ProcId]) -> None:
        """The compilers of a run that rigops has stopped with SIGSTOP (none: all resumed)."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM paused WHERE run_id = ?", (run_id,))
            db.executemany("INSERT INTO paused (run_id, pid, start) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                           [(run_id, pid, start) for pid, start in targets])

    def paused(self, run_id: int) -> list[ProcId]:
        return [ProcId(int(r["pid"]), int(r["start"])) for r in
                self._db.query("SELECT pid, start FROM paused WHERE run_id = ?", (run_id,))]


def _job_record(text: str) -> tuple[list[int], str | None]:
    """A job_memory row's (peaks, label): ``{"rss": [...], "label": ...}`` (migration 2 gave old rows that shape)."""
    data = json.loads(text)
    return [int(v) for v in data["rss"]], data["label"]


# The runs table keeps the names of the columns it was made with (Slack's ts) for the fields' message ids.
_RUN_FIELDS = {"thread_ts": "thread_id", "card_ts": "card_id"}


def _run(r: Row) -> BuildRun:
    return BuildRun(**{_RUN_FIELDS.get(k, k): r[k] for k in r.keys()})  # noqa: SIM118 - a Row iterates over its values


def _inserted(db: Connection, sql: str, args: tuple[Any, ...]) -> int:
    """The id of the row one ``INSERT`` made (``RETURNING id``: both engines have it, not ``lastrowid``)."""
    return int(db.execute(sql + " RETURNING id", args).fetchall()[0][0])


def where(state_dir: Path, *, url: str | None) -> str:
    """Where the state is, for people: the SQLite file, or the PostgreSQL database without its password."""
    if url is None:
        return f"SQLite {state_dir / DB_NAME}"
    from bot.store.postgres import public_url

    return f"PostgreSQL {public_url(url)}"


def _pending(r: Row) -> PendingPlan:
    return PendingPlan(id=r["id"], channel=r["channel"], thread_id=r["thread_ts"], message_id=r["message_ts"],
                       request_id=r["request_ts"], user=r["user"], plan=Plan.from_json(json.loads(r["plan"])),
                       state=r["state"], created_at=r["created_at"])
