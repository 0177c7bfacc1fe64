"""The host agent's own cost while the bot samples a build once a second: CPU (% of one core) and RSS, with
200 extra processes on the host, against the same agent left idle and against 1 Hz snapshots, in one run.

Target (PRODUCT.md): host agent < 30 MB and < 1% of a core when sampling once a second.
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

from bench.common import ROOT, fake_bin, ms, percentile
from tests.fakes.tools import read_stat_fields, session_members
from tests.waiting import wait_until

SECONDS = float(os.environ.get("RIGOPS_BENCH_AGENT_SECONDS", "20"))  # per phase
EXTRA_PROCESSES = 200
LONG_COMPILERS = 16  # under a fake ninja, 8 MiB each, for the whole run
CHURN_EVERY = 0.1  # a short-lived 4 MiB compiler joins the build this often (a build's real turnover)
AGENT_SOURCE = (ROOT / "bot" / "hosts" / "agent.py").read_text()


class Agent:
    """The agent as the bot runs it locally (``python -u -c <source>``), one request at a time."""

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

    def finish(self) -> float:
        """Close the agent; the CPU seconds (user + system) it used in all, exactly, from wait4."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        return usage.ru_utime + usage.ru_stime


def phase(op: str | None, args: dict[str, Any]) -> dict[str, Any]:
    """One fresh agent for SECONDS: idle (op None) or answering ``op`` once a second."""
    agent = Agent()
    latencies = []
    compilers = []
    began = time.monotonic()
    tick = began
    while time.monotonic() - began < SECONDS:
        if op is not None:
            t0 = time.perf_counter()
            result = agent.call(op, **args)
            latencies.append(time.perf_counter() - t0)
            if "classes" in result:
                compilers.append(result["classes"]["compiler"]["count"])
        tick += 1.0
        time.sleep(max(0.0, tick - time.monotonic()))
    rss, hwm = agent.rss()
    wall = time.monotonic() - began
    cpu = agent.finish()
    return {"cpu": cpu, "wall": wall, "rss": rss, "hwm": hwm,
            "p50": percentile(latencies, 0.5) if latencies else 0.0,
            "compilers": percentile(compilers, 0.5) if compilers else 0}


@contextmanager
def busy_host(bin_dir: Path) -> Iterator[tuple[int, int]]:
    """200 idle processes, and a fake build: ninja with 16 compilers plus a steady turnover of short ones.
    Yields the build's root (pid, start)."""
    extra = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL) for _ in range(EXTRA_PROCESSES)]
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
        for p in extra:
            p.kill()
        for p in extra:
            p.wait()


def allocated(sid: int, mb: int = 8) -> int:
    """How many processes of session ``sid`` hold ``mb`` MiB or more."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss = (read_stat_fields(pid) for pid in session_members(sid))
    return sum(1 for fields in rss if fields is not None and int(fields[21]) * page >= mb << 20)


def main() -> dict[str, float]:
    bin_dir = fake_bin()
    with busy_host(bin_dir) as root:
        # the long compilers hold their memory before the idle baseline starts
        wait_until(lambda: allocated(root[0]) >= LONG_COMPILERS, timeout=30, what="the fake build to allocate")
        procs = len(psutil.pids())
        idle = phase(None, {})
        snap = phase("snapshot", {"top": 5})
        sample = phase("sample", {"roots": [list(root)], "user": None, "cgroup": True})

    def over_idle(p: dict[str, Any]) -> float:
        return max(0.0, float(p["cpu"]) - float(idle["cpu"])) / float(p["wall"]) * 100

    snap_pct, sample_pct = over_idle(snap), over_idle(sample)
    mb = 1 << 20
    print(f"{EXTRA_PROCESSES} extra processes + a fake build ({sample['compilers']:.0f} compilers live, "
          f"a new one every {CHURN_EVERY:g} s); {SECONDS:g} s per phase, one request a second; ~{procs} processes "
          f"during the run")
    print(f"idle agent (baseline):   {idle['cpu'] * 1000:.0f} ms CPU in {idle['wall']:.0f} s (start-up included), "
          f"RSS {idle['rss'] / mb:.1f} MB")
    print(f"snapshot at 1 Hz:        +{snap_pct:.3f}% of a core over idle, RSS {snap['rss'] / mb:.1f} MB, "
          f"p50 {ms(snap['p50'])}")
    print(f"sample at 1 Hz:          +{sample_pct:.3f}% of a core over idle, RSS {sample['rss'] / mb:.1f} MB "
          f"(peak {sample['hwm'] / mb:.1f} MB), p50 {ms(sample['p50'])}")
    total_pct = sample["cpu"] / sample["wall"] * 100
    ratio = sample_pct / snap_pct if snap_pct else float("inf")
    met = total_pct < 1.0 and sample["hwm"] < 30 * mb
    print(f"ratio: a sample costs {ratio:.1f}x a snapshot; the sampling agent in all (start-up included) "
          f"{total_pct:.2f}% of a core, peak {sample['hwm'] / mb:.1f} MB: target < 1% and < 30 MB "
          f"{'met' if met else 'NOT met'}")
    return {"idle_cpu": idle["cpu"], "snapshot_pct": snap_pct, "sample_pct": sample_pct, "sample_total_pct": total_pct,
            "sample_rss": float(sample["rss"]), "sample_hwm": float(sample["hwm"]), "sample_p50": sample["p50"]}


if __name__ == "__main__":
    main()
