"""A slash command whose rigops dies after acknowledging it: Slack never sends a command twice, so the rigops that
gets it claims it in the state before its ack, and another answers it when the first stops answering. Real rigops
processes on one PostgreSQL state; the command asks about a host that hangs (a TCP server that never answers),
so that its rigops is still waiting on it when it is killed with SIGKILL.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from slackemu import ApiCall, SlackEmulator
from tests.fakes.replicas import process_of, query, rigops_processes, write_toml
from tests.fakes.silent import silent_server
from tests.harness import HUMAN, OPS
from tests.store.pgserver import PostgresServer
from tests.waiting import eventually

pytestmark = pytest.mark.postgres
HANG = 6  # seconds a rigops waits on the hung host before it says it cannot reach it


def answers(seen: list[ApiCall]) -> list[ApiCall]:
    """What rigops posted about the hung host, in the channel or through the command's response_url."""
    return [c for c in seen if c.ok and c.method in ("chat.postMessage", "response_url")
            and "stuck" in str(c.params.get("text", ""))]


async def test_a_slash_command_whose_rigops_dies_after_the_ack_is_answered_by_another(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.fresh_state()
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    seen: list[ApiCall] = []
    emulator.on_call.append(seen.append)
    async with silent_server() as port:
        config = write_toml(tmp_path / "rigops.toml", {
            "confirm": False, "state": url, "slack": {"ops_channels": [OPS]},
            "policy": {"operators": [HUMAN], "rate_limit": 1000},
            "hosts": {"b200": {"address": "local"},
                      "stuck": {"address": "127.0.0.1", "port": port, "user": "root",
                                "known_hosts": str(known_hosts), "connect_timeout": HANG}}})
        with rigops_processes(emulator, config, tmp_path, 2) as procs:
            await emulator.wait_for(lambda: len(emulator.open_connections) == 2, timeout=60)
            await eventually(lambda: query(url, "SELECT count(*) FROM replicas")[0][0] == 2, timeout=30,
                             what="both rigops on the state")
            envelope = await emulator.send_slash("mem stuck", user=HUMAN)
            await emulator.wait_ack(envelope)
            rows = query(url, "SELECT replica, done_at FROM commands")
            assert len(rows) == 1 and rows[0][1] is None, rows  # claimed before the ack, not yet answered
            owner = rows[0][0]
            first = process_of(url, owner, procs)
            first.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            first.wait(10)
            await eventually(lambda: answers(seen), timeout=90, what="the answer, from the other rigops")
            took = answers(seen)[0].at - killed
            print(f"slash command takeover: answered {took:.1f} s after its rigops was killed")
            await eventually(lambda: query(url, "SELECT done_at FROM commands")[0][0] is not None, timeout=10,
                             what="the claim marked done, just after the answer")
            (replica,), = query(url, "SELECT replica FROM commands")
            assert replica != owner
            await eventually(lambda: query(url, "SELECT count(*) FROM replicas WHERE seen_at > "
                                                f"{time.time() - 1}")[0][0] == 1, timeout=10,
                             what="a beat of the living rigops after the answer")
    assert len(answers(seen)) == 1, [c.params.get("text") for c in answers(seen)]  # answered once
    assert sorted(p.returncode for p in procs) == [-signal.SIGKILL, 0]
    log = "".join((tmp_path / f"rigops-{i}.log").read_text() for i in range(2))
    assert f"that rigops {owner} claimed and did not answer" in log
