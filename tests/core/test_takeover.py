"""Real rigops processes on one PostgreSQL state, and one of them killed with SIGKILL: the one following a build
(another adopts the build, and its card carries on: one card, one result, nothing lost or doubled), and the one
leading the schedules just before a digest is due (another posts it, once, on time). The takeover times are
measured and printed; the tests check what happened, not how fast.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]
from sqlalchemy import create_engine

from bot.store.postgres import parse_url
from slackemu import ApiCall, SlackEmulator
from tests.fakes.replicas import process_of, query, rigops_processes, write_toml
from tests.harness import HUMAN, OPS
from tests.scenario import thread_text
from tests.store.pgserver import PostgresServer
from tests.waiting import eventually

pytestmark = pytest.mark.postgres
STEPS = 40  # the build's steps, 0.4 s each: it outlives a takeover
CARD = "`app` on *b200* —"


def write_config(path: Path, workdir: Path, state: str, *, schedule: str | None = None, steps: int = STEPS,
                 pause: float = 0.4) -> Path:
    """One local build of ``steps`` ninja-like steps, ``pause`` seconds each, on the state ``state``."""
    script = workdir / "build.sh"
    script.write_text(f'for i in $(seq 1 {steps}); do echo "[$i/{steps}] Building CXX object src/f$i.o"; '
                      f"sleep {pause}; done\n")
    config = {"confirm": False, "state": state, "slack": {"ops_channels": [OPS]},
              "policy": {"operators": [HUMAN], "rate_limit": 1000},
              "hosts": {"b200": {"address": "local", "builds": {"app": {
                  "workdir": str(workdir), "command": f"sh {script}", "log_dir": f"{workdir}/logs"}}}}}
    if schedule is not None:
        config["schedules"] = [{"cron": schedule, "channel": OPS}]
    return write_toml(path, config)


def calls(emu: SlackEmulator) -> list[ApiCall]:
    recorded: list[ApiCall] = []
    emu.on_call.append(recorded.append)
    return recorded


async def test_a_followed_build_is_adopted_when_its_rigops_is_killed(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.fresh_state()
    config = write_config(tmp_path / "rigops.toml", tmp_path, url)
    seen = calls(emulator)
    with rigops_processes(emulator, config, tmp_path, 3) as procs:
        await emulator.wait_for(lambda: len(emulator.open_connections) == 3, timeout=60)
        root = str((await emulator.send_message("rebuild app on b200 -j2", channel=OPS, user=HUMAN))["ts"])
        await eventually(lambda: CARD in thread_text(emulator, OPS, root) and "[" in thread_text(emulator, OPS, root),
                         timeout=60, what="the build's card")
        await eventually(lambda: query(url, "SELECT card_ts FROM runs")[0][0] is not None, timeout=30,
                         what="the card to be recorded")
        await eventually(lambda: query(url, "SELECT sum(following), sum(leader) FROM replicas") == [(1, 1)],
                         timeout=30, what="the heartbeats to say who follows and who leads")
        (owner, card_ts), = query(url, "SELECT owner, card_ts FROM runs")
        follower = process_of(url, owner, procs)
        pid = follower.pid

        check = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir",
                                str(tmp_path / "check"), "check"], capture_output=True, text=True, timeout=60)
        line = next(x for x in check.stdout.splitlines() if "replicas:" in x)
        assert line.startswith("ok   replicas: 3 rigops running: "), line
        assert f"pid {pid} on " in line and line.count(", leader") == 1, line

        follower.send_signal(signal.SIGKILL)
        killed = time.monotonic()  # the emulator's clock for calls
        follower.wait(10)
        await eventually(lambda: any(c.method == "chat.update" and c.params.get("ts") == card_ts and c.at > killed
                                     for c in seen), timeout=60, what="the card edited again, by another rigops")
        took = min(c.at for c in seen if c.method == "chat.update" and c.params.get("ts") == card_ts
                   and c.at > killed) - killed
        print(f"build takeover: the card was edited again {took:.1f} s after its follower was killed")
        await eventually(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=90,
                         what="the build's result")
        (state, new_owner, reported), = query(url, "SELECT state, owner, reported FROM runs")
        assert (state, reported) == ("succeeded", 1) and new_owner != owner
        assert new_owner in {str(r[0]) for r in query(url, "SELECT id FROM replicas")}

    # the others were stopped as systemd stops a service (SIGTERM): cleanly, each leaving the state
    assert sorted(p.returncode for p in procs) == [-signal.SIGKILL, 0, 0]
    assert query(url, "SELECT id FROM replicas") == [(owner,)]  # only the killed one never said goodbye
    texts = [m.text for m in emulator.thread(OPS, root)]
    assert sum(CARD in t for t in texts) == 1, texts  # one card, edited by both rigops
    assert sum("succeeded in" in t and CARD not in t for t in texts) == 1, texts  # the result, told once
    assert sum("started `app`" in t for t in texts) == 1, texts
    card = next(m for m in emulator.thread(OPS, root) if CARD in m.text)
    assert card.ts == card_ts and "succeeded" in card.text and f"{STEPS}/{STEPS}" in card.text


async def bring_forward(url: str, due: float) -> None:
    """Move the one schedule's next run to ``due`` in the job store, as APScheduler itself would write it."""
    store = SQLAlchemyJobStore(engine=create_engine(parse_url(url)))
    scheduler = AsyncIOScheduler(jobstores={"default": store}, timezone=UTC)
    scheduler.start(paused=True)
    (job,) = scheduler.get_jobs()
    scheduler.modify_job(job.id, next_run_time=datetime.fromtimestamp(due, UTC))
    scheduler.shutdown(wait=False)
    await asyncio.sleep(0)  # AsyncIOScheduler shuts down on the loop's next turn


async def test_the_leader_killed_just_before_a_digest_is_due_is_replaced_in_time(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    url = postgres.fresh_state()
    config = write_config(tmp_path / "rigops.toml", tmp_path, url, schedule="0 * * * *")  # hourly
    seen = calls(emulator)

    def digests() -> list[ApiCall]:
        return [c for c in seen if c.method == "chat.postMessage" and c.ok
                and str(c.params.get("text", "")).startswith("rigops status")]

    with rigops_processes(emulator, config, tmp_path, 2) as procs:
        await emulator.wait_for(lambda: len(emulator.open_connections) == 2, timeout=60)
        await eventually(lambda: query(url, "SELECT count(*) FROM replicas WHERE leader = 1")[0][0] == 1,
                         timeout=30, what="a leader")
        await eventually(lambda: query(url, "SELECT count(*) FROM apscheduler_jobs")[0][0] == 1, timeout=30,
                         what="the config's schedule in the job store")
        due = float(int(time.time()) + 8)  # the hour, brought forward: the next run is due in 8 s
        await bring_forward(url, due)
        before = len(digests())
        (pid,), = query(url, "SELECT pid FROM replicas WHERE leader = 1")
        leader = next(p for p in procs if p.pid == pid)
        await eventually(lambda: time.time() >= due - 3, timeout=30, what="3 s before the digest is due")
        leader.send_signal(signal.SIGKILL)
        leader.wait(10)
        await eventually(lambda: len(digests()) > before, timeout=60, what="the digest, posted by the other rigops")
        posted = digests()[before].at - time.monotonic() + time.time()  # the call's time, on the wall clock
        print(f"schedule takeover: leader killed 3 s before {datetime.fromtimestamp(due, UTC):%H:%M:%S}; "
              f"the digest went out {posted - due:+.1f} s from then")
        assert posted >= due - 0.5
        await eventually(lambda: query(url, "SELECT count(*) FROM rigops_schedule_runs WHERE done_at IS NOT NULL "
                                            f"AND due_at = {due}")[0][0] == 1, timeout=30, what="the run marked done")
        await asyncio.sleep(3)  # a doubled post would come now
        assert len(digests()) == before + 1
        (owner,), = query(url, f"SELECT replica FROM rigops_schedule_runs WHERE due_at = {due}")
        survivor = next(p for p in procs if p is not leader)
        assert query(url, f"SELECT id FROM replicas WHERE pid = {survivor.pid}") == [(owner,)]
