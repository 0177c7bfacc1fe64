"""What rigops says of disk space (``/rigops disk``): each filesystem of a host's builds and of rigops' files on
it, the fullest first to catch the eye. Pure: dataclasses in, text out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.hosts.meminfo import human

if TYPE_CHECKING:  # bot.actions.disk imports this module for its words
    from bot.actions.disk import DiskReport, Measured, Place, Space

NEARLY_FULL = 90  # percent used (df's Use%) from which a filesystem is worth a warning
LOW_DISK = "low on disk"  # a fleet's trouble: "2 low on disk"
KIND = {"workdir": "workdir", "logs": "build logs", "state": "rigops' state"}


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
