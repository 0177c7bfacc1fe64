"""Free space where a host's builds work and where rigops keeps its files there (the builds' logs, its state):
a full disk fails a build with "No space left on device", and a look says which filesystem it is, the fullest
first to catch the eye."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.actions import ActionContext, Target
from bot.actions.rebuild import DEFAULT_LOG_DIR
from bot.actions.registry import ActionSpec, Reading
from bot.hosts.meminfo import human
from bot.language.commands import Command
from bot.language.plan import Step
from bot.util.errors import ActionFailed

STATE_DIR = DEFAULT_LOG_DIR.rsplit("/", 1)[0]  # where rigops keeps its files on a host
PlaceKind = Literal["workdir", "logs", "state"]
NEARLY_FULL = 90  # percent used (df's Use%) from which a filesystem is worth a warning
LOW_DISK = "low on disk"  # a fleet's trouble: "2 low on disk"
KIND = {"workdir": "workdir", "logs": "build logs", "state": "rigops' state"}


@dataclass(frozen=True)
class Place:
    """A directory rigops cares about on the host: a build's workdir or log directory, or its own state."""

    kind: PlaceKind
    path: str
    builds: tuple[str, ...] = ()  # whose it is (several builds may log to one directory)


@dataclass(frozen=True)
class Measured:
    place: Place
    exists: bool  # False: not made yet, measured at its nearest existing parent


@dataclass(frozen=True)
class Space:
    """One filesystem and the places on it; sizes in bytes as df counts them."""

    mount: str
    total: int
    used: int
    free: int  # what a user other than root may still write
    places: tuple[Measured, ...]

    @property
    def percent(self) -> int:
        """df's Use%: used of what a user may use, rounded up."""
        usable = self.used + self.free
        return -(-100 * self.used // usable) if usable else 0


@dataclass(frozen=True)
class DiskReport:
    host: str
    spaces: tuple[Space, ...]
    unmeasured: tuple[tuple[Place, str], ...] = ()  # places the agent could not measure, and why


def places(target: Target) -> tuple[Place, ...]:
    """The target build's workdir and log directory (every build's, when it names none), and rigops' state."""
    builds = (target.build,) if target.build is not None else tuple(target.config.builds.values())
    found: dict[str, Place] = {}
    kinds: tuple[PlaceKind, PlaceKind] = ("workdir", "logs")
    for build in builds:
        for kind, path in zip(kinds, (build.workdir, build.log_dir or DEFAULT_LOG_DIR), strict=True):
            seen = found.get(path)
            found[path] = Place(kind, path, (*seen.builds, build.name) if seen else (build.name,))
    found.setdefault(STATE_DIR, Place("state", STATE_DIR))
    return tuple(found.values())


async def disk(ctx: ActionContext) -> DiskReport:
    """The free space of each place's filesystem on the target host. Raises HostError."""
    host = ctx.target.host
    asked = places(ctx.target)
    answer = await host.request("disk", {"paths": [p.path for p in asked]})
    return parse_report(host.name, asked, answer)


def parse_report(host: str, asked: tuple[Place, ...], answer: Mapping[str, Any]) -> DiskReport:
    """The agent's answer to ``disk``, checked. Raises ActionFailed when it is not what the agent sends."""
    got = answer.get("places")
    if not isinstance(got, list) or len(got) != len(asked) or not all(isinstance(d, dict) for d in got):
        raise _malformed(host)
    by_device: dict[int, Space] = {}
    unmeasured: list[tuple[Place, str]] = []
    for place, d in zip(asked, got, strict=True):
        if isinstance(d.get("error"), str):
            unmeasured.append((place, d["error"]))
            continue
        device, total, used, free = (_count(host, d, key) for key in ("device", "total", "used", "free"))
        mount, exists = d.get("mount"), d.get("exists")
        if not isinstance(mount, str) or not isinstance(exists, bool):
            raise _malformed(host)
        seen = by_device.get(device)
        measured = Measured(place, exists)
        by_device[device] = Space(mount, total, used, free, (*seen.places, measured) if seen else (measured,))
    return DiskReport(host, tuple(by_device.values()), tuple(unmeasured))


def _count(host: str, d: Mapping[str, Any], key: str) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _malformed(host)
    return value


def _malformed(host: str) -> ActionFailed:
    return ActionFailed("the agent's answer about disk space was not what it sends", host=host, op="disk",
                        code="internal")


async def _run(ctx: ActionContext, step: Step) -> DiskReport:
    return await disk(ctx)


def disk_text(report: DiskReport) -> str:
    rows = [f"*Disk on {report.host}*"]
    for space in sorted(report.spaces, key=lambda s: -s.percent):
        rows.append(f"• `{space.mount}` — {human(space.free)} free of {human(space.total)} ({space.percent}% used): "
                    + "; ".join(_measured(m) for m in space.places))
    rows += [f":grey_question: {_place(place)} could not be measured: {why}" for place, why in report.unmeasured]
    rows += [f":warning: `{s.mount}` is {s.percent}% full: a build writing its objects or logs there can fail with "
             "\"No space left on device\"" for s in report.spaces if s.percent >= NEARLY_FULL]
    return "\n".join(rows)


def _measured(m: Measured) -> str:
    return _place(m.place) + ("" if m.exists else " (not made yet)")


def _place(place: Place) -> str:
    whose = f" of {', '.join(f'`{b}`' for b in place.builds)}" if place.builds else ""
    return f"{KIND[place.kind]}{whose} `{place.path}`"


def disk_row(report: DiskReport) -> str:
    """"/ 23% used, 78Gi free; /data 96% used, 40Gi free": a host's filesystems in a fleet's answer."""
    spaces = sorted(report.spaces, key=lambda s: -s.percent)
    return "; ".join(_row_part(s) for s in spaces) or "nothing measured"


def _row_part(space: Space) -> str:
    return f"{space.mount} {space.percent}% used, {human(space.free)} free"


def disk_troubles(report: DiskReport) -> tuple[str, ...]:
    """(LOW_DISK,) when a filesystem is nearly full: its row goes first in a fleet's answer."""
    return (LOW_DISK,) if any(s.percent >= NEARLY_FULL for s in report.spaces) else ()


SPEC = ActionSpec(
    Command("disk", ("df",), "[host] [build]",
            "free space where the builds work and where rigops keeps their logs and its state (`df -h`)", rank=70,
            describe=lambda step, build: "show disk space (`df -h`)"),
    run=_run, reads=lambda report: Reading(disk_text(report)), row=disk_row, troubles=disk_troubles)
