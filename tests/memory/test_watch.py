"""OomWatch (bot/memory/watch.py): OOM kills told apart as the build's or not, and one pressure alert per episode.

First on hand-made Samples (every rule, exact numbers), then on a real build in a memory cgroup with a
limit, where the kernel's OOM killer really kills one of its compilers: ``Host.sample`` on this machine must
show it (vmstat counter, the cgroup's oom_kill, the kernel's line) and OomWatch must blame the build, after
a pressure alert that came before the kill, and must not blame it for an OOM kill in another cgroup.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import signal
from pathlib import Path
from typing import Any

import pytest

from bot.hosts import Host
from bot.hosts.agent.sample import KernelLog
from bot.hosts.models import CgroupMemory, ClassUsage, JobPeak, OomEvent, Pressure, Proc, Sample
from bot.memory.watch import Findings, OomKill, OomWatch, Thresholds
from tests.fakes.cgroups import Cgroups, in_cgroup, vmstat_oom_kill
from tests.fakes.tools import stop
from tests.fakes.users import fake_user
from tests.waiting import eventually

MIB = 1 << 20
GIB = 1 << 30
ME = pwd.getpwuid(os.getuid()).pw_name
ROOT = (1000, 5000)


def make_sample(t: float = 0.0, *, total: int = 64 * GIB, available: int = 32 * GIB, swap_total: int = 0,
                swap_free: int = 0, psi_full: float | None = None, compilers: list[int] | None = None,
                oom_kill: int | None = 0, cgroup: CgroupMemory | None = None,
                kernel: tuple[OomEvent, ...] | None = ()) -> Sample:
    rss = compilers or []
    top = tuple(Proc(pid=2000 + i, start=6000 + i, name="cc1plus", user=ME, rss=r)
                for i, r in enumerate(sorted(rss, reverse=True)[:5]))
    psi = Pressure(0.0, 0.0, psi_full, 0.0, 0, 0) if psi_full is not None else None
    return Sample(host="b200", time=t, mem_total=total, mem_available=available, swap_total=swap_total,
                  swap_free=swap_free, psi=psi, drivers=ClassUsage(1, 8 * MIB, 8 * MIB),
                  compilers=ClassUsage(len(rss), sum(rss), max(rss, default=0)), linkers=ClassUsage(),
                  top_compilers=top, ended=(), oom_kill=oom_kill, cgroup=cgroup, kernel=kernel, tree=len(rss) + 2)


def event(pid: int, name: str = "cc1plus", *, user: str | None = ME, in_tree: bool = False,
          cgroup: str | None = "/user.slice") -> OomEvent:
    return OomEvent(victim_pid=pid, victim_name=name, user=user, cgroup=cgroup, oom_cgroup=None, in_tree=in_tree,
                    line=f"Out of memory: Killed process {pid} ({name}) total-vm:1kB")


def cgroup(oom_kill: int, *, exclusive: bool = True, current: int = GIB, limit: int | None = 4 * GIB,
           path: str = "/build") -> CgroupMemory:
    return CgroupMemory(path=path, version=1, current=current, limit=limit, oom=None, oom_kill=oom_kill,
                        exclusive=exclusive)


def kills(findings: Findings) -> list[tuple[str, str, int | None]]:
    return [(k.whose, k.evidence, k.victim_pid) for k in findings.kills]


# ---------------------------------------------------------------------------------------------------------
# OOM kills, on hand-made samples


def test_kernel_victims_are_blamed_on_the_build_only_when_they_are_its_own() -> None:
    watch = OomWatch(roots=[ROOT], user=ME)
    watch.feed(make_sample(0, compilers=[3 * GIB]))  # top compiler pid 2000
    found = watch.feed(make_sample(1, oom_kill=6, kernel=(
        event(3001, in_tree=True),  # the agent saw it in the build's tree
        event(2000),  # one of the heaviest compilers of the last sample
        event(ROOT[0], "sh", user="root"),  # the build's root itself
        event(3002, "cicc"),  # a compiler of the build user, outside the tree
        event(3003, "cicc", user="someone"),  # another user's compiler
        event(3004, "python3"),  # the build user's, but no compiler
    )))
    assert kills(found) == [("build", "kernel", 3001), ("build", "kernel", 2000), ("build", "kernel", ROOT[0]),
                            ("build", "kernel", 3002), ("other", "kernel", 3003), ("other", "kernel", 3004)]
    assert [k.victim_pid for k in found.build_kills] == [3001, 2000, ROOT[0], 3002]
    assert found.kills[0].line == "Out of memory: Killed process 3001 (cc1plus) total-vm:1kB"
    assert found.kills[0].cgroup == "/user.slice" and found.kills[0].user == ME


def test_a_build_without_a_user_is_blamed_only_for_its_tree() -> None:
    watch = OomWatch(roots=[ROOT])
    watch.feed(make_sample(0))
    found = watch.feed(make_sample(1, oom_kill=2, kernel=(event(3002, "cicc"), event(3001, in_tree=True))))
    assert kills(found) == [("other", "kernel", 3002), ("build", "kernel", 3001)]


def test_a_victim_in_the_build_s_own_cgroup_is_the_build_s() -> None:
    watch = OomWatch(roots=[ROOT])
    watch.feed(make_sample(0, cgroup=cgroup(0)))
    found = watch.feed(make_sample(1, oom_kill=3, cgroup=cgroup(2), kernel=(
        event(3001, "ld", cgroup="/build"), event(3002, "cc1plus", cgroup="/build/sub"), event(3003, cgroup="/x"))))
    assert kills(found) == [("build", "kernel", 3001), ("build", "kernel", 3002), ("other", "kernel", 3003)]
    shared = OomWatch(roots=[ROOT])  # a cgroup shared with other processes proves nothing
    shared.feed(make_sample(0, cgroup=cgroup(0, exclusive=False)))
    found = shared.feed(make_sample(1, oom_kill=1, cgroup=cgroup(1, exclusive=False),
                                    kernel=(event(3001, "ld", cgroup="/build"),)))
    assert kills(found) == [("other", "kernel", 3001)]


def test_counters_without_a_kernel_log_report_at_once() -> None:
    watch = OomWatch(roots=[ROOT], user=ME)
    watch.feed(make_sample(0, oom_kill=10, cgroup=cgroup(1), kernel=None))
    found = watch.feed(make_sample(1, oom_kill=13, cgroup=cgroup(2), kernel=None))
    # one kill in the build's own cgroup; the other two elsewhere, victims unknown
    assert kills(found) == [("build", "cgroup", None), ("unknown", "vmstat", None), ("unknown", "vmstat", None)]
    assert found.kills[0].cgroup == "/build"
    assert watch.feed(make_sample(2, oom_kill=13, cgroup=cgroup(2), kernel=None)).kills == ()
    shared = OomWatch(roots=[ROOT])
    shared.feed(make_sample(0, oom_kill=0, cgroup=cgroup(0, exclusive=False), kernel=None))
    found = shared.feed(make_sample(1, oom_kill=1, cgroup=cgroup(1, exclusive=False), kernel=None))
    assert kills(found) == [("unknown", "cgroup", None)]


def test_a_kernel_line_that_trails_its_counter_is_not_counted_twice() -> None:
    watch = OomWatch(roots=[ROOT])
    watch.feed(make_sample(0, oom_kill=0, cgroup=cgroup(0)))
    # The counter moved, the line is not logged yet: owed, not reported.
    assert watch.feed(make_sample(1, oom_kill=1, cgroup=cgroup(1))).kills == ()
    found = watch.feed(make_sample(2, oom_kill=1, cgroup=cgroup(1), kernel=(event(3001, cgroup="/build"),)))
    assert kills(found) == [("build", "kernel", 3001)]
    assert watch.feed(make_sample(3, oom_kill=1, cgroup=cgroup(1))).kills == ()
    # Linux 4.x names no cgroup: a victim of the build's explains the build cgroup's count.
    found = watch.feed(make_sample(3.5, oom_kill=2, cgroup=cgroup(2), kernel=(event(3005, in_tree=True, cgroup=None),)))
    assert kills(found) == [("build", "kernel", 3005)]
    assert watch.feed(make_sample(3.7, oom_kill=2, cgroup=cgroup(2))).kills == ()
    # A line that never comes: reported one sample later, victim unknown.
    assert watch.feed(make_sample(4, oom_kill=3, cgroup=cgroup(3))).kills == ()
    assert kills(watch.feed(make_sample(5, oom_kill=3, cgroup=cgroup(3)))) == [("build", "cgroup", None)]
    assert watch.feed(make_sample(6, oom_kill=3, cgroup=cgroup(3))).kills == ()


def test_the_first_sample_and_a_counter_reset_are_baselines() -> None:
    watch = OomWatch(roots=[ROOT])
    assert watch.feed(make_sample(0, oom_kill=50, kernel=None)).kills == ()
    assert watch.feed(make_sample(1, oom_kill=0, kernel=None)).kills == ()  # the host rebooted
    assert watch.feed(make_sample(2, oom_kill=None, kernel=None)).kills == ()  # a kernel without the counter


# ---------------------------------------------------------------------------------------------------------
# Pressure, on hand-made samples


def test_one_alert_per_episode_with_hysteresis() -> None:
    watch = OomWatch(roots=[ROOT])
    compilers = [int(6.8 * GIB)] * 64
    total = 449 * GIB
    assert watch.feed(make_sample(0, total=total, available=90 * GIB, compilers=compilers)).alert is None
    found = watch.feed(make_sample(1, total=total, available=int(0.03 * total), compilers=compilers))
    alert = found.alert
    assert alert is not None and watch.in_episode
    assert alert.reasons == ("low_memory",) and alert.scope == "host"
    assert alert.available_pct == pytest.approx(3.0, abs=0.01) and alert.total == total
    assert alert.compilers == 64 and alert.per_compiler == int(6.8 * GIB)
    # (64 x 6.8 GiB in use + 13.5 GiB available - 10% of 449 GiB kept free) / 6.8 GiB
    assert alert.suggest_jobs == int((64 * int(6.8 * GIB) + int(0.03 * total) - 0.1 * total) // int(6.8 * GIB)) == 59
    # Not a flood: the episode goes on without new alerts, also between the thresholds (5% < 7% < 10%).
    for t, pct in ((2, 0.02), (3, 0.04), (4, 0.07), (5, 0.07), (6, 0.07), (7, 0.01)):
        found = watch.feed(make_sample(t, total=total, available=int(pct * total), compilers=compilers))
        assert found.alert is None and not found.calm
    # Three calm samples in a row end it; one relapse restarts the count.
    calm = [watch.feed(make_sample(t, total=total, available=int(0.2 * total))).calm for t in (8, 9)]
    assert calm == [False, False]
    assert not watch.feed(make_sample(10, total=total, available=int(0.08 * total))).calm
    calm = [watch.feed(make_sample(t, total=total, available=int(0.2 * total))).calm for t in (11, 12, 13)]
    assert calm == [False, False, True] and not watch.in_episode
    again = watch.feed(make_sample(14, total=total, available=int(0.01 * total), compilers=compilers))
    assert again.alert is not None and again.alert.available_pct == pytest.approx(1.0, abs=0.01)


def test_stalls_and_rising_swap_start_an_episode() -> None:
    watch = OomWatch(thresholds=Thresholds(psi_full_avg10=10.0))
    watch.feed(make_sample(0, psi_full=2.0))
    found = watch.feed(make_sample(1, psi_full=25.5))
    assert found.alert is not None and found.alert.reasons == ("stalls",) and found.alert.psi_full_avg10 == 25.5
    assert found.alert.suggest_jobs is None  # no compilers: nothing to suggest
    assert watch.feed(make_sample(2, psi_full=7.0)).alert is None  # above the 5.0 to leave

    swap = OomWatch()
    swap.feed(make_sample(0, swap_total=8 * GIB, swap_free=8 * GIB))
    assert swap.feed(make_sample(1, swap_total=8 * GIB, swap_free=8 * GIB - 10 * MIB)).alert is None
    found = swap.feed(make_sample(3, swap_total=8 * GIB, swap_free=8 * GIB - 410 * MIB, available=GIB,
                                  total=16 * GIB, compilers=[GIB] * 12))
    alert = found.alert
    assert alert is not None and alert.reasons == ("swap_rising",)
    assert alert.swap_rate == pytest.approx(200 * MIB) and alert.swap_used == 410 * MIB
    assert alert.suggest_jobs == 11  # (12 GiB of compilers + 1 available - 1.6 reserve) // 1 GiB
    assert alert.available_pct == pytest.approx(100 / 16)


def test_suggestion_only_when_fewer_compilers_would_help() -> None:
    watch = OomWatch()
    found = watch.feed(make_sample(0, total=100 * GIB, available=2 * GIB, compilers=[4 * GIB] * 20))
    assert found.alert is not None and found.alert.suggest_jobs == (80 + 2 - 10) // 4 == 18


def test_a_limited_cgroup_is_the_memory_that_counts() -> None:
    watch = OomWatch()
    roomy = cgroup(0, current=3 * GIB, limit=100 * GIB)  # a limit above the host's memory does not count
    assert watch.feed(make_sample(0, total=64 * GIB, available=32 * GIB, cgroup=roomy)).alert is None
    tight = cgroup(0, current=int(3.9 * GIB), limit=4 * GIB)
    found = watch.feed(make_sample(1, total=64 * GIB, available=32 * GIB, cgroup=tight, compilers=[GIB] * 3))
    alert = found.alert
    assert alert is not None and alert.scope == "cgroup" and alert.total == 4 * GIB
    assert alert.available == 4 * GIB - int(3.9 * GIB)
    assert alert.suggest_jobs == 2  # (3 + 0.1 - 0.4) // 1


def job(pid: int, name: str, rss: int, *, ppid: int = 1, of: int = 0) -> Proc:
    return Proc(pid=pid, start=pid, name=name, user=ME, rss=rss, ppid=ppid, job=of)


def compile_sample(t: float, jobs: list[Proc], *, limit: int, used: int,
                   ended: tuple[JobPeak, ...] = ()) -> Sample:
    """A build in a memory cgroup of ``limit`` using ``used`` of it, its compilers ``jobs`` (all listed)."""
    return dataclasses.replace(
        make_sample(t, total=64 * GIB, available=60 * GIB, cgroup=cgroup(0, current=used, limit=limit)),
        compilers=ClassUsage(len(jobs), sum(p.rss for p in jobs), max((p.rss for p in jobs), default=0)),
        top_compilers=tuple(sorted(jobs, key=lambda p: -p.rss)), ended=ended)


def test_the_alert_comes_from_the_headroom_each_running_job_still_needs() -> None:
    """Three cc1plus at 100 MiB in a 460 MiB limit, with 160 MiB left (35%: far above 5%): the build's
    compile jobs reach 190 MiB, so they still need 270 MiB; that is the alert."""
    watch = OomWatch(thresholds=Thresholds(peaks={"cc1plus": 190 * MIB, "g++": 6 * MIB}))
    jobs = [job(10, "cc1plus", 100 * MIB, ppid=11), job(11, "g++", 5 * MIB),
            job(20, "cc1plus", 100 * MIB, ppid=21), job(21, "g++", 5 * MIB),
            job(30, "cc1plus", 100 * MIB, ppid=31), job(31, "g++", 5 * MIB)]
    found = watch.feed(compile_sample(0, jobs, limit=460 * MIB, used=300 * MIB))
    alert = found.alert
    assert alert is not None and alert.reasons == ("no_headroom",) and alert.scope == "cgroup"
    assert alert.available == 160 * MIB and alert.need == 3 * 90 * MIB  # the g++ drivers add nothing
    assert alert.compilers == 3 and alert.per_compiler == 100 * MIB  # three jobs, not six compilers
    assert alert.suggest_jobs == 2  # (300 + 160 - 46) // 190


def test_an_nvcc_job_grows_as_its_heaviest_step_not_as_all_of_them() -> None:
    """At -j1 one nvcc job shows nvcc, a cc1plus preprocessing and a cicc at once (seen on CUDA 13): they are
    steps of one job, which grows by its largest shortfall (cicc to ~750 MiB), not by their sum; two jobs do."""
    peaks = {"cicc": 750 * MIB, "cc1plus": 357 * MIB, "cudafe++": 643 * MIB, "nvcc": 3 * MIB}
    one = [job(10, "nvcc", 3 * MIB), job(12, "cc1plus", 30 * MIB, ppid=11, of=10),
           job(13, "cicc", 40 * MIB, ppid=11, of=10)]
    watch = OomWatch(thresholds=Thresholds(peaks=peaks))
    assert watch.feed(compile_sample(0, one, limit=GIB, used=80 * MIB)).alert is None
    assert watch.growth(compile_sample(0, one, limit=GIB, used=80 * MIB)) == 710 * MIB
    two = [*one, job(20, "nvcc", 3 * MIB), job(23, "cudafe++", 100 * MIB, ppid=21, of=20)]
    found = watch.feed(compile_sample(1, two, limit=GIB, used=180 * MIB))
    assert found.alert is not None and found.alert.need == 710 * MIB + 543 * MIB and found.alert.compilers == 2


def test_two_jobs_that_fit_at_their_peak_raise_nothing() -> None:
    watch = OomWatch(thresholds=Thresholds(peaks={"cc1plus": 190 * MIB}))
    jobs = [job(10, "cc1plus", 60 * MIB), job(20, "cc1plus", 150 * MIB)]
    assert watch.feed(compile_sample(0, jobs, limit=460 * MIB, used=230 * MIB)).alert is None  # 230 + 170 < 460


def test_without_past_runs_the_build_learns_what_its_jobs_reach_as_they_end() -> None:
    watch = OomWatch()
    # in lockstep, nothing to go by: each at the heaviest seen, so nothing more is needed
    assert watch.feed(compile_sample(0, [job(10, "cicc", 80 * MIB), job(20, "cicc", 80 * MIB)],
                                     limit=300 * MIB, used=180 * MIB)).alert is None
    one_cicc = compile_sample(0, [job(40, "cicc", MIB)], limit=GIB, used=0)
    assert watch.job_peak(one_cicc) == 80 * MIB
    # one ended at 200 MiB; the new one and the other still have that far to go
    ended = (JobPeak(pid=10, start=10, name="cicc", peak_rss=200 * MIB),)
    found = watch.feed(compile_sample(1, [job(20, "cicc", 150 * MIB), job(30, "cicc", 20 * MIB)],
                                      limit=300 * MIB, used=190 * MIB, ended=ended))
    assert watch.job_peak(one_cicc) == 200 * MIB
    assert found.alert is not None and found.alert.need == 50 * MIB + 180 * MIB > found.alert.available


def test_an_episode_of_too_little_headroom_ends_when_the_jobs_have_room_again() -> None:
    watch = OomWatch(thresholds=Thresholds(peaks={"cc1plus": 190 * MIB}, calm_samples=2))
    tight = [job(10, "cc1plus", 100 * MIB), job(20, "cc1plus", 100 * MIB), job(30, "cc1plus", 100 * MIB)]
    assert watch.feed(compile_sample(0, tight, limit=460 * MIB, used=310 * MIB)).alert is not None
    assert not watch.feed(compile_sample(1, tight, limit=460 * MIB, used=310 * MIB)).calm
    two = tight[:2]
    findings = [watch.feed(compile_sample(t, two, limit=460 * MIB, used=210 * MIB)) for t in (2, 3)]
    assert [f.calm for f in findings] == [False, True] and all(f.alert is None for f in findings)


def test_headroom_that_comes_and_goes_with_the_jobs_is_told_once_a_minute() -> None:
    watch = OomWatch(thresholds=Thresholds(peaks={"cicc": 190 * MIB}, calm_samples=1))
    tight = [job(10, "cicc", 20 * MIB), job(20, "cicc", 20 * MIB), job(30, "cicc", 20 * MIB)]
    roomy = tight[:1]
    alerts = [watch.feed(compile_sample(t, tight if t % 2 == 0 else roomy, limit=460 * MIB, used=200 * MIB)).alert
              for t in range(0, 100, 5)]
    assert [i * 5 for i, a in enumerate(alerts) if a is not None] == [0, 60]
    low = watch.feed(compile_sample(101, tight, limit=460 * MIB, used=450 * MIB)).alert  # low memory is told
    assert low is not None and low.reasons == ("low_memory",)


def test_a_host_with_room_to_spare_never_counts_headroom_against_a_build() -> None:
    watch = OomWatch(thresholds=Thresholds(peaks={"cc1plus": 2 * GIB}))
    found = watch.feed(make_sample(0, total=64 * GIB, available=40 * GIB, compilers=[GIB] * 16))
    assert found.alert is None  # 16 jobs still need 16 GiB; 40 GiB are there


# ---------------------------------------------------------------------------------------------------------
# The forecast: a first run, with nothing learned, warned before the limit while its memory keeps rising

def growers(t: float, *, rate: int, top: int, count: int = 4, base: int = 10 * MIB, name: str = "cc1plus",
            limit: int = 400 * MIB) -> Sample:
    """``count`` compilers that have grown at ``rate`` bytes a second since t=0, up to ``top`` each, beside
    ``base`` of drivers, in a cgroup of ``limit``."""
    each = min(top, int(rate * t))
    jobs = [job(10 * (i + 1), name, each) for i in range(count)]
    return compile_sample(t, jobs, limit=limit, used=min(limit, base + count * each))


def first_alert(samples: list[Sample], watch: OomWatch | None = None) -> Any:
    watch = watch or OomWatch()
    return next((a for s in samples if (a := watch.feed(s).alert) is not None), None)


def test_a_first_run_growing_toward_its_limit_is_warned_seconds_before_it() -> None:
    """The issue's case: four compilers growing ~10 MiB/s each in a 400 MiB cgroup, no history. The room
    runs out at ~9.75 s; the forecast warns with seconds to act and says when."""
    samples = [growers(t, rate=10 * MIB, top=GIB) for t in range(1, 11)]
    alert = first_alert(samples)
    assert alert is not None and alert.reasons == ("rising",), alert
    full = next(s.time for s in samples if s.cgroup is not None and s.cgroup.current >= 400 * MIB)
    low = next(s.time for s in samples if s.cgroup is not None and s.cgroup.current > 380 * MIB)  # 5% left
    assert (full, low) == (10, 10)  # what a threshold of memory left sees: the limit itself
    assert alert.time <= full - 4, alert.time
    ahead = alert.forecast
    assert ahead is not None and ahead.rate == 40 * MIB and 3 <= ahead.eta <= 5, ahead


def test_growth_that_stops_well_under_its_limit_raises_nothing() -> None:
    """The same growth stopping at 40 MiB a compiler (170 of 400 MiB), then holding for a minute."""
    assert first_alert([growers(t, rate=10 * MIB, top=40 * MIB) for t in range(1, 60)]) is None


def test_a_compile_s_first_jump_is_not_extrapolated() -> None:
    """Real cc1plus and cicc jump to most of their size in a second, then creep (measured: 98, 158, 168, 172
    MiB). Two such jobs at 75% of the limit: the jump counts once, the creep does not reach the limit."""
    shape = [0, 98, 158, 168, 172, 176, 183, 183]
    samples = [compile_sample(t, [job(10, "cc1plus", shape[t] * MIB), job(20, "cc1plus", shape[t] * MIB)],
                              limit=560 * MIB, used=(40 + 2 * shape[t]) * MIB) for t in range(len(shape))]
    assert first_alert(samples) is None


def test_jobs_near_what_they_are_known_to_reach_are_not_forecast_past_it() -> None:
    """With history (cc1plus reaches 100 MiB here), four jobs at 85 MiB, rising fast, can add 60 MiB: with
    100 MiB left, no alert; the same rise with a job past its kind's figure is not bounded."""
    known = Thresholds(peaks={"cc1plus": 100 * MIB})
    near = [growers(t, rate=17 * MIB, top=85 * MIB, limit=450 * MIB) for t in (2, 3, 4, 5)]
    assert first_alert(near, OomWatch(thresholds=known)) is None
    past = Thresholds(peaks={"cc1plus": 60 * MIB})
    alert = first_alert(near, OomWatch(thresholds=past))
    assert alert is not None and alert.reasons == ("rising",)
    # the priors stand in for history: a tiny prior bounds the same jobs, as the learned peak did
    tiny = Thresholds(priors={"cc1plus": 100 * MIB})
    assert first_alert(near, OomWatch(thresholds=tiny)) is None


def test_room_freed_by_an_ended_job_restarts_the_fall() -> None:
    """A fall is extrapolated only as long as it has lasted, counted from the last time room came back: after
    a job ends and frees room, a new fall of 50 MiB/s warns once it has lasted as long as the room left
    would take (t=8), not a second earlier as a fall counted from t=0 would."""
    watch = OomWatch(thresholds=Thresholds(quiet_after=0, calm_samples=1))
    room = [390, 300, 200, 100, 350, 300, 250, 200, 150]  # MiB left of 400; at t=4 a job ended
    alerts = [watch.feed(compile_sample(t, [job(10, "cc1plus", 50 * MIB)], limit=400 * MIB,
                                        used=(400 - r) * MIB)).alert for t, r in enumerate(room)]
    told = [a for a in alerts if a is not None]
    assert [a.time for a in told] == [3, 8]
    assert [a.forecast.lasted for a in told if a.forecast is not None] == [3, 4]


def test_the_episode_of_a_rise_ends_when_the_room_stops_falling() -> None:
    watch = OomWatch(thresholds=Thresholds(calm_samples=2))
    for t in range(1, 7):
        found = watch.feed(growers(t, rate=10 * MIB, top=GIB))
    assert watch.in_episode
    plateau = [watch.feed(growers(t, rate=10 * MIB, top=60 * MIB, count=4)) for t in range(7, 12)]
    assert any(f.calm for f in plateau) and not watch.in_episode, found


# ---------------------------------------------------------------------------------------------------------
# A real OOM kill in a memory cgroup


def start_of(pid: int) -> int:
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return int(data[data.rfind(b")") + 2 :].split()[19])


class Recorder:
    """Samples a build through the Host API and feeds an OomWatch, keeping every sample and finding."""

    def __init__(self, host: Host, root: tuple[int, int], watch: OomWatch) -> None:
        self.host, self.root, self.watch = host, root, watch
        self.samples: list[Sample] = []
        self.findings: list[Findings] = []

    async def step(self) -> tuple[Sample, Findings]:
        s = await self.host.sample(roots=[self.root])
        self.samples.append(s)
        self.findings.append(self.watch.feed(s))
        return s, self.findings[-1]

    async def until(self, what: str, done: Any, timeout: float = 30.0) -> Sample:
        async def reached() -> Sample | None:
            s, found = await self.step()
            return s if done(s, found) else None

        try:
            return await eventually(reached, timeout=timeout, what=what, interval=0.05)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; last sample {self.samples[-1]}") from None


def strip(samples: list[Sample], **changes: Any) -> list[Findings]:
    """The same samples, with what a more restricted host could not read taken out, through a fresh watch."""
    watch = OomWatch()
    return [watch.feed(dataclasses.replace(s, **changes)) for s in samples]


async def test_real_oom_kill_in_the_build_cgroup_after_a_pressure_alert(
        local_host: Host, cgroups: Cgroups, fake_bin: Path, public_tmp: Path) -> None:
    build_cg = cgroups.make("build", 96 * MIB)
    fifo = public_tmp / "go"
    os.mkfifo(fifo, 0o666)
    # ninja with compilers of 40, 20 and 20 MiB (~84 MiB of 96 in all); on "go" a 20 MiB ptxas joins, and the
    # kernel kills the heaviest process in the cgroup: cc1plus, which the samples have seen.
    build = in_cgroup(build_cg, f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 40 -- {fake_bin}/nvcc 20 "
                                f"-- {fake_bin}/cicc 20 &\nread go < {fifo}\n{fake_bin}/ptxas 20 &\nwait",
                      user=fake_user())
    try:
        root = (build.pid, start_of(build.pid))
        probe = Recorder(local_host, root, OomWatch(roots=[root]))
        ready = await probe.until("three compilers holding 80 MiB",
                                  lambda s, f: s.compilers.count == 3 and s.compilers.rss >= 80 * MIB)
        cg = ready.cgroup
        assert cg is not None and cg.version == 1 and cg.path.endswith(build_cg.name) and cg.exclusive
        assert cg.limit == 96 * MIB and cg.current >= 80 * MIB and cg.oom_kill == 0
        compilers = {p.pid: p.name for p in ready.top_compilers}
        assert sorted(compilers.values()) == ["cc1plus", "cicc", "nvcc"]

        # 1. Pressure: the cgroup is ~87% full; an alert on the first sample, then no more.
        rec = Recorder(local_host, root, OomWatch(roots=[root], thresholds=Thresholds(
            available_pct=20, leave_available_pct=40, reserve=0.25)))
        _, found = await rec.step()
        alert = found.alert
        assert alert is not None and alert.reasons == ("low_memory",) and alert.scope == "cgroup"
        assert alert.total == 96 * MIB and alert.available_pct < 20 and alert.compilers == 3
        assert 80 * MIB // 3 <= alert.per_compiler < 30 * MIB
        assert alert.suggest_jobs == 2  # (3 compilers + room - 25% of 96 MiB) fit two
        for _ in range(3):
            _, found = await rec.step()
            assert found.alert is None and found.kills == ()
        kernel_log = KernelLog(kmsg_path=str(public_tmp / "no-kmsg"))  # the dmesg fallback, on the same kill
        dmesg_ok = kernel_log.poll(vmstat_oom_kill()) is not None

        # 2. The OOM kill: the build's heaviest compiler (the kernel may, rarely, take a second one; each
        #    must be reported once).
        with open(fifo, "w"):
            pass
        before = rec.samples[-1]
        assert before.cgroup is not None and before.cgroup.oom_kill == 0

        def all_reported(s: Sample, f: Findings) -> bool:
            n = sum(len(x.build_kills) for x in rec.findings)
            return n > 0 and s.cgroup is not None and n == s.cgroup.oom_kill
        await rec.until("the OOM kill to be reported", all_reported)
        await rec.step()  # and nothing more for it later
        after = rec.samples[-1]
        build_kills = [k for f in rec.findings for k in f.build_kills]
        n = len(build_kills)
        kill = build_kills[0]
        assert before.oom_kill is not None and after.oom_kill is not None and after.oom_kill >= before.oom_kill + n
        assert after.cgroup is not None and after.cgroup.oom_kill == n >= 1
        assert after.compilers.count == 4 - n and after.tree == 6 - n  # sh, ninja, compilers left, ptxas
        if after.kernel is None:
            assert all(k.evidence == "cgroup" and k.victim_pid is None for k in build_kills)
        else:
            events = [e for s in rec.samples for e in s.kernel or () if e.victim_pid in compilers]
            assert len(events) == n and all(e.in_tree and e.cgroup == cg.path for e in events)
            assert all(e.victim_name == compilers[e.victim_pid] for e in events)
            assert [(k.evidence, k.victim_pid, k.cgroup) for k in build_kills] == [
                ("kernel", e.victim_pid, cg.path) for e in events]
            assert kill.victim_name == "cc1plus" and "Killed process" in (kill.line or "")
        assert all(f.alert is None for f in rec.findings[1:])  # still the same episode
        # Without the kernel log, the cgroup's counter still blames the build; without that too, nobody.
        no_log = [k for f in strip(rec.samples, kernel=None) for k in f.kills if k.whose != "unknown"]
        assert [(k.whose, k.evidence) for k in no_log] == [("build", "cgroup")] * n
        blind = [k for f in strip(rec.samples, kernel=None, cgroup=None) for k in f.kills]
        assert blind and all(k.whose == "unknown" for k in blind)
        if dmesg_ok:
            kernel_log.poll(vmstat_oom_kill())
            victims = {k.victim_pid for k in build_kills if k.victim_pid is not None}
            logged = sorted(e["victim_pid"] for e in kernel_log.after(0) if e["victim_pid"] in victims)
            assert victims and logged == sorted(victims)

        # 3. An OOM kill in another cgroup is not the build's.
        other_cg = cgroups.make("other", 32 * MIB)
        other = in_cgroup(other_cg, f"exec {fake_bin}/hog 64")
        assert other.wait(timeout=30) == -signal.SIGKILL
        mark = len(rec.findings)

        def reported(s: Sample, f: Findings) -> bool:
            return any(k.victim_pid == other.pid or k.evidence == "vmstat" for k in f.kills)

        await rec.until("the other cgroup's OOM kill", reported)
        await rec.step()
        later: list[OomKill] = [k for f in rec.findings[mark:] for k in f.kills]
        assert not [k for k in later if k.whose == "build"]
        assert rec.samples[-1].cgroup is not None and rec.samples[-1].cgroup.oom_kill == 1
        if rec.samples[-1].kernel is not None:
            (theirs,) = [k for k in later if k.victim_pid == other.pid]
            other_path = cg.path.rsplit("/", 1)[0] + "/" + other_cg.name
            assert (theirs.whose, theirs.victim_name, theirs.cgroup) == ("other", "hog", other_path)

        # 4. The build gone, memory is back: the episode ends after three calm samples.
        stop(build)
        calm = [(await rec.step())[1].calm for _ in range(3)]
        assert calm == [False, False, True]
    finally:
        stop(build)
