"""Memory numbers as ``free -h`` prints them, from /proc/meminfo.

procps-ng 4 computes "used" as MemTotal - MemAvailable; older releases as
MemTotal - MemFree - Buffers - Cached - SReclaimable. The agent tells which one its host runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

UsedFormula = Literal["available", "classic"]
KIB = 1024
FREE_COLUMNS = "total        used        free      shared  buff/cache   available"
# procps-ng 4 widened the label column by one; match the release the host runs.
LABEL_WIDTH: dict[UsedFormula, int] = {"available": 8, "classic": 7}


@dataclass(frozen=True)
class Memory:
    """One reading of a host's memory, in bytes."""

    total: int
    free: int
    available: int
    shared: int
    buffers: int
    cache: int  # Cached + SReclaimable, as free counts it
    swap_total: int
    swap_free: int
    used_formula: UsedFormula = "available"

    @property
    def buff_cache(self) -> int:
        return self.buffers + self.cache

    @property
    def used(self) -> int:
        if self.used_formula == "available":
            return max(self.total - self.available, 0)
        used = self.total - self.free - self.buff_cache
        return used if used >= 0 else self.total - self.free

    @property
    def swap_used(self) -> int:
        return self.swap_total - self.swap_free

    @property
    def available_fraction(self) -> float:
        return self.available / self.total if self.total else 0.0


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo text -> {key: bytes} (lines without a unit are counts, kept as they are)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            continue
        value = int(parts[0])
        out[key.strip()] = value * KIB if len(parts) > 1 and parts[1] == "kB" else value
    return out


def memory_from_meminfo(info: Mapping[str, int], *, used_formula: UsedFormula = "available") -> Memory:
    """Build a Memory from meminfo values in bytes (as the agent sends them)."""
    total = info.get("MemTotal", 0)
    free = info.get("MemFree", 0)
    cache = info.get("Cached", 0) + info.get("SReclaimable", 0)
    available = info.get("MemAvailable", min(free + cache, total))
    return Memory(
        total=total, free=free, available=available, shared=info.get("Shmem", 0),
        buffers=info.get("Buffers", 0), cache=cache,
        swap_total=info.get("SwapTotal", 0), swap_free=info.get("SwapFree", 0),
        used_formula=used_formula,
    )


def human(size: int) -> str:
    """A size the way ``free -h`` writes it: 0B, 999B, 1.5Ki, 62Mi, 449Gi."""
    text = f"{size}B"
    if len(text) <= 4:
        return text
    for power, unit in enumerate("KMGTP", start=1):
        scaled = size / KIB**power
        text = f"{scaled:.1f}{unit}i"
        if len(text) <= 5:
            return text
        text = f"{int(scaled)}{unit}i"
        if len(text) <= 5:
            return text
    return f"{size / KIB**6:.1f}Ei"


def free_table(mem: Memory) -> str:
    """The three lines ``free -h`` prints for this reading."""
    width = LABEL_WIDTH[mem.used_formula]
    header = " " * (width + 7) + FREE_COLUMNS
    row = "".join(f"{human(v):>12}" for v in (mem.total, mem.used, mem.free, mem.shared,
                                              mem.buff_cache, mem.available))
    swap = "".join(f"{human(v):>12}" for v in (mem.swap_total, mem.swap_used, mem.swap_free))
    return f"{header}\n{'Mem:':<{width}}{row}\n{'Swap:':<{width}}{swap}"
