"""What the agent's answers mean once typed: a make alone is not a build."""

from __future__ import annotations

from typing import Any

from bot.hosts.models import Snapshot


def snapshot(*tools: dict[str, Any]) -> Snapshot:
    return Snapshot.from_json("b200", {"time": 1.0, "meminfo": {"MemTotal": 1024, "MemAvailable": 512},
                                       "tools": list(tools)}, used_formula="available")


def tool(name: str, pid: int, **extra: Any) -> dict[str, Any]:
    return {"pid": pid, "start": pid, "name": name, "user": "dev", "rss": 1 << 20, "ppid": 1, **extra}


def test_a_make_with_nothing_compiling_is_not_a_build() -> None:
    assert snapshot(tool("make", 10)).tools == ()  # someone's `make run`
    assert snapshot(tool("make", 10), tool("ninja", 11)).tools == ()


def test_a_make_with_a_compiler_running_is_a_build() -> None:
    assert [t.name for t in snapshot(tool("make", 10), tool("cc1plus", 12, ppid=11)).tools] == ["make", "cc1plus"]


def test_cmake_alone_may_be_configuring_and_counts() -> None:
    assert [t.name for t in snapshot(tool("cmake", 10), tool("make", 11)).tools] == ["cmake", "make"]


def test_a_make_rigops_started_counts_even_idle() -> None:
    assert [t.name for t in snapshot(tool("make", 10, root=[10, 10])).tools] == ["make"]
