"""Where the state lives: ``state = "postgresql://…"`` in the config, ``$RIGOPS_STATE_URL`` over it, SQLite in the
state dir without either; and one schema history for both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import config
from bot.core.services import Services
from bot.store import DB_NAME
from bot.store.migrations import POSTGRES_STATE_MIGRATIONS, STATE_MIGRATIONS
from bot.util.errors import ConfigError

URL = "postgresql://rigops:hunter2@db.lab.example:5432/rigops"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rigops.toml"
    path.write_text(text)
    return path


def test_both_engines_have_the_same_schema_history() -> None:
    assert [m.name for m in POSTGRES_STATE_MIGRATIONS] == [m.name for m in STATE_MIGRATIONS]


def test_the_state_url_comes_from_the_config_and_the_environment_wins(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.STATE_URL_ENV, raising=False)
    path = write(tmp_path, f'state = "{URL}"\n[hosts.local]\n')
    assert config.load(path).state == URL
    assert config.load(write(tmp_path, "[hosts.local]\n")).state is None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert config.load(None).state is None  # no file: local only, on SQLite
    monkeypatch.setenv(config.STATE_URL_ENV, "postgresql://other@127.0.0.1/rigops")
    assert config.load(path).state == "postgresql://other@127.0.0.1/rigops"
    assert config.load(None).state == "postgresql://other@127.0.0.1/rigops"


def test_the_password_stays_out_of_the_configs_repr() -> None:
    parsed = config.parse({"state": URL})
    assert parsed.state == URL and "hunter2" not in repr(parsed)


@pytest.mark.parametrize(("url", "got"), [("mysql://rigops:hunter2@h/db", "'mysql' URL"),
                                          ("rigops:hunter2@h/db", "no URL"),
                                          ("sqlite:///tmp/hunter2.sqlite3", "'sqlite' URL")])
def test_a_state_that_is_no_postgresql_url_is_a_config_error_without_the_password(
        url: str, got: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.STATE_URL_ENV, raising=False)
    path = write(tmp_path, f'state = "{url}"\n')
    with pytest.raises(ConfigError) as in_file:
        config.load(path)
    assert str(in_file.value) == (f"{path}, key 'state': expected a PostgreSQL URL like "
                                  f"postgresql://user@host:5432/rigops, got {got}")
    monkeypatch.setenv(config.STATE_URL_ENV, url)
    (tmp_path / "no-config").mkdir()
    monkeypatch.chdir(tmp_path / "no-config")
    with pytest.raises(ConfigError) as in_env:
        config.load(None)
    assert str(in_env.value).startswith("$RIGOPS_STATE_URL: expected a PostgreSQL URL")
    assert "hunter2" not in str(in_file.value) + str(in_env.value)
    with pytest.raises(ConfigError, match="key 'state': expected str, got 5"):
        config.parse({"state": 5})


@pytest.mark.postgres
async def test_rigops_keeps_its_state_where_the_config_says(state_dir: Path, pg_url: str) -> None:
    services = Services.open(config.parse({"state": pg_url}), state_dir)
    try:
        assert services.store.first_delivery("Ev0001") is True
        assert services.store.where.startswith("PostgreSQL postgresql://rigops:***@127.0.0.1:")
    finally:
        await services.close()
    assert not (state_dir / DB_NAME).exists()
    again = Services.open(config.parse({"state": pg_url}), state_dir / "elsewhere")  # another rigops, same state
    try:
        assert again.store.first_delivery("Ev0001") is False
    finally:
        await again.close()
