"""A host over SSH (asyncssh): one connection per host, reused, keepalive on, host keys always verified.

The only module that imports asyncssh; its exceptions become HostError subclasses here.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
import warnings
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    # asyncssh names cryptography's DSA classes when it is imported, and cryptography (51 here) warns that DSA is
    # deprecated. rigops never makes or accepts a DSA key of its own; the warning says nothing a user can act on.
    warnings.filterwarnings("ignore", message="DSA is deprecated", category=UserWarning)
    import asyncssh

from bot.hosts.base import AgentPipe, Host, agent_bootstrap
from bot.util.errors import AgentUnavailable, HostError, HostKeyError, HostUnreachable

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
KEEPALIVE_INTERVAL = 15
KEEPALIVE_COUNT_MAX = 3
BACKOFF_BASE = 1.0  # seconds before retrying a host that failed, doubling to BACKOFF_MAX
BACKOFF_MAX = 60.0
CLOSE_TIMEOUT = 2.0


class SshHost(Host):
    _conn: asyncssh.SSHClientConnection | None = None
    _failures: int = 0
    _retry_at: float = 0.0
    _last_error: HostError | None = None

    async def _connection(self) -> asyncssh.SSHClientConnection:
        """The host's one connection, opened on first use; after failures, retried with backoff."""
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        now = time.monotonic()
        if self._last_error is not None and now < self._retry_at:
            wait = self._retry_at - now
            raise type(self._last_error)(f"{self._last_error.reason} (next try in {wait:.0f} s)", host=self.name)
        try:
            self._conn = await self._connect()
        except HostError as exc:
            self._failures += 1
            self._last_error = exc
            self._retry_at = time.monotonic() + min(BACKOFF_BASE * 2 ** (self._failures - 1), BACKOFF_MAX)
            raise
        self._failures, self._last_error = 0, None
        return self._conn

    async def _connect(self) -> asyncssh.SSHClientConnection:
        cfg = self.config
        known_hosts = Path(cfg.known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
        if not known_hosts.is_file():
            raise HostKeyError(f"no known_hosts file at {known_hosts}; add the host's key first "
                               f"(ssh-keyscan -p {cfg.port} {cfg.address} >> {known_hosts}) and check it",
                               host=self.name)
        options: dict[str, Any] = {
            "port": cfg.port, "known_hosts": str(known_hosts), "connect_timeout": cfg.connect_timeout,
            "keepalive_interval": KEEPALIVE_INTERVAL, "keepalive_count_max": KEEPALIVE_COUNT_MAX,
            "agent_path": None, "config": None,
        }
        if cfg.user:
            options["username"] = cfg.user
        if cfg.key:
            options["client_keys"] = [str(Path(cfg.key).expanduser())]
        where = f"{cfg.address}:{cfg.port}"
        try:
            async with asyncio.timeout(cfg.connect_timeout + 1):  # not wait_for: see Host._send
                return await asyncssh.connect(cfg.address, **options)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyError(f"host key for {where} is not in {known_hosts} or has changed: refusing to "
                               f"connect ({exc.reason})", host=self.name) from exc
        except asyncssh.PermissionDenied as exc:
            raise HostUnreachable(f"SSH authentication to {where} failed ({exc.reason})", host=self.name) from exc
        except (TimeoutError, asyncssh.ConnectionLost) as exc:
            raise HostUnreachable(f"no answer from {where} within {cfg.connect_timeout:g} s",
                                  host=self.name) from exc
        except asyncssh.Error as exc:
            raise HostUnreachable(f"SSH to {where} failed: {exc.reason}", host=self.name) from exc
        except OSError as exc:
            raise HostUnreachable(f"cannot reach {where}: {exc.strerror or exc}", host=self.name) from exc

    async def _open_agent(self) -> AgentPipe:
        conn = await self._connection()
        command = f"exec {shlex.quote(self.config.python)} -u -c {shlex.quote(agent_bootstrap())}"
        try:
            proc = await conn.create_process(command, encoding=None)
        except (asyncssh.Error, OSError) as exc:
            self._conn = None
            raise AgentUnavailable(f"cannot open a channel for the agent: {exc}", host=self.name) from exc
        return AgentPipe(writer=proc.stdin, reader=proc.stdout, errors=proc.stderr, handle=proc)

    async def _close_agent(self, pipe: AgentPipe) -> None:
        proc: asyncssh.SSHClientProcess[bytes] = pipe.handle
        with contextlib.suppress(Exception):  # a lost connection has no channel left to say EOF on
            proc.stdin.write_eof()
        proc.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait_closed(), 2.0)

    async def _close_transport(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:  # a peer that stopped reading never lets a polite close finish
                await asyncio.wait_for(conn.wait_closed(), CLOSE_TIMEOUT)
            except Exception:
                conn.abort()
