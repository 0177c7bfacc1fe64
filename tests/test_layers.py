"""The folders of bot/ are layers (docs/architecture.md): a module imports from its own layer and the layers below
it. The imports that still go up are listed here by name, so that a new one fails this test and one mended must
be struck from the list."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. The agent (bot/hosts/agent/) is apart: it imports nothing from bot (tests/hosts/test_agent.py).
LAYERS = ("util", "policy_config", "config", "language", "builds", "hosts", "store", "memory", "reports", "text",
          "actions", "scheduler", "core", "frontends", "app", "__main__")

# Upward imports, each for a reason docs/architecture.md gives: (module, what it imports).
UPWARD = {
    ("bot.config", "bot.language.schedule_text"),  # the config's schedules are checked when it loads
    ("bot.language.commands", "bot.actions.registry"),  # the command table is the registry's (read on first use)
}


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "bot" or len(parts) == 1:
        return None
    return "hosts.agent" if parts[1:3] == ["hosts", "agent"] else parts[1]


def imports() -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / "bot").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):  # function-level imports count too
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add((module, node.module))
            elif isinstance(node, ast.Import):
                found.update((module, alias.name) for alias in node.names)
    return found


def test_every_folder_is_a_layer() -> None:
    folders = {p.name for p in (ROOT / "bot").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    files = {p.stem for p in (ROOT / "bot").glob("*.py")} - {"__init__"}
    assert folders | files == set(LAYERS)


def test_imports_go_down_but_for_those_named() -> None:
    upward = set()
    for module, imported in imports():
        here, there = layer(module), layer(imported)
        if here is None or there is None or here == there:
            continue
        assert there != "hosts.agent" or imported == "bot.hosts.agent.protocol", (
            f"{module} imports {imported}: the bot reads only the agent's protocol module")
        assert here != "hosts.agent", f"{module} imports {imported}: the agent runs where bot is not installed"
        if there != "hosts.agent" and LAYERS.index(there) > LAYERS.index(here):
            upward.add((module, imported))
    assert upward - UPWARD == set(), "new imports up the layers"
    assert UPWARD - upward == set(), "mended: strike these from UPWARD"
