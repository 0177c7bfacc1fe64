"""``rigops check``: reach every configured host and say, one line each, whether it works; a line about the
shared state when it is on PostgreSQL; then one line about rigops itself, from psutil: its own footprint, and the
free space its SQLite state needs."""

from __future__ import annotations

import asyncio
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bot.advisor import MIB, size_text
from bot.config import Config, HostConfig
from bot.errors import HostError, StateError
from bot.hosts import make_host

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
    print(check_rigops(state_dir))
    return status
