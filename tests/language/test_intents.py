"""Chat text → Plan: ops-chat phrasings, host/build resolution, /rigops commands, properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot import config
from bot.config import Config
from bot.language.commands import step_names
from bot.language.intents import parse, parse_command
from bot.language.plan import MAX_JOBS, MAX_LOG_LINES, MIN_JOBS, Plan, ThreadContext


def _build(jobs: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"workdir": "/root/sglang/sgl-kernel", "command": "uv pip install -e . -v"}
    if jobs is not None:
        out["jobs"] = jobs
    return out


# One host with one build: both are defaults.
ONE = config.parse({"hosts": {"b200": {"address": "b200.lab.example", "user": "root",
                                       "builds": {"sgl-kernel": _build(32)}}}})
# Several hosts: no default host; b200 has two builds, n2 one, local none.
MULTI = config.parse({"hosts": {
    "b200": {"address": "b200.lab.example", "builds": {"sgl-kernel": _build(32), "flashinfer": _build()}},
    "n2": {"address": "n2.lab.example", "builds": {"sgl-kernel": _build()}},
    "local": {},
}})
LOCAL = config.parse({})  # one host "local", no builds


def summary(plan: Plan) -> str:
    """'kill mem rebuild=20' — the steps, with jobs/lines when set."""
    out = []
    for step in plan.steps:
        number = step.jobs if step.action == "rebuild" else step.lines if step.action == "log" else None
        out.append(step.action if number is None else f"{step.action}={number}")
    return " ".join(out)


def plain(text: str, cfg: Config = ONE, context: ThreadContext | None = None) -> Plan:
    return parse(text, config=cfg, context=context)


# --- the seed and memory trouble -----------------------------------------------------------------------

TROUBLE_CASES = [
    ("oom-ing pretty bad, try -j20", "kill mem rebuild=20"),
    ("OOMing pretty bad, try -j20", "kill mem rebuild=20"),
    ("oomin bad. try -j 20", "kill mem rebuild=20"),
    ("we're out of memory, try MAX_JOBS=20", "kill mem rebuild=20"),
    ("OOM killer is going nuts, retry at -j16", "kill mem rebuild=16"),
    ("swapping hard, drop to 16 jobs", "kill mem rebuild=16"),
    ("thrashing like crazy - use 12 cores", "kill mem rebuild=12"),
    ("cc1plus got killed, retry with 8 jobs", "kill mem rebuild=8"),
    ("Killed signal terminated program cc1plus; try -j4", "kill mem rebuild=4"),
    ("box is dying, -j20 please", "kill mem rebuild=20"),
    ("virtual memory exhausted, rebuild -j8", "kill mem rebuild=8"),
    ("oom-ing again :fire: rebuild w/ 16 plz", "kill mem rebuild=16"),
    ("ooming, go with -j16", "kill mem rebuild=16"),
    ("it's oom'ing at -j64, drop to -j32", "kill mem rebuild=32"),
    ("oom-ing, retry", "kill mem rebuild"),
    ("oomed again, restart", "kill mem rebuild"),
    ("we're thrashing, restart the build", "kill mem rebuild"),
    ("oom-ing, kill it", "kill mem"),
    ("oom, stop it", "kill mem"),
    ("the compiler keeps getting killed, kill the build", "kill mem"),
    ("fewer jobs pls, it's oom-ing", "kill mem rebuild"),
    ("we're oom-ing", "mem"),
    ("oom-ing pretty bad", "mem"),
    ("OOM on b200", "mem"),
    ("is b200 swapping?", "mem"),
    ("box is dying", "mem"),
    ("cc1plus got killed", "mem"),
    ("Killed signal terminated program cc1plus", "mem"),
    ("oom-ing at -j64", "mem"),
    ("OOM killer!", "mem"),
    ("the oom killer got cc1plus again", "mem"),
    ("memory exhausted", "mem"),
    ("it's eating all the ram", "mem"),
    ("running low on memory", "mem"),
]


@pytest.mark.parametrize(("text", "expected"), TROUBLE_CASES)
def test_memory_trouble(text: str, expected: str) -> None:
    plan = plain(text)
    assert summary(plan) == expected
    assert plan.error is None
    assert plan.host == "b200"


def test_seed_json_shape() -> None:
    plan = plain("oom-ing pretty bad, try -j20")
    assert plan.to_json() == {
        "host": "b200", "build": "sgl-kernel", "error": None,
        "steps": [{"action": "kill"}, {"action": "mem"}, {"action": "rebuild", "jobs": 20}],
    }
    assert plan.destructive


# --- one action per message ----------------------------------------------------------------------------

ACTION_CASES = [
    # mem
    ("free -h", "mem"),
    ("free -h on b200 pls", "mem"),
    ("how's memory on b200?", "mem"),
    ("mem", "mem"),
    ("memory?", "mem"),
    ("RAM?", "mem"),
    ("check ram on b200", "mem"),
    ("how much memory is left on b200?", "mem"),
    ("memory usage on b200", "mem"),
    ("b200's memory?", "mem"),
    ("what does memory look like on b200", "mem"),
    ("show me the memory", "mem"),
    ("can you post free -h", "mem"),
    # kill
    ("kill the build", "kill"),
    ("stop the build", "kill"),
    ("kill it", "kill"),
    ("abort the compile", "kill"),
    ("pkill ninja", "kill"),
    ("killall cc1plus", "kill"),
    ("kill -9 everything", "kill"),
    ("nuke it", "kill"),
    ("kill ninja", "kill"),
    ("can you kill the build?", "kill"),
    ("pls kill the build", "kill"),
    ("plz stop the compile on b200", "kill"),
    ("someone abort the ninja build", "kill"),
    ("cancel the build", "kill"),
    ("kill the sgl-kernel build", "kill"),
    ("KILL THE BUILD!!!", "kill"),
    # rebuild
    ("retry with 16 jobs", "rebuild=16"),
    ("rebuild -j8", "rebuild=8"),
    ("restart at j12", "kill rebuild=12"),
    ("restart at -j12", "kill rebuild=12"),
    ("try again with MAX_JOBS=16", "rebuild=16"),
    ("make -j 24", "rebuild=24"),
    ("--parallel 8", "rebuild=8"),
    ("CMAKE_BUILD_PARALLEL_LEVEL=4", "rebuild=4"),
    ("drop to 16 jobs", "rebuild=16"),
    ("use 16 cores", "rebuild=16"),
    ("let's do 16 jobs", "rebuild=16"),
    ("bump it to 32 jobs", "rebuild=32"),
    ("16 jobs please", "rebuild=16"),
    ("rebuild w/ 16", "rebuild=16"),
    ("re-build with 16 please", "rebuild=16"),
    ("re-run with -j 8", "rebuild=8"),
    ("could you re-build at -j8", "rebuild=8"),
    ("-j20", "rebuild=20"),
    ("-j=20", "rebuild=20"),
    ("--jobs 20", "rebuild=20"),
    ("try 20 threads", "rebuild=20"),
    ("retry with 20 workers", "rebuild=20"),
    ("try 20 parallel", "rebuild=20"),
    ("drop from -j64 to -j20", "rebuild=20"),
    ("lower -j to 16", "rebuild=16"),
    ("set MAX_JOBS=16 and rebuild", "rebuild=16"),
    ("MAX_JOBS=20 pip install -e .", "rebuild=20"),
    ("the box has 128 cores, try -j20", "rebuild=20"),
    ("rebuild", "rebuild"),
    ("rebuild it", "rebuild"),
    ("rebuild sgl-kernel", "rebuild"),
    ("restart the build", "kill rebuild"),
    ("halve the jobs", "rebuild"),
    ("cut the jobs in half", "rebuild"),
    ("fewer jobs", "rebuild"),
    # status
    ("status", "status"),
    ("status?", "status"),
    ("how's the build going?", "status"),
    ("how's the build?", "status"),
    ("is the build still running?", "status"),
    ("what's running on b200", "status"),
    ("what's running?", "status"),
    ("status of the build?", "status"),
    ("build status", "status"),
    ("any progress on the build?", "status"),
    ("is sgl-kernel still building?", "status"),
    ("did the build finish?", "status"),
    ("is it done?", "status"),
    ("status on b200", "status"),
    # log
    ("tail the log", "log"),
    ("show me the last 100 lines", "log=100"),
    ("log 200", "log=200"),
    ("what's the error?", "log"),
    ("logs?", "log"),
    ("what failed?", "log"),
    ("why did the build fail?", "log"),
    ("tail -n 200", "log=200"),
    ("last 50 lines pls", "log=50"),
    ("paste the last 30 lines of the build log", "log=30"),
    ("tail -f the build log", "log"),
    ("what's the error on sgl-kernel?", "log"),
    ("show me the full log", "log"),
    # gpu
    ("nvidia-smi", "gpu"),
    ("nvidia-smi pls", "gpu"),
    ("gpu status", "gpu"),
    ("are the GPUs busy?", "gpu"),
    ("gpu util", "gpu"),
    ("any free gpus?", "gpu"),
    ("who's using the gpus?", "gpu"),
    ("gpus free?", "gpu"),
    ("gpu memory?", "gpu"),
    ("CUDA out of memory on rank 0", "gpu"),
    # memory chart
    ("memory chart", "chart"),
    ("show me the memory graph", "chart"),
    ("plot memory usage on b200", "chart"),
    ("graph of the memory for sgl-kernel", "chart"),
    ("post the mem chart please", "chart"),
    ("chart the memory please", "chart"),
    ("chart", "chart"),
]


@pytest.mark.parametrize(("text", "expected"), ACTION_CASES)
def test_single_actions(text: str, expected: str) -> None:
    plan = plain(text)
    assert summary(plan) == expected
    assert plan.error is None


COMBO_CASES = [
    ("kill it and free -h", "kill mem"),
    ("stop the build and show me free -h", "kill mem"),
    ("kill the build on b200 and restart at -j12", "kill rebuild=12"),
    ("can someone kill the build on b200? it's eating all the ram", "kill mem"),
    ("tail the log, then rebuild -j8", "log rebuild=8"),
    ("how's memory? and are the gpus busy?", "mem gpu"),
    ("oom-ing, what's the error?", "mem log"),
    ("status and last 20 lines", "status log=20"),
    ("how's memory? and post the memory chart", "mem chart"),
]


@pytest.mark.parametrize(("text", "expected"), COMBO_CASES)
def test_combinations(text: str, expected: str) -> None:
    assert summary(plain(text)) == expected


# --- chatter stays silent ------------------------------------------------------------------------------

CHATTER = [
    "I killed it with kindness",
    "lunch?",
    "the memory of that talk",
    "my make-up exam",
    "ninja warrior tonight",
    "status meeting at 3",
    "build status meeting at 3",
    "I need to rebuild my deck",
    "this PR makes builds faster",
    "the build failed yesterday, fixed now",
    "the build oomed yesterday but it's fixed now",
    "how's it going?",
    "what's going on?",
    "we bought new GPUs",
    "the GPU shortage is bad",
    "how much memory does llama 70b need?",
    "this PR reduces memory usage",
    "the OOM killer talk was great",
    "we're swapping GPUs tomorrow",
    "I'm swapping the cards",
    "kill it with fire lol",
    "you'll kill it at the demo",
    "cancel that, I was wrong",
    "I need to log my hours",
    "the blog post is up",
    "login is broken",
    "I ran nvidia-smi",
    "nvidia-smi says all 8 gpus idle",
    "sm_120 support landed",
    "cuda 12.8 works now",
    "20 jobs in the queue",
    "20 jobs failed in CI",
    "-j64 is what killed it",
    "we have 128 cores",
    "I usually build with -j20",
    "we build with -j20 in CI",
    "did you try -j16?",
    "-j16 should be fine",
    "I'll check the log later",
    "don't kill the build",
    "should we kill it?",
    "no need to rebuild",
    "if it ooms again we'll kill it",
    "what's the status on the PR?",
    "we need fewer jobs in the queue",
    "restart in 5 min",
    "retry at 12",
    "stop",
    "stop it",
    "restart",
    "retry",
    "kill",
    "j12",
    "PR #1234 needs sm_120 and cuda 12.8 on n2 in 5 min, 449 GiB",
    "the box has 449 GiB of RAM",
    "thanks!",
    "",
    "   ",
    ":fire: :fire:",
    "```kill the build```",
    "```\n$ free -h\nMem: 449Gi\n```",
    "`pkill ninja` is what I ran",
    "he said \"kill the build\" lol",
    "~kill the build~ nvm",
    "&gt; oom-ing pretty bad, try -j20",
    "> kill the build",
    "see <https://example.com/kill|kill the build>",
    "https://example.com/oom?try=-j20",
    "<#C0123ABCD|b200-ops> is the channel for that",
    "<@U123> is in a status meeting",
    "I killed the build earlier",
    "the build was fine last night",
    "usually we rebuild with -j32",
    "the chart looks off to me",
    "what's on the org chart",
    "we should chart this later",
]


@pytest.mark.parametrize("text", CHATTER)
def test_chatter_is_silent(text: str) -> None:
    plan = plain(text, MULTI)
    assert plan == Plan(), summary(plan)


# --- numbers and bounds --------------------------------------------------------------------------------

BOUNDS = [
    ("-j0", "rebuild", "-j0: jobs must be between 1 and 1024"),
    ("-j-4", "rebuild", "-j-4: jobs must be between 1 and 1024"),
    ("try -j100000", "rebuild", "-j100000: jobs must be between 1 and 1024"),
    ("0 jobs", "rebuild", "0 jobs: jobs must be between 1 and 1024"),
    ("retry with 0 jobs", "rebuild", "0 jobs: jobs must be between 1 and 1024"),
    ("oom-ing, try -j0", "kill mem rebuild", "-j0: jobs must be between 1 and 1024"),
    ("rebuild -j1025", "rebuild", "-j1025: jobs must be between 1 and 1024"),
    ("try -j99999999999999999999", "rebuild", "jobs must be between 1 and 1024"),
    ("try -j20 or -j16", "rebuild", "several jobs values (16, 20)"),
    ("tail -n 99999", "log", "99999 lines: lines must be between 1 and 10000"),
    ("last 0 lines", "log", "0 lines: lines must be between 1 and 10000"),
]


@pytest.mark.parametrize(("text", "expected", "error"), BOUNDS)
def test_bounds_give_steps_and_an_error(text: str, expected: str, error: str) -> None:
    plan = plain(text)
    assert summary(plan) == expected
    assert plan.error is not None and error in plan.error


@pytest.mark.parametrize(("text", "jobs"), [
    ("try -j1", 1), ("try -j1024", 1024), ("-j 20", 20), ("j20 please", None), ("try j20", 20),
    ("MAX_JOBS=20", 20), ("try --jobs=20", 20), ("--parallel=8", 8), ("try 20 procs", 20),
])
def test_jobs_forms(text: str, jobs: int | None) -> None:
    plan = plain(text)
    if jobs is None:
        assert plan == Plan()
    else:
        assert [(s.action, s.jobs) for s in plan.steps] == [("rebuild", jobs)]


@pytest.mark.parametrize("text", [
    "retry on n2", "retry, PR #1234", "rebuild for sm_120", "retry with cuda 12.8",
    "retry, the box has 449 GiB", "restart, it's been 10 min", "rebuild with 2 GPUs",
])
def test_other_numbers_are_not_jobs(text: str) -> None:
    plan = parse(text, config=ONE, addressed=True)
    assert [(s.action, s.jobs) for s in plan.steps if s.action == "rebuild"] == [("rebuild", None)]


@pytest.mark.parametrize("text", ["try again in 5 min", "rebuild at 3pm", "kill it tonight"])
def test_a_request_for_later_is_not_run_now(text: str) -> None:
    assert parse(text, config=ONE, addressed=True) == Plan()  # rigops acts now or not at all


def test_relative_jobs_warns() -> None:
    plan = plain("halve the jobs")
    assert summary(plan) == "rebuild" and plan.error is None
    assert plan.warnings and "-j" in plan.warnings[0]
    assert plain("rebuild -j8").warnings == ()


# --- Slack markup and typography ------------------------------------------------------------------------

MARKUP = [
    ("oom-ing pretty bad <@U0123ABCD>, try -j20", "kill mem rebuild=20"),
    ("<!here> oom-ing, try -j20", "kill mem rebuild=20"),
    ("oom-ing pretty bad, try —j20", "kill mem rebuild=20"),
    ("oom-ing pretty bad, try –j20", "kill mem rebuild=20"),
    ("oom-ing pretty bad, try ‐j20", "kill mem rebuild=20"),
    ("OOMING, TRY –J20!!!", "kill mem rebuild=20"),
    ("oom-ing… try -j20", "kill mem rebuild=20"),
    ("oom-ing - try -j20", "kill mem rebuild=20"),
    ("“oom-ing pretty bad, try -j20”", "kill mem rebuild=20"),
    ("how’s memory on b200?", "mem"),
    ("try `-j20`", "rebuild=20"),
    ("*kill the build*", "kill"),
    ("_kill the build_", "kill"),
    ("kill the build.", "kill"),
    (":fire: oomin :fire: rebuild w/ 16 plz", "kill mem rebuild=16"),
    ("oom-ing &amp; swapping, try -j20", "kill mem rebuild=20"),
    ("check <https://grafana.example/d/1|the dashboard> - memory?", "mem"),
    ("memory?\u200b", "mem"),
    ("ＭＥＭ", "mem"),
    ("  \n\nkill the build\n\n", "kill"),
]


@pytest.mark.parametrize(("text", "expected"), MARKUP)
def test_markup(text: str, expected: str) -> None:
    assert summary(plain(text)) == expected


# --- addressed (@mention / slash-like) -----------------------------------------------------------------

ADDRESSED = [
    ("status", "status"),
    ("mem", "mem"),
    ("kill", "kill"),
    ("stop", "kill"),
    ("j12", "rebuild=12"),
    ("12 jobs", "rebuild=12"),
    ("retry", "rebuild"),
    ("restart", "kill rebuild"),
    ("hosts", "hosts"),
    ("list hosts", "hosts"),
    ("what hosts do you know?", "hosts"),
    ("help", "help"),
    ("what can you do?", "help"),
    ("should we kill it?", "kill"),
    ("oom-ing pretty bad, try -j20", "kill mem rebuild=20"),
    ("hi there", ""),
    ("thanks!", ""),
]


@pytest.mark.parametrize(("text", "expected"), ADDRESSED)
def test_addressed_is_more_permissive(text: str, expected: str) -> None:
    assert summary(parse(text, config=ONE, addressed=True)) == expected


@pytest.mark.parametrize("text", ["hosts", "help", "list hosts", "what can you do?"])
def test_hosts_and_help_only_when_addressed(text: str) -> None:
    assert plain(text) == Plan()


def test_hosts_and_help_need_no_host() -> None:
    plan = parse("help", config=MULTI, addressed=True)
    assert (plan.host, plan.build, plan.error) == (None, None, None)


# --- host and build resolution -------------------------------------------------------------------------

CTX_B200_FLASH = ThreadContext(host="b200", build="flashinfer")
CTX_N2 = ThreadContext(host="n2")
CTX_STALE = ThreadContext(host="gone", build="nope")

RESOLUTION = [
    # text, config, context, host, build, error fragment
    ("oom-ing pretty bad, try -j20", ONE, None, "b200", "sgl-kernel", None),
    ("oom-ing pretty bad, try -j20", MULTI, None, None, None, "which host? known: b200, n2, local"),
    ("oom-ing pretty bad, try -j20", MULTI, CTX_B200_FLASH, "b200", "flashinfer", None),
    ("oom-ing pretty bad, try -j20", MULTI, CTX_N2, "n2", "sgl-kernel", None),
    ("oom-ing pretty bad, try -j20", MULTI, CTX_STALE, None, None, "which host?"),
    ("oom-ing on b200, try -j20", MULTI, None, "b200", None,
     "which build on b200? known: sgl-kernel, flashinfer"),
    ("oom-ing on n2, try -j20", MULTI, None, "n2", "sgl-kernel", None),
    ("try -j12", MULTI, CTX_N2, "n2", "sgl-kernel", None),
    ("rebuild flashinfer -j8", MULTI, None, "b200", "flashinfer", None),
    ("rebuild sgl-kernel -j8", MULTI, None, None, None, "which host? 'sgl-kernel' is on b200, n2"),
    ("rebuild sgl-kernel -j8", MULTI, CTX_N2, "n2", "sgl-kernel", None),
    ("rebuild flashinfer on n2", MULTI, None, "n2", None, "no build 'flashinfer' on host 'n2'"),
    ("rebuild on local", MULTI, None, "local", None, "no builds configured on host local"),
    ("rebuild", LOCAL, None, "local", None, "no builds configured on host local"),
    ("kill the build on local", MULTI, None, "local", None, None),
    ("kill the build", LOCAL, None, "local", None, None),
    ("mem on local", MULTI, None, "local", None, None),
    ("how's memory on n2?", MULTI, CTX_B200_FLASH, "n2", None, None),
    ("status", MULTI, CTX_B200_FLASH, "b200", "flashinfer", None),
    ("status on b200", MULTI, None, "b200", None, None),
    ("mem", ONE, None, "b200", None, None),
    ("tail the log", ONE, None, "b200", "sgl-kernel", None),
    ("tail the log on n2", MULTI, CTX_B200_FLASH, "n2", "sgl-kernel", None),
    ("B200 memory?", MULTI, None, "b200", None, None),
    ("mem on B200.", MULTI, None, "b200", None, None),
    ("@b200 memory?", MULTI, None, "b200", None, None),
    ("b200's memory?", MULTI, None, "b200", None, None),
    ("kill the local build", MULTI, None, "local", None, None),
    ("kill the build on b200 and n2", MULTI, None, None, None, "several hosts (b200, n2)"),
    ("memory on gpu-7", MULTI, None, None, None, "unknown host 'gpu-7' (known: b200, n2, local)"),
    ("how's memory on h100?", ONE, None, None, None, "unknown host 'h100' (known: b200)"),
    ("h100's memory?", ONE, CTX_N2, None, None, "unknown host 'h100'"),
    ("oom on h100 not b200", MULTI, None, "b200", None, None),
    ("retry on n2 with 16 jobs", MULTI, None, "n2", "sgl-kernel", None),
]


@pytest.mark.parametrize(("text", "cfg", "context", "host", "build", "error"), RESOLUTION)
def test_host_and_build_resolution(
    text: str, cfg: Config, context: ThreadContext | None,
    host: str | None, build: str | None, error: str | None,
) -> None:
    plan = parse(text, config=cfg, context=context)
    assert plan.steps, "expected a request"
    assert (plan.host, plan.build) == (host, build)
    if error is None:
        assert plan.error is None
    else:
        assert plan.error is not None and error in plan.error


def test_chatter_never_errors_even_without_a_host() -> None:
    for text in ("lunch on b200?", "the local build is fine", "h100s are nice", "on h100 it works"):
        assert parse(text, config=MULTI) == Plan()


def test_names_only_from_config() -> None:
    cfg = config.parse({"hosts": {"Gpu-Box.1": {"address": "g", "builds": {"vLLM": _build()}}, "n2": {}}})
    plan = parse("rebuild vllm on gpu-box.1 at -j8", config=cfg)
    assert (plan.host, plan.build, summary(plan), plan.error) == ("Gpu-Box.1", "vLLM", "rebuild=8", None)


# --- /rigops subcommands --------------------------------------------------------------------------------

COMMANDS = [
    # text, steps, host, build, error fragment
    ("kill", "kill", "b200", "sgl-kernel", None),
    ("kill b200 sgl-kernel", "kill", "b200", "sgl-kernel", None),
    ("mem", "mem", "b200", None, None),
    ("rebuild -j8", "rebuild=8", "b200", "sgl-kernel", None),
    ("rebuild -j 8", "rebuild=8", "b200", "sgl-kernel", None),
    ("rebuild j8", "rebuild=8", "b200", "sgl-kernel", None),
    ("rebuild sgl-kernel b200 12", "rebuild=12", "b200", "sgl-kernel", None),
    ("rebuild b200 --jobs=16", "rebuild=16", "b200", "sgl-kernel", None),
    ("rebuild", "rebuild", "b200", "sgl-kernel", None),
    ("rebuild -j0", "rebuild", "b200", "sgl-kernel", "-j0: jobs must be between 1 and 1024"),
    ("status", "status", "b200", None, None),
    ("log", "log", "b200", "sgl-kernel", None),
    ("log 200", "log=200", "b200", "sgl-kernel", None),
    ("log -n 50", "log=50", "b200", "sgl-kernel", None),
    ("log 0", "log", "b200", "sgl-kernel", "0 lines: lines must be between 1 and 10000"),
    ("gpu", "gpu", "b200", None, None),
    ("hosts", "hosts", None, None, None),
    ("help", "help", None, None, None),
    ("", "help", None, None, None),
    ("/rigops STATUS B200", "status", "b200", None, None),
    ("mem h100", "mem", "b200", None, "unknown host or build 'h100'"),
    ("mem 5", "mem", "b200", None, "unexpected argument '5'"),
    ("log 10 20", "log=10", "b200", "sgl-kernel", "unexpected argument '20'"),
]


@pytest.mark.parametrize(("text", "steps", "host", "build", "error"), COMMANDS)
def test_commands(text: str, steps: str, host: str | None, build: str | None, error: str | None) -> None:
    plan = parse_command(text, config=ONE)
    assert summary(plan) == steps
    assert (plan.host, plan.build) == (host, build)
    if error is None:
        assert plan.error is None
    else:
        assert plan.error is not None and error in plan.error


def test_command_host_and_build_in_either_order() -> None:
    a = parse_command("rebuild n2 sgl-kernel -j8", config=MULTI)
    b = parse_command("rebuild -j8 sgl-kernel n2", config=MULTI)
    assert a == b and (a.host, a.build, a.error) == ("n2", "sgl-kernel", None)


def test_command_uses_context_and_asks_for_the_host() -> None:
    assert parse_command("rebuild -j8", config=MULTI, context=CTX_N2).host == "n2"
    assert parse_command("mem", config=MULTI).error == "which host? known: b200, n2, local"


@pytest.mark.parametrize("text", ["frobnicate", "schedule daily", "rm -rf /", "💥"])
def test_unknown_subcommand_lists_subcommands(text: str) -> None:
    plan = parse_command(text, config=ONE)
    assert plan.steps == ()
    assert plan.error is not None
    assert "kill, mem, rebuild, status, log, gpu, chart, disk, hosts, help" in plan.error
    assert "rm -rf" not in plan.error and "💥" not in plan.error


# --- properties and hostile input ----------------------------------------------------------------------

VOCAB = [
    "oom-ing", "kill", "the build", "try", "-j20", "-j0", "-j", "j12", "20 jobs", "MAX_JOBS=", "free -h",
    "mem", "status", "log", "tail -n", "last 99999 lines", "gpu", "nvidia-smi", "b200", "n2", "local", "on",
    "@", "h100", "gpu-7", "'s", "sgl-kernel", "flashinfer", "restart", "rebuild", "halve the jobs", "?", ",",
    "and", "`", "```", "<@U1>", "<http://x|kill it>", "&gt;", "\n", "—", "pls", "don't", "yesterday",
    "999999999999", "-", "=", "hosts", "help", "cc1plus got killed", "swapping", "CUDA out of memory",
    "h100's",
]
texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(st.sampled_from(VOCAB), st.text(max_size=8)), max_size=30).map(" ".join),
    st.lists(st.sampled_from(VOCAB), max_size=30).map("".join),
)
CONTEXTS = st.sampled_from([None, CTX_B200_FLASH, CTX_N2, CTX_STALE, ThreadContext(host="local", build="x")])


def _check_plan(plan: Plan, cfg: Config, *, allow_meta: bool) -> None:
    assert plan.host is None or plan.host in cfg.hosts or cfg.is_group(plan.host)
    if cfg.is_group(plan.host):  # "status all", "memory on all hosts": a look at every host, never a kill or rebuild
        assert plan.error is not None or not plan.destructive, plan
    all_builds = {b for h in cfg.hosts.values() for b in h.builds}
    assert plan.build is None or plan.build in all_builds
    if plan.host is not None and plan.build is not None and not cfg.is_group(plan.host):
        assert plan.build in cfg.hosts[plan.host].builds
    actions = [s.action for s in plan.steps]
    assert len(actions) == len(set(actions)) and all(a in step_names() for a in actions)
    assert allow_meta or not {"hosts", "help"} & set(actions)
    for s in plan.steps:
        assert s.jobs is None or (s.action == "rebuild" and MIN_JOBS <= s.jobs <= MAX_JOBS)
        assert s.lines is None or (s.action == "log" and 1 <= s.lines <= MAX_LOG_LINES)
    if plan.error is not None:
        assert plan.error.isprintable() and len(plan.error) < 400
        assert all(ord(c) < 128 or c in "…‹›—" for c in plan.error)  # the placeholders and dashes of the messages
    assert Plan.from_json(plan.to_json()) == Plan(plan.host, plan.build, plan.steps, plan.error)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=texts, context=CONTEXTS, addressed=st.booleans(), cfg=st.sampled_from([ONE, MULTI, LOCAL]))
def test_any_text_gives_a_safe_plan(
    text: str, context: ThreadContext | None, addressed: bool, cfg: Config
) -> None:
    plan = parse(text, config=cfg, context=context, addressed=addressed)
    _check_plan(plan, cfg, allow_meta=addressed)
    if not plan.steps:
        assert plan == Plan()  # chatter never errors


@settings(max_examples=300, deadline=None)
@given(text=texts, cfg=st.sampled_from([ONE, MULTI, LOCAL]))
def test_any_command_gives_a_safe_plan(text: str, cfg: Config) -> None:
    plan = parse_command(text, config=cfg)
    _check_plan(plan, cfg, allow_meta=True)
    assert plan.steps or plan.error


HOSTILE = [
    "oom " * 50_000,
    "-j" + "9" * 200_000,
    "`" * 200_000,
    "\n" * 200_000,
    "on a1" + "1" * 200_000,
    "<" * 100_000 + ">" * 100_000,
    "kill the build " * 14_000,
    "please " * 30_000 + "try -j20",
    ":a" * 100_000,
    "how much memory " * 13_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:12]))
def test_huge_hostile_messages_parse(text: str) -> None:
    assert len(text) >= 200_000
    for addressed in (False, True):
        plan = parse(text, config=MULTI, addressed=addressed)
        _check_plan(plan, MULTI, allow_meta=addressed)
        assert plan == Plan() or plan.error is not None or plan.host is not None
    _check_plan(parse_command(text, config=MULTI), MULTI, allow_meta=True)


def test_only_the_start_of_a_huge_message_counts() -> None:
    assert parse("lunch? " * 30_000 + "kill the build", config=ONE) == Plan()


# --- "halve the jobs": relative to the thread's last build ---------------------------------------------

CTX_LAST_32 = ThreadContext(host="b200", build="sgl-kernel", jobs=32)


@pytest.mark.parametrize(("text", "context", "expected", "note"), [
    ("halve the jobs", CTX_LAST_32, "rebuild=16", "half the -j32"),
    ("cut the jobs in half and retry", CTX_LAST_32, "rebuild=16", "half the -j32"),
    ("oom-ing, fewer jobs please", CTX_LAST_32, "kill mem rebuild=16", "half the -j32"),
    ("bump the jobs", CTX_LAST_32, "rebuild=64", "twice the -j32"),
    ("double the jobs", ThreadContext(host="b200", build="sgl-kernel", jobs=1000), "rebuild=1024", "twice the -j1000"),
    ("halve the jobs", ThreadContext(host="b200", build="sgl-kernel", jobs=1), "rebuild=1", "half the -j1"),
    # no earlier build in the thread, or one of another build: the default, and a word about it
    ("halve the jobs", None, "rebuild", "no earlier build"),
    ("halve the jobs", ThreadContext(host="b200", build="sgl-kernel"), "rebuild", "no earlier build"),
    ("halve the jobs on flashinfer", ThreadContext(host="b200", build="flashinfer-other", jobs=8), "rebuild",
     "no earlier build"),
    ("try -j12", CTX_LAST_32, "rebuild=12", None),  # a number said wins
])
def test_relative_jobs_follow_the_thread_s_last_build(text: str, context: ThreadContext | None, expected: str,
                                                      note: str | None) -> None:
    plan = plain(text, MULTI if "flashinfer" in text else ONE, context)
    assert summary(plan) == expected and plan.error is None
    if note is None:
        assert not plan.warnings
    else:
        assert any(note in w for w in plan.warnings), plan.warnings


IN_A_BUILD_THREAD = [
    # text in the thread of a build rigops acts in, what it asks there; the same text elsewhere asks nothing
    ("try again", ("rebuild",)),
    ("retry", ("rebuild",)),
    ("ok try again please", ("rebuild",)),
    ("run it again", ("rebuild",)),
    ("give it another go", ("rebuild",)),
    ("once more", ("rebuild",)),
    ("kick it off again", ("rebuild",)),
    ("stop", ("kill",)),
    ("restart", ("kill", "rebuild")),
    ("i will try again tomorrow", ()),  # a plan, not a request
    ("did you try again?", ()),
    ("we should not retry", ()),
    ("thanks, that worked", ()),
]


@pytest.mark.parametrize(("text", "actions"), IN_A_BUILD_THREAD)
def test_a_bare_retry_in_a_build_s_thread_is_for_its_build(text: str, actions: tuple[str, ...]) -> None:
    plan = parse(text, config=MULTI, context=CTX_B200_FLASH)
    assert tuple(sorted(s.action for s in plan.steps)) == actions, plan
    if actions:
        assert (plan.host, plan.build) == ("b200", "flashinfer")
    assert parse(text, config=MULTI).steps == ()  # in the channel, chatter
