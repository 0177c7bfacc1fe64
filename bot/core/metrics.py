"""Prometheus metrics and a health check, on a listener of their own (``rigops run --metrics ADDR:PORT``).

Counters are counted where things happen (requests, Slack API calls, state failures, memory alerts, OOM kills);
gauges are read from the running bot when Prometheus scrapes (builds followed, hosts reachable, the leader, the
followed builds' memory). Every label value comes from the config or a fixed vocabulary, never from chat text,
so the number of series is bounded by the fleet.

    /metrics   Prometheus text format (prometheus_client's own exposition)
    /healthz   200 "ok" when the state answers and the chat connection is up; 503 and the reason otherwise
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from bot.core.app import Core

log = logging.getLogger(__name__)



class Metrics:
    """The counters of one rigops process, in a registry of its own (tests run several bots in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("rigops_requests", "Requests: messages, slash commands and button presses, by "
                                "what they asked and how they ended", ["kind", "action", "outcome"], registry=r)
        self.slack_calls = Counter("rigops_slack_api_calls", "Slack Web API calls by method and outcome "
                                   "(ok, error, ratelimited: a 429, retried)", ["method", "outcome"], registry=r)
        self.state_errors = Counter("rigops_state_errors", "Failures of the state database", ["engine"],
                                    registry=r)
        self.memory_alerts = Counter("rigops_memory_alerts", "Memory-pressure alerts posted",
                                     ["host", "build", "reason"], registry=r)
        self.oom_kills = Counter("rigops_oom_kills", "OOM kills told in a build's thread", ["host", "build"],
                                 registry=r)

    def request(self, kind: str, action: str | None, outcome: str) -> None:
        self.requests.labels(kind, action or "none", outcome).inc()

    def slack_call(self, method: str, outcome: str) -> None:
        self.slack_calls.labels(_method(method), outcome).inc()

    def watch(self, core: Core) -> None:
        """Read the gauges from ``core`` at each scrape."""
        self.registry.register(_CoreGauges(core))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _method(method: str) -> str:
    """A Slack method name as a label: only the plain shape Slack uses (``chat.postMessage``)."""
    return method if method.replace(".", "").isalnum() and len(method) <= 64 else "other"


class _CoreGauges(Collector):
    def __init__(self, core: Core) -> None:
        self.core = core

    def collect(self) -> Iterator[Metric]:
        core = self.core
        followed = GaugeMetricFamily("rigops_builds_followed", "Builds this rigops follows now")
        followed.add_metric([], len(core.follower.following))
        yield followed
        leader = GaugeMetricFamily("rigops_replica_leader", "1 when this rigops posts the schedules")
        leader.add_metric([], 1 if core.schedules.leading() else 0)
        yield leader
        up = GaugeMetricFamily("rigops_host_up", "1 when the host's last request reached its agent, 0 when it did "
                               "not; absent before any request", labels=["host"])
        for host in core.hosts:
            if host.reachable is not None:
                up.add_metric([host.name], 1 if host.reachable else 0)
        yield up
        used = GaugeMetricFamily("rigops_build_memory_bytes", "Memory a followed build uses now (its working set "
                                 "in its memory limit, else its tools' RSS)", labels=["host", "build"])
        limit = GaugeMetricFamily("rigops_build_memory_limit_bytes", "What a followed build can use: its memory "
                                  "limit, else the host's memory", labels=["host", "build"])
        for run_id in core.follower.following:
            guard = core.guards.get(run_id)
            if guard is None or not guard.series.points:
                continue
            point = guard.series.points[-1]
            labels = [guard.run.host, guard.run.build]
            used.add_metric(labels, point.total - point.available)
            limit.add_metric(labels, point.total)
        yield used
        yield limit


Health = Callable[[], Awaitable[str | None]]  # None when healthy, else why not


async def serve(metrics: Metrics, health: Health, *, address: str) -> web.AppRunner:
    """Start the listener on ``address`` ("host:port"); the caller cleans the runner up."""
    host, _, port = address.rpartition(":")

    async def scrape(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        try:
            why = await health()
        except Exception as exc:  # a check that fails is a reason, not a crash of the listener
            why = f"health check failed: {type(exc).__name__}"
        return web.Response(text="ok\n" if why is None else f"{why}\n", status=200 if why is None else 503)

    app = web.Application()
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host=host or "127.0.0.1", port=int(port)).start()
    log.info("serving /metrics and /healthz on %s", address)
    return runner
