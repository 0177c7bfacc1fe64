"""The host agent's own cost while the bot samples a build once a second: CPU (% of one core) and RSS, with
200 and then 5,000 extra processes on the host, against the same agent left idle and against 1 Hz snapshots, in
one run.

Target (PRODUCT.md, issue 17): host agent < 30 MB and < 1% of a core when sampling once a second, also on a host
with 5,000 processes. The agent runs for as long as the bot is connected, so the target is its steady cost (after
its first sample); the share "in all" adds its start and its first full scan of /proc, one-off costs spread over
one phase. RIGOPS_BENCH_AGENT_PROCESSES="200,5000" sets the sizes, RIGOPS_BENCH_AGENT_SECONDS the length of a phase.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from bench.common import fake_bin, ms, percentile
from bot.hosts.base import agent_bootstrap
from tests.fakes.tools import read_stat_fields, session_members
from tests.waiting import wait_until

SECONDS = float(os.environ.get("RIGOPS_BENCH_AGENT_SECONDS", "20"))  # per phase
EXTRA_PROCESSES = tuple(int(n) for n in os.environ.get("RIGOPS_BENCH_AGENT_PROCESSES", "200,5000").split(","))
SPAWN_TIMEOUT = 120.0  # seconds for the extra processes to exist (5,000 forks take a few on two cores)
LONG_COMPILERS = 16  # under a fake ninja, 8 MiB each, for the whole run
CHURN_EVERY = 0.1  # a short-lived 4 MiB compiler joins the build this often (a build's real turnover)
AGENT_SOURCE = agent_bootstrap()


class Agent:
    """The agent as the bot runs it locally (``python -u -c <bootstrap>``), one request at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-u", "-c", AGENT_SOURCE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.ids = 0
        self.call("hello")

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.ids += 1
        self.proc.stdin.write(json.dumps({"id": self.ids, "op": op, **args}).encode() + b"\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        assert answer["ok"], answer
        result: dict[str, Any] = answer["result"]
        return result

    def rss(self) -> tuple[int, int]:
        """(RSS, peak RSS) in bytes. psutil has no peak RSS, and wait4's ru_maxrss starts at the parent's peak
        (exec copies the high-water mark), so the peak is /proc's VmHWM."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        hwm_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
        return psutil.Process(self.proc.pid).memory_info().rss, hwm_kib * 1024

    def cpu(self) -> float:
        """CPU seconds (user + system) so far, in clock ticks, for the steady state after the first request."""
        times = psutil.Process(self.proc.pid).cpu_times()
        return float(times.user + times.system)

    def finish(self) -> float:
        """Close the agent; the CPU seconds (user + system) it used in all, exactly, from wait4."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        return usage.ru_utime + usage.ru_stime


def phase(op: str | None, args: dict[str, Any]) -> dict[str, Any]:
    """One fresh agent for SECONDS: idle (op None) or answering ``op`` once a second. ``steady``: % of a core
    after the first request (the agent's start and its first, full scan left out)."""
    agent = Agent()
    latencies = []
    compilers = []
    began = time.monotonic()
    tick = began
    steady_from: tuple[float, float] | None = None
    while time.monotonic() - began < SECONDS:
        if op is not None:
            t0 = time.perf_counter()
            result = agent.call(op, **args)
            latencies.append(time.perf_counter() - t0)
            if "classes" in result:
                compilers.append(result["classes"]["compiler"]["count"])
        if steady_from is None:
            steady_from = (time.monotonic(), agent.cpu())
        tick += 1.0
        time.sleep(max(0.0, tick - time.monotonic()))
    rss, hwm = agent.rss()
    assert steady_from is not None
    steady = (agent.cpu() - steady_from[1]) / (time.monotonic() - steady_from[0]) * 100
    wall = time.monotonic() - began
    cpu = agent.finish()
    return {"cpu": cpu, "wall": wall, "rss": rss, "hwm": hwm, "steady": steady,
            "p50": percentile(latencies, 0.5) if latencies else 0.0,
            "p95": percentile(latencies, 0.95) if latencies else 0.0,
            "compilers": percentile(compilers, 0.5) if compilers else 0}


def idle_processes(count: int) -> subprocess.Popen[bytes]:
    """``count`` sleeping processes, forked by one shell in a session of their own (one killpg ends them all);
    returns once they all exist."""
    shell = subprocess.Popen(["/bin/sh", "-c", f"i=0; while [ $i -lt {count} ]; do sleep 3600 & i=$((i+1)); done; "
                              "echo spawned; wait"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             start_new_session=True)
    assert shell.stdout is not None
    shell.stdout.readline()
    wait_until(lambda: len(session_members(shell.pid)) > count, timeout=SPAWN_TIMEOUT,
               what=f"{count} idle processes to start")
    return shell


@contextmanager
def busy_host(bin_dir: Path, extra_processes: int) -> Iterator[tuple[int, int]]:
    """``extra_processes`` idle processes, and a fake build: ninja with 16 compilers plus a steady turnover of
    short ones. Yields the build's root (pid, start)."""
    extra = idle_processes(extra_processes)
    long = " ".join(f"-- {bin_dir}/{name} 8" for name in ["cc1plus", "nvcc", "cicc", "ptxas"] * (LONG_COMPILERS // 4))
    script = (f"{bin_dir}/ninja 1 {long} &\n"
              f"while :; do {bin_dir}/cc1plus 4 0.4 & sleep {CHURN_EVERY}; done")
    build = subprocess.Popen(["/bin/sh", "-c", script], stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        fields = read_stat_fields(build.pid)
        assert fields is not None
        yield build.pid, int(fields[19])  # the agent's start: clock ticks after boot, not psutil's epoch seconds
    finally:
        os.killpg(build.pid, signal.SIGKILL)
        build.wait()
        os.killpg(extra.pid, signal.SIGKILL)
        extra.wait()
        assert extra.stdout is not None
        extra.stdout.close()


def allocated(sid: int, mb: int = 8) -> int:
    """How many processes of session ``sid`` hold ``mb`` MiB or more."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss = (read_stat_fields(pid) for pid in session_members(sid))
    return sum(1 for fields in rss if fields is not None and int(fields[21]) * page >= mb << 20)


def measure(bin_dir: Path, extra_processes: int) -> dict[str, float]:
    """The three phases (idle, snapshot, sample) on a host with ``extra_processes`` more; prints their figures."""
    with busy_host(bin_dir, extra_processes) as root:
        # the long compilers hold their memory before the idle baseline starts
        wait_until(lambda: allocated(root[0]) >= LONG_COMPILERS, timeout=30, what="the fake build to allocate")
        procs = len(psutil.pids())
        idle = phase(None, {})
        snap = phase("snapshot", {"top": 5})
        sample = phase("sample", {"roots": [list(root)], "user": None, "cgroup": True})
        if allocated(root[0]) < LONG_COMPILERS:  # e.g. a test run at the same time stopped root's compilers
            raise RuntimeError("the fake build lost its long compilers during the run: its figures would be wrong")

    def over_idle(p: dict[str, Any]) -> float:
        return max(0.0, float(p["cpu"]) - float(idle["cpu"])) / float(p["wall"]) * 100

    snap_pct, sample_pct = over_idle(snap), over_idle(sample)
    mb = 1 << 20
    print(f"{extra_processes} extra processes + a fake build ({sample['compilers']:.0f} compilers live, "
          f"a new one every {CHURN_EVERY:g} s); {SECONDS:g} s per phase, one request a second; ~{procs} processes "
          f"during the run")
    print(f"idle agent (baseline):   {idle['cpu'] * 1000:.0f} ms CPU in {idle['wall']:.0f} s (start-up included), "
          f"RSS {idle['rss'] / mb:.1f} MB")
    print(f"snapshot at 1 Hz:        +{snap_pct:.3f}% of a core over idle, RSS {snap['rss'] / mb:.1f} MB, "
          f"p50 {ms(snap['p50'])}")
    print(f"sample at 1 Hz:          +{sample_pct:.3f}% of a core over idle, RSS {sample['rss'] / mb:.1f} MB "
          f"(peak {sample['hwm'] / mb:.1f} MB), p50 {ms(sample['p50'])}, p95 {ms(sample['p95'])}; steady "
          f"(after the first sample) {sample['steady']:.2f}% of a core")
    total_pct = sample["cpu"] / sample["wall"] * 100
    ratio = sample_pct / snap_pct if snap_pct else float("inf")
    met = sample["steady"] < 1.0 and sample["hwm"] < 30 * mb
    print(f"ratio: a sample costs {ratio:.1f}x a snapshot; the sampling agent steady {sample['steady']:.2f}% of a "
          f"core (in all, with its start and first full scan, {total_pct:.2f}% over {SECONDS:g} s), peak "
          f"{sample['hwm'] / mb:.1f} MB: target < 1% and < 30 MB {'met' if met else 'NOT met'}")
    return {"procs": float(procs), "idle_cpu": idle["cpu"], "snapshot_pct": snap_pct, "sample_pct": sample_pct,
            "sample_total_pct": total_pct, "sample_steady_pct": sample["steady"], "sample_rss": float(sample["rss"]),
            "sample_hwm": float(sample["hwm"]), "sample_p50": sample["p50"]}


def main() -> dict[str, float]:
    bin_dir = fake_bin()
    figures: dict[int, dict[str, float]] = {}
    for extra_processes in EXTRA_PROCESSES:
        if figures:
            print()
        figures[extra_processes] = measure(bin_dir, extra_processes)
    if len(figures) > 1:
        (small, a), (big, b) = min(figures.items()), max(figures.items())
        print(f"\nratio: with {big} extra processes instead of {small} a sample costs "
              f"{b['sample_p50'] / a['sample_p50']:.1f}x the time (p50) and {b['sample_steady_pct']:.2f}% of a core "
              f"steady instead of {a['sample_steady_pct']:.2f}%")
    return {f"{key}@{n}": value for n, f in figures.items() for key, value in f.items()}


if __name__ == "__main__":
    main()
