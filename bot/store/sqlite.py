"""The one SQLite helper behind every rigops database file: open, transactions, errors, schema versions.

A file's ``PRAGMA user_version`` counts the migrations applied to it: version n means the first n of the file's
ordered migration list. Opening applies the missing ones, each in its own transaction (a failing one leaves the
file at the version before it), and refuses a file whose version is newer than the list: that file was written
by a newer rigops, which may have changed what its rows mean.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.util.errors import StateError

WAL_RETRY = 0.02  # seconds between tries to switch a file into WAL mode


@dataclass(frozen=True)
class Migration:
    """One step of a file's schema. ``apply`` runs inside the step's transaction; it must not commit."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


def sql_migration(name: str, script: str) -> Migration:
    """A migration made of SQL statements (``executescript`` would commit the step's transaction first).

    Raises ValueError when the script ends inside a string or a ``/*`` comment."""
    statements = _statements(script)

    def apply(db: sqlite3.Connection) -> None:
        for statement in statements:
            db.execute(statement)

    return Migration(name, apply)


class Database:
    """One SQLite file in WAL mode, rows by column name; every sqlite3 error becomes StateError."""

    def __init__(self, db: sqlite3.Connection, *, path: Path, what: str) -> None:
        self._db = db
        self.path = path
        self.what = what  # what the file holds, for messages: "state", "schedules"

    @classmethod
    def open(cls, path: Path, *, what: str, migrations: Sequence[Migration], timeout: float) -> Database:
        """Open (or create) the file and bring its schema to the latest of ``migrations``.

        ``timeout``: seconds to wait for another writer. Raises StateError when the file cannot be opened, a
        migration fails, or the file is newer than ``migrations``.
        """
        try:
            db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StateError(f"cannot open the {what} database {path}: {exc}") from exc
        database = cls(db, path=path, what=what)
        try:
            db.row_factory = sqlite3.Row
            _into_wal(db, timeout=timeout)
            db.execute("PRAGMA synchronous=NORMAL")
            database._migrate(migrations)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise StateError(f"cannot open the {what} database {path}: {exc}") from exc
            raise
        return database

    def close(self) -> None:
        self._db.close()

    @property
    def version(self) -> int:
        """The number of migrations applied to the file."""
        return int(self.query("PRAGMA user_version")[0][0])

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception. Inside another transaction
        this joins it: the outer one commits. Raises StateError."""
        if self._db.in_transaction:
            yield self._db
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StateError(f"{self.what} database error: {exc}") from exc

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """The rows of one statement, outside any transaction of ours. Raises StateError."""
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.what} database error: {exc}") from exc

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        version = self.version
        while version != len(migrations):
            if version > len(migrations):
                raise StateError(
                    f"the {self.what} database {self.path} has schema version {version}, but this rigops knows "
                    f"only up to {len(migrations)}: rigops is older than its state; upgrade rigops or point it "
                    "at another state dir")
            with self.transaction() as db:
                version = int(db.execute("PRAGMA user_version").fetchone()[0])  # another rigops may have been first
                if version < len(migrations):
                    self._apply(db, version + 1, migrations[version])
                    version += 1

    def _apply(self, db: sqlite3.Connection, version: int, migration: Migration) -> None:
        try:
            migration.apply(db)
            db.execute(f"PRAGMA user_version = {int(version)}")
        except Exception as exc:  # a migration is arbitrary code; whatever it raised, the step is rolled back
            raise StateError(f"cannot bring the {self.what} database {self.path} to schema version {version} "
                             f"({migration.name}): {exc}") from exc


def _into_wal(db: sqlite3.Connection, *, timeout: float) -> None:
    """WAL mode. Switching a file into it needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy wait, while another process is opening the same file: try again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_RETRY)


def _statements(script: str) -> list[str]:
    """Split SQL text into whole statements (a ``;`` inside a string or comment does not split)."""
    statements, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):  # the script ends in a comment, or in a statement without its ";"
        pending += "\n;"
        if not sqlite3.complete_statement(pending):
            raise ValueError(f"incomplete SQL statement: {pending.strip()!r}")
        statements.append(pending.strip())
    return statements
