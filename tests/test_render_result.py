"""How a failed build's result offers a retry with fewer jobs (bot/memory/policy.retry_offer, worded by
bot/text/render.build_result), and what a pressed [Retry at -jN] runs (bot/core/requests._fewer)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest

from bot.builds.diagnose import Diagnosis
from bot.core.requests import _fewer
from bot.memory.policy import retry_offer
from bot.memory.watch import OomKill
from bot.store import BuildRun, Store
from bot.text.render import build_result
from tests.harness import record_run

OOM = Diagnosis(category="oom_compiler", line="Killed", fix="Retry with fewer jobs.", line_number=10)


def failed_run(jobs: int) -> BuildRun:
    store = Store.open(Path(tempfile.mkdtemp()))
    run = record_run(store, "b200", "sgl-kernel", jobs=jobs)
    store.close()
    return dataclasses.replace(run, state="failed", exit_status=1, ended_at=run.started_at + 60)


@pytest.mark.parametrize(("jobs", "fits", "label", "value"), [
    (4, None, "Retry at -j2", ":2"),  # half, when the guard found nothing that fits
    (4, 1, "Retry at -j1", ":1"),  # what the guard's alert found would fit, when fewer than half
    (4, 3, "Retry at -j2", ":2"),  # never more than half
    (2, 1, "Retry at -j1", ":1"),
])
def test_an_oom_s_retry_offers_what_fits(jobs: int, fits: int | None, label: str, value: str) -> None:
    run = failed_run(jobs)
    message = build_result(run, OOM, retry_at=retry_offer(run.jobs, category=OOM.category, fits=fits))
    [fewer] = [c for c in message.choices if c.kind == "retry_half"]
    assert (fewer.label, fewer.value) == (label, f"{run.id}{value}")
    assert _fewer(fewer.value, run.jobs) == int(value[1:])


def test_a_retry_button_runs_fewer_jobs_only() -> None:
    assert _fewer("7:99", 8) == 4 and _fewer("7:0", 8) == 4 and _fewer("7", 8) == 4 and _fewer("7:x", 8) == 4
    # held to the rule that offers it: never more than half, though fewer than the run's own
    assert _fewer("7:6", 8) == 4 and _fewer("7:3", 8) == 3


def test_no_retry_at_fewer_jobs_when_memory_was_not_the_trouble() -> None:
    run = failed_run(8)
    other = dataclasses.replace(OOM, category="compile_error")
    assert retry_offer(run.jobs, category=other.category, fits=2) is None
    assert retry_offer(1, category=OOM.category, fits=None) is None  # -j1 has nothing to halve
    assert not [c for c in build_result(run, other, retry_at=None).choices if c.kind == "retry_half"]


def test_the_result_names_the_process_the_oom_killer_killed() -> None:
    run = failed_run(4)
    kills = [OomKill("b200", 0.0, "build", "kernel", victim_pid=16010, victim_name="cudafe++")]
    assert "*The kernel's OOM killer killed* `cudafe++` (pid 16010) of this build." in \
        build_result(run, OOM, killed=kills).text
    assert "`cudafe++` ×3" in build_result(run, OOM, killed=kills * 3).text
    assert "OOM killer" not in build_result(dataclasses.replace(run, state="succeeded"), None, killed=kills).text
