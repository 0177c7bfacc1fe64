"""State dirs for the store tests, among them one holding the files a release before schema versions wrote, and
the state on every engine: SQLite in the state dir, and a fresh database of the test PostgreSQL server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import scheduler, store
from tests.store.files import OLD_FILES
from tests.store.pgserver import PostgresServer


@pytest.fixture
def old_state(state_dir: Path) -> Path:
    """A state dir as rigops left it before schema versions (user_version 0): the state and the schedules."""
    state_dir.mkdir(parents=True)
    shutil.copyfile(OLD_FILES / "rigops-v0.sqlite3", state_dir / store.DB_NAME)
    shutil.copyfile(OLD_FILES / "schedules-v0.sqlite3", state_dir / scheduler.DB_NAME)
    return state_dir


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    """A fresh, empty state on the test PostgreSQL server (its URL holds the password)."""
    return postgres.fresh_state()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def state_url(request: pytest.FixtureRequest) -> str | None:
    """Where a test's state lives, on every engine in turn: None for SQLite in the state dir, else a fresh
    PostgreSQL database's URL (as APScheduler runs its job-store tests over every store)."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def state(state_dir: Path, state_url: str | None) -> Iterator[store.Store]:
    """The state, opened on every engine in turn."""
    opened = store.Store.open(state_dir, url=state_url)
    yield opened
    opened.close()
