"""How many parallel compile jobs fit in a host's memory, from the peak RSS the build's compilers reached in
past runs: jobs = floor(usable / per-job peak), capped by cores.

The per-job peak of an nvcc build comes from the peak of each kind of its compiler processes
(:func:`nvcc_job`): nvcc's ``--threads`` multiplies only its per-architecture steps, cicc and ptxas, never
cudafe++ or the host compile. Runs recorded without those peaks, and C/C++ builds, take the p95 of the compiler
processes' peak RSS over the build's kept runs, times ``--threads``. Usable is the tightest of the host's memory
and the memory limits the build runs under, less a reserve, and less what the other builds running there hold or
will hold at their peak (:func:`shares_of`, :func:`room_for`); the formula is :mod:`bot.memory.fit`'s, the one
the OOM guard's alerts use. Before any run, a conservative per-job estimate for the build's kind stands in for
the peaks (:func:`first_advice`).
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from bot.config import DEFAULT_MEMORY_RESERVE
from bot.hosts.models import Proc, Sample
from bot.memory.fit import jobs_fitting, usable
from bot.store import BuildRun, Store

PERCENTILE = 95
GIB = 1 << 30
MIB = 1 << 20
CUDA_COMPILERS = frozenset({"nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink"})
# How CUDA 13's nvcc runs one job, measured (tests/cuda/test_nvcc_threads.py): cudafe++ and the host compile's
# cc1plus once, each alone; cicc then ptxas once per architecture, up to --threads architectures at once (never
# more than there are); nvcc itself throughout.
PER_ARCH_STEPS = frozenset({"cicc", "ptxas"})
NVCC_DRIVER = "nvcc"
_THREADS_FLAG = re.compile(r"^(?:--threads|-t)(?:=?(\d+))?$")
# Before a build's first run: what one job may take, on the high side (a thrust-heavy nvcc job takes GiBs,
# sgl-kernel's 6.8 GiB at p95; a C++ translation unit of a large project 1-1.5 GiB). Per nvcc thread.
FIRST_NVCC_JOB = 4 * GIB
FIRST_COMPILE_JOB = 3 * GIB // 2
_CUDA_HINT = re.compile(r"nvcc|cuda|(?<![a-z0-9])(?:sm|compute)_\d{2,3}|kernel|flash.?att", re.IGNORECASE)


@dataclass(frozen=True)
class Share:
    """The memory another build running on the host takes from this one's: what its build tools hold now,
    or what its past runs say it reaches at its -j, whichever is more."""

    build: str
    size: int


@dataclass(frozen=True)
class Room:
    """The memory a build's jobs may use, and what bounds it: the host's memory, or a smaller memory limit the
    build runs under (a container's ``--memory``, a Slurm job's, a ``systemd-run -p MemoryMax=`` scope's)."""

    usable: int
    total: int  # the host's memory, or the limit
    limit: bool  # ``total`` is a memory limit, not the host's memory
    others: tuple[Share, ...] = ()  # what other builds inside it take

    @property
    def text(self) -> str:
        """"20.7 GiB usable of 23.0 GiB on the host", "810 MiB usable of the build's 900 MiB memory limit"."""
        where = (f"the build's {size_text(self.total)} memory limit" if self.limit
                 else f"{size_text(self.total)} on the host")
        text = f"{size_text(self.usable)} usable of {where}"
        if self.others:
            text += " after " + ", ".join(f"{size_text(o.size)} for `{o.build}`" for o in self.others)
        return text


@dataclass(frozen=True)
class Advice:
    """A recommended -j and why, e.g. "~6.8 GiB per nvcc job at p95 over 2 runs, 404 GiB usable of 449 GiB on
    the host → -j59". ``runs`` is 0 for a first run's estimate (:func:`first_advice`)."""

    jobs: int
    per_job_bytes: int
    runs: int
    usable_bytes: int
    reasoning: str
    limit_bytes: int | None = None  # the memory limit the advice fits in, when tighter than the host


class JobSize(NamedTuple):
    """One job's memory at its peak, and what makes it up ("cudafe++ ~642 MiB once, more than …"; None when it
    is simply its heaviest step)."""

    size: int
    why: str | None


def room_for(mem_total: int, *, reserve: float = DEFAULT_MEMORY_RESERVE, others: Sequence[Share] = (),
             limit: int | None = None, own_limit: int | None = None) -> Room:
    """The tightest of: the host's ``mem_total`` and ``limit`` (the limit every build started on the host runs
    under, e.g. its agent's container: the ``others`` share it), less the reserve and the others; and
    ``own_limit`` (the limit the build's last run ran under, e.g. its own systemd-run scope, which no other build
    is in), less the reserve."""
    def less(total: int, shared: bool) -> int:
        return usable(total, reserve=reserve, held=sum(o.size for o in others) if shared else 0)

    rooms = [Room(usable=less(mem_total, True), total=mem_total, limit=False, others=tuple(others))]
    if limit is not None and 0 < limit < mem_total:
        rooms.append(Room(usable=less(limit, True), total=limit, limit=True, others=tuple(others)))
    if own_limit is not None and 0 < own_limit < mem_total and own_limit != limit:
        rooms.append(Room(usable=less(own_limit, False), total=own_limit, limit=True))
    return min(rooms, key=lambda r: (r.usable, r.total))


def advise(peaks: Sequence[int], *, runs: int, mem_total: int, cores: int,
           reserve: float = DEFAULT_MEMORY_RESERVE, nvcc_threads: int = 1, label: str = "compile",
           others: Sequence[Share] = (), limit: int | None = None, own_limit: int | None = None,
           by_name: Mapping[str, int] | None = None) -> Advice | None:
    """The -j for a host with ``mem_total`` bytes and ``cores`` cores, from compiler peak RSS values
    gathered over ``runs`` runs, leaving room for ``others`` (other builds running there) and keeping within the
    memory limits the build runs under (:func:`room_for`); None without data. ``by_name`` (the peak of each kind
    of compiler process) sizes an nvcc job step by step (:func:`nvcc_job`); without it, or without cicc and
    ptxas in it, a job is the p95 of ``peaks`` times ``nvcc_threads``. ``label`` names the job in the reasoning
    ("nvcc")."""
    per_process = percentile(peaks, PERCENTILE)
    if per_process <= 0 or mem_total <= 0:
        return None
    room = room_for(mem_total, reserve=reserve, others=others, limit=limit, own_limit=own_limit)
    threads = max(1, nvcc_threads)
    job = nvcc_job(by_name or {}, threads=threads)
    if job is None:
        return _fit(per_process, threads=threads, label=label, room=room, cores=cores, runs=runs)
    return _fit(job.size, threads=1, label=label, room=room, cores=cores, runs=runs, why=job.why)


def nvcc_job(by_name: Mapping[str, int], *, threads: int) -> JobSize | None:
    """One nvcc job's memory from the peak of each kind of its processes: nvcc itself, plus the more of its
    heaviest once-per-job step (cudafe++, the host compile's cc1plus) and ``threads`` × its heaviest
    per-architecture step (cicc, ptxas) — an upper bound, as nvcc runs no more of those at once than the job has
    architectures. None without cicc or ptxas in ``by_name``: no nvcc job, or runs recorded before by_name."""
    per_arch = [(rss, name) for name, rss in by_name.items() if name in PER_ARCH_STEPS and rss > 0]
    if not per_arch:
        return None
    arch_rss, arch = max(per_arch)
    once_rss, once = max(((rss, name) for name, rss in by_name.items()
                          if name not in PER_ARCH_STEPS and name != NVCC_DRIVER and rss > 0), default=(0, ""))
    size = by_name.get(NVCC_DRIVER, 0) + max(once_rss, threads * arch_rss)
    if threads == 1:
        return JobSize(size, None)  # one step at a time: the job is its heaviest step (and nvcc)
    parallel = f"{threads} × ~{size_text(arch_rss)} {arch} in parallel with --threads {threads}"
    alone = f"{once} ~{size_text(once_rss)} once"
    if not once:
        return JobSize(size, parallel)
    if once_rss > threads * arch_rss:
        return JobSize(size, f"{alone}, more than {parallel}")
    return JobSize(size, f"{parallel}, more than {alone}")


def advise_build(store: Store, host: str, build: str, *, mem_total: int, cores: int,
                 reserve: float = DEFAULT_MEMORY_RESERVE, nvcc_threads: int = 1, label: str | None = None,
                 others: Sequence[Share] = (), limit: int | None = None) -> Advice | None:
    """:func:`advise` over what the state kept of the build's runs on that host (named after what the runs
    recorded, unless ``label`` says; an nvcc job sized from the peaks of each kind of process, where the runs
    kept them), within ``limit`` (the host's build limit) and the limit its last run ran under. Raises
    StateError."""
    peaks = store.job_memory(host, build)
    if not peaks:
        return None
    return advise(peaks, runs=store.job_memory_runs(host, build), mem_total=mem_total, cores=cores,
                  reserve=reserve, nvcc_threads=nvcc_threads,
                  label=label or store.job_memory_label(host, build) or "compile", others=others, limit=limit,
                  own_limit=store.job_memory_limit(host, build), by_name=store.job_memory_by_name(host, build))


def first_advice(*, cuda: bool, mem_total: int, cores: int, reserve: float = DEFAULT_MEMORY_RESERVE,
                 nvcc_threads: int = 1, others: Sequence[Share] = (), limit: int | None = None) -> Advice | None:
    """The -j for a build's first run, before any peaks: a conservative estimate per job of its kind
    (:data:`FIRST_NVCC_JOB` per nvcc thread for CUDA, :data:`FIRST_COMPILE_JOB` for C/C++) in the same room as
    :func:`advise`, so a first build never starts at every core on a box where that cannot fit; None when the
    host's memory is unknown."""
    if mem_total <= 0:
        return None
    room = room_for(mem_total, reserve=reserve, others=others, limit=limit)
    per_process, label = (FIRST_NVCC_JOB, "nvcc") if cuda else (FIRST_COMPILE_JOB, "compile")
    advice = _fit(per_process, threads=max(1, nvcc_threads) if cuda else 1, label=label, room=room, cores=cores,
                  runs=0)
    return replace(advice, reasoning=f"no runs to learn from yet — a conservative {advice.reasoning}; "
                                     "rigops learns from this run")


def _fit(per_process: int, *, threads: int, label: str, room: Room, cores: int, runs: int,
         why: str | None = None) -> Advice:
    """How many jobs of ``per_process`` × ``threads`` fit in ``room``, capped by cores, at least one, and why:
    "~6.8 GiB per nvcc job at p95 over 2 runs, 404 GiB usable of 449 GiB on the host → -j59" (no "at p95 …"
    for an estimate, ``runs`` 0; ``why`` says what makes up a job, in brackets after its size)."""
    per_job = per_process * threads
    fit = jobs_fitting(room.usable, per_job)
    jobs = max(1, min(fit, max(1, cores)))
    size = f"~{size_text(per_job)} per {label} job"
    if why is not None:
        size += f" ({why})"
    elif threads > 1:
        size = f"~{size_text(per_process)} per compiler process × {threads} nvcc threads = {size}"
    if runs:
        size += f" at p{PERCENTILE} over {runs} run{'' if runs == 1 else 's'}"
    reasoning = f"{size}, {room.text} → -j{jobs}"
    if fit > cores:
        reasoning += f" (capped at {cores} cores)"
    elif fit < 1:
        reasoning += " (one job needs more than that: expect trouble even at -j1)"
    return Advice(jobs=jobs, per_job_bytes=per_job, runs=runs, usable_bytes=room.usable, reasoning=reasoning,
                  limit_bytes=room.total if room.limit else None)


def looks_like_cuda(command: str, env: Mapping[str, str], *, names: Sequence[str] = (), nvcc_threads: int = 1) -> bool:
    """Whether a build compiles CUDA, for its first run's estimate: nvcc runs with ``--threads`` above 1, or the
    command, the environment's names and values, or ``names`` (the build's name, its workdir) mention nvcc,
    CUDA (CUDACXX, CUDA_HOME, TORCH_CUDA_ARCH_LIST, /usr/local/cuda), a GPU architecture (sm_90, compute_90),
    kernels (sgl-kernel) or flash-attention. A wrong yes only starts a first run at fewer jobs."""
    texts = (command, *env.keys(), *env.values(), *names)
    return nvcc_threads > 1 or any(_CUDA_HINT.search(t) for t in texts)


def shares_of(store: Store, host: str, runs: Sequence[BuildRun], tools: Sequence[Proc]) -> tuple[Share, ...]:
    """What each of ``runs`` (other builds running on ``host``) takes: the RSS its build tools in ``tools``
    hold now (``Proc.root`` says whose), or its p95 compiler peak times its -j from past runs, whichever is
    more. Raises StateError."""
    shares = []
    for run in runs:
        now = sum(p.rss for p in tools if p.root == run.proc_id)
        peak = percentile(store.job_memory(host, run.build), PERCENTILE) * (run.jobs or 1)
        shares.append(Share(build=run.build, size=max(now, peak)))
    return tuple(shares)


def percentile(values: Sequence[int], pct: float) -> int:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[rank - 1]


def nvcc_threads(command: str, env: Mapping[str, str], *, cores: int) -> int:
    """The ``--threads`` nvcc will run with: from the command, NVCC_THREADS, or NVCC_APPEND/PREPEND_FLAGS
    (0 means one per core); 1 when nothing says."""
    found: list[int] = []
    if env.get("NVCC_THREADS", "").strip().isdigit():
        found.append(int(env["NVCC_THREADS"]))
    for text, short_ok in ((command, False), (env.get("NVCC_APPEND_FLAGS", ""), True),
                           (env.get("NVCC_PREPEND_FLAGS", ""), True)):
        found += _threads_flags(text, short_ok=short_ok)
    if not found:
        return 1
    return max(cores if n == 0 else n for n in found)


def _threads_flags(text: str, *, short_ok: bool) -> list[int]:
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    out = []
    for i, word in enumerate(words):
        m = _THREADS_FLAG.match(word)
        if m is None or (word.startswith("-t") and not short_ok):
            continue  # "-t" means something else to most programs: only trusted in nvcc's own flags
        value = m.group(1) or (words[i + 1] if i + 1 < len(words) else "")
        if value.isdigit():
            out.append(int(value))
    return out


class JobMemory:
    """The peak RSS of each compiler process of one run, gathered from its Samples' ``ended`` lists; pass
    ``values`` and ``label`` to ``Store.record_job_memory`` when the run ends."""

    def __init__(self) -> None:
        self._peaks: dict[tuple[int, int], tuple[str, int]] = {}

    def add(self, sample: Sample) -> None:
        for p in sample.ended:
            key = (p.pid, p.start)
            self._peaks[key] = (p.name, max(self._peaks.get(key, ("", 0))[1], p.peak_rss))

    @property
    def values(self) -> list[int]:
        return [rss for _, rss in self._peaks.values()]

    @property
    def by_name(self) -> dict[str, int]:
        """The p95 peak of each kind of compiler process (a g++ driver's few MiB apart from its cc1plus's)."""
        named: dict[str, list[int]] = {}
        for name, rss in self._peaks.values():
            named.setdefault(name, []).append(rss)
        return {name: percentile(values, PERCENTILE) for name, values in named.items()}

    @property
    def label(self) -> str:
        """What sets the per-job figure: "nvcc" when most of the heaviest 5% are CUDA's compilers."""
        ranked = sorted(self._peaks.values(), key=lambda p: p[1], reverse=True)
        heavy = ranked[: max(1, math.ceil(len(ranked) * (100 - PERCENTILE) / 100))]
        cuda = sum(1 for name, _ in heavy if name in CUDA_COMPILERS)
        return "nvcc" if heavy and 2 * cuda >= len(heavy) else "compile"


def size_text(size: int) -> str:
    """449 GiB, 6.8 GiB, 512 MiB."""
    if size >= 100 * GIB:
        return f"{size / GIB:.0f} GiB"
    if size >= GIB:
        return f"{size / GIB:.1f} GiB"
    return f"{size / MIB:.0f} MiB"
