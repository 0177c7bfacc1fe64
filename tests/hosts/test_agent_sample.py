"""The agent's sample, pause and resume ops, run as a real subprocess over JSON lines (see test_agent.py), and
the same calls through the typed Host API on this machine and over SSH.

Fake builds are copies of tests/fakes/hog.c named like real tools. Counts are taken over the build's own
process tree (roots), so other tests' fake compilers on the machine never change them. Real OOM kills in a
memory cgroup are in tests/test_oom.py.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.hosts import Host
from bot.hosts.agent import cgroups, procs, sample
from bot.hosts.models import ProcId
from tests.fakes.users import fake_user, popen_as
from tests.hosts.test_agent import (
    BOOTSTRAP,
    IS_ROOT,
    MIB,
    Agent,
    Cleanup,
    alive,
    fake,
    needs_nobody,
    proc_info,
    start_of,
    wait_build_ready,
    wait_rss,
)
from tests.waiting import wait_until

ME = pwd.getpwuid(os.getuid()).pw_name


def root_of(proc: subprocess.Popen[bytes]) -> list[int]:
    return [proc.pid, start_of(proc.pid)]


def state_of(pid: int) -> str:
    info = proc_info(pid)
    assert info is not None, f"process {pid} is gone"
    return str(info["state"])


# ---------------------------------------------------------------------------------------------------------
# sample


def test_sample_reads_memory_pressure_and_counters(agent: Agent) -> None:
    s = agent.call("sample")
    meminfo = {k: int(v.split()[0]) * 1024 for k, v in
               (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines()) if "kB" in v}
    assert s["time"] == pytest.approx(time.time(), abs=5)
    assert s["mem_total"] == meminfo["MemTotal"] and s["swap_total"] == meminfo["SwapTotal"]
    assert abs(s["mem_available"] - meminfo["MemAvailable"]) < 0.05 * meminfo["MemTotal"]
    assert 0 <= s["swap_free"] <= s["swap_total"]
    vmstat = dict(line.split() for line in Path("/proc/vmstat").read_text().splitlines())
    if "oom_kill" in vmstat:
        assert s["oom_kill"] >= int(vmstat["oom_kill"])
    else:
        assert s["oom_kill"] is None
    try:
        Path("/proc/pressure/memory").read_text()
        assert set(s["psi"]) == {f"{k}_{f}" for k in ("some", "full") for f in ("avg10", "avg60", "total")}
        assert all(v >= 0 for v in s["psi"].values())
    except OSError:
        assert s["psi"] is None
    # No roots and no user: no build to look at.
    assert s["classes"] == {c: {"count": 0, "rss": 0, "max_rss": 0} for c in ("driver", "compiler", "linker")}
    assert s["top_compilers"] == [] and s["ended"] == [] and s["cgroup"] is None and s["tree"] == 0
    assert s["kernel"] is None or s["kernel"] == []  # a build's first sample is a baseline


def test_sample_counts_the_build_tree_by_class(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    user = fake_user()
    build = cleanup.popen(fake.start_fake_build(fake_bin, compilers=6, mb=16, driver_mb=2, user=user))
    linker = cleanup.popen(fake.start_tool(fake_bin, "ld", "24", user=user))  # the user's, outside the tree
    procs = wait_build_ready(build.pid, 6, 16)
    wait_rss(linker.pid, 24)
    compilers = [p for p in procs if p["comm"] not in ("sh", "ninja")]
    rss = {p["pid"]: proc_info(p["pid"])["rss"] for p in compilers}  # type: ignore[index]

    s = agent.call("sample", roots=[root_of(build)], cgroup=False)
    assert s["tree"] == 8  # sh, ninja, six compilers
    assert s["classes"]["driver"]["count"] == 1 and s["classes"]["driver"]["rss"] >= 2 * MIB
    comp = s["classes"]["compiler"]
    assert comp["count"] == 6
    assert abs(comp["rss"] - sum(rss.values())) < 6 * MIB and comp["max_rss"] >= 16 * MIB
    assert s["classes"]["linker"] == {"count": 0, "rss": 0, "max_rss": 0}
    top = s["top_compilers"]
    assert len(top) == 5 and {t["pid"] for t in top} <= set(rss)
    assert [t["rss"] for t in top] == sorted((t["rss"] for t in top), reverse=True)
    assert {t["name"] for t in top} <= {"cc1plus", "nvcc", "g++", "cicc", "ptxas"}
    assert all(t["start"] == start_of(t["pid"]) and t["user"] == (user or ME) for t in top)
    assert s["stale_roots"] == [] and s["cgroup"] is None

    # The build user's tools count too, in the tree or not: the linker now shows.
    s = agent.call("sample", roots=[root_of(build)], user=user or ME, cgroup=False)
    assert s["classes"]["linker"]["count"] >= 1 and s["classes"]["linker"]["max_rss"] >= 24 * MIB
    assert s["classes"]["compiler"]["count"] >= 6


def test_sample_ended_lists_finished_compilers_with_their_peak(agent: Agent, fake_bin: Path,
                                                               cleanup: Cleanup, public_tmp: Path) -> None:
    fifo = public_tmp / "go"
    os.mkfifo(fifo, 0o666)
    # ninja's child is a shell that becomes cc1plus (24 MiB) until the test writes to the fifo.
    build = cleanup.popen(popen_as(fake_user(), [
        "/bin/sh", "-c", f'{fake_bin}/ninja 1 -- /bin/sh -c "exec {fake_bin}/cc1plus 24 30"'
                         f' & read x < {fifo}; kill $!; wait']))
    roots = [root_of(build)]

    def compiler() -> dict[str, Any] | None:
        s = agent.call("sample", roots=roots)
        return next((t for t in s["top_compilers"] if t["rss"] >= 24 * MIB), None)

    cc1plus = wait_until(compiler, timeout=20, what="cc1plus at 24 MiB in a sample")
    assert cc1plus["name"] == "cc1plus"
    os.kill(cc1plus["pid"], 9)
    ended = wait_until(lambda: agent.call("sample", roots=roots)["ended"], timeout=20,
                       what="cc1plus to be reported ended")
    assert [(e["pid"], e["start"], e["name"]) for e in ended] == [(cc1plus["pid"], cc1plus["start"], "cc1plus")]
    assert ended[0]["peak_rss"] >= 24 * MIB
    assert agent.call("sample", roots=roots)["ended"] == []  # reported once
    with open(fifo, "w"):
        pass
    assert build.wait(timeout=20) == 0
    assert agent.call("sample", roots=roots)["stale_roots"] == roots


def test_sample_reads_the_build_cgroup(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    hog = cleanup.popen(fake.start_tool(fake_bin, "cc1plus", "8", user=fake_user()))
    wait_rss(hog.pid, 8)
    cg = agent.call("sample", roots=[root_of(hog)])["cgroup"]
    lines = Path(f"/proc/{hog.pid}/cgroup").read_text().splitlines()
    v1 = next((line.split(":", 2)[2] for line in lines if "memory" in line.split(":", 2)[1].split(",")), None)
    if cg is None:
        pytest.skip("no readable memory cgroup on this machine")
    if v1 is not None:
        assert cg["version"] == 1 and cg["path"] == v1 and cg["oom"] is None
    else:
        assert cg["version"] == 2 and cg["path"] == lines[0].split(":", 2)[2] and isinstance(cg["oom"], int)
    assert cg["current"] > 0 and isinstance(cg["oom_kill"], int)
    assert cg["exclusive"] is False  # shared with the test run itself
    assert agent.call("sample", roots=[root_of(hog)], cgroup=False)["cgroup"] is None


def test_sample_finds_the_limit_a_build_moved_into(agent: Agent, fake_bin: Path, cleanup: Cleanup,
                                                    cgroups: Any) -> None:
    """As under ``systemd-run --scope -p MemoryMax=``: the build's shell stays where it was started, its
    compiler runs in a memory cgroup with a limit; that limit is the build's."""
    cg = cgroups.make("moved", 256 * MIB)
    script = f"/bin/sh -c 'echo $$ > {cg}/cgroup.procs && exec {fake_bin}/cc1plus 8'; sleep 600"
    build = cleanup.popen(subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True))
    wait_until(lambda: bool((cg / "cgroup.procs").read_text().split()), what="the compiler in its cgroup")
    [compiler] = [int(p) for p in (cg / "cgroup.procs").read_text().split()]
    wait_rss(compiler, 8)
    sample = agent.call("sample", roots=[root_of(build)])
    found = sample["cgroup"]
    assert found["path"].endswith(cg.name), (sample["top_compilers"], Path(f"/proc/{compiler}/cgroup").read_text())
    assert found["limit"] == 256 * MIB and found["exclusive"] is True
    assert 8 * MIB <= found["working_set"] <= found["current"] and found["peak"] >= found["current"]


def test_a_compiler_says_which_compile_job_it_works_for(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    """nvcc → sh → cicc, and g++ → cc1plus, under the build's shell: cicc works for nvcc (through nvcc's shell),
    cc1plus for g++; a compiler the build's shell runs itself is its own job."""
    script = (f"{fake_bin}/nvcc 1 -- /bin/sh -c '{fake_bin}/cicc 6; :' & "
              f"{fake_bin}/g++-12 1 -- {fake_bin}/cc1plus 5 & {fake_bin}/ptxas 4 & wait")
    build = cleanup.popen(subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True))
    names = {"nvcc", "cicc", "g++", "cc1plus", "ptxas"}
    wait_until(lambda: {c["name"] for c in agent.call("sample", roots=[root_of(build)], top=10)["top_compilers"]}
               >= names, what="the compile jobs to start")
    top = {c["name"]: c for c in agent.call("sample", roots=[root_of(build)], top=10)["top_compilers"]}
    assert top["cicc"]["job"] == top["nvcc"]["pid"] == top["nvcc"]["job"]
    assert top["cc1plus"]["job"] == top["g++"]["pid"] == top["g++"]["job"]
    assert top["ptxas"]["job"] == top["ptxas"]["pid"]


def test_cgroup_memory_reads_v2_files(tmp_path: Path) -> None:
    base = tmp_path / "build.slice" / "job"
    base.mkdir(parents=True)
    (base / "memory.current").write_text("104857600\n")
    (base / "memory.max").write_text("max\n")
    (base / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n")
    (base / "cgroup.procs").write_text("101\n102\n")
    cg = cgroups.cgroup_memory(2, "/build.slice/job", str(tmp_path), {100, 101, 102})
    assert cg == {"version": 2, "path": "/build.slice/job", "current": 100 * MIB, "working_set": 100 * MIB,
                  "peak": None, "limit": None, "oom": 2, "oom_kill": 1, "exclusive": True}
    (base / "memory.max").write_text("536870912\n")
    cg = cgroups.cgroup_memory(2, "/build.slice/job", str(tmp_path), {101})
    assert cg is not None and cg["limit"] == 512 * MIB and cg["exclusive"] is False
    assert cgroups.cgroup_memory(2, "/gone", str(tmp_path), set()) is None


def test_a_cgroup_counts_its_ancestors_limits_and_leaves_out_the_file_cache(tmp_path: Path) -> None:
    """A Slurm job's limit binds its steps (v2: the tightest memory.max up the tree; v1: the kernel's
    hierarchical_memory_limit), and page cache the kernel can drop is not what a build runs out of."""
    job = tmp_path / "slurm" / "job_7"
    step = job / "step_0"
    step.mkdir(parents=True)
    (tmp_path / "slurm" / "memory.max").write_text("max\n")
    (job / "memory.max").write_text(f"{900 * MIB}\n")
    (step / "memory.max").write_text("max\n")
    (step / "memory.current").write_text(f"{400 * MIB}\n")
    (step / "memory.peak").write_text(f"{450 * MIB}\n")
    (step / "memory.stat").write_text(f"anon {250 * MIB}\nfile {150 * MIB}\nactive_file {60 * MIB}\n"
                                      f"inactive_file {90 * MIB}\nfile_mapped {20 * MIB}\n")
    cg = cgroups.cgroup_memory(2, "/slurm/job_7/step_0", str(tmp_path), set())
    assert cg is not None and cg["limit"] == 900 * MIB and cg["peak"] == 450 * MIB
    assert cg["working_set"] == 400 * MIB - (150 - 20) * MIB  # the mapped executables stay

    v1 = tmp_path / "v1" / "job"
    v1.mkdir(parents=True)
    (v1 / "memory.usage_in_bytes").write_text(f"{300 * MIB}\n")
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (v1 / "memory.max_usage_in_bytes").write_text(f"{310 * MIB}\n")
    (v1 / "memory.stat").write_text(f"cache {100 * MIB}\nhierarchical_memory_limit {512 * MIB}\n"
                                    f"total_active_file {30 * MIB}\ntotal_inactive_file {70 * MIB}\n"
                                    f"total_mapped_file {10 * MIB}\n")
    cg = cgroups.cgroup_memory(1, "/job", str(tmp_path / "v1"), set())
    assert cg is not None and cg["limit"] == 512 * MIB and cg["peak"] == 310 * MIB
    assert cg["working_set"] == 210 * MIB


def test_sample_bad_requests(agent: Agent) -> None:
    assert agent.call_error("sample", roots="1")["type"] == "bad_request"
    assert agent.call_error("sample", roots=[[1, 2, 3]])["type"] == "bad_request"
    assert agent.call_error("sample", cgroup="yes")["type"] == "bad_request"
    assert agent.call_error("sample", user="no-such-user-rigops")["type"] == "unknown_user"


# ---------------------------------------------------------------------------------------------------------
# The kernel log: canned lines, and the dmesg fallback

KMSG_LINES = [
    # Linux 6.x, a memory cgroup at its limit (as recorded on this project's test machine)
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/build/job,"
    "task_memcg=/build/job,task=cc1plus,pid=4242,uid=1000",
    "Memory cgroup out of memory: Killed process 4242 (cc1plus) total-vm:7340032kB, anon-rss:7120000kB, "
    "file-rss:1220kB, shmem-rss:0kB, UID:1000 pgtables:14000kB oom_score_adj:0",
    # the host out of memory
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
    "task_memcg=/user.slice/user-0.slice,task=cicc,pid=777,uid=0",
    "Out of memory: Killed process 777 (cicc) total-vm:9000000kB, anon-rss:8800000kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:0 pgtables:17000kB oom_score_adj:0",
    # Linux 4.x: no oom-kill: line; "Kill process" (the choice) is not a kill
    "Out of memory: Kill process 9001 (x86_64-linux-gn) score 958 or sacrifice child",
    "Killed process 9001 (x86_64-linux-gn) total-vm:8000000kB, anon-rss:7900000kB, file-rss:0kB, shmem-rss:0kB",
    "oom_reaper: reaped process 9001 (x86_64-linux-gn), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    "cc1plus invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
]


def test_kernel_log_parses_oom_lines_from_several_kernels() -> None:
    log = sample.KernelLog(kmsg_path="/nonexistent", dmesg=None)
    for line in KMSG_LINES:
        log.take(line)
    events = [{k: v for k, v in e.items() if k != "line"} for e in log.after(0)]
    assert events == [
        {"seq": 1, "victim_pid": 4242, "comm": "cc1plus", "uid": 1000, "cgroup": "/build/job",
         "oom_cgroup": "/build/job"},
        {"seq": 2, "victim_pid": 777, "comm": "cicc", "uid": 0, "cgroup": "/user.slice/user-0.slice",
         "oom_cgroup": None},
        {"seq": 3, "victim_pid": 9001, "comm": "x86_64-linux-gn", "uid": None, "cgroup": None, "oom_cgroup": None},
    ]
    assert log.after(0)[0]["line"] == KMSG_LINES[1]
    assert log.after(2) == log.after(0)[2:]
    assert log.poll(None) is None  # neither /dev/kmsg nor dmesg: null


def fake_dmesg(tmp_path: Path, *, exit_status: int = 0) -> tuple[Path, Path, Path]:
    """A dmesg that prints ``log`` (and counts its runs in ``runs``)."""
    text, runs, exe = tmp_path / "log", tmp_path / "runs", tmp_path / "dmesg"
    text.write_text("[    1.000000] Linux version 6.1\n")
    exe.write_text(f'#!/bin/sh\necho run >> {runs}\ncat {text}\n'
                   + (f'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2; exit {exit_status}\n'
                      if exit_status else ""))
    exe.chmod(0o755)
    return exe, text, runs


def test_kernel_log_falls_back_to_dmesg_and_runs_it_only_after_a_kill(tmp_path: Path) -> None:
    exe, text, runs = fake_dmesg(tmp_path)
    old = f"[  100.000000] {KMSG_LINES[3]}\n"
    text.write_text(text.read_text() + old)
    log = sample.KernelLog(kmsg_path=str(tmp_path / "no-kmsg"), dmesg=str(exe))
    assert log.poll(5) == 0 and log.source == "dmesg"  # what was logged before is history
    assert log.poll(5) == 0 and len(runs.read_text().split()) == 1  # the counter did not move: no run
    with text.open("a") as f:
        f.write(f"[  200.000000] {KMSG_LINES[0]}\n[  200.000100] {KMSG_LINES[1]}\n")
    assert log.poll(6) == 1
    (event,) = log.after(0)
    assert (event["victim_pid"], event["cgroup"], event["line"]) == (4242, "/build/job", KMSG_LINES[1])
    assert log.poll(6) == 1  # runs again a couple of times (a line may trail its count), finds nothing new
    assert log.after(1) == []


@pytest.mark.parametrize("dmesg", ["missing", "restricted"])
def test_kernel_log_is_null_where_unreadable(tmp_path: Path, dmesg: str) -> None:
    exe = tmp_path / "no-dmesg" if dmesg == "missing" else fake_dmesg(tmp_path, exit_status=1)[0]
    log = sample.KernelLog(kmsg_path=str(tmp_path / "no-kmsg"), dmesg=str(exe))
    assert log.poll(3) is None and log.poll(4) is None and log.source == "none"


@pytest.mark.skipif(not IS_ROOT, reason="needs root: writes a record into the kernel log (/dev/kmsg) and reads it "
                    "back (reading needs CAP_SYSLOG where kernel.dmesg_restrict is 1)")
def test_kernel_log_reads_new_kmsg_records_only() -> None:
    if not os.access("/dev/kmsg", os.R_OK | os.W_OK):
        pytest.skip("no /dev/kmsg to write and read here")
    log = sample.KernelLog()
    assert log.poll(None) == 0
    marker = f"rigops-test-{os.getpid()}"
    with open("/dev/kmsg", "w") as kmsg:
        kmsg.write(f"{marker}: Killed process 4 ({marker[:15]}) total-vm:1kB, UID:0\n")
    seq = wait_until(lambda: log.poll(None), timeout=20, what="the record to be read")
    assert [(e["victim_pid"], e["comm"]) for e in log.after(seq - 1)] == [(4, marker[:15])]
    assert log.poll(None) == seq


# ---------------------------------------------------------------------------------------------------------
# pause, resume


def test_pause_and_resume_by_identity(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    user = fake_user()
    hog = cleanup.popen(fake.start_tool(fake_bin, "cicc", "4", user=user))
    wait_rss(hog.pid, 4)
    me = root_of(hog)
    stale = [hog.pid, me[1] + 1]
    result = agent.call("pause", targets=[me, stale], user=user)
    assert [(p["pid"], p["start"], p["name"]) for p in result["signalled"]] == [(hog.pid, me[1], "cicc")]
    assert result["stale"] == [stale] and result["skipped"] == [] and result["denied"] == []
    wait_until(lambda: state_of(hog.pid) == "T", timeout=20, what="the compiler to stop")
    assert [p["pid"] for p in agent.call("resume", targets=[me], user=user)["signalled"]] == [hog.pid]
    wait_until(lambda: state_of(hog.pid) != "T", timeout=20, what="the compiler to go on")
    assert alive(*me)


def test_pause_never_touches_the_agent_or_pid_1(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent(argv=["/bin/sh", "-c", '"$0" -u -c "$1"; exit $?', sys.executable,
                              BOOTSTRAP])
    hello = agent.call("hello")
    targets = [[hello["pid"], start_of(hello["pid"])], [agent.pid, start_of(agent.pid)], [1, start_of(1)]]
    result = agent.call("pause", targets=targets)
    assert result["signalled"] == []
    assert sorted((s["pid"], s["reason"]) for s in result["skipped"]) == sorted(
        [(hello["pid"], "protected"), (agent.pid, "protected"), (1, "protected")])
    assert state_of(agent.pid) != "T" and agent.call("ping")


@needs_nobody
def test_pause_spares_other_users_unless_asked(agent: Agent, fake_bin: Path, cleanup: Cleanup) -> None:
    theirs = cleanup.popen(fake.start_tool(fake_bin, "cc1plus", "2", user="nobody"))
    wait_rss(theirs.pid, 2)
    target = [root_of(theirs)]
    result = agent.call("pause", targets=target)
    assert [(s["pid"], s["reason"], s["user"]) for s in result["skipped"]] == [(theirs.pid, "other_user", "nobody")]
    assert state_of(theirs.pid) != "T"
    assert [p["pid"] for p in agent.call("pause", targets=target, user="nobody")["signalled"]] == [theirs.pid]
    wait_until(lambda: state_of(theirs.pid) == "T", timeout=20, what="their compiler to stop")
    assert agent.call("resume", targets=target)["skipped"][0]["reason"] == "other_user"
    assert [p["pid"] for p in agent.call("resume", targets=target, user="nobody")["signalled"]] == [theirs.pid]
    wait_until(lambda: state_of(theirs.pid) != "T", timeout=20, what="their compiler to go on")


@needs_nobody
def test_pause_as_another_user_is_forbidden_without_root(start_agent: Callable[..., Agent]) -> None:
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python3 that nobody can run")
    agent = start_agent(argv=[python, "-u", "-c", BOOTSTRAP], user="nobody",
                        group="nogroup", extra_groups=[], cwd="/")
    assert agent.call_error("pause", targets=[[1, start_of(1)]], user="root")["type"] == "forbidden"


def test_pause_bad_requests(agent: Agent) -> None:
    assert agent.call_error("pause")["type"] == "bad_request"
    assert agent.call_error("pause", targets=[])["type"] == "bad_request"
    assert agent.call_error("resume", targets=[[1]])["type"] == "bad_request"
    assert agent.call_error("resume", targets=[[1, 1]], user="no-such-user-rigops")["type"] == "unknown_user"


def test_sample_and_pause_run_on_python38(start_agent: Callable[..., Agent], fake_bin: Path,
                                          cleanup: Cleanup) -> None:
    candidates = sorted(Path.home().glob(".pyenv/versions/3.8*/bin/python3.8"))
    python = str(candidates[-1]) if candidates else None
    if python is None:
        pytest.skip("no python3.8 on this machine")
    agent = start_agent(python=python)
    assert agent.call("hello")["python"].startswith("3.8.")
    user = fake_user()
    build = cleanup.popen(fake.start_fake_build(fake_bin, compilers=2, mb=4, user=user))
    wait_build_ready(build.pid, 2, 4)
    s = agent.call("sample", roots=[root_of(build)])
    assert s["classes"]["compiler"]["count"] == 2 and s["mem_total"] > 0
    again = agent.call("sample", roots=[root_of(build)], user=user or ME)  # the user's strays between full scans
    assert again["classes"]["compiler"]["count"] >= 2 and again["tree"] == s["tree"] == 4
    assert agent.call("sample", roots=[root_of(build)], user=user or ME)["classes"]["compiler"]["count"] >= 2
    top = s["top_compilers"][0]
    assert agent.call("pause", targets=[[top["pid"], top["start"]]], user=user)["signalled"]
    assert agent.call("resume", targets=[[top["pid"], top["start"]]], user=user)["signalled"]


# ---------------------------------------------------------------------------------------------------------
# The typed Host API, on this machine and over SSH


async def test_host_sample_pause_resume(host: Host, fake_bin: Path, build_user: str) -> None:
    user = build_user if IS_ROOT else None
    build = fake.start_fake_build(fake_bin, compilers=3, mb=8, user=user)
    try:
        wait_build_ready(build.pid, 3, 8)
        root = ProcId(build.pid, start_of(build.pid))
        first = await host.sample(roots=[root], user=build_user)
        assert first.host == host.name and first.mem_total > first.mem_available > 0
        assert first.drivers.count >= 1 and first.compilers.count >= 3  # other fakes of the build user count too
        assert first.compilers.max_rss >= 8 * MIB and first.compilers.mean_rss > 0
        assert first.tree == 5 and first.stale_roots == ()
        assert first.kernel is None or first.kernel == ()
        heaviest = [p.proc_id for p in first.top_compilers if p.pid in fake.session_members(build.pid)]
        paused = await host.pause(heaviest[:2], user=build_user)
        assert [p.proc_id for p in paused.signalled] == heaviest[:2]
        wait_until(lambda: all(state_of(pid) == "T" for pid, _ in heaviest[:2]), timeout=20,
                   what="the heaviest compilers to stop")
        resumed = await host.resume(heaviest[:2], user=build_user)
        assert [p.proc_id for p in resumed.signalled] == heaviest[:2] and not resumed.skipped
        stale = root._replace(start=root.start + 1)
        gone = await host.resume([stale], user=build_user)
        assert gone.stale == (stale,) and not gone.signalled
    finally:
        fake.stop(build)
    later = await host.sample(roots=[root], user=build_user)
    assert later.stale_roots == (root,) and later.tree == 0


def test_a_compiler_is_named_for_the_program_it_became() -> None:
    """g++ forks, and its child is seen once before it execs cc1plus (same pid and start): its peak is
    cc1plus's, never the driver's (the advisor and the guard learn per name)."""
    watch = sample._Watch()
    child = procs.Stat(4242, b"g++", b"R", 4241, 777, 2 * MIB)
    assert sample._follow_peaks(watch, [child]) == []
    grown = procs.Stat(4242, b"cc1plus", b"R", 4241, 777, 190 * MIB)
    assert sample._follow_peaks(watch, [grown]) == []
    assert sample._follow_peaks(watch, []) == [{"pid": 4242, "start": 777, "name": "cc1plus",
                                                      "peak_rss": 190 * MIB}]
