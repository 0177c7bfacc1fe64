"""Hosts that fail: down, a wrong host key, hanging, no python3 — each a clear reply in the thread, within
the timeout, while the bot keeps serving the other hosts."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.fakes.silent import silent_server
from tests.fakes.sshd import SshServer, free_port, keygen
from tests.harness import OPS, make_config, running_bot
from tests.scenario import thread_text, wait_done

pytestmark = pytest.mark.ssh


@pytest.fixture
async def silent_port() -> AsyncIterator[int]:
    """A host that accepts TCP connections and never answers."""
    async with silent_server() as port:
        yield port


def wrong_known_hosts(tmp_path: Path, port: int) -> Path:
    other = keygen(tmp_path / "other_host_key", "someone-else")
    path = tmp_path / "known_hosts_wrong"
    path.write_text(f"[127.0.0.1]:{port} {' '.join(other.split()[:2])}\n")
    return path


def stranger_key(tmp_path: Path) -> Path:
    """A client key the server has never seen."""
    path = tmp_path / "stranger_ed25519"
    keygen(path, "stranger")
    return path


def closed_port() -> int:
    port = free_port()
    with socket.socket() as s:  # make sure nothing listens there
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return port


async def ask(emu: SlackEmulator, text: str) -> str:
    event = await emu.send_message(text, channel=OPS)
    return str(event["ts"])


async def test_faulty_hosts_get_clear_replies_and_do_not_block_others(
        emulator: SlackEmulator, sshd: SshServer, ssh_table: SshTable, tmp_path: Path, state_dir: Path,
        silent_port: int) -> None:
    hosts = {
        "good": ssh_table(),
        "down": ssh_table(port=closed_port(), connect_timeout=2),
        "badkey": ssh_table(known_hosts=str(wrong_known_hosts(tmp_path, sshd.port))),
        "hang": ssh_table(port=silent_port, connect_timeout=3),
        "nopython": ssh_table(python="/nonexistent/python3"),
        "nokeyfile": ssh_table(known_hosts=str(tmp_path / "missing_known_hosts")),
        "badauth": ssh_table(key=str(stranger_key(tmp_path))),
    }
    async with running_bot(emulator, make_config(hosts, confirm=False), state_dir):
        hang = await ask(emulator, "how's memory on hang?")
        good = await ask(emulator, "how's memory on good?")
        assert await wait_done(emulator, OPS, good) == "white_check_mark"
        assert "Memory on good" in thread_text(emulator, OPS, good)
        assert emulator.thread(OPS, hang)[-1:] == [] or "no answer" not in thread_text(emulator, OPS, hang)
        expected = {
            "down": "cannot reach 127.0.0.1",
            "badkey": "host key for 127.0.0.1",
            "nopython": "'/nonexistent/python3' is not installed on the host",
            "nokeyfile": "no known_hosts file",
            "badauth": "SSH authentication to 127.0.0.1",
        }
        asked = {name: await ask(emulator, f"how's memory on {name}?") for name in expected}
        for name, phrase in expected.items():
            assert await wait_done(emulator, OPS, asked[name]) == "x"
            assert phrase in thread_text(emulator, OPS, asked[name]), name
        retry = await ask(emulator, "how's memory on down?")  # asked again at once: backing off, says when
        assert await wait_done(emulator, OPS, retry) == "x"
        assert "next try in" in thread_text(emulator, OPS, retry)
        assert await wait_done(emulator, OPS, hang) == "x"
        assert "no answer from 127.0.0.1" in thread_text(emulator, OPS, hang)
        # and the good host still answers after all that
        again = await ask(emulator, "how's memory on good?")
        assert await wait_done(emulator, OPS, again) == "white_check_mark"


async def test_a_stopped_agent_times_out_and_is_restarted(
        emulator: SlackEmulator, ssh_table: SshTable, state_dir: Path) -> None:
    import os
    import signal

    hosts = {"slow": ssh_table(command_timeout=5)}
    async with running_bot(emulator, make_config(hosts, confirm=False), state_dir) as core:
        first = await ask(emulator, "free -h")
        assert await wait_done(emulator, OPS, first) == "white_check_mark"
        info = await core.hosts["slow"].info()
        os.kill(info.pid, signal.SIGSTOP)
        try:
            stuck = await ask(emulator, "free -h")
            assert await wait_done(emulator, OPS, stuck) == "x"
            assert "no answer to snapshot within 5 s" in thread_text(emulator, OPS, stuck)
            after = await ask(emulator, "free -h")  # a fresh agent answers; the stuck one was let go
            assert await wait_done(emulator, OPS, after) == "white_check_mark"
            assert (await core.hosts["slow"].info()).pid != info.pid
        finally:
            os.kill(info.pid, signal.SIGKILL)


async def test_a_link_that_stops_mid_command_times_out_and_the_host_comes_back(
        emulator: SlackEmulator, ssh_table: SshTable, state_dir: Path) -> None:
    import os
    import signal

    from tests.fakes.tools import read_stat_fields

    hosts = {"flaky": ssh_table(command_timeout=3)}
    async with running_bot(emulator, make_config(hosts, confirm=False), state_dir) as core:
        first = await ask(emulator, "free -h")
        assert await wait_done(emulator, OPS, first) == "white_check_mark"
        agent = (await core.hosts["flaky"].info()).pid
        session = int((read_stat_fields(agent) or ["", "0"])[1])  # the sshd process serving our connection
        os.kill(session, signal.SIGSTOP)  # from here on nothing gets through: like packets dropped mid-command
        try:
            stuck = await ask(emulator, "free -h")
            assert await wait_done(emulator, OPS, stuck) == "x"
            assert "no answer to snapshot within 3 s" in thread_text(emulator, OPS, stuck)
        finally:
            os.kill(session, signal.SIGCONT)
        after = await ask(emulator, "free -h")  # a new connection, a new agent
        assert await wait_done(emulator, OPS, after) == "white_check_mark"
        assert (await core.hosts["flaky"].info()).pid != agent
