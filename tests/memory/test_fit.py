"""The one fit (bot/memory/fit.py): the -j the advisor recommends before a build and the -j a pressure alert
suggests during one come from the same formula and the same reserve."""

from __future__ import annotations

import inspect

from hypothesis import given
from hypothesis import strategies as st

from bot.config import DEFAULT_MEMORY_RESERVE, HostConfig
from bot.memory import advisor
from bot.memory.fit import jobs_fitting, usable
from bot.memory.watch import OomWatch, Thresholds
from tests.memory.test_watch import make_sample

GIB = 1 << 30


def test_one_reserve_whoever_asks() -> None:
    assert HostConfig(name="h").memory_reserve == Thresholds().reserve == DEFAULT_MEMORY_RESERVE
    for fn in (usable, advisor.room_for, advisor.advise, advisor.advise_build, advisor.first_advice):
        assert inspect.signature(fn).parameters["reserve"].default == DEFAULT_MEMORY_RESERVE


def test_the_fit_keeps_the_reserve_and_what_others_hold() -> None:
    assert usable(100 * GIB, reserve=0.1, held=10 * GIB) == 80 * GIB
    assert usable(100 * GIB, reserve=0.1, held=200 * GIB) == 0
    assert jobs_fitting(80 * GIB, 4 * GIB) == 20 and jobs_fitting(3 * GIB, 4 * GIB) == 0 and jobs_fitting(GIB, 0) == 0


@given(total=st.integers(1, 1 << 42), compilers=st.integers(2, 64), per=st.integers(1 << 20, 1 << 34),
       reserve=st.sampled_from([0.0, 0.1, 0.3, 0.5]))
def test_an_alert_and_the_advisor_fit_the_same_jobs_in_the_same_room(total: int, compilers: int, per: int,
                                                                     reserve: float) -> None:
    """A host whose memory is all the build's compilers: the alert counts what is not theirs (nothing) as held,
    the advisor has no other builds; both fit the same jobs of the same size."""
    held = compilers * per
    if held > total:
        return
    watch = OomWatch(thresholds=Thresholds(reserve=reserve, available_pct=100.0))  # every sample alerts
    alert = watch.feed(make_sample(0, total=total, available=total - held, compilers=[per] * compilers)).alert
    assert alert is not None
    advice = advisor.advise([per], runs=1, mem_total=total, cores=1 << 62, reserve=reserve)
    assert advice is not None
    fit = max(1, jobs_fitting(usable(total, reserve=reserve), per))
    assert advice.jobs == fit
    assert alert.suggest_jobs == (fit if fit < compilers else None)
