"""A PostgreSQL database shared by several rigops, through SQLAlchemy Core and psycopg 3.

It answers the Store's seam (``bot.store.engine``) the way ``bot.store.sqlite`` does for a file: ``?``
statements, rows by column name, transactions that join an open one (per thread: each thread has its own
connection from the pool), every error a StateError. Messages name the database by its URL with the password
hidden; the password itself never appears in them.

The table ``rigops_schema`` counts the migrations applied to each schema it holds (``what``: "state"), as SQLite's
``PRAGMA user_version`` does for a file. Opening applies the missing ones, each in its own transaction under an
advisory lock (two rigops starting together migrate once), and refuses a database newer than the list.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection as SaConnection
from sqlalchemy import Engine, TextClause, create_engine, text
from sqlalchemy.engine import URL, CursorResult, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from bot.store.engine import Migration
from bot.util.errors import StateError

log = logging.getLogger(__name__)
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
DRIVER = "postgresql+psycopg"
SCHEMA_LOCK = 0x7269676F7073  # "rigops": the advisory lock held while a schema is read or migrated
APPLICATION = "rigops"
KEEPALIVES = ("-c tcp_keepalives_idle=10", "-c tcp_keepalives_interval=5", "-c tcp_keepalives_count=3")
# A server that restarts (pg_ctl restart, a failover) refuses connections for a moment: a new connection is tried
# again for this long, backing off, before the operation fails with StateError. The wait blocks the caller (the
# state is synchronous), so it stays short: a fast restart takes a second or two.
RECONNECT_FOR = 4.0
RECONNECT_FIRST = 0.05
RECONNECT_MOST = 0.8


class Row:
    """One row, read like ``sqlite3.Row``: by column name or position, ``tuple(row)``, ``dict(row)``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str, /) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and self._values == other._values and self._index == other._index

    __hash__ = None  # type: ignore[assignment]

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


class Cursor:
    """What one statement did, read at once (the connection moves on to the next statement)."""

    def __init__(self, rows: list[Row], *, rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    @classmethod
    def of(cls, result: CursorResult[Any]) -> Cursor:
        if not result.returns_rows:
            return cls([], rowcount=result.rowcount)
        index = {str(k): i for i, k in enumerate(result.keys())}
        return cls([Row(tuple(r), index) for r in result.fetchall()], rowcount=result.rowcount)

    def fetchall(self) -> list[Any]:
        return list(self._rows)


class Connection:
    """One pooled connection inside a transaction, taking the Store's ``?`` statements."""

    def __init__(self, conn: SaConnection) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return Cursor.of(self._conn.execute(_statement(sql), _binds(parameters)))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        rows = [_binds(p) for p in parameters]
        if not rows:  # like sqlite3: nothing to insert is no statement
            return Cursor([], rowcount=0)
        return Cursor.of(self._conn.execute(_statement(sql), rows))


class PostgresDatabase:
    """One PostgreSQL database, rows by column name; every error becomes StateError (without the password)."""

    def __init__(self, engine: Engine, *, url: URL, what: str) -> None:
        self._engine = engine
        self._url = url
        self._local = threading.local()  # .conn: this thread's Connection while it is in a transaction
        self._opening = True  # errors say the database cannot be opened
        self._down_since: float | None = None  # when a connection was last refused, until one is had again
        self.outages: list[tuple[float, float]] = []  # (when, for how long) the server could not be reached
        self.what = what
        self.where = public_url(url)

    @classmethod
    def open(cls, url: str, *, what: str, migrations: Sequence[Migration], timeout: float) -> PostgresDatabase:
        """Connect and bring the schema ``what`` to the latest of ``migrations``.

        ``timeout``: seconds to wait for the server, and for a lock another rigops holds. Raises StateError when
        the URL is not a PostgreSQL URL, the server cannot be reached or refuses us, a migration fails, or the
        database is newer than ``migrations``."""
        parsed = parse_url(url)
        connect_args: dict[str, Any] = {
            "connect_timeout": max(2, math.ceil(timeout)),
            # libpq's -c settings: the URL's own come last, so they win
            "options": " ".join((f"-c lock_timeout={int(timeout * 1000)}", *_query(parsed, "options"))),
        }
        if "application_name" not in parsed.query:
            connect_args["application_name"] = APPLICATION
        try:
            engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
        except (ArgumentError, ImportError) as exc:
            raise StateError(f"cannot open the {what} database {public_url(parsed)}: {exc}") from exc
        database = cls(engine, url=parsed, what=what)
        try:
            database._migrate(migrations)
        except BaseException:
            engine.dispose()
            raise
        database._opening = False
        return database

    def close(self) -> None:
        self._engine.dispose()

    @property
    def version(self) -> int:
        """The number of migrations applied to the schema."""
        with self.transaction() as db:
            return self._version(db)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction on this thread's connection, committed at the end, rolled back on any exception.
        Inside another transaction of this thread this joins it: the outer one commits. Raises StateError."""
        current: Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        try:
            with self._connect() as conn, conn.begin():
                self._local.conn = Connection(conn)
                try:
                    yield self._local.conn
                finally:
                    self._local.conn = None
        except SQLAlchemyError as exc:
            raise self._error(exc) from exc

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
        """The rows of one statement: in this thread's transaction when there is one, else on its own.
        Raises StateError."""
        current: Connection | None = getattr(self._local, "conn", None)
        if current is not None:
            return current.execute(sql, args).fetchall()
        try:
            return self._read(sql, args)
        except DBAPIError as exc:  # a read on its own is safe to run again, on a new connection
            if not exc.connection_invalidated:
                raise self._error(exc) from exc
            log.warning("the %s database %s dropped a read's connection (%s); reading again", self.what, self.where,
                        _reason(exc, self._url))
        except SQLAlchemyError as exc:
            raise self._error(exc) from exc
        try:
            return self._read(sql, args)
        except SQLAlchemyError as exc:
            raise self._error(exc) from exc

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Row]:
        with self._connect() as conn:
            return Connection(conn.execution_options(isolation_level="AUTOCOMMIT")).execute(sql, args).fetchall()

    def _connect(self) -> SaConnection:
        """A connection from the pool (checked with a ping first), waiting out a server that is restarting for
        up to RECONNECT_FOR seconds: nothing has run on it yet, so trying again is safe for any operation.
        Once an outage has outlasted that wait, each operation tries once and fails at once: the state is
        synchronous, and a wait per operation would hold up everything else rigops does (following builds,
        answering Slack) for as long as the server is away.
        The log says when the server stopped answering and, once it is back, for how long."""
        deadline, delay = time.monotonic() + RECONNECT_FOR, RECONNECT_FIRST
        if self._down_since is not None and time.monotonic() - self._down_since > RECONNECT_FOR:
            deadline = time.monotonic()  # a long outage: one try
        while True:
            try:
                conn = self._engine.connect()
            except OperationalError as exc:
                if self._down_since is None:
                    self._down_since = time.monotonic()
                    log.warning("the %s database %s stopped answering (%s); trying again", self.what, self.where,
                                _reason(exc, self._url))
                if self._opening or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, RECONNECT_MOST)
                continue
            if self._down_since is not None:
                lasted = time.monotonic() - self._down_since
                self.outages.append((time.time() - lasted, lasted))
                del self.outages[:-20]
                log.warning("the %s database %s answers again, after %.1f s", self.what, self.where, lasted)
                self._down_since = None
            return conn

    def _error(self, exc: BaseException) -> StateError:
        if self._opening:
            return StateError(f"cannot open the {self.what} database {self.where}: {_reason(exc, self._url)}")
        return StateError(f"{self.what} database error: {_reason(exc, self._url)}")

    def _version(self, db: Connection) -> int:
        rows = db.execute("SELECT version FROM rigops_schema WHERE what = ?", (self.what,)).fetchall()
        return int(rows[0][0]) if rows else 0

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        while True:
            with self.transaction() as db:
                db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))  # another rigops may be migrating
                db.execute("CREATE TABLE IF NOT EXISTS rigops_schema (what TEXT PRIMARY KEY, version INTEGER NOT NULL)")
                version = self._version(db)
                if version > len(migrations):
                    raise StateError(
                        f"the {self.what} database {self.where} has schema version {version}, but this rigops knows "
                        f"only up to {len(migrations)}: rigops is older than its state; upgrade rigops or point it "
                        "at another database")
                if version == len(migrations):
                    return
                self._apply(db, version + 1, migrations[version])

    def _apply(self, db: Connection, version: int, migration: Migration) -> None:
        try:
            migration.apply(db)
            db.execute("INSERT INTO rigops_schema (what, version) VALUES (?, ?) "
                       "ON CONFLICT (what) DO UPDATE SET version = excluded.version", (self.what, version))
        except Exception as exc:  # a migration is arbitrary code; whatever it raised, the step is rolled back
            raise StateError(f"cannot bring the {self.what} database {self.where} to schema version {version} "
                             f"({migration.name}): {_reason(exc, self._url)}") from exc


def parse_url(url: str) -> URL:
    """A PostgreSQL URL, to be reached through psycopg 3. Raises StateError (naming no part of the URL but its
    scheme: the rest may hold a password)."""
    scheme = url.split(":", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        got = f"{scheme}://" if scheme else "no scheme"
        raise StateError(f"the state URL must start with postgresql:// (got {got})")
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StateError(f"cannot read the state URL {scheme}://…: {_scrub(str(exc), url)}") from None
    return parsed.set(drivername=DRIVER)


def public_url(url: URL | str) -> str:
    """The URL to show people and logs: the password (in the user part or the query) as ``***``."""
    parsed = url if isinstance(url, URL) else parse_url(url)
    if "password" in parsed.query:  # shown where a password usually is
        parsed = parsed.difference_update_query(["password"]).set(password="***")
    return parsed.set(drivername="postgresql").render_as_string(hide_password=True)


def _reason(exc: BaseException | None, url: URL) -> str:
    """The driver's own words on one line (not SQLAlchemy's, which add the statement), without the password."""
    if exc is None:
        return "unknown error"
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    words = " ".join(str(cause).split()) or type(cause).__name__
    return _scrub(words, url)


def _query(url: URL, key: str) -> tuple[str, ...]:
    value = url.query.get(key, ())
    return (value,) if isinstance(value, str) else tuple(value)


def _scrub(message: str, url: URL | str) -> str:
    secrets = [url.password, url.query.get("password")] if isinstance(url, URL) else [url]
    for secret in secrets:
        if isinstance(secret, str) and secret:
            message = message.replace(secret, "***")
    return message


@lru_cache(maxsize=512)
def _statement(sql: str) -> TextClause:
    """A ``?`` statement as SQLAlchemy text with binds ``:p0, :p1, …`` (a ``?`` inside quotes stays)."""
    out, n, quote = [], 0, ""
    for ch in sql:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            out.append(f":p{n}")
            n += 1
            continue
        elif ch == ":":
            out.append("\\:")  # a literal colon (a ::cast), not a bind
            continue
        out.append(ch)
    return text("".join(out))


def _binds(parameters: Sequence[Any]) -> dict[str, Any]:
    return {f"p{i}": v for i, v in enumerate(parameters)}


@contextmanager
def _peek(url: str, *, timeout: float) -> Iterator[SaConnection]:
    """A connection of its own, to read without changing anything (``rigops check``). Raises StateError."""
    parsed = parse_url(url)
    engine = create_engine(parsed, poolclass=NullPool, connect_args={"connect_timeout": max(2, math.ceil(timeout))})
    try:
        with engine.connect() as conn:
            yield conn
    except SQLAlchemyError as exc:
        raise StateError(f"cannot reach the state database {public_url(parsed)}: {_reason(exc, parsed)}") from exc
    finally:
        engine.dispose()


def replica_rows(url: str, *, timeout: float) -> list[dict[str, Any]]:
    """The rows of the replicas table, read without changing anything (none before rigops made it)."""
    with _peek(url, timeout=timeout) as conn:
        if conn.exec_driver_sql("SELECT to_regclass('replicas')").scalar() is None:
            return []
        return [dict(r._mapping) for r in conn.execute(text("SELECT * FROM replicas"))]


def outage_rows(url: str, *, since: float, timeout: float) -> list[dict[str, Any]]:
    """The state's outages since ``since``, as the rigops that saw them wrote them (none before rigops made the
    table), read without changing anything."""
    with _peek(url, timeout=timeout) as conn:
        if conn.exec_driver_sql("SELECT to_regclass('outages')").scalar() is None:
            return []
        return [dict(r._mapping) for r in conn.execute(
            text("SELECT * FROM outages WHERE began_at >= :since ORDER BY began_at"), {"since": since})]


def probe(url: str, *, timeout: float) -> tuple[str, int]:
    """The server's version and how many state migrations the database has (0: no rigops opened it yet), read
    without changing anything. Raises StateError."""
    with _peek(url, timeout=timeout) as conn:
        server = str(conn.exec_driver_sql("SHOW server_version").scalar())
        if conn.exec_driver_sql("SELECT to_regclass('rigops_schema')").scalar() is None:
            return server, 0
        version = conn.execute(text("SELECT version FROM rigops_schema WHERE what = 'state'")).scalar()
        return server, int(version or 0)


class AdvisoryLock:
    """A session advisory lock on a connection of its own, held while this rigops leads. PostgreSQL frees it when
    the session ends: a clean close, or the server noticing the connection is gone (kill -9 of the process closes
    its socket at once; a machine that vanishes is noticed by TCP keepalives, set on both sides, in about 25 s).

    The lock is one per schema (``search_path``), so rigops deployments in different schemas of one database each
    have their own leader. Raises nothing: a failure means "not held"."""

    def __init__(self, url: str, *, key: int, timeout: float) -> None:
        self._url = parse_url(url)
        self._key = key
        self._timeout = timeout
        self._conn: SaConnection | None = None
        self.path = f"advisory lock {key:#x} on {public_url(self._url)}"  # for people, as a lock file's path

    @property
    def held(self) -> bool:
        return self._conn is not None

    def acquire(self) -> bool:
        """Take the lock if no other session holds it; never waits."""
        if self._conn is not None:
            return True
        engine = create_engine(self._url, poolclass=NullPool, connect_args={
            "connect_timeout": max(2, math.ceil(self._timeout)), "application_name": f"{APPLICATION} leader",
            "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
            # the server's side too: the session, and with it the lock, ends ~25 s after the leader's machine vanished
            "options": " ".join((f"-c statement_timeout={int(self._timeout * 1000)}", *KEEPALIVES,
                                 *_query(self._url, "options")))})
        try:
            conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as exc:
            log.warning("cannot reach the database for the leader lock: %s", _reason(exc, self._url))
            return False
        try:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k, hashtext(current_schema()))"),
                               {"k": self._key}).scalar()
        except SQLAlchemyError as exc:
            log.warning("cannot take the leader lock: %s", _reason(exc, self._url))
            got = False
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def alive(self) -> bool:
        """Whether the session holding the lock is still there (when it is not, the lock is gone with it)."""
        if self._conn is None:
            return False
        try:
            self._conn.execute(text("SELECT 1"))
            return True
        except SQLAlchemyError as exc:
            log.warning("lost the leader lock's session: %s", _reason(exc, self._url))
            self._drop()
            return False

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(SQLAlchemyError):
                self._conn.execute(text("SELECT pg_advisory_unlock(:k, hashtext(current_schema()))"),
                                   {"k": self._key})
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(SQLAlchemyError):
                self._conn.close()
            self._conn = None
