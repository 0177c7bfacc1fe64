"""A fleet: 32 real sshd instances on loopback and a host that hangs. "status all" answers with a row per host
once the hung one has timed out; groups work; connections are reused and closed when idle."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from slackemu import SlackEmulator
from tests.fakes.silent import silent_server
from tests.fakes.sshd import SshServer, start_sshd
from tests.harness import OPS, make_config, running_bot
from tests.scenario import thread_text, wait_done

pytestmark = pytest.mark.ssh
FLEET = 32


@pytest.fixture(scope="module")
def fleet() -> Iterator[list[SshServer]]:
    root = Path(tempfile.mkdtemp(prefix="rigops-fleet-"))
    servers: list[SshServer] = []
    try:
        for i in range(FLEET):
            servers.append(start_sshd(root / f"n{i:02d}"))
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
async def hung_port() -> AsyncIterator[int]:
    """A host that accepts TCP connections and never answers."""
    async with silent_server() as port:
        yield port


def fleet_hosts(fleet: list[SshServer], user: str, hung_port: int) -> dict[str, Any]:
    hosts = {f"n{i:02d}": s.host_table(user=user) for i, s in enumerate(fleet)}
    hosts["stuck"] = fleet[0].host_table(user=user, port=hung_port, connect_timeout=3)
    return hosts


async def test_status_all_has_a_row_per_host_and_the_hung_one_says_so(
        emulator: SlackEmulator, fleet: list[SshServer], build_user: str, hung_port: int, state_dir: Path) -> None:
    config = make_config(fleet_hosts(fleet, build_user, hung_port), confirm=False,
                         groups={"a100": ["n01", "n02"]})
    async with running_bot(emulator, config, state_dir) as core:
        event = await emulator.send_message("status all", channel=OPS)
        assert await wait_done(emulator, OPS, str(event["ts"]), timeout=60) == "white_check_mark"
        text = thread_text(emulator, OPS, str(event["ts"]))
        assert f"{FLEET} of {FLEET + 1} hosts answered" in text
        rows = [line for line in text.splitlines() if line.startswith(("n", "stuck"))]
        assert len(rows) == FLEET + 1
        assert all("no rigops build running" in r for r in rows if r.startswith("n"))
        assert next(r for r in rows if r.startswith("stuck")).split(None, 1)[1].startswith(
            "unavailable: no answer from 127.0.0.1")
        first_agents = {n: (await core.hosts[n].info()).pid for n in ("n00", "n31")}

        group = await emulator.send_message("how's memory on a100?", channel=OPS)
        assert await wait_done(emulator, OPS, str(group["ts"]), timeout=60) == "white_check_mark"
        text = thread_text(emulator, OPS, str(group["ts"]))
        assert "2 of 2 hosts answered" in text and "n01" in text and "n02" in text and "n03" not in text

        again = await emulator.send_message("gpu util across all?", channel=OPS)
        assert await wait_done(emulator, OPS, str(again["ts"]), timeout=60) == "white_check_mark"
        assert "no GPUs" in thread_text(emulator, OPS, str(again["ts"]))
        assert {n: (await core.hosts[n].info()).pid for n in ("n00", "n31")} == first_agents  # reused

        closed = await core.hosts.close_idle(0)
        assert "n00" in closed and not core.hosts["n00"].connected
        assert (await core.hosts["n00"].info()).pid != first_agents["n00"]  # reopened on use
