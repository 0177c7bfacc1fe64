"""The state as a dependency that fails, with the real parts (real rigops processes, a real PostgreSQL server):
- a ``rigops run --http`` asked "free -h" every ~0.45 s by the Slack emulator (over HTTP, signed, its acks judged
  as Slack judges them) while the server restarts with a fast shutdown (every client cut off): each request is
  answered once, none lost, none doubled; ``RIGOPS_CHAOS_RUNS`` repeats the restart (``make test`` runs 1);
- the server stopped for 20 s in the middle of a followed build: the card carries on, the end is told once;
- the leader's database session ended by the server just before a scheduled digest: the digest is posted once.
The recovery times are printed; the tests check what happened, not how fast.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slackemu import ApiCall, SlackEmulator
from tests.core.test_metrics import rigops_http, wait_listening
from tests.core.test_takeover import bring_forward, write_config
from tests.fakes.replicas import query, rigops_processes, write_toml
from tests.fakes.sshd import free_port
from tests.harness import HUMAN, OPS, SIGNING_SECRET
from tests.scenario import thread_text
from tests.store.pgserver import PostgresServer
from tests.waiting import eventually

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(3600)]
RUNS = int(os.environ.get("RIGOPS_CHAOS_RUNS", "1"))
ASKED = 12  # requests a run, one every GAP seconds; the restart begins with the fourth
GAP = 0.45
DOWN = 1.0  # seconds the server stays stopped


def answered(emu: SlackEmulator, ts: str) -> int:
    return sum("available" in m.text for m in emu.thread(OPS, ts))


async def test_requests_during_a_postgresql_restart_are_each_answered_once(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.fresh_state()
    config = write_toml(tmp_path / "rigops.toml", {
        "confirm": False, "state": url, "slack": {"ops_channels": [OPS]},
        "policy": {"operators": [HUMAN], "rate_limit": 100000}, "hosts": {"b200": {"address": "local"}}})
    port, mport = free_port(), free_port()
    lost: list[tuple[int, int, int]] = []  # (run, request, answers) of every request not answered exactly once
    recovered: list[float] = []
    with rigops_http(emulator, config, tmp_path, port, mport) as log:
        await wait_listening(f"http://127.0.0.1:{mport}/healthz", log)
        target = emulator.deliver_over_http(f"http://127.0.0.1:{port}/slack/events", SIGNING_SECRET)
        for run in range(RUNS):
            asked: dict[str, float] = {}  # ts: when asked
            waits: dict[str, float] = {}  # ts: how long its answer took
            back = None

            async def watch(asked: dict[str, float] = asked, waits: dict[str, float] = waits) -> None:
                while True:
                    now = time.monotonic()
                    waits.update({ts: now - at for ts, at in asked.items()
                                  if ts not in waits and answered(emulator, ts)})
                    await asyncio.sleep(0.05)

            watcher = asyncio.create_task(watch())
            for i in range(ASKED):
                if i == 3:
                    back = await asyncio.to_thread(postgres.down_for, DOWN)
                asked[str((await emulator.send_message("free -h", channel=OPS))["ts"])] = time.monotonic()
                await asyncio.sleep(GAP)
            assert back is not None
            await asyncio.to_thread(back.join, 60)
            deadline = time.monotonic() + 60
            while len(waits) < len(asked) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await asyncio.sleep(1)  # time for a second answer, were one coming
            watcher.cancel()
            lost += [(run, i, n) for i, ts in enumerate(asked) if (n := answered(emulator, ts)) != 1]
            recovered.append(max(waits.values(), default=0.0))
            print(f"restart {run + 1}: {sum(1 for ts in asked if answered(emulator, ts) == 1)} of {ASKED} answered "
                  f"once, the slowest in {recovered[-1]:.1f} s", flush=True)
        text = log.read_text()
    print(f"postgresql restarts: {RUNS}, requests {RUNS * ASKED}, not answered exactly once: {len(lost)}; "
          f"acks Slack judged failed: {len(target.failures)}; the slowest answer took "
          f"{max(recovered):.1f} s (median of the runs' slowest {sorted(recovered)[len(recovered) // 2]:.1f} s)")
    assert not lost, (lost, text[-4000:])
    assert not target.failures, target.failures
    assert "answers again, after" in text


# -- a followed build through a long outage, and the leader's session cut just before a digest ---------------
async def test_a_followed_build_carries_on_through_20_s_without_postgresql_and_its_end_is_told_once(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    """The server stops 3 s into a 16 s build and is back 20 s later: the card goes on being edited while the
    state is away, the build ends while it is still away, and its end is told once the state is back — once."""
    url = postgres.fresh_state()
    config = write_config(tmp_path / "rigops.toml", tmp_path, url, steps=32, pause=0.5)
    seen: list[ApiCall] = []
    emulator.on_call.append(seen.append)
    with rigops_processes(emulator, config, tmp_path, 1):
        await emulator.wait_for(lambda: len(emulator.open_connections) == 1, timeout=60)
        root = str((await emulator.send_message("rebuild app on b200 -j2", channel=OPS, user=HUMAN))["ts"])
        await eventually(lambda: query(url, "SELECT card_ts FROM runs") and query(url, "SELECT card_ts FROM runs")[0][0]
                         is not None, timeout=60, what="the build's card, recorded")
        (card_ts,), = query(url, "SELECT card_ts FROM runs")
        back = await asyncio.to_thread(postgres.down_for, 20.0)
        stopped = time.monotonic()
        await asyncio.to_thread(back.join, 90)
        returned = time.monotonic()
        edits = [c.at - stopped for c in seen if c.method == "chat.update" and c.params.get("ts") == card_ts
                 and stopped < c.at < returned]
        assert len(edits) >= 2 and max(edits) > 8, edits  # the card carried on while the state was away
        await eventually(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=90,
                         what="the build's result, once the state is back")
        told = next(c.at for c in seen if c.method == "chat.postMessage" and "succeeded in" in
                    str(c.params.get("text", "")))
        print(f"20 s without PostgreSQL mid-build: {len(edits)} card edits meanwhile; the end told "
              f"{told - returned:.1f} s after the server was back")
        await eventually(lambda: query(url, "SELECT state, reported FROM runs") == [("succeeded", 1)], timeout=30,
                         what="the end recorded as told")
        await eventually(lambda: query(url, "SELECT count(*) FROM outages")[0][0] == 1, timeout=30,
                         what="the outage written down")
        check = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "--config", str(config),
                                                         "--state-dir", str(tmp_path / "check"), "check"],
                                        capture_output=True, text=True, timeout=60)
        line = next(x for x in check.stdout.splitlines() if "state outages" in x)
        found = re.match(r"WARN state outages: 1 time in the last 24 h the state did not answer; the longest (\d+) s",
                         line)
        assert found is not None and 15 <= int(found[1]) <= 35, line
        await asyncio.sleep(3)  # a second telling would come now
    texts = [m.text for m in emulator.thread(OPS, root)]
    assert sum("succeeded in" in t and "`app` on *b200* —" not in t for t in texts) == 1, texts
    assert sum("started `app`" in t for t in texts) == 1, texts
    log = (tmp_path / "rigops-0.log").read_text()
    assert "answers again, after" in log and "Traceback" not in log, log[-3000:]


async def test_the_leader_s_session_cut_just_before_a_digest_posts_it_once(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    """The leader holds its leadership as a PostgreSQL advisory lock on a session of its own; that session is
    ended by the server (``pg_terminate_backend``) 3 s before the digest is due: the digest goes out once."""
    url = postgres.fresh_state()
    config = write_config(tmp_path / "rigops.toml", tmp_path, url, steps=1, pause=0, schedule="0 * * * *")
    seen: list[ApiCall] = []
    emulator.on_call.append(seen.append)

    def digests() -> list[ApiCall]:
        return [c for c in seen if c.method == "chat.postMessage" and c.ok
                and str(c.params.get("text", "")).startswith("rigops status")]

    with rigops_processes(emulator, config, tmp_path, 2):
        await emulator.wait_for(lambda: len(emulator.open_connections) == 2, timeout=60)
        await eventually(lambda: query(url, "SELECT count(*) FROM replicas WHERE leader = 1")[0][0] == 1,
                         timeout=30, what="a leader")
        await eventually(lambda: query(url, "SELECT count(*) FROM apscheduler_jobs")[0][0] == 1, timeout=30,
                         what="the config's schedule in the job store")
        due = float(int(time.time()) + 8)
        await bring_forward(url, due)
        before = len(digests())
        await eventually(lambda: time.time() >= due - 3, timeout=30, what="3 s before the digest is due")
        cut = query(url, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        assert cut == [(True,)], cut  # the leader's session, and only it, held the lock
        cut_at = time.time()
        await eventually(lambda: len(digests()) > before, timeout=60, what="the digest")
        posted = digests()[before].at - time.monotonic() + time.time()
        await eventually(lambda: query(url, "SELECT count(*) FROM rigops_schedule_runs WHERE done_at IS NOT NULL "
                                            f"AND due_at = {due}")[0][0] == 1, timeout=30, what="the run marked done")
        await asyncio.sleep(3)  # a doubled post would come now
        assert len(digests()) == before + 1
        await eventually(lambda: query(url, "SELECT count(*) FROM replicas WHERE leader = 1")[0][0] == 1,
                         timeout=30, what="a leader again")
    print(f"leader's session cut 3 s before the digest: posted {posted - due:+.1f} s from when it was due "
          f"({posted - cut_at:.1f} s after the cut), once")
    assert posted >= due - 0.5
