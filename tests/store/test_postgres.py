"""The state on a real PostgreSQL server shared by two rigops: what must happen once happens once, the schema is
migrated once, a newer database is refused, and no message ever shows the password."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest

from bot.app.checks import check_state
from bot.language.plan import Plan
from bot.store import Store
from bot.store.engine import Connection, Migration
from bot.store.migrations import POSTGRES_STATE_MIGRATIONS
from bot.store.postgres import RECONNECT_FOR, PostgresDatabase
from bot.util.errors import StateError
from tests.fakes.sshd import free_port
from tests.store.pgserver import PostgresServer
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres
T = TypeVar("T")
THREADS = 8  # per race: half on each rigops


@pytest.fixture
def two_rigops(state_dir: Path, pg_url: str) -> Iterator[tuple[Store, Store]]:
    """Two rigops, each with its own state dir and connections, on one database."""
    first = Store.open(state_dir / "a", url=pg_url)
    second = Store.open(state_dir / "b", url=pg_url)
    yield first, second
    first.close()
    second.close()


def race(stores: tuple[Store, Store], call: Callable[[Store], T]) -> list[T]:
    """``call`` from THREADS threads at once, half of them on each rigops."""
    start = threading.Barrier(THREADS)

    def one(i: int) -> T:
        start.wait(timeout=30)
        return call(stores[i % 2])

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, range(THREADS)))


def test_an_event_is_first_on_exactly_one_rigops(two_rigops: tuple[Store, Store]) -> None:
    for n in range(10):
        assert sorted(race(two_rigops, lambda s, n=n: s.first_delivery(f"Ev{n:04}"))) == [False] * (THREADS - 1) + [
            True]
    assert two_rigops[0].first_delivery("Ev0000") is False and two_rigops[1].first_delivery("Ev0010") is True


def test_a_plan_is_claimed_by_exactly_one_rigops(two_rigops: tuple[Store, Store]) -> None:
    first, second = two_rigops
    for _ in range(10):
        plan_id = first.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0HUMAN", plan=Plan())
        claims = race(two_rigops, lambda s, plan_id=plan_id: s.claim_plan(plan_id, "running"))
        winners = [c for c in claims if c is not None]
        assert len(winners) == 1 and winners[0].state == "running"
        assert second.claim_plan(plan_id, "cancelled") is None


def test_two_rigops_starting_together_migrate_once(state_dir: Path, pg_url: str, postgres: PostgresServer) -> None:
    applied: Counter[str] = Counter()

    def counted(step: Migration) -> Migration:
        def apply(db: Connection) -> None:
            applied[step.name] += 1
            step.apply(db)

        return Migration(step.name, apply)

    steps = [counted(s) for s in POSTGRES_STATE_MIGRATIONS]

    def open_and_read(i: int) -> int:
        db = PostgresDatabase.open(pg_url, what="state", migrations=steps, timeout=10)
        try:
            return db.version
        finally:
            db.close()

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_read, range(4))) == [len(steps)] * 4
    assert applied == Counter({s.name: 1 for s in steps})
    assert open_and_read(0) == len(steps) and sum(applied.values()) == len(steps)  # a later open: a no-op
    assert postgres.sql(pg_url, "SELECT what, version FROM rigops_schema") == [("state", len(steps))]
    store = Store.open(state_dir, url=pg_url)
    store.close()
    assert postgres.sql(pg_url, "SELECT what, version FROM rigops_schema") == [("state", len(steps))]


def test_a_database_from_a_newer_rigops_is_refused(state_dir: Path, pg_url: str, postgres: PostgresServer) -> None:
    Store.open(state_dir, url=pg_url).close()
    newer = len(POSTGRES_STATE_MIGRATIONS) + 1
    postgres.sql(pg_url, f"UPDATE rigops_schema SET version = {newer}")
    with pytest.raises(StateError) as refused:
        Store.open(state_dir, url=pg_url)
    assert str(refused.value) == (
        f"the state database {pg_url.replace(postgres.password, '***')} has schema version {newer}, but this "
        f"rigops knows only up to {newer - 1}: rigops is older than its state; upgrade rigops or point it at "
        "another database")
    assert postgres.sql(pg_url, "SELECT version FROM rigops_schema") == [(newer,)]


def half_done(db: Connection) -> None:
    db.execute("DELETE FROM runs")
    db.execute("CREATE TABLE half_done (n INTEGER)")
    db.execute("INSERT INTO no_such_table VALUES (1)")


def test_a_failing_migration_leaves_the_database_at_its_last_version(state_dir: Path, pg_url: str,
                                                                     postgres: PostgresServer) -> None:
    store = Store.open(state_dir, url=pg_url)
    run = store.begin_run(host="b200", build="sgl-kernel", jobs=None, log="l", exit_file="e", boot_id=None,
                          started_by=None, channel=None, thread_id=None)
    store.close()
    known = len(POSTGRES_STATE_MIGRATIONS)
    steps = [*POSTGRES_STATE_MIGRATIONS, Migration("breaks halfway", half_done)]
    with pytest.raises(StateError, match=rf"cannot bring the state database postgresql://rigops:\*\*\*@.* to schema "
                                         rf"version {known + 1} \(breaks halfway\): relation \"no_such_table\" does "
                                         "not exist"):
        PostgresDatabase.open(pg_url, what="state", migrations=steps, timeout=5)
    assert postgres.sql(pg_url, "SELECT version FROM rigops_schema") == [(known,)]
    assert postgres.sql(pg_url, "SELECT id FROM runs") == [(run.id,)]  # DDL and all: rolled back
    assert postgres.sql(pg_url, "SELECT to_regclass('half_done')") == [(None,)]


def test_a_database_error_is_a_state_error(two_rigops: tuple[Store, Store]) -> None:
    store = two_rigops[0]
    with pytest.raises(StateError, match=r'^state database error: relation "missing" does not exist'):
        store._db.query("SELECT * FROM missing")
    with pytest.raises(StateError, match=r"^state database error: .*duplicate key"), store._db.transaction() as db:
        db.execute("INSERT INTO events (event_id, seen_at) VALUES ('Ev1', 1)")
        db.execute("INSERT INTO events (event_id, seen_at) VALUES ('Ev1', 2)")
    assert store.first_delivery("Ev1") is True  # the failed transaction left nothing behind


def test_a_connection_the_server_dropped_is_replaced(two_rigops: tuple[Store, Store], pg_url: str,
                                                     postgres: PostgresServer) -> None:
    store, other = two_rigops
    assert store.first_delivery("Ev1") is True
    postgres.sql(pg_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rigops'")
    assert store.first_delivery("Ev1") is False and other.first_delivery("Ev2") is True


def test_a_read_whose_connection_drops_midway_is_read_again(two_rigops: tuple[Store, Store], pg_url: str,
                                                            postgres: PostgresServer,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """The server ends the session of a read while it runs (``pg_terminate_backend``): a read on its own is safe
    to run again, and is, on a new connection."""
    store, _ = two_rigops
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(
        store._db.query("SELECT pg_sleep(1.5), 42 AS answer")[0]["answer"]))  # type: ignore[attr-defined]
    reader.start()
    wait_until(lambda: postgres.sql(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                                            "'SELECT pg_sleep(1.5)%'")[0][0] == 1, timeout=10, what="the read")
    postgres.sql(pg_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE "
                         "'SELECT pg_sleep(1.5)%'")
    reader.join(20)
    assert got == [42] and "dropped a read's connection" in caplog.text


@pytest.mark.parametrize(("url", "why"), [
    ("postgresql://rigops:{secret}@127.0.0.1:{port}/rigops_tests", "password authentication failed"),
    ("postgresql://rigops:{password}@127.0.0.1:{port}/no_such_db", 'database "no_such_db" does not exist'),
    ("postgresql://rigops:{secret}@127.0.0.1:{closed}/rigops_tests", "Connection refused"),
    ("postgresql://rigops@127.0.0.1:{port}/rigops_tests?password={secret}", "password authentication failed"),
])
def test_a_database_rigops_cannot_reach_is_a_clear_error_without_the_password(
        url: str, why: str, state_dir: Path, postgres: PostgresServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "hunter2-" + postgres.password[:6]
    url = url.format(secret=secret, password=postgres.password, port=postgres.port, closed=free_port())
    with pytest.raises(StateError) as failed:
        Store.open(state_dir, url=url)
    message = str(failed.value)
    assert message.startswith("cannot open the state database postgresql://rigops") and why in message, message
    assert "***" in message or "password" not in url
    ok, line = check_state(url)
    assert not ok and line.startswith("FAIL state: cannot reach the state database postgresql://rigops")
    for text in (message, line, caplog.text):
        assert secret not in text and postgres.password not in text


@pytest.mark.parametrize("url", ["postgresql://rigops:{secret}@127.0.0.1:notaport/db", "mysql://rigops:{secret}@h/db",
                                 "rigops:{secret}@127.0.0.1/db"])
def test_a_url_that_is_no_postgresql_url_is_refused_without_the_password(url: str, state_dir: Path) -> None:
    with pytest.raises(StateError) as failed:
        Store.open(state_dir, url=url.format(secret="hunter2"))
    assert "state URL" in str(failed.value) and "hunter2" not in str(failed.value)


def test_check_reports_the_database_without_the_password(pg_url: str, postgres: PostgresServer,
                                                         state_dir: Path) -> None:
    assert check_state(pg_url) == (True, f"ok   state: PostgreSQL {pg_url.replace(postgres.password, '***')}, "
                                         f"server {postgres.version}, no rigops state yet")
    Store.open(state_dir, url=pg_url).close()
    known = len(POSTGRES_STATE_MIGRATIONS)
    assert check_state(pg_url)[1].endswith(f", schema version {known} of {known}")
    postgres.sql(pg_url, f"UPDATE rigops_schema SET version = {known + 1}")
    assert check_state(pg_url)[1].endswith(f"schema version {known + 1}: written by a newer rigops (this one knows "
                                           f"{known})")


def test_a_state_operation_waits_out_a_server_restart(postgres: PostgresServer, state_dir: Path, pg_url: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The server goes down (a fast shutdown cuts every client off) and is back a second later: an operation
    asked for meanwhile waits for it instead of failing, runs once, and the log says for how long it was away."""
    store = Store.open(state_dir, url=pg_url)
    try:
        assert store.first_delivery("before")
        back = postgres.down_for(1.0)
        started = time.monotonic()
        assert store.first_delivery("during")  # asked while the server was down
        waited = time.monotonic() - started
        back.join(30)
        assert 0.5 < waited < RECONNECT_FOR + 5
        assert not store.first_delivery("during")  # recorded once
        outages = store._db.outages  # type: ignore[attr-defined]
        assert outages and outages[-1][1] >= 0.5
        assert "stopped answering" in caplog.text and "answers again, after" in caplog.text
        assert postgres.password not in caplog.text
    finally:
        store.close()


def test_a_longer_outage_fails_with_a_state_error_after_the_wait(postgres: PostgresServer, state_dir: Path,
                                                                 pg_url: str) -> None:
    store = Store.open(state_dir, url=pg_url)
    try:
        back = postgres.down_for(RECONNECT_FOR + 3)
        started = time.monotonic()
        with pytest.raises(StateError, match="state database"):
            store.first_delivery("lost?")
        assert RECONNECT_FOR - 1 < time.monotonic() - started < RECONNECT_FOR + 3
        back.join(60)
        assert store.first_delivery("lost?")  # nothing was recorded: the caller was told, and may try again
    finally:
        store.close()
