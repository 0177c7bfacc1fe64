"""Numbers as people write them (issue 14, part 3): parallelism and log line counts in many shapes, and the
numbers that are not a -j (times, sizes, GPU counts, versions, issue numbers, progress) — unit tables over
``bot.language.intents.parse``."""

from __future__ import annotations

import pytest

from bot import config
from bot.language.intents import parse
from bot.language.plan import Plan
from tests.language.test_intents import ONE, _build

# One host with one build (both defaults, so every case here is about the numbers alone), as test_intents has it.
# Several hosts and no default: chatter must stay silent here (not even a "which host?").
MULTI = config.parse({"hosts": {
    "b200": {"address": "b200.lab.example", "builds": {"sgl-kernel": _build(32), "flashinfer": _build()}},
    "n2": {"address": "n2.lab.example", "builds": {"sgl-kernel": _build()}},
}})


def summary(plan: Plan) -> str:
    """'kill mem rebuild=20' — the steps, with jobs/lines when set."""
    out = []
    for step in plan.steps:
        number = step.jobs if step.action == "rebuild" else step.lines if step.action == "log" else None
        out.append(step.action if number is None else f"{step.action}={number}")
    return " ".join(out)


def _said(text: str, addressed: bool = False) -> Plan:
    return parse(text, config=ONE, addressed=addressed)


# --- parallelism: plain messages in an ops channel -----------------------------------------------------

JOBS = [
    # key = value, key: value, key - value
    ("jobs: 8", "rebuild=8"),
    ("retry with jobs: 12", "rebuild=12"),
    ("oom-ing, jobs=16", "kill mem rebuild=16"),
    ("jobs - 8", "rebuild=8"),
    ("-j: 12", "rebuild=12"),
    ("try j=8", "rebuild=8"),
    ("par=8", "rebuild=8"),
    ("parallelism: 8", "rebuild=8"),
    ("concurrency=4", "rebuild=4"),
    ("MAX_JOBS 20", "rebuild=20"),
    ("MAX_JOBS: 20", "rebuild=20"),
    ("retry with MAX_JOBS 12", "rebuild=12"),
    ("max jobs 8", "rebuild=8"),
    ("CMAKE_BUILD_PARALLEL_LEVEL: 6", "rebuild=6"),
    ("export MAX_JOBS=24", "rebuild=24"),
    ("MAKEFLAGS=-j12", "rebuild=12"),
    # build tools' own flags
    ("make -j 16", "rebuild=16"),
    ("ninja -j16", "rebuild=16"),
    ("cmake --build . -j 8", "rebuild=8"),
    ("rerun with --parallel 6", "rebuild=6"),
    ("oom again, restart with --jobs 10", "kill mem rebuild=10"),
    ("rebuild w/ -j 6", "rebuild=6"),
    ("retry, -j12 this time", "rebuild=12"),
    ("just do -j10", "rebuild=10"),
    ("-j 24 pls", "rebuild=24"),
    ("try -j 8 instead of -j32", "rebuild=8"),
    ("use -j 16, it's oom-ing", "kill mem rebuild=16"),
    # a count and a unit
    ("use 24 cores", "rebuild=24"),
    ("16 threads", "rebuild=16"),
    ("limit to 12 concurrent compiles", "rebuild=12"),
    ("try 8 parallel compiles", "rebuild=8"),
    ("how about 10 workers", "rebuild=10"),
    ("can you rebuild at 12 jobs", "rebuild=12"),
    ("drop it to 8 jobs", "rebuild=8"),
    ("kick it off again with 10 jobs", "rebuild=10"),
    ("ooming bad. 12 jobs.", "kill mem rebuild=12"),
    ("8 jobs max", "rebuild=8"),
    ("max 8 jobs", "rebuild=8"),
    ("16 cores max please", "rebuild=16"),
    ("try 8 in parallel", "rebuild=8"),
    ("one job at a time please", "rebuild=1"),
    # N-way, Nx, parallelism of N
    ("try 8-way", "rebuild=8"),
    ("go 4-way parallel", "rebuild=4"),
    ("try 12-way parallelism", "rebuild=12"),
    ("8x parallel", "rebuild=8"),
    ("rebuild with a parallelism of 8", "rebuild=8"),
    ("parallelism of 6 please", "rebuild=6"),
    ("set parallelism to 10", "rebuild=10"),
    ("cap parallelism at 12", "rebuild=12"),
    ("lower the parallelism to 12", "rebuild=12"),
    # a bare number after a request verb
    ("try 16", "rebuild=16"),
    ("let's go with 12", "rebuild=12"),
    ("run it with 10", "rebuild=10"),
    ("rebuild 16", "rebuild=16"),
    ("swapping like crazy, go down to 8", "kill mem rebuild=8"),
    # words for numbers
    ("try four jobs", "rebuild=4"),
    ("a dozen jobs please", "rebuild=12"),
    ("half a dozen jobs", "rebuild=6"),
    ("go two-way", "rebuild=2"),
    ("oom-ing pretty bad, try twenty jobs", "kill mem rebuild=20"),
    ("swapping, go down to eight", "kill mem rebuild=8"),
    ("retry with four", "rebuild=4"),
    ("try sixteen threads", "rebuild=16"),
    ("thirty-two jobs", "rebuild=32"),
    ("use twenty four cores", "rebuild=24"),
    ("try with a single job", "rebuild=1"),
    ("use nine threads", "rebuild=9"),
    ("bump to twenty", "rebuild=20"),
    ("retry using twelve", "rebuild=12"),
    ("-j twelve", "rebuild=12"),
    ("retry with eight jobs on b200", "rebuild=8"),
    # written after the rules above, as a check on phrasings they were not tuned on
    ("oom-ing hard, can we go to -j 10", "kill mem rebuild=10"),
    ("rebuild at j=6", "rebuild=6"),
    ("retry, max_jobs=10 this time", "rebuild=10"),
    ("lets try six jobs", "rebuild=6"),
    ("swapping - try 10 jobs instead", "kill mem rebuild=10"),
    ("cut it down to 4 jobs", "rebuild=4"),
    ("reduce parallelism to 6", "rebuild=6"),
    ("run with -j 4 please", "rebuild=4"),
    ("start it again with 8 threads", "rebuild=8"),
    ("relaunch with jobs=4", "kill rebuild=4"),
    ("ok -j6", "rebuild=6"),
    ("maybe twelve jobs?", "rebuild=12"),
    ("try ten", "rebuild=10"),
    ("8 parallel jobs pls", "rebuild=8"),
    ("give it 16 cores", "rebuild=16"),
    ("go with eight", "rebuild=8"),
    ("MAX_JOBS = 14", "rebuild=14"),
    ("ninja -j 10 please", "rebuild=10"),
    ("use 6-way parallelism", "rebuild=6"),
    ("oom killer hit cc1plus, jobs: 6", "kill mem rebuild=6"),
    ("restart it with a parallelism of 10", "kill rebuild=10"),
    ("just 4 jobs", "rebuild=4"),
    ("at most 6 jobs", "rebuild=6"),
    ("CMAKE_BUILD_PARALLEL_LEVEL 12", "rebuild=12"),
]


@pytest.mark.parametrize(("text", "expected"), JOBS)
def test_parallelism_as_people_write_it(text: str, expected: str) -> None:
    plan = _said(text)
    assert (summary(plan), plan.error) == (expected, None)


JOBS_ADDRESSED = [
    ("j=8", "rebuild=8"),
    ("j 8", "rebuild=8"),
    ("twelve jobs", "rebuild=12"),
    ("4-way", "rebuild=4"),
    ("try 6", "rebuild=6"),
    ("rebuild with jobs: 8", "rebuild=8"),
]


@pytest.mark.parametrize(("text", "expected"), JOBS_ADDRESSED)
def test_parallelism_said_to_the_bot(text: str, expected: str) -> None:
    plan = _said(text, addressed=True)
    assert (summary(plan), plan.error) == (expected, None)


# --- log lines ------------------------------------------------------------------------------------------

LINES = [
    ("last 200 lines", "log=200"),
    ("tail -n 50", "log=50"),
    ("tail -200", "log=200"),
    ("tail 100", "log=100"),
    ("tail -n50", "log=50"),
    ("tail --lines=300", "log=300"),
    ("tail -n 1000 the log", "log=1000"),
    ("log -n 75", "log=75"),
    ("100 lines of log", "log=100"),
    ("show me fifty lines", "log=50"),
    ("show me the last hundred lines", "log=100"),
    ("last hundred lines", "log=100"),
    ("show me a hundred lines of the log", "log=100"),
    ("post the last two hundred lines", "log=200"),
    ("paste twenty lines of the log", "log=20"),
    ("can I see the last thirty lines", "log=30"),
    ("last 2k lines of the log", "log=2000"),
    ("show 1k lines of the log", "log=1000"),
    ("give me the last 80 lines of output", "log=80"),
    ("last 30 log lines", "log=30"),
    ("logs, last 60 lines", "log=60"),
    ("what do the last 40 lines say?", "log=40"),
    ("tail the log, 150 lines", "log=150"),
    ("the last 25 lines please", "log=25"),
    ("dump 500 lines of the build log", "log=500"),
    ("tail the last 100", "log=100"),
    ("last 50 lines from sgl-kernel", "log=50"),
    ("oom-ing, tail -n 80", "mem log=80"),
    # written after the rules
    ("tail -n 300 pls", "log=300"),
    ("last 75 lines of the log please", "log=75"),
    ("show the last eighty lines", "log=80"),
    ("gimme 40 lines of output", "log=40"),
    ("tail forty", "log=40"),
    ("paste last 150", "log=150"),
    ("can you post the last 500 log lines", "log=500"),
    ("logs -n 20", "log=20"),
]


@pytest.mark.parametrize(("text", "expected"), LINES)
def test_log_lines_as_people_write_them(text: str, expected: str) -> None:
    plan = _said(text)
    assert (summary(plan), plan.error) == (expected, None)


# --- numbers that are not a -j --------------------------------------------------------------------------

NOT_JOBS = [
    "retry at 9:30",
    "retry at 12:45",
    "restart at 3",
    "rebuild, the box has 64G free",
    "rebuild with 64G of swap",
    "retry with 64 GB",
    "retry with 16GB",
    "rebuild for sm_120",
    "retry on 8 GPUs",
    "rebuild with 8 GPUs",
    "retry with 4 H100s",
    "rebuild with 2 cards",
    "retry with 2 nodes",
    "retry with cuda 12.4",
    "rebuild against torch 2.5",
    "retry with gcc 12",
    "rebuild with python 3.12",
    "retry, memory is at 95%",
    "retry, see #1234",
    "kill pid 12345 and retry",
    "retry, slurm job 4521 died",
    "retry, exit code 137",
    "retry, it took 20 min",
    "retry after 30s",
    "2 of 10 builds failed, retry",
    "retry, it died at [124/193]",
    "retry, ninja was at 124/193",
    "retry 3 times",
    "try 2 more times",
    "retry, 3rd time today",
    "rebuild with 1.5x the swap",
    "retry with -O2",
    "retry, 12 jobs in the queue",
    "retry, 8 GPUs are idle",
    "we were at -j64 when it oomed, retry",
    "ci uses -j8, retry",
    "the 16-core box is free, retry",
    "one way to fix it is a retry",
    "retry with one of the other builds",
    # written after the rules
    "rebuild, we have 1.5T of ram",
    "retry with 2 A100s",
    "retry at 10am",
    "retry, node 7 is down",
    "rebuild with sm_90a",
    "retry with nccl 2.21",
    "rebuild, 4 of 8 gpus are busy",
    "retry, build 17 failed",
    "retry, it's at 87%",
    "retry, 124/193 done",
    "retry after 2 hours",
    "rebuild with python3.11",
    "retry with 8 gpus and 2 nodes",
    "retry, that was attempt 3",
    "retry with the 24.04 image",
    "try the 2nd host",
    "rebuild with 70b weights",
    "retry in 2 min",
    "retry with tp 8",
    "rebuild with tp=8",
]


@pytest.mark.parametrize("text", NOT_JOBS)
def test_other_numbers_are_not_parallelism(text: str) -> None:
    plan = _said(text, addressed=True)
    assert [s.jobs for s in plan.steps if s.jobs is not None] == []
    assert plan.error is None or "jobs" not in plan.error


STORIES = [
    "last time -j32 blew up",
    "-j32 blew up last time",
    "we ran with 16 jobs yesterday and it was fine",
    "MAX_JOBS=20 worked last week",
    "used to build with four jobs",
    "I usually do 8-way",
    "did you try MAX_JOBS 12?",
    "should we try 16 threads?",
    "12 jobs in the queue",
    "jobs: 8 running, 2 pending",
    "four jobs failed overnight",
    "1 job failed in CI",
    "2 of 10 builds failed",
    "it died at [124/193]",
    "PR #1234 bumps to cuda 12.4",
    "the box has 64 cores and 8 GPUs",
    "meeting at 9:30",
    "torch 2.5 needs sm_120",
    "took 20 min at -j32",
    "the nightly uses -j 16",
    "2-way tie in the vote",
    "sixteen threads per rank is the default",
    "tail -n 50 is what I ran",
    "8 GPUs, 64G each",
    # written after the rules
    "try 2 different configs and see",
    "we tried 16 jobs on monday",
    "go with 12.4 or 12.8?",
    "use 2 GPUs for the test",
    "the jobs: page is down",
    "max 8 gpus per node",
    "up to 8 jobs running at once on that box",
    "one job died, the rest are fine",
    "twelve threads per process is the default in torch",
    "rebuild 2 of the wheels later",
    "run 3 tests first",
    "do 5 reps of the bench",
    "go for lunch at 12",
    "eight cores is not enough for this",
    "we need four-way review on this PR",
    "try with 2 seeds",
    "try 3.10 instead of 3.12",
    "limit to 2 PRs a day",
    "set to 50% of the budget",
    "last 3 builds failed",
    "jobs - 8 are still queued",
    "16 threads ought to be enough lol",
    "cuda 12.4 - 8 gpus",
    "MAX_JOBS: the env var that controls it",
    "the parallelism of 8 was the culprit",
    "at most 4 people on the call",
    "use one of the spare nodes",
    "that one worked with 8 jobs",
    "a dozen builds failed overnight",
    "ninja -j16 failed at [124/193]",
    "rebuild pipeline v2 is live",
    "try the 4090",
    "build 17 passed",
    "par for the course",
    "concurrency is hard",
    "last 200 lines were just warnings",
    "we were at 32 jobs when it died",
    "retrying with 16 jobs didn't help",
    "use twenty minutes wisely",
    "go 2 for 2",
    "try twice",
]


@pytest.mark.parametrize("text", STORIES)
def test_stories_and_facts_with_numbers_stay_silent(text: str) -> None:
    plan = parse(text, config=MULTI)
    assert plan == Plan(), summary(plan)


NOT_LINES = [
    "show me the log from the last 2 hours",
    "post the logs from the last 3 runs",
    "tail the log, the error is on line 1234",
    "tail the log, pid 4242 is stuck",
    "show the log of build #42",
    "tail the log for the last 10 min",
]


@pytest.mark.parametrize("text", NOT_LINES)
def test_other_numbers_are_not_line_counts(text: str) -> None:
    plan = _said(text)
    assert "log" in {s.action for s in plan.steps}
    assert [s.lines for s in plan.steps if s.lines is not None] == []


# --- bounds and what rigops cannot compute --------------------------------------------------------------

BOUNDS = [
    ("MAX_JOBS 0", "rebuild", "jobs must be between 1 and 1024"),
    ("jobs: 5000", "rebuild", "-j5000: jobs must be between 1 and 1024"),
    ("try zero jobs", "rebuild", "0 jobs: jobs must be between 1 and 1024"),
    ("2000-way", "rebuild", "jobs must be between 1 and 1024"),
    ("show me the last 20000 lines", "log", "20000 lines: lines must be between 1 and 10000"),
]


@pytest.mark.parametrize(("text", "expected", "error"), BOUNDS)
def test_new_shapes_keep_the_bounds(text: str, expected: str, error: str) -> None:
    plan = _said(text)
    assert summary(plan) == expected
    assert plan.error is not None and error in plan.error


EXPRESSIONS = [
    ("make -j$(nproc)", "rebuild"),
    ("try -j$(nproc)/2", "rebuild"),
    ("retry with nproc/2 jobs", "rebuild"),
    ("oom-ing, try -j $(( $(nproc) / 2 ))", "kill mem rebuild"),
    ("MAX_JOBS=$(nproc)", "rebuild"),
    ("rebuild with -j$CORES", "rebuild"),
]


@pytest.mark.parametrize(("text", "expected"), EXPRESSIONS)
def test_an_expression_is_refused_not_misread(text: str, expected: str) -> None:
    """rigops cannot work out nproc or a shell variable in chat: it says so instead of taking the 2 of nproc/2."""
    plan = _said(text)
    assert summary(plan) == expected
    assert plan.error is not None and "name a number" in plan.error
