"""The memory chart (bot/memory/chart.py): a bounded series that keeps the worst moments, and the PNG drawn from it."""

from __future__ import annotations

import io
import itertools
import json
import random
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bot.hosts.models import Sample
from bot.memory.chart import MemorySeries, render_memory_chart
from bot.memory.watch import OomKill, Whose

GIB = 1 << 30
MIB = 1 << 20
T0 = 1_700_000_000.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def sample(t: float, *, total: int = 64 * GIB, available: int = 40 * GIB, compilers: int = 8 * GIB,
           drivers: int = 200 * MIB, linkers: int = 0, swap_total: int = 0, swap_free: int = 0,
           jobs: int = 8) -> Sample:
    return Sample.from_json("rig1", {
        "time": t, "mem_total": total, "mem_available": available, "swap_total": swap_total, "swap_free": swap_free,
        "classes": {"driver": {"count": 1, "rss": drivers, "max_rss": drivers},
                    "compiler": {"count": jobs, "rss": compilers, "max_rss": compilers // max(jobs, 1)},
                    "linker": {"count": 1 if linkers else 0, "rss": linkers, "max_rss": linkers}},
    })


def kill(t: float, whose: Whose = "build", victim: str = "cc1plus") -> OomKill:
    return OomKill("rig1", t, whose, "kernel", victim_pid=4242, victim_name=victim)


def series_of(n: int, **kwargs: Any) -> MemorySeries:
    series = MemorySeries(**kwargs)
    for i in range(n):
        series.add(sample(T0 + i, available=(40 - i % 20) * GIB, compilers=(4 + i % 10) * GIB))
    return series


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_SIGNATURE
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def red_pixels(png: bytes) -> int:
    from matplotlib.image import imread

    rgba = imread(io.BytesIO(png))
    red = (rgba[..., 0] > 0.75) & (rgba[..., 1] < 0.3) & (rgba[..., 2] < 0.3)
    return int(red.sum())


# -- the series -------------------------------------------------------------------------------------------

def test_points_carry_what_the_sample_said() -> None:
    series = MemorySeries()
    series.add(sample(T0, total=64 * GIB, available=10 * GIB, compilers=30 * GIB, drivers=GIB, linkers=2 * GIB,
                      swap_total=8 * GIB, swap_free=5 * GIB, jobs=12))
    (point,) = series.points
    assert point == (T0, 64 * GIB, 10 * GIB, GIB, 30 * GIB, 2 * GIB, 3 * GIB, 12)
    assert point.other == 64 * GIB - 10 * GIB - 33 * GIB
    assert series.peak_used == 54 * GIB


def test_other_is_never_negative() -> None:
    series = MemorySeries()
    series.add(sample(T0, total=16 * GIB, available=10 * GIB, compilers=12 * GIB))  # RSS counts shared pages twice
    assert series.points[0].other == 0


def test_ten_thousand_samples_stay_bounded_and_keep_the_peaks() -> None:
    rng = random.Random(7)
    series = MemorySeries()
    fed_available, fed_compilers = [], []
    for i in range(10_000):
        available = rng.randrange(20 * GIB, 60 * GIB)
        compilers = rng.randrange(1 * GIB, 30 * GIB)
        if i == 1234:
            available = 3 * GIB + 17  # the worst moment, a single sample
        if i == 7777:
            compilers = 55 * GIB + 5
        fed_available.append(available)
        fed_compilers.append(compilers)
        series.add(sample(T0 + i, available=available, compilers=compilers))
        assert len(series) <= 2000
    assert len(series) >= 1000  # halved, not thrown away
    assert min(p.available for p in series.points) == min(fed_available) == 3 * GIB + 17
    assert max(p.compilers for p in series.points) == max(fed_compilers) == 55 * GIB + 5
    assert series.points[0].time == T0


def test_resolution_is_the_same_over_the_whole_build() -> None:
    series = series_of(1000, max_points=10)
    assert len(series) <= 10
    times = [p.time for p in series.points]
    steps = {b - a for a, b in itertools.pairwise(times)}
    assert steps == {float(series.stride)}
    assert series.stride * (len(series) - 1) + series.filled == 1000


def test_kill_markers_are_bounded_and_the_build_kills_kept() -> None:
    series = MemorySeries(max_kills=5)
    series.add_kill(kill(T0, "build", "nvcc"))
    for i in range(50):
        series.add_kill(kill(T0 + 1 + i, "other", "chrome"))
    series.add_kill(kill(T0 + 100, "unknown"))
    assert len(series.kills) == 5
    assert series.kills[0] == (T0, "build", "nvcc")
    assert series.kills[-1] == (T0 + 100, "unknown", "cc1plus")


def test_json_round_trip() -> None:
    series = series_of(777, max_points=50)
    series.add_kill(kill(T0 + 300.25))
    series.add_kill(OomKill("rig1", T0 + 400, "unknown", "vmstat"))
    text = json.dumps(series.to_json())
    back = MemorySeries.from_json(json.loads(text))
    assert back == series
    assert len(back) == len(series) and back.kills[1].victim == "?"
    for s in (series, back):  # the state carries on where it left off
        s.add(sample(T0 + 777, available=GIB))
    assert back == series


def test_max_points_must_allow_halving() -> None:
    with pytest.raises(ValueError):
        MemorySeries(max_points=1)


# -- the PNG ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("width", "height", "dpi"), [(9, 4, 100), (6, 3.5, 80)])
def test_png_has_the_asked_size(width: float, height: float, dpi: int) -> None:
    png = render_memory_chart(series_of(300), title="llvm on rig1", width=width, height=height, dpi=dpi)
    assert png_size(png) == (round(width * dpi), round(height * dpi))


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        render_memory_chart(MemorySeries(), title="empty")


def test_one_sample_draws() -> None:
    png = render_memory_chart(series_of(1), title="just started")
    assert png_size(png) == (900, 400)


def test_huge_hosts_and_swap_draw() -> None:
    series = MemorySeries()
    for i in range(120):
        series.add(sample(T0 + 30 * i, total=1536 * GIB, available=(1500 - 10 * i) * GIB, compilers=10 * i * GIB,
                          swap_total=64 * GIB, swap_free=(64 - i // 4) * GIB, jobs=256))
    assert png_size(render_memory_chart(series, title="1.5 TiB")) == (900, 400)


def test_a_build_kill_is_drawn_in_red() -> None:
    quiet = series_of(600)
    killed = MemorySeries.from_json(quiet.to_json())
    killed.add_kill(kill(T0 + 400, "build", "cicc"))
    other = MemorySeries.from_json(quiet.to_json())
    other.add_kill(kill(T0 + 400, "other", "java"))
    assert red_pixels(render_memory_chart(quiet, title="t")) == 0
    assert red_pixels(render_memory_chart(other, title="t")) == 0
    assert red_pixels(render_memory_chart(killed, title="t")) > 200


def test_renders_in_threads_alike() -> None:
    series = series_of(500)
    series.add_kill(kill(T0 + 100))
    with ThreadPoolExecutor(4) as pool:
        pngs = list(pool.map(lambda _: render_memory_chart(series, title="parallel"), range(8)))
    assert len(set(pngs)) == 1


def test_importing_is_cheap_and_rendering_needs_no_pyplot() -> None:
    code = ("import sys, bot.memory.chart as c; assert 'matplotlib' not in sys.modules, 'eager'; s = c.MemorySeries(); "
            "from bot.hosts.models import Sample; s.add(Sample.from_json('h', {'time': 1, 'mem_total': 9})); "
            "c.render_memory_chart(s, title='x'); assert 'matplotlib.pyplot' not in sys.modules, 'pyplot'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def limited(t: float, *, used: int, limit: int = 900 * MIB, compilers: int = 600 * MIB) -> Sample:
    """A sample of a build in a memory cgroup of ``limit``, on a 23 GiB host with plenty left."""
    s = sample(t, total=23 * GIB, available=22 * GIB, compilers=compilers, drivers=10 * MIB, jobs=2)
    return Sample.from_json("rig1", {
        "time": t, "mem_total": s.mem_total, "mem_available": s.mem_available,
        "classes": {"driver": {"count": 1, "rss": 10 * MIB}, "compiler": {"count": 2, "rss": compilers}},
        "cgroup": {"version": 2, "path": "/job", "current": used + 100 * MIB, "working_set": used, "limit": limit,
                   "exclusive": True}})


def test_a_build_in_a_memory_limit_is_drawn_in_that_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's 23 GiB over a build that dies at 900 MiB would say "plenty of room": once a sample shows the
    build's limit, the series is of the limit (what came before it is dropped, a sample that cannot read it is
    skipped), and the chart's dashed line is that limit."""
    series = MemorySeries()
    series.add(sample(T0, total=23 * GIB, available=22 * GIB))  # before the build moved into its cgroup
    series.add(limited(T0 + 1, used=700 * MIB))
    series.add(sample(T0 + 2, total=23 * GIB, available=22 * GIB))  # the limit unreadable for a moment
    series.add(limited(T0 + 3, used=890 * MIB))
    assert series.limited and [(p.total, p.total - p.available) for p in series.points] == [
        (900 * MIB, 700 * MIB), (900 * MIB, 890 * MIB)]
    assert series.peak_used == 890 * MIB
    assert series.points[-1].other == 890 * MIB - 10 * MIB - 600 * MIB
    again = MemorySeries.from_json(json.loads(json.dumps(series.to_json())))
    assert again.limited and again.points == series.points
    assert MemorySeries.from_json({"points": []}).limited is False  # a series kept before limits were drawn

    from matplotlib.axes import Axes
    drawn: list[str] = []
    original = Axes.axhline

    def spy(self: Axes, y: float = 0, *args: Any, **kwargs: Any) -> Any:
        drawn.append(f"{kwargs.get('label')}@{y:.3f}")
        return original(self, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "axhline", spy)  # matplotlib's, to read the line's label
    assert render_memory_chart(series, title="t")[:8] == PNG_SIGNATURE
    assert drawn == [f"the build's memory limit@{900 * MIB / GIB:.3f}"]
