"""A host that goes away while rigops follows a build there, over a real sshd: the card says since when it is
unreachable, and one line says when it is back and what the build did meanwhile.

The host goes away for real: rigops reaches the sshd through a TCP link of this test's, which is cut (its
connections reset, its port refusing) and then restored on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.fakes.sshd import SshServer
from tests.harness import OPS, make_config, running_app
from tests.scenario import thread_text
from tests.waiting import wait_until

pytestmark = pytest.mark.ssh


class Link:
    """A TCP link from a port of its own to the sshd's, that can be cut and restored."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def cut(self) -> None:
        """Refuse new connections and reset the open ones, as a host that went down would."""
        if self._server is None:
            return
        self._server, server = None, self._server
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        await server.wait_closed()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._copy(reader, up_writer), self._copy(up_reader, writer))

    async def _copy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
        self._writers.discard(writer)


def card(emu: SlackEmulator, root: str) -> str:
    return next((m.text for m in emu.thread(OPS, root) if "`hello` on *b200* —" in m.text), "")


async def test_the_card_says_the_host_is_unreachable_and_a_line_says_when_it_is_back(
        emulator: SlackEmulator, sshd: SshServer, ssh_table: SshTable, open_tmp: Path, state_dir: Path) -> None:
    link = Link(sshd.port)
    await link.restore()
    gate, step = open_tmp / "go", open_tmp / "step"
    command = (f"echo '[1/4] Building CXX object a.o'; while [ ! -f {step} ]; do sleep 0.05; done; "
               f"echo '[2/4] Building CXX object b.o'; while [ ! -f {gate} ]; do sleep 0.05; done; "
               "echo '[4/4] Linking CXX executable hello'")
    known_hosts = state_dir.parent / "known_hosts"  # the sshd's key, at the link's port
    known_hosts.write_text(f"[127.0.0.1]:{link.port} {sshd.host_public_key}\n")
    table = ssh_table(port=link.port, connect_timeout=2, known_hosts=str(known_hosts))
    config = make_config({"b200": {**table, "builds": {"hello": {
        "workdir": str(open_tmp), "command": command, "jobs": 2, "log_dir": str(open_tmp / "logs")}}}},
        confirm=False)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(link.cut)
        app = await stack.enter_async_context(running_app(emulator, config, state_dir))
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        await emulator.wait_for(lambda: "[1/4]" in card(emulator, root), timeout=30)

        # Away while the build runs on, and back while it still runs.
        await link.cut()
        await emulator.wait_for(lambda: "unreachable since" in card(emulator, root), timeout=30)
        away_card = card(emulator, root)
        assert "lost contact with b200" in thread_text(emulator, OPS, root)
        assert "last seen running after" in away_card and "[1/4]" in away_card and " — running ·" not in away_card
        step.touch()  # the build goes on while nobody sees it
        await link.restore()
        await emulator.wait_for(lambda: "is back after" in thread_text(emulator, OPS, root), timeout=60)
        back_line = next(m.text for m in emulator.thread(OPS, root) if "is back after" in m.text)
        assert "`hello` is still running" in back_line
        await emulator.wait_for(lambda: " — running ·" in card(emulator, root) and "[2/4]" in card(emulator, root),
                                timeout=30)

        # Away again, and the build ends meanwhile: the line says so, then the usual result.
        [run] = app.core.store.runs(live=True)
        await link.cut()
        await emulator.wait_for(lambda: "unreachable since" in card(emulator, root), timeout=30)
        gate.touch()
        wait_until(lambda: Path(run.exit_file).exists(), timeout=30, what="the build to end")
        await link.restore()
        await emulator.wait_for(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=60)
        texts = [m.text for m in emulator.thread(OPS, root)]
    ended = [i for i, t in enumerate(texts) if "ended while I could not see it" in t]
    result = [i for i, t in enumerate(texts) if "succeeded in" in t]
    assert len(ended) == 1 and ended[0] < result[0], texts
    assert sum("is back after" in t for t in texts) == 2
    final = card(emulator, root)
    assert "succeeded" in final and "unreachable" not in final and "[4/4]" in final
    print("\n--- away card ---\n" + away_card + "\n--- thread ---\n" + "\n".join(texts))
