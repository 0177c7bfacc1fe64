"""The table of what rigops can be asked: each command's words, usage, help line, the role it needs, whether it
is destructive, its step's parameters and how a step of it is described in a plan.

An action run on hosts brings its own row, in its spec (``bot.actions.registry``: one module in ``bot/actions/``
each); the rows here are the commands the core answers itself. Help, usage in error messages, the slash-command
words, the plan's step lines, the policy's "destructive" and the manifest's usage hint all come from the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

from bot.policy_config import Role

if TYPE_CHECKING:
    from bot.language.plan import Step

HostScope = Literal["none", "one", "any"]  # no host; exactly one host; a host, a group or all
StepParam = Literal["jobs", "lines", "clean"]  # what a step of a command may carry besides its action


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
    describe: Callable[[Step, str], str] | None = None  # (the step, "`build`") -> a plan's step line
    is_action: bool = True  # a Plan step; False: a subcommand the core answers itself
    rank: int = 0  # where its step goes among those a message asks for together, in no order it says
    params: tuple[StepParam, ...] = ()  # what its step carries (and `rigops explain --json` shows)
    hint: str = ""  # its part of the slash command's usage hint; default: its name

    @property
    def full_usage(self) -> str:
        return f"/rigops {self.name}" + (f" {self.usage}" if self.usage else "")

    @property
    def looks_everywhere(self) -> bool:
        """A look that may answer for every host at once (a group, or all of them)."""
        return self.is_action and self.hosts == "any" and not self.destructive


HOSTS = Command("hosts", (), "", "the hosts and builds rigops knows", hosts="none", rank=80,
                describe=lambda step, build: "list hosts")
SCHEDULE = Command("schedule", ("schedules",), '''add "<cron>"|every 30m|daily at 09:00 [host|all] [#channel]''',
                   "status digests posted on a schedule (`list`, `remove ID`; admins add and remove)", hosts="none",
                   is_action=False)
AUDIT = Command("audit", (), "[N]", "the last N audit entries (admins)", role="admin", hosts="none", is_action=False)
HELP = Command("help", (), "", "this text", hosts="none", rank=90, describe=lambda step, build: "show help")
CORE_COMMANDS: tuple[Command, ...] = (HOSTS, SCHEDULE, AUDIT, HELP)


@cache
def commands() -> tuple[Command, ...]:
    """Every command, in help's order: the actions' rows (from their specs), then the core's."""
    from bot.actions.registry import specs  # lazily: the actions' modules import the layers below this one

    return (*(spec.command for spec in specs()), *CORE_COMMANDS)


@cache
def _by_name() -> dict[str, Command]:
    return {c.name: c for c in commands()}


@cache
def _by_word() -> dict[str, Command]:
    return {w: c for c in commands() for w in (c.name, *c.words)}


def command(name: str) -> Command:
    """The row of a command by name. Raises KeyError."""
    return _by_name()[name]


def by_word(word: str) -> Command | None:
    """The command ``/rigops <word>`` means, if any."""
    return _by_word().get(word)


@cache
def step_names() -> tuple[str, ...]:
    """The actions a Plan's steps may name, in the order steps asked for together run."""
    return tuple(c.name for c in sorted((c for c in commands() if c.is_action), key=lambda c: c.rank))


def describe_step(step: Step, build: str | None) -> str:
    """A plan's line for one step, e.g. "start `sgl-kernel` at -j20"."""
    row = command(step.action)
    assert row.describe is not None, f"{step.action} is not a plan step"
    return row.describe(step, f"`{build}`" if build else "the build")


def usage_hint() -> str:
    """The slash command's usage hint in the Slack app manifest (``manifests/rigops.json``)."""
    return " | ".join(c.hint or c.name for c in commands()) + "  [host] [build]"
