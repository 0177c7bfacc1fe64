"""The -j advisor (bot/memory/advisor.py) and the compiler memory kept per build (bot/store.py's job_memory).

Recorded samples (the agent's sample JSON, as Sample.from_json reads it) with known answers first, then a
real fake build sampled on this machine: compilers holding known memory, their peaks, the advice.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.hosts import Host
from bot.hosts.models import Sample
from bot.memory.advisor import (
    JobMemory,
    Share,
    advise,
    advise_build,
    first_advice,
    looks_like_cuda,
    nvcc_threads,
    percentile,
    room_for,
    size_text,
)
from bot.store import JOB_MEMORY_RUNS, Store
from tests.fakes.tools import start_tool, stop
from tests.fakes.users import fake_user
from tests.waiting import eventually

MIB = 1 << 20
GIB = 1 << 30


def recorded(t: float, ended: list[tuple[int, str, float]]) -> Sample:
    """One sample as the agent sends it: ``ended`` compilers as (pid, name, peak GiB)."""
    d: dict[str, Any] = {
        "time": t, "mem_total": 449 * GIB, "mem_available": 300 * GIB, "swap_total": 0, "swap_free": 0,
        "psi": None, "classes": {"driver": {"count": 1, "rss": 50 * MIB, "max_rss": 50 * MIB},
                                 "compiler": {"count": 64, "rss": 400 * GIB, "max_rss": 7 * GIB}},
        "top_compilers": [], "oom_kill": 0, "cgroup": None, "kernel": [], "tree": 70, "stale_roots": [],
        "ended": [{"pid": pid, "start": 100 + pid, "name": name, "peak_rss": int(gib * GIB)}
                  for pid, name, gib in ended],
    }
    return Sample.from_json("b200", d)


def run_of(peaks: list[float], *, first_pid: int) -> JobMemory:
    """A run whose compilers ended over several samples; each ends once, nvcc drivers small, cicc big."""
    job = JobMemory()
    ended = [(first_pid + i, "cicc" if gib > 1 else "nvcc", gib) for i, gib in enumerate(peaks)]
    for t in range(0, len(ended), 3):
        job.add(recorded(t, ended[t : t + 3]))
    job.add(recorded(99, []))
    return job


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "state")


def test_advice_from_two_recorded_runs(store: Store) -> None:
    run1 = run_of([0.2] * 10 + [6.5] * 10, first_pid=1000)
    run2 = run_of([0.2] * 10 + [6.6] * 7 + [6.8] * 3, first_pid=2000)
    assert sorted(run1.values) == sorted([int(0.2 * GIB)] * 10 + [int(6.5 * GIB)] * 10)
    assert run1.label == run2.label == "nvcc"  # the heaviest 5% are cicc: CUDA jobs
    store.record_job_memory("b200", "sgl-kernel", run1.values, label=run1.label)
    store.record_job_memory("b200", "sgl-kernel", run2.values, label=run2.label)
    advice = advise_build(store, "b200", "sgl-kernel", mem_total=449 * GIB, cores=128)
    assert advice is not None
    # 40 peaks: the 38th smallest (p95, nearest rank) is one of run 2's 6.8 GiB cicc processes.
    assert advice.per_job_bytes == int(6.8 * GIB) and advice.runs == 2
    assert advice.usable_bytes == int(449 * GIB * 0.9)
    assert advice.jobs == int(449 * GIB * 0.9) // int(6.8 * GIB) == 59
    assert advice.reasoning == "~6.8 GiB per nvcc job at p95 over 2 runs, 404 GiB usable of 449 GiB on the host → -j59"
    assert advise_build(store, "b200", "other-build", mem_total=449 * GIB, cores=128) is None
    assert advise_build(store, "a100", "sgl-kernel", mem_total=449 * GIB, cores=128) is None


def test_nvcc_threads_multiply_the_per_job_memory() -> None:
    advice = advise([int(1.7 * GIB)] * 20, runs=1, mem_total=449 * GIB, cores=128, nvcc_threads=4, label="nvcc")
    assert advice is not None and advice.per_job_bytes == 4 * int(1.7 * GIB)
    assert advice.jobs == int(449 * GIB * 0.9) // (4 * int(1.7 * GIB)) == 59
    assert advice.reasoning == ("~1.7 GiB per compiler process × 4 nvcc threads = ~6.8 GiB per nvcc job at p95 "
                                "over 1 run, 404 GiB usable of 449 GiB on the host → -j59")


# The peaks of each kind of process of examples/cuda's thrust sorts for sm_80, sm_90 and sm_100 on CUDA 13's nvcc
# (tests/cuda/test_nvcc_threads.py measures the shape: cudafe++ and the host cc1plus once, cicc and ptxas once
# per architecture, --threads of them at once). Its tree's sum peaked at 786 MiB with --threads 1, 1.5 GiB with
# 2, 2.3 GiB with 4 (three at once: the job had three architectures, which the advisor does not know).
SORTS = {"nvcc": 3 * MIB, "gcc": 2 * MIB, "cc1plus": 401 * MIB, "cudafe++": 642 * MIB, "cicc": 781 * MIB,
         "ptxas": 79 * MIB, "fatbinary": 8 * MIB}
# A job whose front end outweighs its per-architecture steps: --threads hardly adds to it.
FRONT_HEAVY = {"nvcc": 15 * MIB, "cc1plus": 150 * MIB, "cudafe++": 400 * MIB, "cicc": 90 * MIB, "ptxas": 60 * MIB}


@pytest.mark.parametrize(
    ("by_name", "threads", "per_job", "size"),
    [
        (SORTS, 1, 784 * MIB, "~784 MiB per nvcc job at p95 over 2 runs"),
        (SORTS, 2, 1565 * MIB, "~1.5 GiB per nvcc job (2 × ~781 MiB cicc in parallel with --threads 2, more than "
                               "cudafe++ ~642 MiB once) at p95 over 2 runs"),
        (SORTS, 4, 3127 * MIB, "~3.1 GiB per nvcc job (4 × ~781 MiB cicc in parallel with --threads 4, more than "
                               "cudafe++ ~642 MiB once) at p95 over 2 runs"),
        (FRONT_HEAVY, 1, 415 * MIB, "~415 MiB per nvcc job at p95 over 2 runs"),
        (FRONT_HEAVY, 2, 415 * MIB, "~415 MiB per nvcc job (cudafe++ ~400 MiB once, more than 2 × ~90 MiB cicc in "
                                    "parallel with --threads 2) at p95 over 2 runs"),
        (FRONT_HEAVY, 8, 735 * MIB, "~735 MiB per nvcc job (8 × ~90 MiB cicc in parallel with --threads 8, more than "
                                    "cudafe++ ~400 MiB once) at p95 over 2 runs"),
        ({"ptxas": GIB}, 3, 3 * GIB, "~3.0 GiB per nvcc job (3 × ~1.0 GiB ptxas in parallel with --threads 3) at p95 "
                                     "over 2 runs"),
        # no cicc or ptxas: a C/C++ build, or runs kept before the peaks by name: the p95 of all, times the threads
        ({"cc1plus": 300 * MIB, "g++": 5 * MIB}, 2, 2 * GIB, "~1.0 GiB per compiler process × 2 nvcc threads = "
                                                             "~2.0 GiB per nvcc job at p95 over 2 runs"),
        ({}, 1, GIB, "~1.0 GiB per nvcc job at p95 over 2 runs"),
    ],
)
def test_nvcc_threads_multiply_only_the_per_architecture_steps(by_name: dict[str, int], threads: int, per_job: int,
                                                               size: str) -> None:
    advice = advise([GIB] * 20, runs=2, mem_total=64 * GIB, cores=1024, nvcc_threads=threads, label="nvcc",
                    by_name=by_name)
    assert advice is not None and advice.per_job_bytes == per_job
    assert advice.jobs == int(64 * GIB * 0.9) // per_job
    assert advice.reasoning == f"{size}, 57.6 GiB usable of 64.0 GiB on the host → -j{advice.jobs}"


def test_the_advice_sizes_an_nvcc_job_from_the_peaks_by_name_its_runs_kept(store: Store) -> None:
    # a run kept before the peaks by name, then one with them: the by-name model, over both runs' count
    store.record_job_memory("b200", "sgl-kernel", [400 * MIB] * 20, label="nvcc")
    old = advise_build(store, "b200", "sgl-kernel", mem_total=23 * GIB, cores=64, nvcc_threads=2)
    assert old is not None and old.per_job_bytes == 800 * MIB and old.jobs == 26  # 2 × the p95 of all: too much
    store.record_job_memory("b200", "sgl-kernel", [15 * MIB, 60 * MIB, 90 * MIB, 150 * MIB, 400 * MIB], label="nvcc",
                            by_name=FRONT_HEAVY)
    advice = advise_build(store, "b200", "sgl-kernel", mem_total=23 * GIB, cores=64, nvcc_threads=2)
    assert advice is not None and advice.per_job_bytes == 415 * MIB and advice.jobs == 51
    assert advice.reasoning == ("~415 MiB per nvcc job (cudafe++ ~400 MiB once, more than 2 × ~90 MiB cicc in "
                                "parallel with --threads 2) at p95 over 2 runs, 20.7 GiB usable of 23.0 GiB on the "
                                "host → -j51")


def test_cores_reserve_and_jobs_too_big() -> None:
    capped = advise([2 * GIB] * 5, runs=3, mem_total=512 * GIB, cores=32)
    assert capped is not None and capped.jobs == 32
    assert capped.reasoning == ("~2.0 GiB per compile job at p95 over 3 runs, 461 GiB usable of 512 GiB on the host "
                                "→ -j32 (capped at 32 cores)")
    tight = advise([2 * GIB] * 5, runs=1, mem_total=64 * GIB, cores=32, reserve=0.5)
    assert tight is not None and tight.jobs == 16 and tight.usable_bytes == 32 * GIB
    huge = advise([80 * GIB], runs=1, mem_total=64 * GIB, cores=32)
    assert huge is not None and huge.jobs == 1 and huge.reasoning.endswith("→ -j1 (one job needs more than that: "
                                                                           "expect trouble even at -j1)")
    assert advise([], runs=0, mem_total=64 * GIB, cores=8) is None
    assert advise([0, 0], runs=1, mem_total=64 * GIB, cores=8) is None


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 95) == 0
    assert percentile([5], 95) == 5
    assert percentile(list(range(1, 21)), 95) == 19
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([3, 1, 2], 50) == 2
    assert [size_text(n) for n in (449 * GIB, int(6.8 * GIB), 512 * MIB)] == ["449 GiB", "6.8 GiB", "512 MiB"]


@pytest.mark.parametrize(
    ("command", "env", "expected"),
    [
        ("uv pip install -e . --no-build-isolation -v", {}, 1),
        ("python setup.py build", {"NVCC_THREADS": "8"}, 8),
        ("nvcc --threads 4 -c k.cu", {}, 4),
        ("nvcc --threads=2 -c k.cu", {}, 2),
        ("nvcc --threads 0 -c k.cu", {}, 96),  # 0: one per core
        ("docker run -t 4 img", {}, 1),  # -t is only nvcc's in nvcc's own flags
        ("make", {"NVCC_APPEND_FLAGS": "-t 3 -lineinfo"}, 3),
        ("make", {"NVCC_PREPEND_FLAGS": "--threads=6", "NVCC_THREADS": "2"}, 6),
        ("make 'unbalanced", {"NVCC_THREADS": "x"}, 1),
    ],
)
def test_nvcc_threads_from_command_and_environment(command: str, env: dict[str, str], expected: int) -> None:
    assert nvcc_threads(command, env, cores=96) == expected


def test_job_memory_keeps_the_last_runs_per_build(tmp_path: Path, store: Store) -> None:
    store.record_job_memory("b200", "sgl", [])  # nothing observed: nothing kept
    assert store.job_memory("b200", "sgl") == [] and store.job_memory_runs("b200", "sgl") == 0
    for run in range(JOB_MEMORY_RUNS + 3):
        store.record_job_memory("b200", "sgl", [run * MIB, run * MIB + 1])
    store.record_job_memory("b200", "flash-attn", [7])
    store.record_job_memory("h100", "sgl", [9])
    kept = store.job_memory("b200", "sgl")
    assert store.job_memory_runs("b200", "sgl") == JOB_MEMORY_RUNS
    assert sorted(kept) == sorted(v for run in range(3, JOB_MEMORY_RUNS + 3) for v in (run * MIB, run * MIB + 1))
    assert store.job_memory("b200", "flash-attn") == [7] and store.job_memory("h100", "sgl") == [9]
    store.close()
    again = Store.open(tmp_path / "state")
    assert sorted(again.job_memory("b200", "sgl")) == sorted(kept)


@pytest.mark.parametrize(
    ("limits", "others", "jobs", "room"),
    [
        ({}, (), 8, "20.7 GiB usable of 23.0 GiB on the host → -j8 (capped at 8 cores)"),
        # a container's --memory, a Slurm job's: what the host's agent (and every build it starts) runs under
        ({"limit": 900 * MIB}, (), 1, "810 MiB usable of the build's 900 MiB memory limit → -j1"),
        # the limit the build's last run ran under (its own systemd-run -p MemoryMax= scope)
        ({"own_limit": 900 * MIB}, (), 1, "810 MiB usable of the build's 900 MiB memory limit → -j1"),
        ({"limit": 2 * GIB, "own_limit": 900 * MIB}, (), 1, "810 MiB usable of the build's 900 MiB memory limit → -j1"),
        # other builds share the host's limit, but are not inside a build's own scope
        ({"limit": 2 * GIB}, (Share("two", 512 * MIB),), 3,
         "1.3 GiB usable of the build's 2.0 GiB memory limit after 512 MiB for `two` → -j3"),
        ({"own_limit": 2 * GIB}, (Share("two", 512 * MIB),), 4,
         "1.8 GiB usable of the build's 2.0 GiB memory limit → -j4"),
        ({"limit": 2 * GIB, "own_limit": 2 * GIB}, (Share("two", 512 * MIB),), 3,
         "1.3 GiB usable of the build's 2.0 GiB memory limit after 512 MiB for `two` → -j3"),
        # no tighter than the host: not a limit worth naming
        ({"limit": 64 * GIB, "own_limit": 23 * GIB}, (), 8,
         "20.7 GiB usable of 23.0 GiB on the host → -j8 (capped at 8 cores)"),
        ({"limit": 0}, (), 8, "20.7 GiB usable of 23.0 GiB on the host → -j8 (capped at 8 cores)"),
    ],
)
def test_the_advice_fits_the_tightest_memory_and_names_it(limits: dict[str, int], others: tuple[Share, ...],
                                                          jobs: int, room: str) -> None:
    advice = advise([420 * MIB] * 20, runs=2, mem_total=23 * GIB, cores=8, others=others, **limits)
    assert advice is not None and advice.jobs == jobs
    assert advice.reasoning == f"~420 MiB per compile job at p95 over 2 runs, {room}"
    assert advice.usable_bytes == room_for(23 * GIB, others=others, **limits).usable
    assert (advice.limit_bytes is not None) == ("memory limit" in room)


def test_the_advice_keeps_within_the_limit_the_last_run_ran_under(store: Store) -> None:
    store.record_job_memory("b200", "llama", [420 * MIB] * 20, label="compile", limit=900 * MIB)
    limited = advise_build(store, "b200", "llama", mem_total=23 * GIB, cores=8)
    assert limited is not None and limited.jobs == 1 and limited.limit_bytes == 900 * MIB
    assert limited.reasoning == ("~420 MiB per compile job at p95 over 1 run, 810 MiB usable of the build's "
                                 "900 MiB memory limit → -j1")
    # the host's limit for builds, when tighter than the last run's own
    tighter = advise_build(store, "b200", "llama", mem_total=23 * GIB, cores=8, limit=850 * MIB)
    assert tighter is not None and tighter.limit_bytes == 850 * MIB
    store.record_job_memory("b200", "llama", [420 * MIB] * 20, label="compile")  # the next run had none
    free = advise_build(store, "b200", "llama", mem_total=23 * GIB, cores=8)
    assert free is not None and free.jobs == 8 and free.limit_bytes is None and "on the host" in free.reasoning


@pytest.mark.parametrize(
    ("cuda", "threads", "limit", "jobs", "reasoning"),
    [
        (True, 1, None, 3, "~4.0 GiB per nvcc job, 14.4 GiB usable of 16.0 GiB on the host → -j3"),
        (True, 2, None, 1, "~4.0 GiB per compiler process × 2 nvcc threads = ~8.0 GiB per nvcc job, 14.4 GiB usable "
                           "of 16.0 GiB on the host → -j1"),
        (False, 1, None, 8, "~1.5 GiB per compile job, 14.4 GiB usable of 16.0 GiB on the host → -j8 "
                            "(capped at 8 cores)"),
        (False, 4, None, 8, "~1.5 GiB per compile job, 14.4 GiB usable of 16.0 GiB on the host → -j8 "
                            "(capped at 8 cores)"),  # no CUDA: nvcc's threads are no one's
        (False, 1, 4 * GIB, 2, "~1.5 GiB per compile job, 3.6 GiB usable of the build's 4.0 GiB memory limit → -j2"),
        (True, 1, 2 * GIB, 1, "~4.0 GiB per nvcc job, 1.8 GiB usable of the build's 2.0 GiB memory limit → -j1 "
                              "(one job needs more than that: expect trouble even at -j1)"),
    ],
)
def test_a_first_run_starts_at_what_a_conservative_estimate_lets_fit(cuda: bool, threads: int, limit: int | None,
                                                                     jobs: int, reasoning: str) -> None:
    advice = first_advice(cuda=cuda, mem_total=16 * GIB, cores=8, nvcc_threads=threads, limit=limit)
    assert advice is not None and advice.jobs == jobs and advice.runs == 0
    assert first_advice(cuda=cuda, mem_total=0, cores=8) is None  # memory unknown: no estimate
    assert advice.reasoning == f"no runs to learn from yet — a conservative {reasoning}; rigops learns from this run"


@pytest.mark.parametrize(
    ("command", "env", "names", "threads", "expected"),
    [
        ("uv pip install . --no-build-isolation -v", {}, ("sgl-kernel", "~/sglang/sgl-kernel"), 1, True),  # the seed
        ("python -m pip install . --no-build-isolation -v", {"CUDA_ARCHS": "90"}, ("ext", "."), 1, True),
        ("cmake --build build", {"CUDACXX": "/usr/local/cuda/bin/nvcc"}, ("ops", "~/ops"), 1, True),
        ("cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build", {}, ("ops", "~/ops"), 1, True),
        ("python setup.py build_ext", {"TORCH_CUDA_ARCH_LIST": "9.0"}, ("ext", "~/ext"), 1, True),
        ("make ARCH=sm_90a", {}, ("ops", "~/ops"), 1, True),
        ("pip install . -v", {}, ("fa", "~/src/flash-attention"), 1, True),
        ("pip install . -v", {}, ("ext", "~/ext"), 4, True),  # nvcc --threads 4 somewhere in its flags
        ("cmake --build build --parallel {jobs}", {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"}, ("demo", "."), 1, False),
        ("pip install . -v", {}, ("llama-cpp-python", "~/src/llama-cpp-python"), 1, False),
        ("make -C asm_90", {}, ("ops", "~/ops"), 1, False),
    ],
)
def test_a_cuda_build_is_told_by_its_command_environment_and_names(command: str, env: dict[str, str],
                                                                  names: tuple[str, str], threads: int,
                                                                  expected: bool) -> None:
    assert looks_like_cuda(command, env, names=names, nvcc_threads=threads) is expected


# ---------------------------------------------------------------------------------------------------------
# A real run on this machine


async def test_advice_from_a_sampled_fake_build(local_host: Host, fake_bin: Path, store: Store) -> None:
    # ninja running four compilers that hold 12, 12, 16 and 40 MiB for 1.5 s each, then end.
    compilers = [("cc1plus", 12), ("nvcc", 12), ("cicc", 16), ("ptxas", 40)]
    argv = ["1"]
    for name, mb in compilers:
        argv += ["--", str(fake_bin / name), str(mb), "1.5"]
    build = start_tool(fake_bin, "ninja", *argv, user=fake_user())
    job = JobMemory()
    try:
        data = Path(f"/proc/{build.pid}/stat").read_bytes()
        root = (build.pid, int(data[data.rfind(b")") + 2 :].split()[19]))

        async def ended() -> bool:  # sampled all along, until the build is gone
            s = await local_host.sample(roots=[root])
            job.add(s)
            return bool(s.stale_roots)

        await eventually(ended, timeout=30, what="the fake build to end", interval=0.05)
        assert build.wait(timeout=10) == 0
    finally:
        stop(build)
    peaks = sorted(job.values)
    assert len(peaks) == 4
    for peak, (_, mb) in zip(peaks, sorted(compilers, key=lambda c: c[1]), strict=True):
        assert mb * MIB <= peak < (mb + 4) * MIB
    store.record_job_memory(local_host.name, "fake", job.values)
    advice = advise_build(store, local_host.name, "fake", mem_total=GIB, cores=64)
    assert advice is not None and advice.runs == 1 and advice.per_job_bytes == peaks[-1]
    assert advice.jobs == int(GIB * 0.9) // peaks[-1] and 21 <= advice.jobs <= 23
    assert advice.reasoning.endswith(f"922 MiB usable of 1.0 GiB on the host → -j{advice.jobs}")


def test_a_huge_run_is_thinned_evenly_so_its_percentiles_hold(store: Store) -> None:
    values = list(range(1, 40_001))  # a large CUDA build: ~40k compiler processes
    store.record_job_memory("b200", "torch", values)
    kept = store.job_memory("b200", "torch")
    assert len(kept) == 5000
    assert abs(percentile(kept, 95) - percentile(values, 95)) <= 8
    assert abs(percentile(kept, 50) - percentile(values, 50)) <= 8


def test_the_job_kind_comes_from_the_heaviest_processes(store: Store) -> None:
    job = JobMemory()
    job.add(recorded(1, [(10 + i, "cicc", 0.1) for i in range(19)] + [(40, "cc1plus", 3.0)]))
    assert job.label == "compile"  # many small CUDA processes, but a C++ one is the heaviest
    job.add(recorded(2, [(50, "ptxas", 3.5)]))
    assert job.label == "nvcc"  # the heaviest two: one CUDA, one not
    assert JobMemory().label == "compile"
    store.record_job_memory("b200", "mixed", [GIB], label="compile")
    store.record_job_memory("b200", "mixed", [GIB], label="nvcc")
    store.record_job_memory("b200", "mixed", [GIB], label="nvcc")
    assert store.job_memory_label("b200", "mixed") == "nvcc"
    advice = advise_build(store, "b200", "mixed", mem_total=100 * GIB, cores=8)
    assert advice is not None and "per nvcc job" in advice.reasoning


def test_rows_kept_before_labels_still_count(store: Store, tmp_path: Path) -> None:
    """A row as releases before labels wrote it (a bare list), in a state at schema version 1: the upgrade to the
    next version rewrites it, and the advisor counts it."""
    store.close()
    db = sqlite3.connect(tmp_path / "state" / "rigops.sqlite3")
    db.execute("INSERT INTO job_memory (host, build, recorded_at, rss) VALUES ('b200', 'old', 0, '[1073741824]')")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    store = Store.open(tmp_path / "state")
    assert store.job_memory("b200", "old") == [GIB] and store.job_memory_label("b200", "old") is None
    advice = advise_build(store, "b200", "old", mem_total=100 * GIB, cores=8)
    assert advice is not None and "per compile job" in advice.reasoning
