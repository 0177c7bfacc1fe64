"""The one table of what rigops can be asked: each command's words, usage, help line, the role it needs, whether it
is destructive, and how a step of it is described in a plan.

Help, usage in error messages, the slash-command words, the plan's step lines and the policy's "destructive"
all come from here. A new action is a row here, a module in ``bot/actions/`` (what it does on a host) and its
rendering in ``bot/text/render.py`` (what rigops says of its result).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bot.policy_config import Role

HostScope = Literal["none", "one", "any"]  # no host; exactly one host; a host, a group or all


@dataclass(frozen=True)
class Command:
    name: str
    words: tuple[str, ...]  # what `/rigops <word>` accepts besides the name
    usage: str  # the arguments after `/rigops <name>`
    help: str  # one line in `/rigops help`
    role: Role = "viewer"  # the least role that may run it
    destructive: bool = False  # stops or starts builds: policy and, by default, a Run button
    hosts: HostScope = "any"
    build_default: bool = False  # a host's default build fills in when the request names none
    describe: Callable[[int | None, str], str] | None = None  # (jobs or lines, "`build`") -> a plan's step line
    is_action: bool = True  # a Plan step run on hosts; False: a subcommand the core answers itself

    @property
    def full_usage(self) -> str:
        return f"/rigops {self.name}" + (f" {self.usage}" if self.usage else "")


COMMANDS: tuple[Command, ...] = (
    Command("status", (), "[host] [build]", "builds on a host and what is running",
            describe=lambda n, build: "show build status"),
    Command("mem", ("memory", "ram", "free"), "[host]", "`free -h` and the top memory users",
            describe=lambda n, build: "show memory (`free -h`)"),
    Command("gpu", ("gpus", "nvidia-smi"), "[host]", "GPUs from nvidia-smi",
            describe=lambda n, build: "show GPUs (`nvidia-smi`)"),
    Command("kill", ("stop", "abort"), "[host] [build]",
            "stop the build: its own processes (the build user's compilers by name only when rigops did not start "
            "it); other builds are spared", role="operator", destructive=True, hosts="one", build_default=True,
            describe=lambda n, build: f"stop {build} (its own processes; other builds are spared)"),
    Command("rebuild", ("retry", "restart"), "[host] [build] [-jN] [--clean]",
            "start the build again, first stopping it if it runs (other builds go on); `--clean` removes the "
            "build directory rigops keeps for it first", role="operator",
            destructive=True, hosts="one", build_default=True,
            describe=lambda n, build: f"start {build} at -j{n}" if n else f"start {build} at its default -j"),
    Command("log", ("logs", "tail"), "[host] [build] [N]", "the last N lines of the build log (default 40)",
            hosts="one", build_default=True, describe=lambda n, build: f"show the last {n or 40} log lines"),
    Command("chart", ("graph", "plot"), "[host] [build]",
            "the memory chart of the build's latest run (by process class, OOM kills marked)", hosts="one",
            build_default=True, describe=lambda n, build: f"chart the memory of {build}'s latest run"),
    Command("hosts", (), "", "the hosts and builds rigops knows", hosts="none", describe=lambda n, build: "list hosts"),
    Command("schedule", ("schedules",), '''add "<cron>"|every 30m|daily at 09:00 [host|all] [#channel]''',
            "status digests posted on a schedule (`list`, `remove ID`; admins add and remove)", hosts="none",
            is_action=False),
    Command("audit", (), "[N]", "the last N audit entries (admins)", role="admin", hosts="none", is_action=False),
    Command("help", (), "", "this text", hosts="none", describe=lambda n, build: "show help"),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
WORDS: dict[str, Command] = {w: c for c in COMMANDS for w in (c.name, *c.words)}


def command(name: str) -> Command:
    return BY_NAME[name]


def describe_step(action: str, number: int | None, build: str | None) -> str:
    """A plan's line for one step, e.g. "start `sgl-kernel` at -j20"."""
    row = BY_NAME[action]
    assert row.describe is not None, f"{action} is not a plan step"
    return row.describe(number, f"`{build}`" if build else "the build")
