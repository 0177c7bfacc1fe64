"""The memory chart of a build: a bounded series of its Samples and OOM kills, drawn as a PNG.

:class:`MemorySeries` keeps at most ``max_points`` points by halving its resolution when full; a merged point
keeps the lowest available and the highest RSS of what it merges, so the worst moments are never lost.
matplotlib is imported only to render, on a bare Figure and Agg canvas (no pyplot: thread-safe, no display).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from bot.hosts.models import Sample
from bot.memory.frame import frame
from bot.memory.watch import OomKill

if TYPE_CHECKING:
    from matplotlib.axes import Axes

GIB = 1 << 30
MAX_POINTS = 2000
MAX_KILLS = 200
MAX_LABELS = 10  # victim names written on the chart; more would be unreadable
BUILD_RED = "#e41a1c"  # the only red on the chart: the build's OOM kills
OTHER_GREY = "#8c8c8c"
CLASSES = (("drivers (ninja/make/cmake)", "#4c72b0"), ("compilers (cc1plus/nvcc/cicc/ptxas)", "#dd8452"),
           ("linkers (ld)", "#8172b3"), ("other", "#cfcfcf"))


class Point(NamedTuple):
    """Memory in bytes at ``time``, or the worst of the samples a merged point stands for."""

    time: float
    total: int
    available: int
    drivers: int
    compilers: int
    linkers: int
    swap_used: int
    compilers_count: int

    @property
    def other(self) -> int:
        return max(0, self.total - self.available - self.drivers - self.compilers - self.linkers)

    def merge(self, later: Point) -> Point:
        return Point(self.time, max(self.total, later.total), min(self.available, later.available),
                     max(self.drivers, later.drivers), max(self.compilers, later.compilers),
                     max(self.linkers, later.linkers), max(self.swap_used, later.swap_used),
                     max(self.compilers_count, later.compilers_count))


class KillMark(NamedTuple):
    time: float
    whose: str  # "build", "other" or "unknown", as OomKill.whose
    victim: str


@dataclass
class MemorySeries:
    """One build's memory over time: each point stands for ``stride`` samples, the last for ``filled`` so far.
    Memory is the build's frame (bot.memory.frame): its memory limit once a sample showed one (``limited``),
    else the host's."""

    max_points: int = MAX_POINTS
    max_kills: int = MAX_KILLS
    points: list[Point] = field(default_factory=list)
    kills: list[KillMark] = field(default_factory=list)
    stride: int = 1
    filled: int = 0
    limited: bool = False

    def __post_init__(self) -> None:
        if self.max_points < 2 or self.max_kills < 1:
            raise ValueError("a memory series needs max_points >= 2 and max_kills >= 1")

    def __len__(self) -> int:
        return len(self.points)

    @property
    def total(self) -> int:
        """The memory the build lives in, as the last point saw it: its limit, or the host's (0 before any)."""
        return self.points[-1].total if self.points else 0

    @property
    def peak_used(self) -> int:
        """The most memory in use (total - available) at any point, in bytes."""
        return max((p.total - p.available for p in self.points), default=0)

    def add(self, sample: Sample) -> None:
        room = frame(sample)
        if room.scope == "cgroup" and not self.limited:  # the host's figures before it say nothing of the limit
            self.points, self.stride, self.filled, self.limited = [], 1, 0, True
        elif room.scope == "host" and self.limited:
            return  # a sample that could not read the limit: a gap, not a jump to the host's memory
        point = Point(round(sample.time, 3), room.total, room.total - room.used, sample.drivers.rss,
                      sample.compilers.rss, sample.linkers.rss, sample.swap_used, sample.compilers.count)
        if self.points and self.filled < self.stride:
            self.points[-1] = self.points[-1].merge(point)
            self.filled += 1
            return
        self.points.append(point)
        self.filled = 1
        if len(self.points) > self.max_points:
            self._halve()

    def add_kill(self, kill: OomKill) -> None:
        """Marks an OOM kill; when full, the oldest kill not the build's makes room (else this one is dropped)."""
        self.kills.append(KillMark(round(kill.time, 3), kill.whose, kill.victim_name or "?"))
        if len(self.kills) > self.max_kills:
            others = [i for i, k in enumerate(self.kills) if k.whose != "build"]
            del self.kills[others[0] if others else -1]

    def _halve(self) -> None:
        # Pairs merge, so every point keeps standing for the same number of samples.
        pts, odd = self.points, len(self.points) % 2
        if not odd:  # the new point merges into the full one before it
            self.filled += self.stride
        self.points = [a.merge(b) for a, b in zip(pts[0::2], pts[1::2], strict=False)] + pts[len(pts) - odd:]
        self.stride *= 2

    def to_json(self) -> dict[str, Any]:
        return {"max_points": self.max_points, "max_kills": self.max_kills, "stride": self.stride,
                "filled": self.filled, "limited": self.limited, "points": [list(p) for p in self.points],
                "kills": [list(k) for k in self.kills]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MemorySeries:
        points = [Point(float(p[0]), *(int(v) for v in p[1:8])) for p in d.get("points", ())]
        kills = [KillMark(float(t), str(w), str(v)) for t, w, v in d.get("kills", ())]
        return cls(max_points=int(d.get("max_points") or MAX_POINTS), max_kills=int(d.get("max_kills") or MAX_KILLS),
                   points=points, kills=kills, stride=int(d.get("stride") or 1), filled=int(d.get("filled") or 0),
                   limited=bool(d.get("limited")))


def render_memory_chart(series: MemorySeries, *, title: str, width: float = 9, height: float = 4,
                        dpi: int = 100) -> bytes:
    """The series as a PNG of ``width`` x ``height`` inches at ``dpi``: memory in use stacked by process class,
    available, total (the build's memory limit, for a limited series) and the OOM kills, over minutes since the
    first sample. Raises ValueError without samples."""
    if not series.points:
        raise ValueError("no samples")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    start = series.points[0].time
    kill_x = [max(0.0, (k.time - start) / 60) for k in series.kills]
    right = max([(series.points[-1].time - start) / 60, *kill_x])
    right = right if right > 0 else 1.0
    points = series.points
    if len(points) == 1:  # one sample: drawn flat across the axis
        points = [points[0], points[0]._replace(time=start + right * 60)]
    x = [(p.time - start) / 60 for p in points]
    stacks = [[p.drivers / GIB for p in points], [p.compilers / GIB for p in points],
              [p.linkers / GIB for p in points], [p.other / GIB for p in points]]
    ax.stackplot(x, *stacks, labels=[c[0] for c in CLASSES], colors=[c[1] for c in CLASSES])
    ax.plot(x, [p.available / GIB for p in points], color="#1b7837", linewidth=1.4, label="available")
    total = max(p.total for p in points) / GIB
    ax.axhline(total, color="#333333", linestyle="--", linewidth=1.0,
               label="the build's memory limit" if series.limited else "total")
    if any(p.swap_used for p in points):
        ax.plot(x, [p.swap_used / GIB for p in points], color="#8c510a", linewidth=0.8, label="swap used")
    _draw_kills(ax, series.kills, kill_x)
    top = max(total, max(sum(s[i] for s in stacks) for i in range(len(points))))
    ax.set_xlim(0, right)
    ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)
    ax.set_xlabel("minutes since start")
    ax.set_ylabel("GiB")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=8)
    buf = io.BytesIO()
    canvas.print_figure(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _draw_kills(ax: Axes, kills: list[KillMark], xs: list[float]) -> None:
    labelled: set[str] = set()
    for i, (kill, x) in enumerate(zip(kills, xs, strict=True)):
        ours = kill.whose == "build"
        color = BUILD_RED if ours else OTHER_GREY
        legend = "OOM kill (build)" if ours else "OOM kill (other)"
        ax.axvline(x, color=color, linewidth=1.6, label=legend if legend not in labelled else "_nolegend_")
        labelled.add(legend)
        if i < MAX_LABELS:
            ax.annotate(kill.victim, (x, 1), xycoords=ax.get_xaxis_transform(), xytext=(-2, -3),
                        textcoords="offset points", rotation=90, ha="right", va="top", fontsize=7, color=color)
