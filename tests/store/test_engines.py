"""Every Store method on every engine: SQLite in the state dir, and PostgreSQL (a real server) — the same calls, the
same answers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot import store as store_module
from bot.hosts.models import ProcId
from bot.language.plan import Plan, Step, ThreadContext
from bot.store import EVENT_RETENTION, JOB_MEMORY_RUNS, JOB_MEMORY_VALUES, OOM_RETENTION, Store

PLAN = Plan(host="b200", build="sgl-kernel", steps=(Step("rebuild", jobs=20),))
BIG_START = 2**40  # a process start time in clock ticks, past 32 bits on a host up for long


def begin(state: Store, *, thread_id: str | None = "1700000000.000100", jobs: int | None = 8) -> int:
    return state.begin_run(host="b200", build="sgl-kernel", jobs=jobs, log="/l", exit_file="/e", boot_id="boot-a",
                           started_by="U0HUMAN", channel="C0OPS", thread_id=thread_id).id


def test_an_event_is_first_once_until_it_is_forgotten(state: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert state.first_delivery("Ev0001") is True
    assert state.first_delivery("Ev0001") is False
    assert state.first_delivery("Ev0002") is True
    later = time.time() + EVENT_RETENTION + 60
    monkeypatch.setattr(store_module, "time", SimpleNamespace(time=lambda: later))
    assert state.first_delivery("Ev0003") is True  # and Ev0001 is past its retention: dropped
    assert state.first_delivery("Ev0001") is True


def test_a_thread_remembers_its_host_build_and_last_jobs(state: Store) -> None:
    assert state.thread_context("C0OPS", "1.1") is None
    state.remember_thread("C0OPS", "1.1", host="b200", build="sgl-kernel")
    assert state.thread_context("C0OPS", "1.1") == ThreadContext("b200", "sgl-kernel", None)
    begin(state, thread_id="1.1", jobs=12)
    assert state.thread_context("C0OPS", "1.1") == ThreadContext("b200", "sgl-kernel", 12)
    state.remember_thread("C0OPS", "1.1", host="b200", build=None)  # no build named: the thread keeps its own
    assert state.thread_context("C0OPS", "1.1") == ThreadContext("b200", "sgl-kernel", 12)
    state.remember_thread("C0OPS", "1.1", host="h100", build="flash-attn")
    assert state.thread_context("C0OPS", "1.1") == ThreadContext("h100", "flash-attn", None)
    assert state.thread_context("C0OPS", "2.2") is None


def test_a_plan_waits_for_its_button_and_is_claimed_once(state: Store) -> None:
    before = time.time()
    plan_id = state.add_plan(channel="C0OPS", thread_id="1.1", request_id="1.2", user="U0HUMAN", plan=PLAN)
    pending = state.plan(plan_id)
    assert pending is not None
    assert (pending.id, pending.channel, pending.thread_id, pending.message_id, pending.request_id, pending.user,
            pending.plan, pending.state) == (plan_id, "C0OPS", "1.1", None, "1.2", "U0HUMAN", PLAN, "pending")
    assert before <= pending.created_at <= time.time()
    state.set_plan_message(plan_id, message_id="1.3", thread_id="1.0")
    claimed = state.claim_plan(plan_id, "running")
    assert claimed is not None and (claimed.state, claimed.message_id, claimed.thread_id) == ("running", "1.3", "1.0")
    assert state.claim_plan(plan_id, "running") is None  # pressed twice
    assert state.claim_plan(plan_id, "cancelled") is None
    state.finish_plan(plan_id)
    done = state.plan(plan_id)
    assert done is not None and done.state == "done"
    assert state.plan(plan_id + 100) is None
    assert state.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0HUMAN", plan=PLAN) > plan_id


def test_the_newest_open_question_of_a_thread(state: Store) -> None:
    assert state.open_question("C0OPS", "1.1") is None
    first = state.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0A", plan=PLAN, state="asking")
    second = state.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0B", plan=PLAN, state="asking")
    state.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0C", plan=PLAN)  # a button, no question
    asked = state.open_question("C0OPS", "1.1")
    assert asked is not None and (asked.id, asked.user) == (second, "U0B")
    assert state.claim_plan(second, "done", waiting="asking") is not None
    asked = state.open_question("C0OPS", "1.1")
    assert asked is not None and asked.id == first
    assert state.open_question("C0OPS", "9.9") is None


def test_a_run_from_its_start_to_its_end(state: Store) -> None:
    before = time.time()
    run_id = begin(state)
    starting = state.run(run_id)
    assert starting is not None
    assert (starting.state, starting.pid, starting.start, starting.jobs, starting.boot_id, starting.started_by,
            starting.channel, starting.stopped_by) == ("starting", 0, 0, 8, "boot-a", "U0HUMAN", "C0OPS", None)
    assert before <= starting.started_at <= time.time()  # full precision: not a 32-bit float
    running = state.started_run(run_id, pid=4100, start=BIG_START, supervisor_pid=4099, log="/l2", exit_file="/e2")
    assert (running.state, running.proc_id, running.supervisor_pid, running.log, running.exit_file) == (
        "running", ProcId(4100, BIG_START), 4099, "/l2", "/e2")
    assert state.runs(live=True) == [running] and state.runs(host="b200", build="sgl-kernel") == [running]
    assert state.runs(host="h100") == [] and state.runs(build="flash-attn") == []
    state.finish_run(run_id, state="stopped", exit_status=-9, ended_at=before + 1.25, stopped_by="U0OTHER")
    stopped = state.run(run_id)
    assert stopped is not None
    assert (stopped.state, stopped.exit_status, stopped.ended_at, stopped.stopped_by) == (
        "stopped", -9, before + 1.25, "U0OTHER")
    state.finish_run(run_id, state="failed", exit_status=1)  # ended already: it keeps what it has
    assert state.run(run_id) == stopped
    state.reopen_run(run_id, state="running")  # the kill failed: it still runs
    reopened = state.run(run_id)
    assert reopened is not None
    assert (reopened.state, reopened.exit_status, reopened.ended_at, reopened.stopped_by) == (
        "running", None, None, None)
    state.finish_run(run_id, state="failed", exit_status=130)
    state.restate_run(run_id, state="stopped")
    ended = state.run(run_id)
    assert ended is not None and (ended.state, ended.exit_status) == ("stopped", 130)
    assert state.runs(live=True) == []


def test_runs_newest_first_and_a_failed_spawn_forgotten(state: Store) -> None:
    first, second, third = begin(state), begin(state), begin(state)
    assert [r.id for r in state.runs()] == [third, second, first]
    assert [r.id for r in state.runs(limit=2)] == [third, second]
    state.forget_run(second)
    state.started_run(third, pid=1, start=2, supervisor_pid=None, log="/l", exit_file="/e")
    state.forget_run(third)  # running: not forgotten
    assert [r.id for r in state.runs()] == [third, first] and state.run(second) is None


def test_the_audit_log(state: Store) -> None:
    state.audit("request", user="U0HUMAN", channel="C0OPS", thread_id="1.1", host="b200", build="sgl-kernel",
                detail={"role": "operator", "allowed": True})
    state.audit("kill", user=None)
    newest, oldest = state.audit_entries()
    assert (newest["what"], newest["user"], newest["host"], newest["detail"]) == ("kill", None, None, None)
    assert {k: oldest[k] for k in ("what", "user", "channel", "thread_ts", "host", "build")} == {
        "what": "request", "user": "U0HUMAN", "channel": "C0OPS", "thread_ts": "1.1", "host": "b200",
        "build": "sgl-kernel"}
    assert json.loads(oldest["detail"]) == {"role": "operator", "allowed": True}
    assert oldest["at"] <= newest["at"] and oldest["id"] < newest["id"]
    assert state.audit_entries(limit=1) == [newest]


def test_compiler_memory_kept_per_build(state: Store) -> None:
    assert state.job_memory("b200", "sgl-kernel") == [] and state.job_memory_runs("b200", "sgl-kernel") == 0
    assert state.job_memory_label("b200", "sgl-kernel") is None and state.job_memory_limit("b200", "x") is None
    state.record_job_memory("b200", "sgl-kernel", [])  # nothing measured: nothing kept
    state.record_job_memory("b200", "sgl-kernel", [3 << 30, 1 << 30], label="nvcc", by_name={"cicc": 3 << 30})
    state.record_job_memory("b200", "sgl-kernel", [2 << 30], label="nvcc", limit=64 << 30,
                            by_name={"cicc": 2 << 30, "ptxas": 1 << 29})
    state.record_job_memory("h100", "flash-attn", [5 << 30], label="compile")
    assert sorted(state.job_memory("b200", "sgl-kernel")) == [1 << 30, 2 << 30, 3 << 30]
    assert state.job_memory_runs("b200", "sgl-kernel") == 2
    assert state.job_memory_label("b200", "sgl-kernel") == "nvcc"
    assert state.job_memory_limit("b200", "sgl-kernel") == 64 << 30
    assert state.job_memory_by_name("b200", "sgl-kernel") == {"cicc": 3 << 30, "ptxas": 1 << 29}
    for n in range(JOB_MEMORY_RUNS + 2):
        state.record_job_memory("b200", "sgl-kernel", [n + 1])
    assert state.job_memory_runs("b200", "sgl-kernel") == JOB_MEMORY_RUNS
    assert sorted(state.job_memory("b200", "sgl-kernel")) == list(range(3, JOB_MEMORY_RUNS + 3))
    assert state.job_memory_limit("b200", "sgl-kernel") is None
    state.record_job_memory("h100", "flash-attn", list(range(3 * JOB_MEMORY_VALUES)))
    assert len(state.job_memory("h100", "flash-attn")) == 1 + JOB_MEMORY_VALUES  # an even spread of the values


def test_oom_kills_and_the_kernel_counter(state: Store) -> None:
    now = time.time()
    state.add_oom_kills([])
    state.add_oom_kills([("b200", now - 5, 7, "build", "dmesg", "cicc", 4321),
                         ("b200", now - 1, None, "other", "counter", None, None),
                         ("h100", now - 2, None, "other", "dmesg", "python", 99),
                         ("b200", now - OOM_RETENTION - 60, None, "other", "dmesg", "old", 1)])  # past retention
    assert state.oom_kills("b200", since=now - 10) == [("b200", now - 5, 7, "build", "dmesg", "cicc", 4321),
                                                       ("b200", now - 1, None, "other", "counter", None, None)]
    assert state.oom_kills("b200", since=0) == state.oom_kills("b200", since=now - 10)
    assert state.oom_kills("b200", since=now - 3) == [("b200", now - 1, None, "other", "counter", None, None)]
    assert state.oom_kills_counted("b200", at=now, boot_id="boot-a", count=10, since=now - 100) is None
    assert state.oom_kills_counted("b200", at=now + 30, boot_id="boot-a", count=13, since=now - 1) == 3
    assert state.oom_kills_counted("b200", at=now + 60, boot_id="boot-b", count=2, since=now - 1) == 2  # rebooted
    assert state.oom_kills_counted("h100", at=now + 60, boot_id="boot-c", count=2, since=now - 1) is None


def test_a_runs_memory_chart_and_its_paused_compilers(state: Store) -> None:
    assert state.run_memory(1) is None and state.paused(1) == []
    state.save_run_memory(1, {"t": [0, 5], "used": [1.5, 2.5]})
    state.save_run_memory(1, {"t": [0, 5, 10], "used": [1.5, 2.5, 3.5]})  # replaces
    assert state.run_memory(1) == {"t": [0, 5, 10], "used": [1.5, 2.5, 3.5]}
    state.set_paused(1, [ProcId(5201, BIG_START), ProcId(5202, 900004), ProcId(5201, BIG_START)])
    state.set_paused(2, [ProcId(6000, 1)])
    assert sorted(state.paused(1)) == [(5201, BIG_START), (5202, 900004)]
    state.set_paused(1, [])
    assert state.paused(1) == [] and state.paused(2) == [(6000, 1)]


def test_a_batch_lands_whole_or_not_at_all(state: Store) -> None:
    with state.batch():
        plan_id = state.add_plan(channel="C0OPS", thread_id="1.1", request_id=None, user="U0HUMAN", plan=PLAN)
        state.audit("request", user="U0HUMAN")
        claimed = state.claim_plan(plan_id, "running")  # reads inside the batch see its writes
        assert claimed is not None and claimed.state == "running"
    with pytest.raises(RuntimeError), state.batch():
        state.remember_thread("C0OPS", "1.1", host="b200", build=None)
        state.audit("kill", user="U0HUMAN")
        raise RuntimeError("changed my mind")
    assert [e["what"] for e in state.audit_entries()] == ["request"]
    assert state.thread_context("C0OPS", "1.1") is None


def test_the_state_outlasts_its_rigops(state_dir: Path, state_url: str | None) -> None:
    first = Store.open(state_dir, url=state_url)
    run_id = begin(first)
    first.first_delivery("Ev0001")
    first.close()
    again = Store.open(state_dir, url=state_url)
    try:
        run = again.run(run_id)
        assert run is not None and run.state == "starting" and again.first_delivery("Ev0001") is False
        assert again.where.startswith("SQLite " if state_url is None else "PostgreSQL postgresql://rigops:***@")
        assert (state_dir / store_module.DB_NAME).exists() is (state_url is None)
    finally:
        again.close()
