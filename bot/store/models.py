"""What the state holds, as the rest of rigops reads it: runs and pending plans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bot.hosts.models import ProcId, RunRef
from bot.language.plan import Plan

RunState = Literal["starting", "running", "succeeded", "failed", "stopped", "lost"]
PlanState = Literal["pending", "asking", "running", "done", "cancelled", "expired", "interrupted"]  # asking: a question


@dataclass(frozen=True)
class BuildRun:
    """A build rigops started, as recorded in the state."""

    id: int
    host: str
    build: str
    jobs: int | None
    pid: int
    start: int
    supervisor_pid: int | None
    log: str
    exit_file: str
    boot_id: str | None
    started_at: float
    started_by: str | None
    channel: str | None
    thread_id: str | None
    state: RunState
    exit_status: int | None
    ended_at: float | None
    stopped_by: str | None = None  # who asked rigops to stop it (state "stopped"); None: not rigops
    owner: str | None = None  # the rigops (replica id) following it; None: nobody yet
    card_id: str | None = None  # its status card in the thread, edited by whoever follows it
    reported: int = 0  # 1 once its end was told in its thread

    @property
    def proc_id(self) -> ProcId:
        """The build's root process (the command the supervisor started)."""
        return ProcId(self.pid, self.start)

    @property
    def ref(self) -> RunRef:
        """What a host is asked about the run (``Host.run_status``)."""
        return RunRef(self.pid, self.start, self.exit_file, self.log)


@dataclass(frozen=True)
class PendingPlan:
    id: int
    channel: str
    thread_id: str
    message_id: str | None
    request_id: str | None
    user: str
    plan: Plan
    state: PlanState
    created_at: float


@dataclass(frozen=True)
class AuditEntry:
    """One entry of the audit log, as written: what happened, who did it (``None``: nobody asked), where."""

    what: str
    user: str | None
    channel: str | None = None
    thread_id: str | None = None
    host: str | None = None
    build: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
