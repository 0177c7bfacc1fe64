"""Write the state files that rigops released before schema versions wrote (user_version 0), as test data.

The files here were written by the code of commit dd68005 (``bot/store.py`` and ``bot/scheduler.py``), run from
that commit's sources next to today's other modules:

    git show dd68005:bot/store.py > /tmp/old_store.py
    git show dd68005:bot/scheduler.py > /tmp/old_scheduler.py
    .venv/bin/python tests/data/state/write_v0.py /tmp/old_store.py /tmp/old_scheduler.py tests/data/state

Every table gets rows through that release's Store API, except one ``job_memory`` row per build written as the
bare JSON list that releases before job labels wrote. Each file is checkpointed into one file (no -wal).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from bot.language.plan import Plan, Step

T0 = float(int(time.time()) // 3600 * 3600)  # kills older than 30 days would be dropped as they are written


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def write_state(old: ModuleType, state_dir: Path) -> Path:
    store = old.Store.open(state_dir)
    done = store.begin_run(host="b200", build="sgl-kernel", jobs=8, log="/var/log/sgl.log", exit_file="/tmp/sgl.exit",
                           boot_id="boot-a", started_by="U0HUMAN", channel="C0OPS", thread_ts="1700000000.000100")
    store.started_run(done.id, pid=4100, start=900001, supervisor_pid=4099, log=done.log, exit_file=done.exit_file)
    store.finish_run(done.id, state="succeeded", exit_status=0, ended_at=T0 + 600)
    live = store.begin_run(host="h100", build="flash-attn", jobs=None, log="/var/log/fa.log", exit_file="/tmp/fa.exit",
                           boot_id=None, started_by=None, channel=None, thread_ts=None)
    store.started_run(live.id, pid=5200, start=900002, supervisor_pid=None, log=live.log, exit_file=live.exit_file)
    store.remember_thread("C0OPS", "1700000000.000100", host="b200", build="sgl-kernel")
    rebuild = Plan(host="b200", build="sgl-kernel", steps=(Step("rebuild", jobs=4),))
    pending = store.add_plan(channel="C0OPS", thread_ts="1700000000.000100", request_ts="1700000000.000100",
                             user="U0HUMAN", plan=rebuild)
    store.set_plan_message(pending, message_ts="1700000001.000200", thread_ts="1700000000.000100")
    finished = store.add_plan(channel="C0OPS", thread_ts="1700000002.000300", request_ts=None, user="U0OTHER",
                              plan=Plan(host="h100", steps=(Step("kill"),)))
    store.claim_plan(finished, "running")
    store.finish_plan(finished)
    store.audit("kill", user="U0OTHER", channel="C0OPS", host="h100", build="flash-attn", detail={"pid": 5200})
    store.audit("rebuild", user="U0HUMAN", host="b200", build="sgl-kernel")
    with store.batch():  # releases before job labels kept a bare list
        store._db.execute("INSERT INTO job_memory (host, build, recorded_at, rss) VALUES (?, ?, ?, ?)",
                          ("b200", "sgl-kernel", T0, json.dumps([300, 100, 200])))
        store._db.execute("INSERT INTO job_memory (host, build, recorded_at, rss) VALUES (?, ?, ?, ?)",
                          ("h100", "flash-attn", T0, json.dumps([7000, 5000])))
    store.record_job_memory("b200", "sgl-kernel", [900, 400], label="nvcc")
    store.record_job_memory("b200", "sgl-kernel", [500], label="nvcc")
    store.record_job_memory("b200", "sgl-kernel", [600], label="compile")
    store.add_oom_kills([("b200", T0 + 10, done.id, "build", "dmesg", "cicc", 4321),
                         ("b200", T0 + 20, None, "other", "counter", None, None)])
    store.oom_kills_counted("b200", at=T0, boot_id="boot-a", count=3, since=T0 - 3600)
    store.save_run_memory(done.id, {"t": [0, 5, 10], "used": [1.5, 2.5, 3.5]})
    store.set_paused(live.id, [(5201, 900003), (5202, 900004)])
    store.first_delivery("Ev0001")
    store.first_delivery("Ev0002")
    store.close()
    return state_dir / str(old.DB_NAME)


async def write_schedules(old: ModuleType, state_dir: Path) -> Path:
    async def post(schedule: object) -> None:
        return None

    runner = old.ScheduleRunner(state_dir, post=post)
    await runner.start(())
    runner.add(when="daily at 09:00", channel="C0DIGEST", hosts=("b200", "h100"), timezone="Europe/Berlin",
               only_changes=True, created_by="U0ADMIN")
    runner.table.record_post("1", old.Posted(at=T0 + 30, fingerprint="f1ngerpr1nt"))
    await runner.close()
    return state_dir / str(old.DB_NAME)


def one_file(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("VACUUM")
    db.close()


def main(old_store: Path, old_scheduler: Path, out: Path) -> None:
    store, scheduler = load(old_store, "old_store"), load(old_scheduler, "old_scheduler")
    with tempfile.TemporaryDirectory() as tmp:
        state = write_state(store, Path(tmp))
        schedules = asyncio.run(write_schedules(scheduler, Path(tmp)))
        for written, name in ((state, "rigops-v0.sqlite3"), (schedules, "schedules-v0.sqlite3")):
            one_file(written)
            (out / name).write_bytes(written.read_bytes())
    print(f"wrote {out} at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
