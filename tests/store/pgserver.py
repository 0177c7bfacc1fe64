"""A real PostgreSQL server on 127.0.0.1 for tests, from Debian's binaries (``/usr/lib/postgresql/*/bin``).

``initdb`` into a temporary dir as a user of its own when the tests run as root (PostgreSQL refuses to run as
root), else as ourselves; ``pg_ctl`` starts it on a free loopback port, its unix socket in that dir, with
password logins over TCP; each test gets a fresh state in it (a schema of its own).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.fakes.sshd import free_port
from tests.fakes.users import own_user, switch_to

POSTGRES_USER = "rigops-postgres"  # the system user the server runs as when the tests run as root
TEST_DATABASE = "rigops_tests"
START_TIMEOUT = 30  # seconds pg_ctl waits for the server
# Durability the tests do not need, traded for speed: a crash loses the test database, nothing else.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


def postgres_bin() -> Path | None:
    """The newest installed server's bin dir (Debian's ``postgresql-NN``), or where ``initdb`` is on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    initdb = found[-1] if found else shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class PostgresServer:
    """One running server and what a client needs to reach it."""

    root: Path
    bin: Path
    port: int
    user: str  # the database superuser
    password: str
    os_user: str | None  # None: ourselves
    _names: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def fresh_state(self) -> str:
        """The URL of a new, empty schema in the tests' database (its ``search_path``): as good as a new database
        to rigops, and made in a millisecond where copying a database takes half a second."""
        name = f"state_{os.getpid()}_{next(self._names)}"
        self.sql(self.url(TEST_DATABASE), f'CREATE SCHEMA "{name}"')
        return self.url(TEST_DATABASE) + f"?options=-csearch_path%3D{name}"

    def sql(self, url: str, statement: str) -> list[tuple[object, ...]]:
        """Run one statement in a database as any other client would; its rows."""
        with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(statement.encode())
            return list(cur.fetchall()) if cur.description else []

    @property
    def version(self) -> str:
        """What the server says it is ("15.14 (Debian 15.14-0+deb12u1)")."""
        return str(self.sql(self.url("postgres"), "SHOW server_version")[0][0])

    def down_for(self, seconds: float) -> threading.Thread:
        """Stop the server now (a fast shutdown: clients are cut off) and start it again, with the options it
        had, after ``seconds``; returns the thread that starts it (join it to wait until it is back)."""
        self._pg_ctl("stop", "-m", "fast", "-w")

        def back() -> None:
            time.sleep(seconds)
            options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {FAST}"  # as it started
            self._pg_ctl("start", "-w", "-t", str(START_TIMEOUT), "-l", str(self.root / "log"), "-o", options)

        thread = threading.Thread(target=back, name="postgres-back", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), *args], check=True,
                       capture_output=True, cwd="/", **switch_to(self.os_user))


def start_postgres(bin_dir: Path) -> PostgresServer:
    """initdb and start a server. Raises CalledProcessError (with PostgreSQL's own words in its output)."""
    os_user = own_user(POSTGRES_USER)
    root = Path(tempfile.mkdtemp(prefix="rigops-pg-"))
    password = secrets.token_hex(12)
    (root / "pw").write_text(password + "\n")
    (root / "pw").chmod(0o600)
    if os_user is not None:
        entry = pwd.getpwnam(os_user)
        for path in (root, root / "pw"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    subprocess.run([str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", "rigops", "--pwfile", str(root / "pw"),
                    "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"],
                   check=True, capture_output=True, cwd="/", **switch_to(os_user))
    server = PostgresServer(root=root, bin=bin_dir, port=0, user="rigops", password=password, os_user=os_user)
    for attempt in range(3):  # another process may take the free port before the server binds it
        server.port = free_port()
        options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 {FAST}"
        try:
            server._pg_ctl("start", "-w", "-t", str(START_TIMEOUT), "-l", str(root / "log"), "-o", options)
        except subprocess.CalledProcessError:
            if attempt == 2:
                log = (root / "log").read_text(errors="replace") if (root / "log").exists() else "(no log)"
                shutil.rmtree(root, ignore_errors=True)
                raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None
            continue
        server.sql(server.url("postgres"), f'CREATE DATABASE "{TEST_DATABASE}"')
        return server
    raise AssertionError("unreachable")
