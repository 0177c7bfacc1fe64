"""free -h from /proc/meminfo, against canned real text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.memory import free_table, human, memory_from_meminfo, parse_meminfo

DATA = Path(__file__).parent / "data" / "mem"


@pytest.mark.parametrize(("name", "formula"), [("debian12-procps4", "available"),
                                               ("ubuntu2204-procps3", "classic")])
def test_free_table_is_what_free_h_prints(name: str, formula: str) -> None:
    info = parse_meminfo((DATA / f"{name}.meminfo").read_text())
    table = free_table(memory_from_meminfo(info, used_formula=formula))  # type: ignore[arg-type]
    assert table.splitlines() == (DATA / f"{name}.free-h").read_text().splitlines()


def test_used_matches_free_b_on_procps4() -> None:
    info = parse_meminfo((DATA / "debian12-procps4.meminfo").read_text())
    mem = memory_from_meminfo(info, used_formula="available")
    _header, mem_row, _swap_row = (DATA / "debian12-procps4.free-b").read_text().splitlines()
    total, used, free, shared, buff_cache, available = (int(x) for x in mem_row.split()[1:])
    assert (mem.total, mem.used, mem.free, mem.shared, mem.buff_cache, mem.available) == (
        total, used, free, shared, buff_cache, available)


@pytest.mark.parametrize(("size", "text"), [
    (0, "0B"), (999, "999B"), (1000, "1.0Ki"), (1023, "1.0Ki"),  # "1000B" is too wide: next unit
    (1024, "1.0Ki"), (10 * 1024, "10Ki"), (1023 * 1024, "1.0Mi"), (1024**3 * 449, "449Gi"),
    (int(1024**3 * 9.97), "9Gi"), (int(1024**3 * 1.25), "1.2Gi"),
])
def test_human_follows_procps_rules(size: int, text: str) -> None:
    assert human(size) == text


def test_meminfo_without_memavailable_still_gives_a_number() -> None:
    info = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nCached: 200 kB\nBuffers: 50 kB\n")
    mem = memory_from_meminfo(info)
    assert mem.available == 300 * 1024 and mem.total == 1000 * 1024
