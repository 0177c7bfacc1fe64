"""The OOM guard's cost in the bot for one followed build, once a second: OomWatch.feed on a sample of 64
compile jobs (nvcc and cc1plus steps, growing), with the forecast of issue 24 and without it, in one run.

The forecast runs in the bot, on samples the agent already sends: the agent's own cost (bench_agent) does not
change. The target is that the bot's part stays far below a millisecond a sample, so that a bot following many
builds spends a fraction of a core on them.
"""

from __future__ import annotations

import time

from bench.common import median, ms
from bot.hosts.models import CgroupMemory, ClassUsage, Proc, Sample
from bot.memory.watch import Forecast, OomWatch

MIB = 1 << 20
GIB = 1 << 30
JOBS = 64
SAMPLES = 600
ROUNDS = 5


class NoForecast(OomWatch):
    """The watch as it was before the forecast (the baseline)."""

    def forecast(self, s: Sample, room: int) -> Forecast | None:
        return None


def sample(t: int) -> Sample:
    top = []
    for j in range(JOBS):
        job = 10_000 + 10 * j
        grow = (t + j) % 30
        top.append(Proc(pid=job, start=job, name="nvcc", user="build", rss=3 * MIB, job=job))
        top.append(Proc(pid=job + 1, start=job, name="cicc" if j % 2 else "cc1plus", user="build",
                        rss=(40 + 20 * grow) * MIB, ppid=job, job=job))
    rss = sum(p.rss for p in top)
    used = 2 * GIB + rss
    return Sample(host="b200", time=float(t), mem_total=512 * GIB, mem_available=512 * GIB - used, swap_total=0,
                  swap_free=0, psi=None, drivers=ClassUsage(1, 8 * MIB, 8 * MIB),
                  compilers=ClassUsage(len(top), rss, max(p.rss for p in top)), linkers=ClassUsage(),
                  top_compilers=tuple(sorted(top, key=lambda p: -p.rss)), ended=(), oom_kill=0,
                  cgroup=CgroupMemory(path="/build", version=2, current=used, limit=64 * GIB, oom=None, oom_kill=0,
                                      exclusive=True),
                  kernel=(), tree=len(top) + 2)


def per_sample(kind: type[OomWatch], samples: list[Sample]) -> float:
    watch = kind()
    began = time.perf_counter()
    for s in samples:
        watch.feed(s)
    return (time.perf_counter() - began) / len(samples)


def main() -> None:
    samples = [sample(t) for t in range(SAMPLES)]
    with_forecast, without = [], []
    for _ in range(ROUNDS):
        without.append(per_sample(NoForecast, samples))
        with_forecast.append(per_sample(OomWatch, samples))
    base, now = median(without), median(with_forecast)
    print(f"OomWatch.feed, {JOBS} compile jobs ({2 * JOBS} compilers), {SAMPLES} samples x {ROUNDS}:")
    print(f"  without the forecast: {ms(base)} a sample (baseline)")
    print(f"  with the forecast:    {ms(now)} a sample  ratio {now / base:.2f}x")
    print(f"  one build at 1 Hz costs the bot {100 * now:.3f}% of a core")


if __name__ == "__main__":
    main()
