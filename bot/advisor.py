"""How many parallel compile jobs fit in a host's memory, from the peak RSS the build's compilers reached in
past runs: jobs = floor(usable / per-job peak), capped by cores.

The per-job peak is the p95 of the compiler processes' peak RSS over the build's kept runs, times nvcc's
``--threads`` (each thread runs its own cicc/ptxas); usable is the host's memory less a reserve, and less what
the other builds running there hold or will hold at their peak (:func:`shares_of`).
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.hosts.models import Proc, Sample
from bot.store import BuildRun, Store

RESERVE = 0.10
PERCENTILE = 95
GIB = 1 << 30
MIB = 1 << 20
CUDA_COMPILERS = frozenset({"nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink"})
_THREADS_FLAG = re.compile(r"^(?:--threads|-t)(?:=?(\d+))?$")


@dataclass(frozen=True)
class Share:
    """The memory another build running on the host takes from this one's: what its build tools hold now,
    or what its past runs say it reaches at its -j, whichever is more."""

    build: str
    size: int


@dataclass(frozen=True)
class Advice:
    """A recommended -j and why, e.g. "~6.8 GiB per nvcc job at p95 over 2 runs, 404 GiB usable → -j59"."""

    jobs: int
    per_job_bytes: int
    runs: int
    usable_bytes: int
    reasoning: str


def advise(peaks: Sequence[int], *, runs: int, mem_total: int, cores: int, reserve: float = RESERVE,
           nvcc_threads: int = 1, label: str = "compile", others: Sequence[Share] = ()) -> Advice | None:
    """The -j for a host with ``mem_total`` bytes and ``cores`` cores, from compiler peak RSS values
    gathered over ``runs`` runs, leaving room for ``others`` (other builds running there); None without data.
    ``label`` names the job in the reasoning ("nvcc")."""
    per_process = percentile(peaks, PERCENTILE)
    if per_process <= 0 or mem_total <= 0:
        return None
    threads = max(1, nvcc_threads)
    per_job = per_process * threads
    usable = max(0, int(mem_total * (1.0 - reserve)) - sum(o.size for o in others))
    fit = usable // per_job
    jobs = max(1, min(fit, max(1, cores)))
    size = f"~{size_text(per_job)} per {label} job"
    if threads > 1:
        size = f"~{size_text(per_process)} per compiler process × {threads} nvcc threads = {size}"
    room = f"{size_text(usable)} usable"
    if others:
        room += " after " + ", ".join(f"{size_text(o.size)} for `{o.build}`" for o in others)
    reasoning = f"{size} at p{PERCENTILE} over {runs} run{'' if runs == 1 else 's'}, {room} → -j{jobs}"
    if fit > cores:
        reasoning += f" (capped at {cores} cores)"
    elif fit < 1:
        reasoning += " (one job needs more than that: expect trouble even at -j1)"
    return Advice(jobs=jobs, per_job_bytes=per_job, runs=runs, usable_bytes=usable, reasoning=reasoning)


def advise_build(store: Store, host: str, build: str, *, mem_total: int, cores: int, reserve: float = RESERVE,
                 nvcc_threads: int = 1, label: str | None = None, others: Sequence[Share] = ()) -> Advice | None:
    """:func:`advise` over what the state kept of the build's runs on that host (named after what the runs
    recorded, unless ``label`` says). Raises StateError."""
    peaks = store.job_memory(host, build)
    if not peaks:
        return None
    return advise(peaks, runs=store.job_memory_runs(host, build), mem_total=mem_total, cores=cores,
                  reserve=reserve, nvcc_threads=nvcc_threads,
                  label=label or store.job_memory_label(host, build) or "compile", others=others)


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
