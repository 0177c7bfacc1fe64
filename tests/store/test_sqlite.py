"""The SQLite helper on real files: transactions that nest, errors as StateError, one migration run at a time."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from bot.store import DB_NAME, Store
from bot.store.migrations import STATE_MIGRATIONS
from bot.store.sqlite import Database, sql_migration
from bot.util.errors import StateError
from tests.store.files import rows, user_version

NOTES = (sql_migration("notes", "CREATE TABLE notes (text TEXT NOT NULL); -- one; per row"),)


def open_notes(tmp_path: Path, *, timeout: float = 1.0) -> Database:
    return Database.open(tmp_path / "notes.sqlite3", what="notes", migrations=NOTES, timeout=timeout)


def test_a_transaction_inside_another_commits_with_it(tmp_path: Path) -> None:
    db = open_notes(tmp_path)
    try:
        with db.transaction() as outer:
            outer.execute("INSERT INTO notes VALUES ('a')")
            with db.transaction() as inner:
                inner.execute("INSERT INTO notes VALUES ('b')")
            assert rows(tmp_path / "notes.sqlite3", "SELECT text FROM notes") == []  # nothing committed yet
        assert [r["text"] for r in db.query("SELECT text FROM notes")] == ["a", "b"]
        with pytest.raises(RuntimeError), db.transaction() as outer:
            outer.execute("INSERT INTO notes VALUES ('c')")
            with db.transaction() as inner:
                inner.execute("INSERT INTO notes VALUES ('d')")
            raise RuntimeError("changed my mind")
        assert [r["text"] for r in db.query("SELECT text FROM notes")] == ["a", "b"]
    finally:
        db.close()


def test_sqlite_errors_become_state_errors(tmp_path: Path) -> None:
    db = open_notes(tmp_path, timeout=0.1)
    try:
        with pytest.raises(StateError, match="notes database error: no such table: missing"):
            db.query("SELECT * FROM missing")
        with closing(sqlite3.connect(tmp_path / "notes.sqlite3", isolation_level=None)) as other:
            other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StateError, match="notes database error: database is locked"), db.transaction() as tx:
                tx.execute("INSERT INTO notes VALUES ('x')")
            other.execute("ROLLBACK")
    finally:
        db.close()


def test_a_file_that_is_no_database_is_a_state_error(tmp_path: Path) -> None:
    (tmp_path / "notes.sqlite3").write_text("not a database, just some text that is long enough " * 40)
    with pytest.raises(StateError, match=r"cannot open the notes database .*notes\.sqlite3: file is not a database"):
        open_notes(tmp_path)


def test_rigops_started_twice_on_an_old_state_migrates_it_once(old_state: Path) -> None:
    def open_and_count(_: int) -> int:
        store = Store.open(old_state)
        try:
            return store.job_memory_runs("b200", "sgl-kernel")
        finally:
            store.close()

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_count, range(4))) == [4, 4, 4, 4]
    assert user_version(old_state / DB_NAME) == len(STATE_MIGRATIONS)
