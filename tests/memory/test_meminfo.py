"""free -h from /proc/meminfo, against canned real text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.hosts.meminfo import free_table, human, memory_from_meminfo, parse_meminfo

DATA = Path(__file__).parent.parent / "data" / "mem"


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


def test_mem_names_the_limit_builds_run_in() -> None:
    """On a host whose builds run inside a limit (the agent's own cgroup: a container's `--memory`), `mem`
    says so; in a build's thread it says what that build uses of its limit instead."""
    from dataclasses import replace

    from bot.hosts.models import BuildMemory, Snapshot
    from bot.text.render import snapshot_text

    info = parse_meminfo((DATA / "debian12-procps4.meminfo").read_text())
    snap = Snapshot.from_json("b200", {"meminfo": info, "cores": 8, "limit": 900 << 20}, used_formula="available")
    assert snap.limit == 900 << 20
    assert "builds started here run inside a 900Mi memory limit" in snapshot_text(snap)
    assert "memory limit" not in snapshot_text(replace(snap, limit=None))
    assert "memory limit" not in snapshot_text(replace(snap, limit=snap.memory.total * 2))  # no tighter than host
    text = snapshot_text(replace(snap, builds=(BuildMemory("llama", 7, limit=900 << 20, used=810 << 20,
                                                           peak=880 << 20),)))
    assert "`llama` (run 7) runs inside a 900Mi memory limit: 810Mi used (90%), peak 880Mi" in text
    assert "builds started here" not in text
