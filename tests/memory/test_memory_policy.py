"""The memory policy (bot/memory/policy.py): what an alert leads to, which compilers a pause stops, when they
go on, what -j a restart or a retry runs at, and where memory reads low or tight: decisions from numbers."""

from __future__ import annotations

import dataclasses

import pytest

from bot.config import HostConfig, PressureAction
from bot.hosts.meminfo import Memory
from bot.memory.policy import (
    DEFAULT_LEVELS,
    MAX_PAUSE,
    OnPressure,
    host_levels,
    on_pressure,
    restart_jobs,
    resume_why,
    retry_jobs,
    thresholds,
    to_pause,
)
from bot.memory.watch import Alert
from tests.memory.test_watch import make_sample

GIB = 1 << 30


def alert(suggest: int | None) -> Alert:
    return Alert(host="b200", time=0.0, reasons=("low_memory",), scope="host", available=GIB, total=64 * GIB,
                 psi_full_avg10=None, swap_used=0, swap_rate=0.0, compilers=32, per_compiler=GIB,
                 suggest_jobs=suggest)


def test_the_thresholds_are_the_host_s() -> None:
    th = thresholds(HostConfig(name="b200", memory_alert_pct=8, memory_reserve=0.2), peaks={"cicc": GIB})
    assert (th.available_pct, th.leave_available_pct, th.reserve, dict(th.peaks)) == (8, 16, 0.2, {"cicc": GIB})
    default = thresholds(HostConfig(name="b200"))
    assert (default.available_pct, default.leave_available_pct, default.reserve) == (5, 10, 0.1)


@pytest.mark.parametrize(("policy", "suggest", "run_jobs", "expected"), [
    ("alert", 20, 32, OnPressure("alert", 20)),
    ("pause", 20, 32, OnPressure("pause", 20)),
    ("restart", 20, 32, OnPressure("restart", 20)),
    ("restart", 32, 32, OnPressure("alert", None)),  # the same -j would not help: it only tells, never loops
    ("restart", None, 32, OnPressure("alert", None)),
    ("pause", 40, 32, OnPressure("pause", None)),
    ("restart", 20, None, OnPressure("restart", 20)),  # a run at its build's default: any suggestion is news
])
def test_an_alert_leads_to_the_host_s_policy_less_a_restart_that_would_not_help(
        policy: PressureAction, suggest: int | None, run_jobs: int | None, expected: OnPressure) -> None:
    assert on_pressure(alert(suggest), run_jobs=run_jobs, policy=policy) == expected
    assert restart_jobs(alert(suggest), run_jobs) == expected.jobs


def test_a_pause_stops_the_compilers_above_the_fit_else_a_quarter() -> None:
    sample = make_sample(0, compilers=[GIB] * 16)  # 16 running, the 5 heaviest listed
    listed = sample.top_compilers
    assert to_pause(sample, paused=(), alert=alert(13)) == listed[:3]
    assert to_pause(sample, paused=(), alert=alert(None)) == listed[:4]  # a quarter of 16
    assert to_pause(sample, paused=(), alert=None) == listed[:4]
    assert to_pause(sample, paused=(), alert=alert(2)) == listed  # no more than are listed
    assert to_pause(sample, paused=(), alert=alert(16)) == listed[:1]  # at least one
    assert to_pause(sample, paused=[p.proc_id for p in listed[:2]], alert=alert(12)) == listed[2:4]
    assert to_pause(sample, paused=[p.proc_id for p in listed], alert=None) == ()


def test_paused_compilers_go_on_when_memory_is_back_or_after_a_while() -> None:
    assert resume_why(calm=True, paused_for=1.0) == "memory_back"
    assert resume_why(calm=False, paused_for=MAX_PAUSE - 1) is None
    assert resume_why(calm=False, paused_for=MAX_PAUSE + 1) == "paused_too_long"


def test_a_retry_runs_at_half_or_what_fits_when_fewer() -> None:
    assert [retry_jobs(32, fits=f) for f in (None, 0, 1, 12, 16, 20, 64)] == [16, 16, 1, 12, 16, 16, 16]
    assert retry_jobs(None, fits=None) == 1 and retry_jobs(1, fits=None) == 1


def test_memory_levels_come_from_the_alert_threshold() -> None:
    def mem(pct: float) -> Memory:
        total = 1000 * GIB
        return Memory(total=total, free=0, available=int(total * pct / 100), shared=0, buffers=0, cache=0,
                      swap_total=0, swap_free=0)

    assert (DEFAULT_LEVELS.low_pct, DEFAULT_LEVELS.tight_pct) == (10, 25)  # what the digest always said
    assert host_levels(HostConfig(name="b200")) == DEFAULT_LEVELS
    assert [DEFAULT_LEVELS.of(mem(p)) for p in (9.9, 10, 24.9, 25)] == ["low", "tight", "tight", "ok"]
    strict = host_levels(dataclasses.replace(HostConfig(name="b200"), memory_alert_pct=12))
    assert [strict.of(mem(p)) for p in (23.9, 24, 59.9, 60)] == ["low", "tight", "tight", "ok"]
    assert strict.of(None) == "-"
