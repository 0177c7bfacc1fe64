"""The status digest: memory, load, GPUs and builds of some hosts, at one moment.

Hosts are probed concurrently, each within ``timeout``: a host that is down or slow becomes a row that says
so, never a failed digest. A probe that outlives its timeout is left to finish in the background (bounded by
the host's own request timeout) rather than cancelled halfway through the agent's start.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from bot.builds.progress import Progress
from bot.core.fleet import FANOUT_LIMIT, GRACE
from bot.core.services import Services
from bot.hosts import Host
from bot.hosts.models import GpuReport, Snapshot
from bot.memory.policy import host_levels
from bot.reports import Digest, HostDigest, OomKillSeen, gpu_busy
from bot.util.aio import within
from bot.util.errors import HostError

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 10.0  # seconds per host, snapshot and nvidia-smi together
RECENT_RUNS = 50  # runs per host looked at for "running" and "finished since the last post"
OOM_LOOKBACK = 24 * 3600  # a first digest tells the OOM kills of the last day
T = TypeVar("T")


Progresses = Mapping[int, tuple[Progress, float | None]]


async def collect(services: Services, hosts: Sequence[str] | None, *, since: float | None,
                  progress: Progresses | None = None, timeout: float | None = None,
                  limit: int = FANOUT_LIMIT) -> Digest:
    """The digest of ``hosts`` (None: every configured host), ``limit`` probed at once (a fleet whose connections
    went idle is reached afresh: hundreds of logins at once would all miss their deadline together); ``timeout``:
    seconds per host from its turn (default: its connect timeout, PROBE_TIMEOUT, and a grace); ``progress``: of
    the builds being followed, (progress, ETA) by run id."""
    names = list(services.config.hosts) if hosts is None else list(hosts)
    taken_at = time.time()
    gate = asyncio.Semaphore(limit)

    async def one(name: str) -> HostDigest:
        async with gate:
            host = services.config.hosts.get(name)
            budget = timeout if timeout is not None else (
                (host.connect_timeout if host else 0.0) + PROBE_TIMEOUT + GRACE)
            return await _host_digest(services, name, since=since, timeout=budget, progress=progress or {})

    rows = await asyncio.gather(*(one(name) for name in names))
    return Digest(taken_at=taken_at, since=since, hosts=tuple(rows))


async def _host_digest(services: Services, name: str, *, since: float | None, timeout: float,
                       progress: Progresses) -> HostDigest:
    runs = services.store.runs(host=name, limit=RECENT_RUNS)
    running = tuple(r for r in runs if r.state == "running")
    finished = tuple(r for r in runs if r.state != "running" and since is not None and (r.ended_at or 0) >= since)
    known = HostDigest(host=name, running=running, finished=finished, oom_kills=_oom_kills(services, name, since=since),
                       progress={r.id: progress[r.id] for r in running if r.id in progress})
    if name not in services.config.hosts:
        return replace(known, problem="not in the config any more")
    known = replace(known, levels=host_levels(services.config.hosts[name]))
    try:
        snapshot, gpus = await within(_probe(services.hosts[name]), timeout)
    except TimeoutError:
        return replace(known, problem=f"no answer within {timeout:g} s")
    except HostError as exc:
        return replace(known, problem=exc.reason)
    counted = None
    if snapshot.oom_kill is not None and since is not None:
        counted = services.store.oom_kills_counted(name, at=time.time(), boot_id=snapshot.boot_id,
                                                   count=snapshot.oom_kill, since=since)
    return replace(known, snapshot=snapshot, gpus=gpus, oom_counted=counted)


def _oom_kills(services: Services, host: str, *, since: float | None) -> tuple[OomKillSeen, ...]:
    rows = services.store.oom_kills(host, since=since if since is not None else time.time() - OOM_LOOKBACK)
    builds: dict[int, str | None] = {}
    for _, _, run_id, whose, _, _, _ in rows:
        if run_id is not None and whose == "build" and run_id not in builds:
            run = services.store.run(run_id)
            builds[run_id] = run.build if run is not None else None
    return tuple(OomKillSeen(at=at, whose=whose, victim=victim,
                             build=builds.get(run_id) if run_id is not None and whose == "build" else None)
                 for _, at, run_id, whose, _, victim, _ in rows)


async def _probe(host: Host) -> tuple[Snapshot, GpuReport]:
    """Memory and GPUs together. Raises HostError when the host cannot be reached."""
    snapshot, gpus = await asyncio.gather(host.snapshot(user=host.config.user, top=0), _gpus(host))
    return snapshot, gpus


async def _gpus(host: Host) -> GpuReport:
    try:
        return await host.gpu()
    except HostError as exc:
        return GpuReport(host=host.name, available=False, reason=exc.reason)


def fingerprint(digest: Digest) -> str:
    """What "something changed" compares: hosts up or down, builds started or finished, memory getting low,
    GPUs going busy or idle, OOM kills — not the exact numbers, which change on every look."""
    parts = [[h.host, h.problem is None, [r.id for r in h.running], [r.id for r in h.finished],
              h.memory_level, _gpu_state(h.gpus), h.oom_total] for h in digest.hosts]
    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:16]


def _gpu_state(report: GpuReport | None) -> list[Any]:
    if report is None or not report.available:
        return []
    return [[g.index, gpu_busy(g.utilization, g.processes), len(g.processes)] for g in report.gpus]


#END
