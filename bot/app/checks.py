"""``rigops check``: reach every configured host and say, one line each, whether it works; a line about the
shared state when it is on PostgreSQL; one about the rigops running on the state (the replicas, and which leads);
then one line about rigops itself, from psutil: its own footprint, and the free space its SQLite state needs."""

from __future__ import annotations

import asyncio
import contextlib
import platform
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bot.config import Config, HostConfig
from bot.hosts import make_host
from bot.memory.advisor import MIB, size_text
from bot.util.errors import HostError, StateError

# The state dir's disk is nearly full under either: SQLite fails its writes when the disk fills.
LOW_DISK_BYTES = 100 * MIB
LOW_DISK_FRACTION = 0.01


@dataclass(frozen=True)
class Footprint:
    """This rigops process as psutil sees it."""

    pid: int
    rss: int
    cpu_seconds: float  # user + system
    threads: int
    open_files: int
    fds: int

    @classmethod
    def measure(cls) -> Footprint:
        proc = psutil.Process()
        with proc.oneshot():
            cpu = proc.cpu_times()
            return cls(pid=proc.pid, rss=proc.memory_info().rss, cpu_seconds=cpu.user + cpu.system,
                       threads=proc.num_threads(), open_files=len(proc.open_files()), fds=proc.num_fds())


@dataclass(frozen=True)
class StateDisk:
    """Free space on the state dir's filesystem (its nearest existing parent's, before the first run)."""

    free: int
    total: int

    @classmethod
    def measure(cls, state_dir: Path) -> StateDisk:
        """Raises OSError."""
        usage = psutil.disk_usage(str(next(p for p in (state_dir, *state_dir.parents) if p.exists())))
        return cls(free=usage.free, total=usage.total)

    @property
    def nearly_full(self) -> bool:
        return self.free < LOW_DISK_BYTES or self.free < self.total * LOW_DISK_FRACTION


async def check_host(config: HostConfig) -> tuple[bool, str]:
    host = make_host(config)
    began = time.perf_counter()
    try:
        info = await host.info()
        snap = await host.snapshot(top=0)
    except HostError as exc:
        return False, f"FAIL {config.name}: {exc.reason}"
    finally:
        await host.close()
    took = time.perf_counter() - began
    if config.is_local:
        via = "this machine"
    else:
        via = f"ssh {config.user + '@' if config.user else ''}{config.address}:{config.port}, host key verified"
    builds = ", ".join(config.builds) or "no builds"
    return True, (f"ok   {config.name}: {via}; agent up (python {info.python}, {info.cores} cores, "
                  f"{snap.memory.available >> 30} GiB available) in {took * 1000:.0f} ms; builds: {builds}")


async def check_hosts(config: Config) -> int:
    """Print one line per host; 0 when every host answered, 1 otherwise."""
    results = await asyncio.gather(*(check_host(h) for h in config.hosts.values()))
    for _, line in results:
        print(line)
    return 0 if all(ok for ok, _ in results) else 1


def check_rigops(state_dir: Path) -> str:
    """One line: this process's RSS, CPU time, threads, open files and fds, its Python, and the state dir's free
    space, as a warning when that disk is nearly full or unreadable."""
    me = Footprint.measure()
    about = (f"rigops: pid {me.pid}, python {platform.python_version()}, RSS {size_text(me.rss)}, "
             f"CPU {me.cpu_seconds:.2f} s, {_count(me.threads, 'thread')}, {_count(me.open_files, 'open file')}, "
             f"{_count(me.fds, 'fd')}; state dir {state_dir}")
    try:
        disk = StateDisk.measure(state_dir)
    except OSError as exc:
        return f"WARN {about}: cannot read its free space ({exc.strerror})"
    space = f"{size_text(disk.free)} free of {size_text(disk.total)} ({disk.free / (disk.total or 1):.1%})"
    if disk.nearly_full:
        return f"WARN {about}: {space}, nearly full: rigops' SQLite state fails when the disk is full"
    return f"ok   {about}: {space}"


def check_state(url: str) -> tuple[bool, str]:
    """One line on the state's PostgreSQL database (never its password): reached, its server and schema version."""
    from bot.store import BUSY_TIMEOUT
    from bot.store.migrations import POSTGRES_STATE_MIGRATIONS
    from bot.store.postgres import probe, public_url

    try:
        server, version = probe(url, timeout=BUSY_TIMEOUT)
    except StateError as exc:
        return False, f"FAIL state: {exc}"
    known = len(POSTGRES_STATE_MIGRATIONS)
    about = f"state: PostgreSQL {public_url(url)}, server {server}"
    if version > known:
        return False, f"FAIL {about}, schema version {version}: written by a newer rigops (this one knows {known})"
    return True, f"ok   {about}, {f'schema version {version} of {known}' if version else 'no rigops state yet'}"


def check_replicas(state_dir: Path, url: str | None) -> str:
    """One line on the rigops sharing the state: which are alive, which leads (posts the scheduled digests), how
    many builds each follows; read without changing the state."""
    from bot.core.follow import REPLICA_TIMEOUT
    from bot.store import BUSY_TIMEOUT, DB_NAME
    from bot.store.replicas import seen

    try:
        if url is not None:
            from bot.store.postgres import replica_rows

            rows = replica_rows(url, timeout=BUSY_TIMEOUT)
        else:
            rows = _sqlite_replicas(state_dir / DB_NAME)
    except (StateError, sqlite3.Error) as exc:
        return f"FAIL replicas: {exc}"
    found = seen(rows, timeout=REPLICA_TIMEOUT)
    alive, silent = [r for r, up in found if up], [r for r, up in found if not up]
    now = time.time()
    if not alive:
        about = "no rigops running on this state"
    else:
        about = f"{len(alive)} rigops running: " + "; ".join(
            f"{r.id} (pid {r.pid} on {r.name}{', leader' if r.leader else ''}, follows "
            f"{_count(r.following, 'build')}, heard {max(now - r.seen_at, 0):.0f} s ago)" for r in alive)
    if silent:
        about += "; silent: " + ", ".join(
            f"{r.id} (since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(r.seen_at))})" for r in silent)
    return f"ok   replicas: {about}"


OUTAGES_SHOWN = 24 * 3600  # rigops check names the state's outages of the last day


def check_outages(state_dir: Path, url: str | None, *, now: float | None = None) -> str:
    """One line on the times the rigops on this state could not use it in the last day: how often, the
    longest, the last (as each rigops wrote them once it could again)."""
    from bot.store import BUSY_TIMEOUT, DB_NAME

    since = (now or time.time()) - OUTAGES_SHOWN
    try:
        if url is not None:
            from bot.store.postgres import outage_rows

            rows = outage_rows(url, since=since, timeout=BUSY_TIMEOUT)
        else:
            rows = _sqlite_rows(state_dir / DB_NAME, "outages", "SELECT * FROM outages WHERE began_at >= ? "
                                "ORDER BY began_at", (since,))
    except (StateError, sqlite3.Error) as exc:
        return f"FAIL state outages: {exc}"
    if not rows:
        return "ok   state outages: none in the last 24 h"
    longest = max(rows, key=lambda r: float(r["lasted"]))
    last = rows[-1]
    return (f"WARN state outages: {_count(len(rows), 'time')} in the last 24 h the state did not answer; the longest "
            f"{float(longest['lasted']):.0f} s from {_utc(longest['began_at'])} (seen by {longest['replica']}: "
            f"{str(longest['problem'] or '')[:120]}); the last from {_utc(last['began_at'])}, "
            f"{float(last['lasted']):.0f} s")


def _utc(at: object) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(str(at))))


def _sqlite_rows(path: Path, table: str, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
        db.row_factory = sqlite3.Row
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchall():
            return []
        return [dict(r) for r in db.execute(sql, args)]


def _sqlite_replicas(path: Path) -> list[dict[str, Any]]:
    return _sqlite_rows(path, "replicas", "SELECT * FROM replicas")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


async def run_checks(config: Config, *, state_dir: Path) -> int:
    """Print one line per host, one about a PostgreSQL state, then one about rigops itself; 0 when every host and
    the database answered, 1 otherwise (a nearly full state disk is a warning: nothing has failed yet)."""
    status = await check_hosts(config)
    if config.state is not None:
        reached, line = await asyncio.to_thread(check_state, config.state)
        print(line)
        status = status if reached else 1
    print(await asyncio.to_thread(check_replicas, state_dir, config.state))
    print(await asyncio.to_thread(check_outages, state_dir, config.state))
    print(check_rigops(state_dir))
    return status
