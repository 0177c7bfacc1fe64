"""nvcc's ``--threads N`` on a real nvcc (no GPU needed): one compile job's process tree, sampled from /proc as
it runs, and what the advisor makes of its peaks (bot/memory/advisor.py's ``nvcc_job``).

CUDA 13's nvcc runs cudafe++ and the host compile's cc1plus once per job, each alone, and cicc then ptxas once
per architecture: one at a time with ``--threads 1``, up to N architectures at once with ``--threads N``. So
``--threads`` multiplies cicc's and ptxas' memory, never cudafe++'s. (examples/cuda's thrust sorts for sm_80 and
sm_90 peaked at 0.76 GiB with --threads 1 and 1.5 GiB with 2: two cicc of 0.76 GiB at once, after a cudafe++ of
0.63 GiB alone.)
"""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.hosts.agent.protocol import COMPILER_NAMES
from bot.memory.advisor import PER_ARCH_STEPS, nvcc_job
from tests.cuda.test_real_nvcc import ENV, NVCC, cuda_user, needs_nvcc
from tests.fakes.users import switch_to

# Many small template kernels: a few seconds of cicc and ptxas per architecture, without thrust's 20 s.
KERNELS = """\
template <int N>
__global__ void poly(float* x) {
  float v = x[threadIdx.x];
#pragma unroll
  for (int i = 0; i < N; ++i) v = v * 1.0001f + static_cast<float>(i);
  x[threadIdx.x] = v;
}

template <int I>
struct Many {
  static void launch(float* x) {
    poly<I * 8><<<1, 32>>>(x);
    Many<I - 1>::launch(x);
  }
};
template <>
struct Many<0> {
  static void launch(float*) {}
};

void launch_all(float* x) { Many<40>::launch(x); }
"""
ARCHS = ("80", "90")
INTERVAL = 0.02  # seconds between looks at the tree


@dataclass(frozen=True)
class Compile:
    """One nvcc job as sampled: the most its whole tree held at one moment, each kind of process's peak (the
    kernel's VmHWM), how many of each ran, and the most cicc and ptxas running at one moment."""

    threads: int
    seconds: float
    tree_peak: int
    peaks: dict[str, int]
    runs: Counter[str]
    per_arch_at_once: int
    front_with_per_arch: bool  # cudafe++ ran while a cicc or ptxas did


def tree(root: int) -> list[tuple[int, str, int]]:
    """``root`` and its descendants now: (pid, name, start time in ticks)."""
    children: dict[int, list[tuple[int, str, int]]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(rest[1]), []).append((int(entry.name), name, int(rest[19])))
    found, todo = [(root, "nvcc", 0)], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += [pid for pid, _, _ in kids]
    return found


def memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in bytes; zeros once it is gone (or a zombie)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0, 0
    fields = {k: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in lines)
              if k in ("VmRSS", "VmHWM")}
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def sampled_compile(workdir: Path, threads: int, user: str | None) -> Compile:
    """nvcc -c of KERNELS for ARCHS with ``--threads``, as ``user``, its tree looked at every INTERVAL."""
    gencode = [w for a in ARCHS for w in ("-gencode", f"arch=compute_{a},code=sm_{a}")]
    argv = [str(NVCC), "-std=c++17", "-c", "many.cu", "-o", f"many-{threads}.o", *gencode, "--threads", str(threads)]
    log = workdir / f"nvcc-{threads}.log"
    began = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, env={**ENV, "TMPDIR": str(workdir)}, stdout=out,
                                stderr=subprocess.STDOUT, **switch_to(user))
    tree_peak, peaks, seen, per_arch_at_once, overlap = 0, Counter[str](), {}, 0, False
    while True:
        now = Counter[str]()
        total = 0
        for pid, name, start in tree(proc.pid):
            rss, hwm = memory(pid)
            if rss:
                total += rss
                now[name] += 1
                seen[(pid, start)] = name
            peaks[name] = max(peaks[name], hwm)
        tree_peak = max(tree_peak, total)
        per_arch_at_once = max(per_arch_at_once, sum(now[n] for n in PER_ARCH_STEPS))
        overlap = overlap or (now["cudafe++"] > 0 and any(now[n] for n in PER_ARCH_STEPS))
        try:
            proc.wait(timeout=INTERVAL)
            break
        except subprocess.TimeoutExpired:
            continue
    assert proc.returncode == 0, (f"nvcc --threads {threads} exited {proc.returncode} (stopped from outside?): "
                                  f"{log.read_text(errors='replace')}")
    return Compile(threads=threads, seconds=time.monotonic() - began, tree_peak=tree_peak, peaks=dict(peaks),
                   runs=Counter(seen.values()), per_arch_at_once=per_arch_at_once, front_with_per_arch=overlap)


@pytest.fixture(scope="module")
def compiles() -> Iterator[dict[int, Compile]]:
    """The same job with --threads 1 and 2, in a directory of its own owned by the user that compiles (so that
    other tests' stops of root's compilers by name never reach it)."""
    user = cuda_user()
    with tempfile.TemporaryDirectory(prefix="rigops-nvcc-threads-") as tmp:
        workdir = Path(tmp)
        (workdir / "many.cu").write_text(KERNELS)
        if user is not None:
            os.chmod(tmp, 0o755)
            for path in (workdir, workdir / "many.cu"):
                os.chown(path, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        yield {n: sampled_compile(workdir, n, user) for n in (1, 2)}


@needs_nvcc
def test_cudafe_runs_once_per_job_and_cicc_and_ptxas_once_per_architecture(compiles: dict[int, Compile]) -> None:
    for job in compiles.values():
        assert (job.runs["cudafe++"], job.runs["cicc"], job.runs["ptxas"]) == (1, len(ARCHS), len(ARCHS)), job


@needs_nvcc
def test_threads_run_the_architectures_cicc_and_ptxas_at_once(compiles: dict[int, Compile]) -> None:
    one, two = compiles[1], compiles[2]
    assert one.per_arch_at_once == 1, one  # never two at one moment
    assert two.per_arch_at_once == len(ARCHS), two
    assert not one.front_with_per_arch and not two.front_with_per_arch, compiles  # cudafe++ runs before them


@needs_nvcc
def test_the_advisor_sizes_the_job_as_its_tree_peaked(compiles: dict[int, Compile]) -> None:
    """From the peaks by name the OOM guard keeps (compilers only: not nvcc's shells), the advisor's per-job
    figure covers what the tree held at its peak, and by little more: with --threads 2 as with 1."""
    for job in compiles.values():
        by_name = {name: rss for name, rss in job.peaks.items() if name in COMPILER_NAMES}
        sized = nvcc_job(by_name, threads=job.threads)
        assert sized is not None
        assert 0.95 * job.tree_peak <= sized.size <= 1.25 * job.tree_peak, (sized, job)
