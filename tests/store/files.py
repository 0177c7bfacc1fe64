"""Reading SQLite files the way any other program would, to check what the store left in them."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

OLD_FILES = Path(__file__).resolve().parent.parent / "data" / "state"  # written by tests/data/state/write_v0.py


def user_version(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def dump(path: Path) -> tuple[int, list[str]]:
    """Everything a file holds: its schema version and the SQL that recreates its tables and rows."""
    with closing(sqlite3.connect(path)) as db:
        return user_version(path), list(db.iterdump())


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return [tuple(r) for r in db.execute(sql)]


def set_user_version(path: Path, version: int) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {int(version)}")
        db.commit()
