"""State dirs for the store tests, among them one holding the files a release before schema versions wrote."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot import scheduler, store
from tests.store.files import OLD_FILES


@pytest.fixture
def old_state(state_dir: Path) -> Path:
    """A state dir as rigops left it before schema versions (user_version 0): the state and the schedules."""
    state_dir.mkdir(parents=True)
    shutil.copyfile(OLD_FILES / "rigops-v0.sqlite3", state_dir / store.DB_NAME)
    shutil.copyfile(OLD_FILES / "schedules-v0.sqlite3", state_dir / scheduler.DB_NAME)
    return state_dir
