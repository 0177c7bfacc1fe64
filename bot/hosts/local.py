"""This machine as a host: the agent runs as a subprocess, no SSH."""

from __future__ import annotations

import asyncio
import contextlib
import sys

from bot.hosts.base import AgentPipe, Host, agent_bootstrap
from bot.util.errors import AgentUnavailable

STREAM_LIMIT = 32 * 1024 * 1024  # one answer line can hold a long log tail
STDIN_CLOSE_WAIT = 1.0


class LocalHost(Host):
    async def _open_agent(self) -> AgentPipe:
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-u", "-c", agent_bootstrap(),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                limit=STREAM_LIMIT, start_new_session=True,
            )
        except OSError as exc:
            raise AgentUnavailable(f"cannot start the rigops agent: {exc}", host=self.name) from exc
        return AgentPipe(writer=proc.stdin, reader=proc.stdout, errors=proc.stderr, handle=proc)

    async def _close_agent(self, pipe: AgentPipe) -> None:
        proc: asyncio.subprocess.Process = pipe.handle
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        if proc.stdin is not None:
            # With the agent gone its stdin is closed, or about to be. Heard of here, a write that met a dead
            # agent is not logged as "Future exception was never retrieved" (as Python 3.11.2 does).
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.stdin.wait_closed()), STDIN_CLOSE_WAIT)
