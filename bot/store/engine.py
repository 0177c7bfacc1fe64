"""The seam between the Store and a database engine: what the Store asks of a database, whichever it is.

``bot.store.sqlite.Database`` (a file in the state dir) and ``bot.store.postgres.Database`` (a server shared by
several rigops) both answer it. Statements use ``?`` placeholders and SQL both engines read: ``ON CONFLICT``
for upserts, ``RETURNING id`` for a new row's id, ``"user"`` quoted (PostgreSQL reserves the word). Rows read by
column name or position, like ``sqlite3.Row``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol


class Row(Protocol):
    """One row: ``row["host"]`` or ``row[0]``, ``tuple(row)``, ``dict(row)``."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """What one statement did: the rows it returned, how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """A connection inside a transaction (``sqlite3.Connection`` is one)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


class Database(Protocol):
    """One versioned database. Every engine error becomes StateError."""

    what: str  # what the database holds, for messages: "state", "schedules"

    @property
    def version(self) -> int:
        """The number of migrations applied."""
        ...

    def transaction(self) -> AbstractContextManager[Connection]:
        """All of the block's writes land, or none; inside another transaction of this thread, joins it."""
        ...

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> Sequence[Row]:
        """The rows of one statement (inside this thread's transaction when there is one)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Migration:
    """One step of a schema on any engine. ``apply`` runs inside the step's transaction; it must not commit."""

    name: str
    apply: Callable[[Connection], None]


def sql_migration(name: str, *statements: str) -> Migration:
    """A migration made of SQL statements, run in order."""

    def apply(db: Connection) -> None:
        for statement in statements:
            db.execute(statement)

    return Migration(name, apply)
