"""How chat is read: speech acts, typos and slang, names through separators, unknown names refused, steps in the
order asked, and why a message did not act. The examples are written here, not taken from the chat corpus
(tests/data/chat), which stays the measure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_chat import steps_of
from bot import config
from bot.language.intents import guess, parse, read
from bot.language.intents_tolerance import mend
from bot.language.intents_words import normalise
from bot.language.plan import Plan
from tests.language.test_intents import summary as steps

CFG = config.load(Path(__file__).resolve().parents[1] / "data" / "chat" / "rigops.toml")
OPS = "C0OPS"


def said(text: str, *, addressed: bool = False) -> Plan:
    return parse(text, config=CFG, addressed=addressed, channel=OPS)


# --- things that never act -----------------------------------------------------------------------------

NEVER_ACTS = [
    # story, with a host, a build and a number
    ("vllm on node-3 died at -j24 over the weekend, -j12 did it", "story"),
    ("vllm on node-3 died at -j24, -j12 did it", "report"),
    ("back at my last job we routinely killed the llvm build at -j64", "story"),
    # advice, to an audience or as an example
    ("PSA for anyone on the a100 boxes: -j6 keeps llama-cpp happy", "advice"),
    ("just set MAX_JOBS=6 in your environment for instance", "advice"),
    # supposition, carried over "and" and over the comma
    ("if flash-attn dies again we'd kill it and go -j4", "hypothetical"),
    ("once the new DIMMs arrive, bump sgl-kernel to -j64", "hypothetical"),
    # how it went, after an arrow or told as done
    ("flash-attn rebuild at 12 → success", "report"),
    ("vllm 8 jobs → done in 2h", "report"),
    ("vllm -j4 restart done", "report"),
    # the cause guessed at, below pasted output
    ("from the llama-cpp log:\n```/bin/bash: line 1: 24215 Killed  build/genautomata```\napparently gpu01 ran out of "
     "memory.", "pasted-log"),
    # slang for another try, as the subject of what it did; a day to come
    ("vllm went belly up again, another go at 6 sorted it", "report"),
    ("sgl-kernel keeps going sideways, someone should really have another go at 12 someday", "hypothetical"),
    # whether it would help, asked; a request asked and doubted in the same breath; a rule of the house; what
    # somebody else said
    ("could a rebuild of vllm at 4 fix the OOM on node-3?", "how-to"),
    ("sgl-kernel on b200: retrigger? or is that pointless", "negation"),
    ("kill vllm? or not", "negation"),
    ("for vllm the usual drill is kill, then rebuild at 4", "advice"),
    ("somebody on the forum said: kill vllm, then restart it at 2 jobs, and it will pass", "story"),
    # an urge told, a hunch doubted, what the speaker is about to do, a time to come, nobody to do it, a bad idea
    ("my kneejerk reaction is to kill vllm and rebuild at 4 but let's look first", "advice"),
    ("kinda want to restart vllm at 4 but idk", "negation"),
    ("about to restart vllm at 4, shout if not", "statement"),
    ("kill vllm at 5pm if it's still running", "hypothetical"),
    ("nobody kill vllm, it's at 99%", "negation"),
    ("kill vllm = bad idea right now", "negation"),
    # both taken back at once, the count asked about, a proposal, asked for approval
    ("kill vllm? rebuild at 4? neither, let it run", "negation"),
    ("rebuild vllm with what -j?", "how-to"),
    ("pending approval: rebuild vllm at 4", "advice"),
    ("proposal: rebuild vllm at 4 jobs going forward", "advice"),
    ("restart vllm at 4 — approved?", "poll"),
    # a poll, a recipe told, a Q&A told, a to-do list
    ("kill vllm or restart it at 4 — which one?", "poll"),
    ("restart vllm at 4 vs 8, what do you think?", "poll"),
    ("rebuild vllm at 4? y/n", "poll"),
    ("step 1: kill vllm. step 2: rebuild at 4. step 3: profit", "advice"),
    ("Q: should we kill vllm? A: probably not", "advice"),
    ("todo for tomorrow: kill vllm, rebuild at 4", "advice"),
    # people named in plain text, or asked at the end; the speaker's own machine; what a request would mean
    ("alice, bob: kill vllm", "to-someone"),
    ("dave and sam — rebuild flash-attn at 8", "to-someone"),
    ("ok so kill vllm then? (asking alice)", "to-someone"),
    ("rebuild vllm at 8 on my laptop", "other-team"),
    ("kill vllm in my container", "other-team"),
    ("kill vllm = the whole team loses a day", "statement"),
    # a result after a dash or an arrow, a warning or a dare after "and", whose words after the request
    ("kill vllm — done ✅", "report"),
    ("rebuild flash-attn at 16 → same OOM, 8 → fine", "report"),
    ("kill vllm -> frees 60G", "report"),
    ("careful: restart vllm at 64 and it dies", "hypothetical"),
    ("restart vllm at 64 and watch it die lol", "hypothetical"),
    ("kill vllm, he said, and then it was all gone", "report"),
    ("kill vllm they said. it'll be fine they said", "story"),
    # a habit, a recipe's step, commands named as things, a choice or a yes/no asked of people
    ("reminder: rebuild flash-attn at 8 on fridays", "story"),
    ("step 3: kill vllm", "advice"),
    ("start, stop, logs, restart, rebuild are all in the new launcher", "statement"),
    ("the launcher has kill, rebuild and status subcommands now", "statement"),
    ("vllm — kill/rebuild at 8?", "poll"),
    ("kill vllm (y/n)", "poll"),
    ("vllm rebuild at 8: go or no go?", "poll"),
    # rhetorical, supposed, or what the bot can do, asked of the channel
    ("kill vllm? in this economy?", "rhetorical"),
    ("rebuild flash-attn at 8?? who wrote that", "rhetorical"),
    ("go ahead and kill vllm, see if I care", "rhetorical"),
    ("hypothetically, kill vllm — what breaks?", "hypothetical"),
    ("can rigops rebuild flash-attn at 8 or does it only do defaults?", "how-to"),
    # a fix told under its label, vouched for, or said to whoever reads; what most people do
    ("Solution: rebuild flash-attn with MAX_JOBS=4", "advice"),
    ("TL;DR rebuild flash-attn at -j4 and it works", "advice"),
    ("flash-attn tip: rebuild with MAX_JOBS=4", "advice"),
    ("known fix: kill vllm, restart with -j4", "advice"),
    ("note for future me: rebuild flash-attn at 4", "advice"),
    ("rebuild flash-attn with MAX_JOBS=4 (for anyone else hitting this)", "advice"),
    ("for flash-attn, rebuild with MAX_JOBS=4, works every time", "advice"),
    ("as per docs, rebuild flash-attn with MAX_JOBS=4", "advice"),
    ("Most people rebuild flash-attn with MAX_JOBS=4", "advice"),
    ("try MAX_JOBS=4 when building flash-attn on smaller boxes", "advice"),
    ("when the compile OOMs, kill vllm and rebuild at -j4", "hypothetical"),
    # rigops as a word of the sentence, whether the speaker may, what the speaker does themselves
    ("push is in, i'll wait a bit before letting <@U0RIGOPS> rebuild vllm", "story"),
    ("can i retrigger the vllm build on node-3? how?", "how-to"),
    ("can I just rebuild flash-attn with more ram, or is swap needed?", "how-to"),
    ("don't kill anything on node-3. I'd like to stop the idle stuff myself", "statement"),
    # taken back until later, asked to end what is being done, how asked, supposed, a choice left open
    ("kill vllm? not until I say so", "negation"),
    ("stop killing vllm", "negation"),
    ("what's the command to rebuild flash-attn at 8?", "how-to"),
    ("where do I set -j8 for flash-attn?", "how-to"),
    ("imagine we rebuild flash-attn at 64", "hypothetical"),
    ("is it safe to restart vllm at 4?", "how-to"),
    ("how much ram does the vllm build need on node-3?", "how-to"),
    ("could kill vllm, could not, your call", "poll"),
    ("kill vllm or don't, I don't care", "poll"),
    # what "or" adds to what is not to be done, a way of the speaker's own asked, the second half of a question
    ("the vllm failure isn't about memory, so no need to kill it or drop the -j", "negation"),
    ("is there a way I can skip the download and recompile llama-cpp from the old build dir?", "how-to"),
    # a warning and the list of what not to do under it
    ("Stop — don't try these:\n• rebuilding sgl-kernel with extremely large job counts (e.g., -j64) on b200",
     "negation"),
    # the same shapes, told or asked about
    ("vllm died at 16 jobs, again at 8 it passed", "report"),
    ("rerunning the failed vllm build didn't help last week", "story"),
    ("do we need a new build of vllm? I think the old wheel works", "statement"),
    # a time to come, or a musing about what should be done
    ("we should probably restart vllm at -j4 at some point this week", "hypothetical"),
    ("kill sgl-kernel tomorrow morning, it should be done by then", "hypothetical"),
    ("we should probably restart vllm at -j4", "hypothetical"),
    # a question of why, to people
    ("can someone explain why the vllm rebuild at -j8 is slower than at -j4?", "how-to"),
    # negation
    ("no need to kill vllm, it's almost done", "negation"),
    ("don't bother with nvidia-smi on gpu01, the cards are idle", "negation"),
    # somebody else's build
    ("their runners OOM at -j32 on every PR, lol", "other-team"),
    # a report of what someone did
    ("i killed the vllm build and restarted it at -j8 an hour ago", "statement"),
    ("we just restart llama-cpp whenever it hangs", "hypothetical"),
    ("we restart llama-cpp by hand these days", "statement"),
    ("they rebuilt flash-attn at -j12 and it oomed anyway", "report"),  # the trouble is the report's own end
    # what worked, told as the fix, and what follows its colon
    ("what worked for us was: kill the build, rerun vllm at -j4", "story"),
    ("the quick fix is usually: bump the timeout and lower the jobs on vllm", "story"),
]


@pytest.mark.parametrize(("text", "why"), NEVER_ACTS)
def test_a_message_that_asks_for_nothing_never_acts_and_says_why(text: str, why: str) -> None:
    for addressed in (False, True):
        plan, ignored = read(text, config=CFG, addressed=addressed, channel=OPS)
        assert not plan.destructive, (text, addressed, plan)
    plan, ignored = read(text, config=CFG, channel=OPS)
    assert plan.steps == (), plan
    assert why in {act for _, act in ignored}, ignored


@pytest.mark.parametrize(("text", "expected"), [
    ("You should kill vllm and rebuild with -j4", "rebuild=4"),
    ("you need to rebuild flash-attn with MAX_JOBS=4", "rebuild=4"),
])
def test_you_should_is_advice_to_the_channel_and_a_request_to_rigops(text: str, expected: str) -> None:
    plan, ignored = read(text, config=CFG, channel=OPS)
    assert plan.steps == () and "advice" in {act for _, act in ignored}, plan
    assert steps(said(text, addressed=True)).replace("kill ", "") == expected


def test_a_message_to_a_colleague_is_theirs() -> None:
    plan, ignored = read("<@U07ALICE> kill the vllm build and rebuild at -j4", config=CFG, channel=OPS)
    assert plan.steps == () and {act for _, act in ignored} == {"to-someone"}
    # ... but said to rigops, with a colleague mentioned, it is a request
    plan = said("<@U0RIGOPS> kill the vllm build, <@U07ALICE> asked", addressed=True)
    assert steps(plan) == "kill" and plan.build == "vllm"


def test_a_request_after_a_story_still_acts() -> None:
    """A new sentence, or an order after a comma, starts afresh."""
    assert steps(said("llama-cpp OOMed twice yesterday. rebuild it at -j4")) == "rebuild=4"
    assert steps(said("it died last night, retry llama-cpp with 4 jobs")) == "rebuild=4"


# --- typos and slang -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("typo", "word"), [
    ("stpo", "stop"), ("biuld", "build"), ("rebiuld", "rebuild"), ("rebuidl", "rebuild"), ("memroy", "memory"),
    ("memeory", "memory"), ("restrat", "restart"), ("progess", "progress"), ("satus", "status"),
])
def test_one_edit_typos_of_the_vocabulary_are_mended(typo: str, word: str) -> None:
    assert mend(typo) == word


@pytest.mark.parametrize("word", ["skill", "still", "stock", "shop", "spill", "bills", "compiles", "restarts",
                                  "stopped", "building", "guild", "stall", "lines", "liner", "statue"])
def test_english_words_and_inflections_stay_as_they_are(word: str) -> None:
    assert mend(word) == word


@pytest.mark.parametrize(("text", "expected"), [
    ("stpo teh biuld on node-3", "kill"),
    ("<@U0RIGOPS> rebiuld vllm", "rebuild"),
    ("nuke llama-cpp on gpu01", "kill"),
    ("yank the sgl-kernel build", "kill"),
    ("^C it, node-3 is dying", "kill mem"),
    ("vllm is toast, give it the boot", "kill"),
    ("<@U0RIGOPS> fire vllm up again at 6", "rebuild=6"),
    ("send vllm again at 6", "rebuild=6"),
    ("kill it kill it kill it, node-3 is melting", "kill mem"),
    # asked in the passive, put back on, the name again at a count
    ("can vllm be restarted with -j4?", "rebuild=4"),
    ("<@U0RIGOPS> could sgl-kernel be stopped please", "kill"),
    ("<@U0RIGOPS> put vllm back on at 8", "kill rebuild=8"),
    ("sgl-kernel again at 8 jobs please", "rebuild=8"),
])
def test_slang_and_typos_are_read(text: str, expected: str) -> None:
    assert steps(said(text, addressed="U0RIGOPS" in text)) == expected


@pytest.mark.parametrize("text", ["my skill with cmake is limited", "still compiling, i think", "restart my laptop",
                                  "the shop is closed", "kill time until the build ends",
                                  "we cycle the power on gpu01 every week", "the CI requeued vllm yesterday",
                                  "another go at it failed too", "we shut down the old boxes last week",
                                  "first time it oomed we rebuilt at -j4", "vllm at 6 pm is fine",
                                  "we got vllm down to 8 jobs last week",
                                  "i wanted vllm gone but it finished",
                                  "let the vllm build continue", "a rerun of vllm failed too",
                                  "did vllm make it into the release notes", "vllm done, thanks all"])
def test_ordinary_words_stay_ordinary(text: str) -> None:
    assert not said(text).destructive


@pytest.mark.parametrize(("text", "build"), [
    ("kill the flash_attn build", "flash-attn"), ("rebuild llama.cpp on gpu01", "llama-cpp"),
    ("stop sgl kernel", "sgl-kernel"), ("restart vllm on node3", "vllm"),
])
def test_config_names_are_read_through_separators(text: str, build: str) -> None:
    plan = said(text)
    assert plan.destructive and plan.build == build and plan.error is None, plan


# --- names never substituted ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "error"), [
    ("restart the foo build on node-3, 16 jobs", "no build 'foo' on node-3 (builds there: vllm)"),
    ("<@U0RIGOPS> kill triton on gpu01", "no build 'triton' on gpu01 (builds there: llama-cpp)"),
    ("kill the xformers build", "no build 'xformers' on b200 (builds there: sgl-kernel, flash-attn)"),
    ("restart llama-cpp on gpu07 at -j4", "unknown host 'gpu07'"),
    ("h100-7 is down to less than 10% swap free, kill whatever is building there",
     "unknown host 'h100-7' (known: b200, node-3, gpu01)"),  # the subject of its trouble; all hosts, not the channel's
    ("<@U0RIGOPS> rebuild llama-cpp on zaurus", "unknown host 'zaurus'"),
    # a look at a host shaped like the config's, named bare after the look ("gpu1" there is a GPU's index)
    ("parallel catchup on gpu07 has been failing due to recent RAM increase. <@U0RIGOPS> mem gpu07",
     "unknown host 'gpu07'"),
    # a build the config does not have, by the log's word or the build's verb
    ("<@U0RIGOPS> log xformers on b200", "no build 'xformers' on b200"),
    ("<@U0RIGOPS> log linux 100", "no build 'linux'"),
    ("<@U0RIGOPS> build xformers from source on b200", "no build 'xformers' on b200"),
    # a word of the dictionary too, where only a machine goes
    ("<@U0RIGOPS> the mavericks bot is stuck again. kill whatever is on mavericks", "unknown host 'mavericks'"),
    ("kill whatever is running on titan", "unknown host 'titan'"),
    ("retest pytorch on node-3 please", "no build 'pytorch' on node-3"),
    ("<@U0RIGOPS> /test vllm on gpu07", "unknown host 'gpu07'"),  # a word no dictionary has, where a host goes
    ("kill vllm on the staging cluster", "unknown host 'staging'"),  # a deployment's place, never the build's host
    ("<@U0RIGOPS> show the log of vllm in prod", "unknown host 'prod'"),
])
def test_a_name_the_config_does_not_know_is_refused_with_what_there_is(text: str, error: str) -> None:
    plan = said(text, addressed="U0RIGOPS" in text)
    assert plan.error is not None and error in plan.error, plan
    assert plan.build is None  # never the plan of another build


@pytest.mark.parametrize("text", ["rebuild the whole build", "kill the runaway build on node-3",
                                  "restart the cuda build of vllm", "restart the current build",
                                  "stop llama-cpp on gpu01 before it completes, the wrong build was submitted",
                                  "show vllm's status on node-3, ninja hangs after a long-running build step"])
def test_words_that_describe_a_build_are_not_names(text: str) -> None:
    assert "no build" not in (said(text).error or "")


@pytest.mark.parametrize("text", ["rebuild vllm with half the cores", "rebuild vllm with all cores",
                                  "rebuild vllm at `max(nproc // 2, 4)`", "rebuild vllm with -j$(nproc)",
                                  "rebuild vllm with as many jobs as there are cores",
                                  "restart vllm, one job per cpu", "rebuild vllm with jobs=auto",
                                  "rebuild vllm with -j auto",
                                  "set max_jobs to the number of logical cores on the host and rebuild vllm",
                                  # a letter for the count: the number after it is never the count
                                  "rebuild vllm with 2N", "rebuild vllm at N-1",
                                  "rebuild vllm with N+2 jobs", "rebuild vllm with n/2 jobs",
                                  "rebuild vllm using 2*N jobs", "rebuild vllm on node-3 with x jobs"])
def test_a_share_of_the_cores_or_an_expression_is_refused(text: str) -> None:
    plan = said(text)
    assert plan.error is not None and "name a number" in plan.error, plan


@pytest.mark.parametrize("text", ["we built vllm with as many jobs as cores last week and it died",
                                  "fyi one job per core is too many for vllm on node-3",
                                  "rebuild vllm, the number of cores there is 64 so -j32 is fine"])
def test_the_core_count_in_words_that_is_not_the_jobs_asked_for_is_not_refused(text: str) -> None:
    plan = said(text)
    assert plan.error is None or "name a number" not in plan.error, plan
    assert all(step.jobs in (None, 32) for step in plan.steps), plan


# --- looks, compounds and order ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("is vllm still alive?", "status"),
    ("which step is llama-cpp on?", "status"),
    ("has sgl-kernel reached the linking step yet?", "status"),
    ("how far along is flash-attn", "status"),
    ("is memory ok on node-3?", "mem"),
    ("are the gpus on gpu01 busy?", "gpu"),
    ("what does the vllm log say?", "log"),
    ("pull the gpu picture for gpu01", "gpu"),
    ("show me the error from vllm", "log"),
    ("<@U0RIGOPS> show me what flash-attn printed last", "log"),
    ("<@U0RIGOPS> what did llama-cpp spit out", "log"),
    ("<@U0RIGOPS> what broke in flash-attn", "log"),
    ("<@U0RIGOPS> what does the tail of vllm look like", "log"),
    ("<@U0RIGOPS> where did vllm die", "log"),
    ("<@U0RIGOPS> how much headroom does b200 have", "mem"),
    ("<@U0RIGOPS> how much ram does vllm take right now", "mem"),
    ("<@U0RIGOPS> rss of the vllm build", "mem"),
    ("<@U0RIGOPS> is there room on b200 for another build", "mem"),
    ("<@U0RIGOPS> who's hogging the gpus on node-3", "gpu"),
    ("<@U0RIGOPS> how's it going on node-3?", "status"),
    ("<@U0RIGOPS> did vllm make it?", "status"),
    ("<@U0RIGOPS> gpu0 on b200 busy?", "gpu"),                      # a GPU by its index, the cards by model
    ("<@U0RIGOPS> is anything on the h100s on node-3", "gpu"),
    ("<@U0RIGOPS> how much vram is vllm using", "gpu"),
    ("<@U0RIGOPS> is flash-attn through yet", "status"),
    ("<@U0RIGOPS> what's the verdict on llama-cpp", "status"),
    ("<@U0RIGOPS> any luck with sgl-kernel?", "status"),
    ("<@U0RIGOPS> vllm done?", "status"),
    ("<@U0RIGOPS> where are we with flash-attn", "status"),
    ("<@U0RIGOPS> sitrep on node-3", "status"),
    ("<@U0RIGOPS> disk space on node-3?", "disk"),
    ("`nvidia-smi --query-gpu` on b200", "gpu"),                      # a look's own tool, with its options
    ("<@U0RIGOPS> `free -g` on gpu01", "mem"),
    ("<@U0RIGOPS> is vllm running out of memory?", "mem"),
    ("<@U0RIGOPS> my sgl-kernel build stops at 1832 every time. what's its status, and the last 25 log lines",
     "status log=25"),
    ("<@U0RIGOPS> mem + nvidia-smi on node-3", "mem gpu"),
    ("<@U0RIGOPS> status / last 30 lines for vllm", "status log=30"),
    ("<@U0RIGOPS> stop llama-cpp, check the gpus, then rebuild it at 2", "kill gpu rebuild=2"),
    ("<@U0RIGOPS> tail 50 lines of vllm and then kill it", "log=50 kill"),
])
def test_looks_and_compounds_in_the_order_asked(text: str, expected: str) -> None:
    assert steps(said(text, addressed="U0RIGOPS" in text)) == expected


def test_a_quote_names_what_the_request_is_about() -> None:
    plan = said("&gt; node-3 is swapping like mad\nconfirmed, stop it")
    assert steps(plan) == "kill mem" and plan.host == "node-3" and plan.build == "vllm"


@pytest.mark.parametrize(("text", "expected"), [
    ("oom-ing pretty bad on node-3", "mem"),  # a plain cry about memory now asks for a look
    ("it's likely caused by OOM, what machine is it?", ""),  # a guess about a cause does not
    ("without MAX_JOBS flash-attn will OOM on b200", ""),
])
def test_memory_trouble_alone_asks_for_a_look_only_when_it_is_news(text: str, expected: str) -> None:
    assert steps(said(text)) == expected


# --- rigops explain ------------------------------------------------------------------------------------

def test_explain_says_why_it_did_not_act(tmp_path: Path) -> None:
    cfg = Path(__file__).resolve().parents[1] / "data" / "chat" / "rigops.toml"
    out = subprocess.run(
        [sys.executable, "-m", "bot", "--config", str(cfg), "--state-dir", str(tmp_path), "explain",
         "if llama-cpp OOMs again we could drop it to -j4"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.startswith("nothing: no request"), out
    assert "not acted on: 'if ‹build› ooms again we could drop it to -j4': it reads as a supposition" in out, out


@pytest.mark.parametrize(("text", "expected"), [
    ("maybe we could drop vllm to -j8", "rebuild=8"),
    ("you might want to check memory on node-3", "mem"),
    ("FYI for anyone reading: check nvidia-smi on gpu01", "gpu"),
])
def test_a_request_put_softly_to_rigops_is_offered(text: str, expected: str) -> None:
    assert said(text, addressed=True).steps == ()  # never run on a guess
    offer = guess(text, config=CFG, channel=OPS)
    assert offer is not None and steps(offer) == expected


@pytest.mark.parametrize("text", ["don't kill vllm", "i killed vllm an hour ago", "what a day",
                                  "<@U07ALICE> maybe you could kill vllm", "restart the foo build on node-3"])
def test_nothing_is_offered_for_a_negation_a_story_chatter_or_a_refusal(text: str) -> None:
    assert guess(text, config=CFG, channel=OPS) is None


@pytest.mark.parametrize(("text", "expected", "error"), [
    ("retry vllm with MAX_JOBS=8 (half the cores)", "rebuild=8", None),  # the number; the share explains it
    ("<@U0RIGOPS> `JOBS=0` rebuild vllm", "rebuild", "-j0"),
    ("what's the output of `free -h` on node-3 right now?", "mem", None),
    ("how much swap is gpu01 using", "mem", None),
])
def test_numbers_and_commands_in_context(text: str, expected: str, error: str | None) -> None:
    plan = said(text, addressed="U0RIGOPS" in text)
    assert steps(plan).replace("kill ", "") == expected and (error is None) == (plan.error is None), plan
    assert error is None or error in (plan.error or "")


# --- a property: what asks for nothing never plans a kill or a rebuild, whatever the names and numbers ------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NEVER_DESTRUCTIVE = [
    "last week {build} on {host} blew up at -j{n}, -j{m} fixed it",
    "yesterday i killed {build} and restarted it at -j{n}",
    "if {build} OOMs again on {host} we could try -j{n}",
    "once the new RAM lands we'd bump {build} to -j{n}",
    "FYI for anyone on {host}: -j{n} keeps {build} alive",
    "PSA for folks building {build}: MAX_JOBS={n} is the sweet spot",
    "their CI runs {build} at -j{n} and it OOMs all the time",
    "don't kill {build} on {host}, it's almost done",
    "no need to restart {build} at -j{n}",
    "we usually rebuild {build} at -j{n} on {host}",
    "<@U07ALICE> kill {build} on {host} and retry at -j{n}",
    "when you see Killed in the log, restart with -j{m} in your environment",
    "the trick is to restart {build} with -j{n}",
    "in CI we rebuild {build} at -j{n}",
    "had to restart {build} at -j{n} this morning",
    "bob restarted {build} at -j{n}",
    "killing {build} at -j{n} didn't help",
    "let me kill {build}",
    "kill {build}? nah",
    "restart {build} at -j{n}... never mind",
    "whoever restarts {build} next: use -j{n}",
]


@settings(max_examples=300, deadline=None)
@given(template=st.sampled_from(NEVER_DESTRUCTIVE), build=st.sampled_from(["vllm", "llama-cpp", "flash-attn",
       "sgl-kernel", "the build"]), host=st.sampled_from(["b200", "node-3", "gpu01", "the box"]),
       n=st.integers(1, 1024), m=st.integers(1, 1024), addressed=st.booleans())
def test_what_asks_for_nothing_never_kills_or_rebuilds(template: str, build: str, host: str, n: int, m: int,
                                                        addressed: bool) -> None:
    text = template.format(build=build, host=host, n=n, m=m)
    addressed = addressed and not text.startswith("<@U07ALICE>")  # said to rigops, its mention would be in it
    plan = said(text, addressed=addressed)
    assert not plan.destructive or plan.error is not None, (text, plan)  # a refusal runs nothing


def test_a_request_taken_back_is_not_run() -> None:
    assert steps(said("kill vllm? nah, let it finish")) == ""
    assert steps(said("kill vllm. no wait, rebuild it at -j4")) == "rebuild=4"  # what comes after still counts


@pytest.mark.parametrize(("text", "expected"), [
    ("tail shows the last 500 lines of vllm on node-3. please show the last 2000", "log=2000"),
    ("rebuild failed at -j32 for vllm on node-3, try -j8", "rebuild=8"),
    ("kill didn't work on node-3, kill -9 vllm", "kill"),
    ("the log only has 40 lines. tail -200 vllm on node-3", "log=200"),
])
def test_a_request_verb_that_is_the_subject_tells_and_its_numbers_are_not_asked(text: str, expected: str) -> None:
    plan = said(text)
    assert (steps(plan), plan.error) == (expected, None), plan


@pytest.mark.parametrize("text", ["rebuild failed again on node-3", "tail shows nothing useful for vllm on node-3",
                                  "restart didn't help vllm on node-3",
                                  "rebuild vllm -j4 was the fix in the upstream issue"])
def test_what_a_step_did_asks_for_nothing(text: str) -> None:
    assert said(text).steps == (), said(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("retry vllm on node-3 with less parallelism, 4", "rebuild=4"),
    ("retry vllm on node-3 with fewer jobs, say 4", "rebuild=4"),
    ("bring vllm on node-3 down to 4", "rebuild=4"),
    ("vllm on node-3 ooming at -j32, go to 4", "kill mem rebuild=4"),
])
def test_a_retry_with_its_number_said_in_other_words(text: str, expected: str) -> None:
    plan = said(text)
    assert (steps(plan), plan.error) == (expected, None), plan


@pytest.mark.parametrize("text", ["go to the dashboard on node-3", "we should go to 4 nodes eventually"])
def test_go_to_is_a_number_only_when_it_is_the_jobs(text: str) -> None:
    assert said(text).steps == (), said(text)


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild llama-cpp on gpu01 with N = [RAM in GB] / 8 + 1 jobs",
    "<@U0RIGOPS> rebuild flash-attn, jobs = RAM/4GB",
    "<@U0RIGOPS> rebuild vllm with as many jobs as it can handle",    # the most the machine takes, in words
    "<@U0RIGOPS> rebuild vllm with max parallelism",
    "<@U0RIGOPS> rebuild vllm at full speed",
    "<@U0RIGOPS> rebuild vllm with 2x the cores",
    "<@U0RIGOPS> bound sgl-kernel to half the cores on b200 instead of auto and rebuild",
    "<@U0RIGOPS> rebuild vllm with min(nproc, 4) jobs",
    "<@U0RIGOPS> restart llama-cpp with -j $(jobs_for_host)",
    "<@U0RIGOPS> rebuild sgl-kernel with (MemAvailable - 8) // 4 jobs",
    "<@U0RIGOPS> rebuild vllm with MAX_JOBS//NVCC_THREADS",
    "<@U0RIGOPS> rebuild llama-cpp with ncpu - 2 jobs",
    "<@U0RIGOPS> rebuild flash-attn `nproc` jobs",
    "<@U0RIGOPS> rebuild flash-attn at 8×2",
    "<@U0RIGOPS> rebuild llama-cpp with no limit on the number of jobs",
    "<@U0RIGOPS> rebuild vllm with half of the detected cpu threads",
])
def test_a_count_given_as_arithmetic_or_a_function_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan
    assert [s.action for s in plan.steps][-1:] == ["rebuild"]


@pytest.mark.parametrize(("text", "expected"), [
    ("My usual value is about 24. <@U0RIGOPS> sgl-kernel -j24", "rebuild=24"),
    ("Too slow. <@U0RIGOPS> vllm again with 6 threads", "rebuild=6"),
    ("it is stuck linking. <@U0RIGOPS> end the llama-cpp build", "kill"),
    ("odd numbers. <@U0RIGOPS> gpu b200 just to be sure", "gpu"),
])
def test_said_to_rigops_after_a_remark_the_name_then_the_count_asks(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert (steps(plan), plan.error) == (expected, None), plan


def test_the_name_then_a_count_is_not_a_request_unless_said_to_rigops() -> None:
    assert said("sgl-kernel -j24 took an hour yesterday").steps == ()


@pytest.mark.parametrize(("text", "expected", "where"), [
    # what follows the one mention is said to rigops, whatever the remark before it is
    ("I followed the guide you wrote and it broke. <@U0RIGOPS> llama-cpp log pls, 120 lines", "log=120", "gpu01"),
    ("node-3 and gpu01 both swapping. <@U0RIGOPS> mem on a100", "mem", "a100"),
    ("flash-attn on b200 never produced a wheel. <@U0RIGOPS> throw it away and rebuild", "rebuild", "b200"),
])
def test_a_request_after_a_remark_is_read_on_its_own(text: str, expected: str, where: str) -> None:
    plan = said(text, addressed=True)
    assert (steps(plan).replace("kill ", ""), plan.host, plan.error) == (expected, where, None), plan


def test_a_refusal_of_the_whole_message_stands_when_the_request_names_nothing_itself() -> None:
    plan = said("cc1plus killed during the llama-cpp build on gpu09 <@U0RIGOPS> retry at 2", addressed=True)
    assert plan.error and "gpu09" in plan.error, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("cn sum1 check mem on node-3", "mem"),
    ("cn some1 kill vllm", "kill"),
    ("vllm stat?", "status"),
    ("smi b200", "gpu"),
    ("logz for vllm?", "log"),
    ("lemme see the vllm log", "log"),
    ("<@U0RIGOPS> kill n restart llama-cpp", "kill rebuild"),
    ("<@U0RIGOPS> whr is sgl-kernel at", "status"),
    ("free mem on gpu01 anyone", "mem"),
    ("<@U0RIGOPS> cancel the active build on gpu01", "kill"),
    ('<@U0RIGOPS> rebuild vllm -j "6"', "rebuild=6"),
    ("<@U0RIGOPS> requeue vllm with 4 jobs", "rebuild=4"),
    ("<@U0RIGOPS> vllm please, from the top", "kill rebuild"),
    ("<@U0RIGOPS> let's go again on flash-attn", "rebuild"),
    ("<@U0RIGOPS> give sgl-kernel another spin", "rebuild"),
    ("<@U0RIGOPS> can I get a rerun of flash-attn", "rebuild"),
    ("<@U0RIGOPS> please resume the vllm build", "rebuild"),
    ("<@U0RIGOPS> plz stahp vllm", "kill"),
    ("<@U0RIGOPS> sgl-kernel is hogging b200, make it stop", "kill"),
    ("cancel the older vllm run, a new commit arrived", "kill"),
    ("force pushed. cancel the in-progress sgl-kernel build job", "kill"),
    ("I think sgl-kernel has become stuck, force-kill-and-retry it", "rebuild"),
    # "just wait" two sentences later does not take the kill back
    ("<@U0RIGOPS> abort vllm. if it doesn't die, normal computation is not an interruption point, just wait", "kill"),
    ("<@U0RIGOPS> vllm needs to die", "kill"),
    ("<@U0RIGOPS> I want vllm gone", "kill"),
    ("<@U0RIGOPS> get rid of the flash-attn build", "kill"),
    ("<@U0RIGOPS> shut down the llama-cpp compile", "kill"),
    ("<@U0RIGOPS> can u chk mem on node-3", "mem"),
    ("<@U0RIGOPS> first check the gpus on b200, then kill flash-attn", "gpu kill"),
    ("<@U0RIGOPS> resubmit llama-cpp at -j2", "rebuild=2"),
    ("<@U0RIGOPS> can you cycle the llama-cpp build", "rebuild"),
    ("<@U0RIGOPS> hit retry on flash-attn", "rebuild"),
    ("<@U0RIGOPS> vllm: one more go, -j 4", "rebuild=4"),
    ("<@U0RIGOPS> -j8 is too much for vllm, make it 6", "rebuild=6"),
    ("<@U0RIGOPS> one job fewer on llama-cpp", ""),  # a change by one, never -j1
    ("<@U0RIGOPS> rebuild vllm, 4 jobs less", "rebuild"),
    # a count in more words: the verb, the unit, what it replaces, a number said to be enough
    ("<@U0RIGOPS> knock it down to -j12 and kick vllm again", "rebuild=12"),
    ("<@U0RIGOPS> -j2 on a project this size is a pure joke. put vllm on node-3 back to 12 and restart it",
     "kill rebuild=12"),
    ("<@U0RIGOPS> limit the flash-attn build to 16 tasks", "rebuild=16"),
    ("<@U0RIGOPS> restart vllm and turn it up to 4 rather than 1, 1 was way too slow", "kill rebuild=4"),
    ("<@U0RIGOPS> restore sgl-kernel parallelism to 24", "rebuild=24"),
    ("<@U0RIGOPS> reduce parallel jobs on llama-cpp, gpu01 keeps killing processes. 3 should do", "rebuild=3"),
    ("<@U0RIGOPS> vllm: disable build parallelism and rebuild", "rebuild=1"),
    ("<@U0RIGOPS> forcefully cancel vllm", "kill"),
    ("<@U0RIGOPS> vllm at 6 please", "rebuild=6"),
    ("<@U0RIGOPS> can we get flash-attn down to 8 concurrent compiles", "rebuild=8"),
])
def test_chat_shorthand_is_read(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert (steps(plan), plan.error) == (expected, None), plan


@pytest.mark.parametrize("text", [
    'run `pip install deepspeed --global-option="-j8"` on node-3 and it died, not ours though',
    "for a machine with 32GB memory, try limiting it like `--parallel 4` to avoid OOM",
    '<@U0RIGOPS> rebuild llama-cpp -j "$(nproc)"',
])
def test_what_happened_advice_and_a_quoted_expression_do_not_run(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert not plan.steps or plan.error, plan


def test_what_the_log_shows_is_not_the_number_asked() -> None:
    plan = said("the vllm build log on node-3 only shows the last 300 lines. please show the last 1500")
    assert (steps(plan), plan.error) == ("log=1500", None), plan


def test_a_polite_lead_in_said_to_rigops_still_asks() -> None:
    plan = said("<@U0RIGOPS> would you be so kind as to kill vllm on node-3?", addressed=True)
    assert steps(plan) == "kill", plan
    assert said("<@U0RIGOPS> vllm build on node-3 is running for hours, how far is it?", addressed=True).steps


@pytest.mark.parametrize("text", [
    "vllm on node-3 died of OOM. Re-running the command seems to wipe everything and start over.",
    "with the new box I can use the 48 cores available on node-3 instead of 16, vllm took half the time",
])
def test_what_a_retry_does_and_the_cores_a_box_has_are_not_requests(text: str) -> None:
    assert not {s.action for s in said(text).steps} & {"kill", "rebuild"}, said(text)


@pytest.mark.parametrize("text", [
    "&gt; how many cores does it have?\n32 cores on gpu01, shared with two runners",
    "the vllm build still runs on 6 cpus on node-3",
    "make is using 12 cores on gpu01 right now",
    "perhaps we should give llama-cpp 2 threads on gpu01?",
    "the nightly job on b200 is meant to limit sgl-kernel at 10, but it doesn't",
])
def test_what_a_box_has_a_build_does_and_a_musing_are_not_requests(text: str) -> None:
    assert not {s.action for s in said(text).steps} & {"kill", "rebuild"}, said(text)


@pytest.mark.parametrize(("text", "name"), [
    ("<@U0RIGOPS> restart the compile for apex on gpu01", "apex"),
    ("<@U0RIGOPS> deepspeed oomed on node-3 at -j8, retry it with 2 jobs", "deepspeed"),
    # a model named with its size, tests, an extension build, a log, a build in trouble on a host
    ("<@U0RIGOPS> qwen2.5-72b train.py ooms on node-3, kill it", "qwen2.5-72b"),
    ("<@U0RIGOPS> stop the pyhf tests on gpu01, they spin forever", "pyhf"),
    ("<@U0RIGOPS> rebuild the apex cuda extension build on node-3 at -j2", "apex"),
    ("<@U0RIGOPS> tail the triton log on gpu01", "triton"),
    ("<@U0RIGOPS> status of tensorrt-llm on node-3?", "tensorrt-llm"),
    ("<@U0RIGOPS> is deepspeed still compiling on node-3?", "deepspeed"),
    ("<@U0RIGOPS> progress on apex?", "apex"),
    ("<@U0RIGOPS> last 50 lines of triton", "triton"),
    ("<@U0RIGOPS> xformers on b200 keeps crashing, restart it", "xformers"),
    ("<@U0RIGOPS> how is the apex prebuild on gpu01 doing?", "apex"),
    ("<@U0RIGOPS> stop compiling tensorrt with 64 jobs, rebuild it on node-3 at -j4", "tensorrt"),
    ("<@U0RIGOPS> onnxruntime keeps running out of memory. retry it with -j2 on gpu01", "onnxruntime"),
])
def test_an_unknown_build_named_in_a_new_shape_is_refused_not_substituted(text: str, name: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and name in plan.error, plan
    assert plan.build is None, plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> tail the error log on gpu01",             # which log, not whose
    "<@U0RIGOPS> llama is eating gpu01 alive, kill it",    # a model family alone may be the host's build
    "<@U0RIGOPS> gpu01 keeps dying while compiling lol. kill the build",  # a word after a gerund, no name
    "<@U0RIGOPS> there was a memory crash on gpu01, kill it",
    "<@U0RIGOPS> tail output on gpu01",
    "<@U0RIGOPS> is make still running on gpu01?",
    "<@U0RIGOPS> last 50 lines of the log on gpu01",
])
def test_a_log_kind_or_a_bare_model_family_is_no_unknown_build(text: str) -> None:
    assert "no build" not in (said(text, addressed=True).error or ""), said(text, addressed=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> job state node-3?", "status"),
    ("<@U0RIGOPS> streaming logs for vllm please", "log"),
    ("<@U0RIGOPS> 查看b200的显存", "gpu"),
    ("<@U0RIGOPS> log VRAM usage on gpu01", "gpu"),
])
def test_said_to_rigops_a_look_no_rule_read_is_still_seen(text: str, expected: str) -> None:
    assert steps(said(text, addressed=True)) == expected, said(text, addressed=True)


def test_a_remark_said_to_rigops_is_not_read_as_a_look() -> None:
    plan = said("<@U0RIGOPS> fyi since the last bump flash-attn needs far more RAM than it used to on b200",
                addressed=True)
    assert not plan.steps, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> pass -j3 on vllm", "rebuild=3"),
    ("<@U0RIGOPS> let it use 5 parallel jobs for llama-cpp", "rebuild=5"),
    ("<@U0RIGOPS> set the count of parallel jobs for vllm to 6", "rebuild=6"),
    ("<@U0RIGOPS> rebuild llama-cpp sequentially, gpu01 keeps locking up", "rebuild=1"),
    ("<@U0RIGOPS> show 120 last lines of the vllm log", "log=120"),
])
def test_jobs_and_lines_said_in_more_ways(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected, plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild vllm with jobs=$(( ncores - 2 ))",
    "<@U0RIGOPS> rebuild llama-cpp with n_cpus - 1 jobs",
    "<@U0RIGOPS> rebuild vllm with cores divided by 4 jobs",
    "<@U0RIGOPS> rebuild vllm with -j 16/2",
    "<@U0RIGOPS> restart vllm, MAX_JOBS = total_mem_gb / 4",
    "<@U0RIGOPS> rebuild vllm with -j 1e2",
    "<@U0RIGOPS> rebuild vllm -j 2k",
    "<@U0RIGOPS> rebuild flash-attn with the default -j minus 4",
    "<@U0RIGOPS> rebuild llama-cpp with half its usual jobs plus one",
    "<@U0RIGOPS> next llama-cpp try build: run ninja with -jNUM_PHYS_CORES",
    "<@U0RIGOPS> build vllm on half of `$NIX_BUILD_CORES`, we had an old out of memory issue on node-3",
    '<@U0RIGOPS> пересобери llama-cpp на gpu01 с MAKEFLAGS="-j$(($(nproc) * 2))"',
])
def test_a_count_given_as_arithmetic_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> rebuild vllm with MAX_JOBS=8 / NVCC_THREADS=2", "rebuild=8"),
    ("<@U0RIGOPS> rebuild vllm with 2 jobs plus a clean build dir", "rebuild=2"),
    ("vllm is oom-ing, retry it at -j8 k thx", "rebuild=8"),
])
def test_a_count_beside_other_numbers_and_words_of_arithmetic_is_the_count(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert steps(plan).split()[-1] == expected and plan.error is None, plan


def test_a_build_that_ran_serially_is_not_a_request() -> None:
    assert not said("llama-cpp on gpu01 ran sequentially last time and took hours").steps


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> /kill vllm", "kill"),
    ("<@U0RIGOPS> Build Rerun: llama-cpp", "rebuild"),
    ("<@U0RIGOPS> vllm died of OOM again. lower the number of jobs a bit, 6, fingers crossed", "rebuild=6"),
    ("<@U0RIGOPS> llama-cpp on gpu01 keeps dying. reduce parallel build number to 3", "rebuild=3"),
])
def test_slash_words_headers_and_a_number_after_a_comma_ask(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert (steps(plan).replace("kill mem ", "").replace("kill ", "") if expected != "kill" else steps(plan),
            plan.error) == (expected, None), plan


def test_a_build_described_by_a_gerund_is_not_an_unknown_build() -> None:
    plan = said("<@U0RIGOPS> rebuild vllm at 4 so we finally get a passing build", addressed=True)
    assert plan.error is None and plan.build == "vllm", plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> seems like vllm is not progressing on node-3, can you check?",
    "<@U0RIGOPS> hmm, llama-cpp doesn't look like it's compiling?",
])
def test_a_worry_that_a_build_is_not_moving_asks_how_it_is_doing(text: str) -> None:
    assert steps(said(text, addressed=True)) == "status", said(text, addressed=True)


def test_a_negated_look_is_still_not_a_look() -> None:
    assert not said("<@U0RIGOPS> don't post the vllm log here please", addressed=True).steps


@pytest.mark.parametrize(("text", "want"), [
    ("could someone please provide the vllm output from node-3? last 200 lines is enough", "log=200"),
    ("<@U0RIGOPS> vllm log please, 100 lines should do", "log=100"),
])
def test_the_lines_of_a_log_said_in_a_clause_of_their_own(text: str, want: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))) == want


def test_a_look_named_by_its_noun_after_and_is_a_second_look() -> None:
    plan = said("<@U0RIGOPS> post the last 40 lines of the llama-cpp log and the status", addressed=True)
    assert steps(plan) == "log=40 status", plan
    plan = said("<@U0RIGOPS> status of flash-attn + current memory usages on b200", addressed=True)
    assert steps(plan) == "status mem", plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild llama-cpp --pristine",
    "<@U0RIGOPS> vllm: clear just the build dir and go again",
])
def test_a_clean_start_said_as_a_flag_or_with_only(text: str) -> None:
    plan = said(text, addressed=True)
    assert any(s.action == "rebuild" and s.clean for s in plan.steps), plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> wipe the entire vllm build dir on node-3 and redo it at 4",
])
def test_a_clean_start_said_with_more_words(text: str) -> None:
    plan = said(text, addressed=True)
    assert any(s.action == "rebuild" and s.clean for s in plan.steps), plan


@pytest.mark.parametrize(("text", "clean"), [
    # a clean start said in a clause of its own, beside the rebuild it is about
    ("<@U0RIGOPS> rebuild vllm on node-3 with 12. Make sure we are doing a clean rebuild.", True),
    ("<@U0RIGOPS> rebuild vllm on node-3, clean this time", True),
    ("<@U0RIGOPS> rebuild vllm on node-3 with 12, and make it a clean build", True),
    ("<@U0RIGOPS> rebuild vllm at 8. do a clean one please", True),
    ("<@U0RIGOPS> rebuild vllm, wipe build/ first", True),
    ("<@U0RIGOPS> from a clean state (wipe `build/` first) can you rebuild llama-cpp on gpu01?", True),
    ("<@U0RIGOPS> rebuild llama-cpp on gpu01 at 6. Before rebuilding delete all .o files from the build directory.",
     True),
    ("I deleted the .o files in the build dir yesterday, rebuild vllm at 8", False),
    # told of another build, or said not to
    ("we did a clean rebuild of vllm yesterday, rebuild it at 8 now", False),
    ("<@U0RIGOPS> rebuild vllm at 8, no need for a clean rebuild", False),
])
def test_a_clean_start_said_beside_the_rebuild(text: str, clean: bool) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert [s.clean for s in plan.steps if s.action == "rebuild"] == [clean], plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild llama-cpp with job count = nproc",
    "<@U0RIGOPS> set vllm jobs to ncores - 4 please",
    "<@U0RIGOPS> replace -j6 on vllm with the number of physical cores",
    "<@U0RIGOPS> use -j by itself on llama-cpp",
])
def test_said_to_rigops_a_formula_for_the_jobs_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild vllm at 8, nproc says 64 there",
    "<@U0RIGOPS> is it possible to build vllm on a node without gpus?",
])
def test_a_number_beside_a_formula_and_a_how_to_question_are_read_as_they_are(text: str) -> None:
    plan = said(text, addressed=True)
    assert not plan.error and steps(plan) in ("kill mem rebuild=8", "rebuild=8", ""), plan


def test_a_name_written_against_cjk_text_is_still_the_name() -> None:
    plan = said("<@U0RIGOPS> 请看一下node-3的内存", addressed=True)
    assert (plan.host, steps(plan)) == ("node-3", "mem"), plan


@pytest.mark.parametrize("text", [
    "mixing targets with -j confuses make, e.g. `make -j6 clean all` — don't do that on node-3",
    "<@U0RIGOPS> llama-cpp link step crashes. Again. what's free on gpu01?",
    "sgl-kernel on b200 fails with `bad object` now and then, build with 24 jobs (ninja -j 24)",
    "<@U0RIGOPS> would you restart vllm on your own whenever it gets OOM killed?",
    "the old limiter on gpu01 throttled more jobs than it had to. gone now",
])
def test_examples_taken_back_setups_of_a_failure_and_questions_about_rigops_do_not_act(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert not {s.action for s in plan.steps} & {"kill", "rebuild"}, plan


def test_again_said_alone_after_a_failure_still_asks() -> None:
    assert "rebuild" in steps(said("<@U0RIGOPS> llama-cpp failed. again", addressed=True))


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> could you kick off another vllm build on node-3? thx", "rebuild"),
    ("<@U0RIGOPS> re-trigger llama-cpp", "rebuild"),
    ("<@U0RIGOPS> lower vllm's parallel level from 16 to 10 in the hope it stops dying", "rebuild=10"),
    ("<@U0RIGOPS> llama-cpp at -j 12 keeps dying. back to -j 4 please", "rebuild=4"),
])
def test_rebuilds_said_in_more_words(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected, plan


def test_back_to_told_is_not_asked() -> None:
    assert not said("vllm is back to 16 jobs on node-3 since the upgrade").steps


def test_as_many_parallel_jobs_as_cores_is_an_expression() -> None:
    plan = said("<@U0RIGOPS> rebuild llama-cpp with as many build jobs as the logical cores", addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> is there a way to see the tail of the flash-attn log? say 60?", "log=60"),
    ("<@U0RIGOPS> it would be great if you could show the vllm log", "log"),
    ("<@U0RIGOPS> the quickest fix is to just rebuild llama-cpp with -j 3", "rebuild=3"),
    ("could you see whether it helps to set MAX_JOBS to 6 on the vllm build?", "rebuild=6"),
    ("-j 5 worked for llama-cpp on my box. <@U0RIGOPS> restart it on gpu01 like that", "rebuild=5"),
    ("<@U0RIGOPS> use nvidia-smi on node-3, something holds the cards", "gpu"),
    ("<@U0RIGOPS> list the GPUs on gpu01 and what's on them", "gpu"),
    ("<@U0RIGOPS> how close is llama-cpp to done?", "status"),
    ("where is flash-attn at right now", "status"),
    ("vllm keeps getting killed on node-3. how much RAM is there on it?", "mem"),
])
def test_wishes_ways_and_questions_put_to_rigops_ask(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@") or "<@U0RIGOPS>" in text)
    assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected, plan


@pytest.mark.parametrize("text", [
    "is there a way to kill the build without losing the cache?",
    "<@U0RIGOPS> is there a way to kill a build from a DM?",
    "Try running `nvidia-smi` on node-3 a couple times, the number jumps around",
    "Use `tail -f build.log` to watch it in a shell.",
    "how much RAM does flash-attn need per job?",
    "the docs say -j4 is fine. rerun with that if you like",
])
def test_ways_advice_and_counts_told_elsewhere_do_not_act(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert not {s.action for s in plan.steps} & {"kill", "rebuild"}, plan
    assert "rebuild" not in steps(plan) and "kill" not in steps(plan)


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> vllm on node-3 ran out of memory I think, show me the end of its log", "log"),
    ("<@U0RIGOPS> flash-attn OOMed again, what does nvidia-smi say on b200?", "gpu"),
    ("<@U0RIGOPS> add one more attempt on llama-cpp, it failed", "rebuild"),
    ("<@U0RIGOPS> give it another try on vllm", "rebuild"),
])
def test_a_look_asked_beside_trouble_is_that_look_and_another_attempt_is_a_rebuild(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected, plan


def test_trouble_told_to_the_channel_still_gets_its_memory_look() -> None:
    assert "mem" in steps(said("b200 is swapping hard"))


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> to keep it from OOMing, drop vllm's build parallelism to 3", "rebuild=3"),
    ("<@U0RIGOPS> rebuild llama-cpp so that no more than 2 jobs run at once", "rebuild=2"),
    ("<@U0RIGOPS> flash-attn with one process please", "rebuild=1"),
    ("vllm on node-3 died half way. <@U0RIGOPS> drop it and launch a replacement", "rebuild"),
    ("<@U0RIGOPS> incremental didn't help on sgl-kernel, fall back to rebuilding it from scratch", "rebuild clean"),
    ("<@U0RIGOPS> llama-cpp's build dir is half-written on gpu01, you need to make clean and start over",
     "rebuild clean"),
])
def test_counts_in_a_purpose_a_replacement_and_a_fall_back_to_a_clean_build(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    got = steps(plan).replace("kill mem ", "").replace("kill ", "")
    assert got == expected.replace(" clean", "") and plan.steps[-1].clean == expected.endswith("clean"), plan


def test_a_count_that_ran_before_is_not_asked() -> None:
    plan = said("<@U0RIGOPS> rebuild vllm, last time only 4 jobs ran at once", addressed=True)
    assert [s.jobs for s in plan.steps if s.action == "rebuild"] == [None], plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> force kill the llama-cpp build on gpu01, it won't stop", "kill"),
    ("<@U0RIGOPS> logs flash-attn --last 120", "log=120"),
    ("<@U0RIGOPS> log vllm --tail=30", "log=30"),
    ("<@U0RIGOPS> show RAM and VRAM usage on gpu01 if possible", "mem gpu"),
    ("<@U0RIGOPS> kill sgl-kernel if you can", "kill"),
])
def test_force_log_flags_a_second_looks_noun_and_a_polite_if(text: str, expected: str) -> None:
    assert steps(said(text, addressed=True)) == expected


def test_a_condition_still_makes_a_supposition() -> None:
    assert not said("rebuild vllm at 4 if it fails again").steps


@pytest.mark.parametrize(("text", "expected"), [
    ("llama-cpp: cc1plus got killed, out of memory. restart it at 3 i guess", "rebuild=3"),
    ("<@U0RIGOPS> sgl-kernel is wedged. best to just kill it", "kill"),
    ("<@U0RIGOPS> flash-attn is hopeless now, might as well kill it", "kill"),
])
def test_a_hedged_count_and_a_best_to_still_ask(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert steps(plan).replace("kill mem ", "") == expected, plan


def test_what_was_best_back_then_is_a_story() -> None:
    assert not said("it was best to kill it back then").steps


def test_a_count_that_completes_is_told_not_asked() -> None:
    assert not said("heads up: llama-cpp on gpu01 can die in `ld` with signal 9; `-j 1` completes").steps


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> cap the vllm compile on node-3 to 6 processes", "rebuild=6"),
    ("<@U0RIGOPS> llama-cpp swaps like mad: drop make jobs to 2", "rebuild=2"),
    ("restrict the number of parallel jobs of sgl-kernel to 12, b200 is shared", "rebuild=12"),
    ("<@U0RIGOPS> try lowering vllm's thread count to 5 from 8", "rebuild=5"),
    ("limit the number of threads llama-cpp builds with to 3", "rebuild=3"),
])
def test_a_change_of_the_count_said_in_any_words(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected, plan


@pytest.mark.parametrize("text", [
    "limit the vllm build to 48 GB of memory on node-3",         # not the count
    "set the llama-cpp timeout on gpu01 to 30 minutes",
    "we limited sgl-kernel's jobs to 8 last month and it was fine",  # a report
    "if it OOMs again, reduce the vllm jobs to 4",                  # a supposition
])
def test_a_change_to_something_else_or_told_is_no_count(text: str) -> None:
    assert "rebuild" not in steps(said(text)), said(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("after an hour vllm is still hung on node-3. stop it and start again", "kill rebuild"),
    ("a fixed llama-cpp commit landed, cancel the running build and build the new one", "kill rebuild"),
    ("wipe the build folder of sgl-kernel and have everything rebuilt", "kill rebuild"),
    ("<@U0RIGOPS> the last flash-attn build hung, gonna need you to rerun it", "kill rebuild"),
])
def test_a_rebuild_said_after_a_kill_or_in_other_words(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert steps(plan).replace("kill mem ", "kill ") in (expected, expected.replace("kill ", "")), plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> vllm、ビルドディレクトリを削除してから再ビルドお願いします", "rebuild=clean"),
    ("<@U0RIGOPS> llama-cpp 重新编译一下，麻烦了", "rebuild"),
    ("<@U0RIGOPS> 看下 gpu01 的显存", "gpu"),
    ("vllm 日志，最后 40 行", "log=40"),
    ("<@U0RIGOPS> sgl-kernel OOM 了，用 -j8", "rebuild=8"),
    ("<@U0RIGOPS> vllm の並列数を 4 にして再ビルドお願いします", "rebuild=4"),
    ("<@U0RIGOPS> 把 llama-cpp 的并行任务数量限制到 2,然后重新编译", "rebuild=2"),
])
def test_chinese_and_japanese_requests_are_read(text: str, expected: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    got = steps(plan).replace("kill mem ", "").replace("kill ", "").replace("mem ", "")
    clean = "=clean" if any(step.clean for step in plan.steps) else ""
    assert got + clean == expected, plan


@pytest.mark.parametrize("text", [
    "昨天 vllm 在 node-3 上重新编译了三次",                  # a report of yesterday
    "如果 gpu01 只有 16GB 内存，llama-cpp 就会 OOM",           # a supposition
    "前回 sgl-kernel を再ビルドしたら直りました",               # last time, it was fixed
    "昨天 vllm 限制到 4 就好了",                               # yesterday, 4 did it
])
def test_chinese_and_japanese_stories_never_act(text: str) -> None:
    assert not said(text).steps, said(text)


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild vllm with the build folder removed",
    "<@U0RIGOPS> llama-cpp: do a complete distclean and build it at -j2",
    "<@U0RIGOPS> stale objects in sgl-kernel again. clean it and rebuild",
    "<@U0RIGOPS> flash-attn: delete and recreate the build directory, then rebuild it",
    "<@U0RIGOPS> force a rebuild of vllm, deleting the build dir is the only way",
    "rebuild llama-cpp, and don't reuse anything from the failed run — clean",
])
def test_a_clean_start_said_in_more_ways(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert [s.clean for s in plan.steps if s.action == "rebuild"] == [True], plan


def test_a_rebuild_that_keeps_the_build_dir_is_not_clean() -> None:
    plan = said("<@U0RIGOPS> rebuild vllm, no need to wipe the build dir", addressed=True)
    assert [s.clean for s in plan.steps if s.action == "rebuild"] == [False], plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild sgl-kernel with two threads per core",
    "<@U0RIGOPS> rebuild vllm with one job per 8 GB of RAM",
    "<@U0RIGOPS> rebuild llama-cpp and set the jobs to two fewer than gpu01 has",
])
def test_a_count_given_per_core_per_memory_or_against_the_machine_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan


def test_a_count_far_out_of_range_said_as_a_change_is_refused() -> None:
    plan = said("<@U0RIGOPS> set the vllm jobs number to 50000", addressed=True)
    assert plan.error and "between 1 and 1024" in plan.error, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> sgl-kernel eats all the RAM. decrease number of threads for it to 6 to avoid the OOM killer",
     "rebuild=6"),
    ("<@U0RIGOPS> the box is crawling, we may be overloading it so let's reduce the amount of MAX_JOBS for vllm to 10",
     "rebuild=10"),
    ("<@U0RIGOPS> vllm fills node-3's memory. reduce the CPU number used by the build to 6 and restart it",
     "rebuild=6"),
    ("<@U0RIGOPS> llama-cpp is wedged and my shell can't kill it. force kill it", "kill"),
    ("<@U0RIGOPS> something broke in the templates, would you mind recompiling flash-attn?", "rebuild"),
])
def test_requests_after_a_remark_or_put_as_a_question(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    got = steps(plan).replace("kill mem ", "").replace("mem ", "")
    assert got in (expected, expected.replace("rebuild", "kill rebuild")), plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild sgl-kernel with `make -j`",
    "<@U0RIGOPS> rebuild vllm using make -j without a limit",
    "<@U0RIGOPS> vllm: `ninja -j4` -&gt; `ninja -j$(nproc)`",
    '<@U0RIGOPS> speed the llama-cpp build up by adding "-j `nproc`"',
    "<@U0RIGOPS> add `--parallel $(nproc)` to the vllm build",
    "<@U0RIGOPS> make flash-attn use as many cores as b200 has",
    "<@U0RIGOPS> set the llama-cpp jobs from `os.cpu_count()`",
])
def test_a_count_left_to_the_machine_in_code_or_words_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and "cannot work that out" in plan.error, plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> not much to do except build with a lower `-j`",
    "<@U0RIGOPS> I usually stop vllm with `^C` on node-3 and it's fine",
])
def test_the_flag_named_or_a_key_in_code_is_no_count(text: str) -> None:
    assert "cannot work that out" not in (said(text, addressed=True).error or ""), said(text, addressed=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> check the used memory across all the Nvidia GPUs on gpu01", "gpu"),
    ("<@U0RIGOPS> run nvidia-smi on all the a100 boxes", "gpu"),
    ("<@U0RIGOPS> fetch the vllm logs, `--tail=80`", "log=80"),
])
def test_the_gpus_of_one_host_a_group_and_lines_as_an_option(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert (steps(plan), plan.error) == (expected, None), plan


@pytest.mark.parametrize("text", [
    "free -h on node-3 says:\n```\nMem: 251Gi 249Gi 1.2Gi\n```",
    "here's the tail of the vllm log on node-3:\n```\nc++: fatal error: Killed signal terminated program cc1plus\n```",
    "when I run nvidia-smi on gpu01 it shows:\n```No running processes found```",
])
def test_the_words_that_introduce_pasted_output_ask_for_nothing(text: str) -> None:
    plan, ignored = read(text, config=CFG, channel=OPS)
    assert plan.steps == (), plan
    assert "pasted-log" in {why for _, why in ignored}, ignored


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> kill vllm, here's what node-3 printed:\n```\nOut of memory: Killed process 4242 (cc1plus)\n```",
     "kill"),
    ("tried these on llama-cpp:\n```\n-j2 ok\n-j8 oom\n```\n<@U0RIGOPS> rebuild it at -j2", "rebuild=2"),
])
def test_a_request_beside_pasted_output_still_asks(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).replace("kill mem ", "kill ").replace("kill rebuild", "rebuild") in (
        expected, expected.replace("kill", "kill mem")), plan
    assert plan.error is None, plan


@pytest.mark.parametrize("text", [
    "next time vllm OOMs, restart it with 8 jobs",
    "whenever llama-cpp hangs like this, kill it",
    "try rebuilding sgl-kernel with -j1 if the problem persists",
    "rebuild flash-attn at -j4 if it dies again",
    "how do I rebuild llama-cpp at -j2 myself?",
    "why would anyone rebuild flash-attn at -j128?",
])
def test_a_request_for_later_or_about_doing_it_oneself_never_acts(text: str) -> None:
    for addressed in (False, True):
        plan = said(("<@U0RIGOPS> " if addressed else "") + text, addressed=addressed)
        assert not plan.destructive, (text, addressed, plan)


@pytest.mark.parametrize(("text", "expected"), [
    ("can you stop whatever is building on gpu01", "kill"),
    ("kick off a fresh flash-attn build", "rebuild"),
])
def test_a_kill_of_whatever_runs_and_a_fresh_build_named_first(text: str, expected: str) -> None:
    assert steps(said(text)).replace("kill rebuild", "rebuild") == expected, said(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("vllm kept locking node-3 up. `--jobs=3` worked for me, so do that", "rebuild=3"),
    ("plain make froze gpu01, only make -j2 got through — do llama-cpp like that", "rebuild=2"),
])
def test_doing_what_was_just_told_takes_its_count(text: str, expected: str) -> None:
    # said to rigops: to the channel, a long message is also weighed by how rarely the channel's chatter asks, and
    # the second of these sits at that bound (p(act) 0.15-0.16 over the last trainings)
    assert steps(said(text, addressed=True)).replace("kill ", "").replace("mem ", "") == expected, said(text)


def test_doing_that_without_one_count_or_a_build_asks_nothing() -> None:
    assert not said("-j2 and -j4 both worked for me, so do that on vllm").destructive
    assert not said("the docs say -j4 for small boxes, so do that").destructive


@pytest.mark.parametrize("text", [
    "with -j32 sgl-kernel needs about 500GB",
    "at -j16 flash-attn peaks around 200G",
    "vllm at -j12: 35 min, at -j24: 20 min",
    "-j16 vs -j32 makes no difference for sgl-kernel",
    "sgl-kernel -j64 oom, -j32 ok",
    "flash-attn: -j8 fine, -j16 OOM",
    "rebuild at -j4 failed too for llama-cpp",
])
def test_what_a_count_did_is_told_not_asked(text: str) -> None:
    for addressed in (False, True):
        plan = said(("<@U0RIGOPS> " if addressed else "") + text, addressed=addressed)
        assert not (plan.destructive and plan.error is None), (text, addressed, plan)


@pytest.mark.parametrize(("text", "what"), [
    ("stop the vllm server on node-3", "server"),
    ("kill llama.cpp server on gpu01", "server"),
    ("restart the llama-server on gpu01", "llama-server"),
    ("kill the jupyter kernel on b200", "jupyter kernel"),
    ("stop the training run on b200", "training run"),
    ("kill the docker container on node-3", "docker container"),
    ("kill python on gpu01", "python"),
    ("restart the runner agent process on node-3", "runner agent process"),
    ("kill the sgl-kernel tests on b200", "tests"),  # a build's tests are not the build
])
def test_a_thing_that_is_no_build_is_never_taken_for_one(text: str, what: str) -> None:
    for addressed in (False, True):
        plan = said(("<@U0RIGOPS> " if addressed else "") + text, addressed=addressed)
        assert plan.build is None, (text, plan)
        if plan.steps:
            assert plan.error and f"{what!r} is not one" in plan.error, plan


def test_a_container_restarted_with_its_build_asked_for_too_is_the_build() -> None:
    plan = said("restart the flash-attn container and recreate the build, it stalled again")
    assert (plan.build, plan.error, "rebuild" in steps(plan)) == ("flash-attn", None, True), plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> vllm is choking node-3, show me RAM and VRAM both", "mem gpu"),
    ("<@U0RIGOPS> show the status of vllm, then logs from the build as it runs", "status log"),
    ("<@U0RIGOPS> could you try to reinstall vllm and post the install log here?", "rebuild log"),
])
def test_looks_and_a_rebuild_asked_together(text: str, expected: str) -> None:
    assert steps(said(text, addressed=True)).replace("kill ", "") == expected, said(text, addressed=True)


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> hola, quiero ver la memoria en gpu01 por favor", "mem"),
    ("<@U0RIGOPS> o llama-cpp travou de novo, recompila ele com -j2 por favor", "rebuild=2"),
])
def test_spanish_and_portuguese_requests_are_read(text: str, expected: str) -> None:
    assert steps(said(text, addressed=True)).replace("kill ", "").replace("mem rebuild", "rebuild") == expected


def test_spanish_and_portuguese_stories_never_act() -> None:
    assert not said("ontem eu recompilei o vllm com -j4 e deu certo").destructive
    assert not said("ayer reiniciamos el llama-cpp y funcionó").destructive


def test_a_thing_that_is_no_build_told_first_and_then_restarted_by_a_pronoun() -> None:
    plan = said("<@U0RIGOPS> the inference server hangs on node-3 since the OOM. restart it", addressed=True)
    assert plan.build is None and plan.error and "is not one" in plan.error, plan
    # told of the build itself, the pronoun is the build
    plan = said("<@U0RIGOPS> vllm hangs on node-3 since the OOM. restart it", addressed=True)
    assert (plan.build, plan.error) == ("vllm", None), plan


def test_slang_opening_a_sentence_keeps_its_space() -> None:
    assert steps(said("<@U0RIGOPS> vllm never finishes on node-3. nuke it", addressed=True)) == "kill"


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> vllm w/ 3 thrds pls", "rebuild=3"),
    ("<@U0RIGOPS> llama-cpp less threads cause of oom. 2", "rebuild=2"),
    ("<@U0RIGOPS> again lesser jobs for vllm pls, 5 this time", "rebuild=5"),
])
def test_shorthand_for_fewer_threads_and_the_number_after(text: str, expected: str) -> None:
    got = steps(said(text, addressed=True)).replace("kill mem ", "").replace("kill ", "").replace("mem ", "")
    assert got == expected, said(text, addressed=True)


@pytest.mark.parametrize(("text", "jobs"), [
    ("<@U0RIGOPS> try `make clean && make -j 4` for llama-cpp on gpu01", 4),
    ("<@U0RIGOPS> llama-cpp: `cd build/ &amp;&amp; make clean &amp;&amp; make`", None),
    ("<@U0RIGOPS> clean llama-cpp's build dir and force it to rebuild the object files", None),
])
def test_a_clean_start_asked_in_code_or_in_words(text: str, jobs: int | None) -> None:
    plan = said(text, addressed=True)
    assert [(s.action, s.jobs, s.clean) for s in plan.steps] == [("rebuild", jobs, True)], plan


def test_a_clean_command_told_of_the_past_asks_nothing() -> None:
    assert said("I ran `make clean && make -j4` on llama-cpp yesterday").steps == ()


@pytest.mark.parametrize("text", [
    "should vllm die overnight, restart it at -j4",             # an event to wait for
    "after the tests pass, restart llama-cpp",
    "when memory frees up, kick vllm again",
    "kill the build if it hangs and rerun with -j4",
    "rule of thumb: restart llama-cpp with -j2 when it ooms",   # advice, by its lead
    "general advice for anyone: rebuild flash-attn at -j8",
    "for the record: kill vllm and retry at -j2",
    "someone on reddit said 'just rerun flash-attn with MAX_JOBS=4'",  # somebody else's words
])
def test_a_request_for_later_advice_and_quoted_words_never_run(text: str) -> None:
    for addressed in (False, True):
        plan = said(("<@U0RIGOPS> " if addressed else "") + text, addressed=addressed)
        assert not plan.destructive, (text, addressed, plan)


def test_a_state_now_keeps_a_conditional_request() -> None:
    assert steps(said("<@U0RIGOPS> kill flash-attn if it's stuck", addressed=True)) == "kill"


@pytest.mark.parametrize("text", ["<@U0RIGOPS> mem everywhere", "<@U0RIGOPS> disk usage across the fleet"])
def test_everywhere_is_every_host(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.host == "all" and plan.error is None and len(plan.steps) == 1, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> reinicia el build de llama-cpp con 2 hilos", "rebuild=2"),
    ("<@U0RIGOPS> recompila o vllm com 4 jobs", "rebuild=4"),
    ("<@U0RIGOPS> baja los jobs de vllm a 6 y reinicia", "rebuild=6"),
    ("<@U0RIGOPS> quanta memória livre tem no node-3?", "mem"),
    ("<@U0RIGOPS> cuánta memoria queda en b200?", "mem"),
    ("<@U0RIGOPS> muestra las últimas 50 líneas del log de vllm", "log=50"),
    ("<@U0RIGOPS> ¿cómo va el build de vllm?", "status"),
])
def test_spanish_and_portuguese_requests_in_more_words(text: str, expected: str) -> None:
    assert steps(said(text, addressed=True)).replace("kill ", "") == expected


def test_a_spanish_report_still_asks_nothing() -> None:
    assert said("ayer recompilé vllm con -j4 y funcionó").steps == ()


@pytest.mark.parametrize("text", [
    "GPU memory usage seems to be steadily increasing on gpu01",        # told of, not asked
    "are you sure the GPU is free? nvidia-smi shows several processes on node-3",  # asked of a person
    "When OOM Killer is triggered on b200, it can kill any process",   # how it goes, not news
    "On a box like b200 the OOM killer is a realistic event",
])
def test_memory_and_gpus_told_of_ask_for_no_look(text: str) -> None:
    assert said(text).steps == (), said(text)


def test_an_unknown_build_is_refused_once_not_also_asked_for() -> None:
    plan = said("<@U0RIGOPS> rebuild pytorch", addressed=True)
    assert plan.error == "no build 'pytorch' on b200 (builds there: sgl-kernel, flash-attn)" and plan.question is None


@pytest.mark.parametrize(("text", "build", "expected"), [
    ("<@U0RIGOPS> don't restart vllm, rebuild llama-cpp instead", "llama-cpp", "rebuild"),
    ("<@U0RIGOPS> not vllm — kill flash-attn", "flash-attn", "kill"),
    ("<@U0RIGOPS> leave vllm alone, kill llama-cpp", "llama-cpp", "kill"),
    ("<@U0RIGOPS> no, kill vllm, not llama-cpp", "vllm", "kill"),
])
def test_the_build_a_clause_says_not_to_touch_is_not_the_one_asked_for(text: str, build: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert (plan.build, steps(plan), plan.error) == (build, expected, None), plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> kill vllm and llama-cpp",
                                  "<@U0RIGOPS> don't kill vllm or llama-cpp, just check mem"])
def test_two_builds_asked_for_or_spared_together_are_never_narrowed_to_one_to_kill(text: str) -> None:
    plan = said(text, addressed=True)
    assert not (plan.destructive and plan.error is None), plan


def test_help_cried_beside_trouble_is_no_request_for_the_command_list() -> None:
    assert steps(said("<@U0RIGOPS> help, node-3 is dying", addressed=True)) == "mem"
    assert steps(said("<@U0RIGOPS> help", addressed=True)) == "help"


def test_go_lower_after_an_oom_asks_for_fewer_jobs() -> None:
    plan = said("<@U0RIGOPS> vllm oom'd, go lower", addressed=True)
    assert plan.build == "vllm" and "rebuild" in steps(plan), plan


@pytest.mark.parametrize(("text", "host"), [
    ("<@U0RIGOPS> whats free -h say on b200", "b200"),
    ("what does free -m show on node-3?", "node-3"),
    ("<@U0RIGOPS> how much does gpu01 have free", "gpu01"),
    ("how much swap does node-3 have left?", "node-3"),
])
def test_a_question_about_free_memory_in_more_words_is_a_look(text: str, host: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert (plan.host, steps(plan)) == (host, "mem"), plan


@pytest.mark.parametrize("text", [
    "how much does the flash-attn build need?",
    "what does free mean in htop",
])
def test_how_much_a_build_needs_and_what_free_means_are_no_look(text: str) -> None:
    assert not said(text).steps


@pytest.mark.parametrize(("text", "name"), [
    ("<@U0RIGOPS> stop when build mvcc-full on gpu01", "mvcc-full"),
    ("<@U0RIGOPS> kill build xformers on b200", "xformers"),
])
def test_an_unknown_name_after_the_word_build_is_refused_not_replaced(text: str, name: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error and f"no build {name!r}" in plan.error and plan.build is None, plan


def test_a_known_name_after_the_word_build_is_that_build() -> None:
    plan = said("<@U0RIGOPS> restart the build vllm on node-3", addressed=True)
    assert (plan.build, plan.error) == ("vllm", None) and "rebuild" in steps(plan), plan


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild llama-cpp with -j2 to make sure it doesn't oom again",
    "<@U0RIGOPS> rebuild llama-cpp at 2, to be sure it isn't the parallelism",
])
def test_a_purpose_after_a_request_is_no_negation_of_it(text: str) -> None:
    assert steps(said(text, addressed=True)).endswith("rebuild=2")


def test_a_negated_request_with_a_purpose_stays_negated() -> None:
    assert not said("<@U0RIGOPS> don't restart llama-cpp to make sure it isn't the cache", addressed=True).steps


@pytest.mark.parametrize(("text", "jobs"), [
    ("<@U0RIGOPS> rebuild llama-cpp at 2 so that it can't oom", 2),
    ("<@U0RIGOPS> retry llama-cpp with 4 because gpu01 swaps", 4),
    ("<@U0RIGOPS> restart llama-cpp at 3 so nothing else gets killed", 3),
    ("<@U0RIGOPS> pass -j1 to llama-cpp to be sure it's not parallelising", 1),
    ("<@U0RIGOPS> rebuild llama-cpp with -j1 to make sure it isn't the parallelism", 1),
])
def test_a_bare_count_keeps_its_number_before_a_reason(text: str, jobs: int) -> None:
    assert steps(said(text, addressed=True)).endswith(f"rebuild={jobs}")


def test_a_reason_after_a_count_in_a_story_does_not_act() -> None:
    assert not said("we rebuilt llama-cpp at 4 so that it would fit").steps


@pytest.mark.parametrize("text", [
    "llama-cpp on gpu01 is eating memory. someone kill it before the whole system stands still",
    "llama-cpp on gpu01 is eating memory. kill it before it freezes",
])
def test_a_kill_with_its_reason_after_it_is_a_kill(text: str) -> None:
    assert steps(said(text)).startswith("kill")


def test_we_had_to_kill_it_before_is_a_report() -> None:
    assert not said("we had to kill it before it froze the box, llama-cpp on gpu01").steps


def test_a_way_to_stop_this_asked_of_rigops_asks_it() -> None:
    plan = said("<@U0RIGOPS> the llama-cpp build on gpu01 appears to be stuck, and there's no obvious way to kill it "
                "from the terminal. Any way to kill this?", addressed=True)
    assert steps(plan) == "kill" and plan.build == "llama-cpp"
    assert not said("<@U0RIGOPS> is there a way to kill a build from the terminal myself?", addressed=True).steps


def test_a_describing_word_before_jobs_is_no_build() -> None:
    plan = said("<@U0RIGOPS> could you try llama-cpp on gpu01 using `-j 2`? it's the unbounded jobs", addressed=True)
    assert (plan.error, plan.build, steps(plan)) == (None, "llama-cpp", "rebuild=2"), plan


def test_a_request_after_a_report_said_to_rigops_asks() -> None:
    plan = said("<@U0RIGOPS> I triggered llama-cpp and I'd like to see the build progress in this channel too",
                addressed=True)
    assert steps(plan) == "status" and plan.build == "llama-cpp"


def test_make_sure_to_clean_first_asks_a_clean_rebuild() -> None:
    plan = said("<@U0RIGOPS> rebuild llama-cpp with 8 jobs — make sure to run `make distclean` first", addressed=True)
    assert [(s.action, s.jobs, s.clean) for s in plan.steps][-1] == ("rebuild", 8, True)


@pytest.mark.parametrize("text", [
    "make sure to use -j4 when you build llama-cpp on a laptop",
    "set MAX_JOBS=4 when building on a laptop",
    "for machines with 16GB, rebuild llama-cpp at -j2",
])
def test_advice_for_a_kind_of_machine_does_not_act(text: str) -> None:
    assert not said(text).steps


@pytest.mark.parametrize("text", [
    "Okay, the solution is just:\n`MAX_JOBS=1 pip install . --no-build-isolation`",
    "the fix was:\n`MAX_JOBS=2 cmake --build build`",
])
def test_what_a_fix_announced_on_the_line_before_holds_is_advice(text: str) -> None:
    assert not said(text).steps


def test_a_request_after_a_code_block_is_read_on_its_own() -> None:
    plan = said("llama-cpp on gpu01 failed with:\n```\nmake[1]: *** wait: No child processes.  Stop.\n```\n"
                "Probably best bet is to just rebuild it on `-j8`")
    assert steps(plan).endswith("rebuild=8")


def test_a_button_named_in_code_is_read_as_its_words() -> None:
    assert steps(said("<@U0RIGOPS> `Start new build` for llama-cpp", addressed=True)) == "rebuild"
    assert not said("the `Start new build` button is greyed out").steps


@pytest.mark.parametrize(("text", "look"), [
    ("<@U0RIGOPS> output status for llama-cpp so it won't seem like it froze or got stuck", "status"),
    ("<@U0RIGOPS> keep an eye on gpu01 memory during the llama-cpp run", "mem"),
])
def test_more_verbs_that_ask_to_look(text: str, look: str) -> None:
    assert steps(said(text, addressed=True)) == look


def test_a_proposal_put_to_rigops_asks_it() -> None:
    plan = said("<@U0RIGOPS> What if you will run llama-cpp in single thread (`-j1`)?", addressed=True)
    assert steps(plan) == "rebuild=1" and plan.build == "llama-cpp"
    assert not said("<@U0RIGOPS> what if you run out of memory?", addressed=True).steps
    assert not said("what if you run llama-cpp at -j1?").steps  # to the channel: a supposition


def test_a_request_after_a_quote_is_a_clause_of_its_own() -> None:
    plan = said('<@U0RIGOPS> ninja appears to be stuck on the llama-cpp build on gpu01. It endlessly displays '
                '"[29/30] Running tests..." can you end the process?', addressed=True)
    assert steps(plan) == "kill" and plan.build == "llama-cpp"
    assert not said("I wonder how can you tell").steps


def test_a_wish_said_to_rigops_asks_it() -> None:
    plan = said("<@U0RIGOPS> we actually want to rebuild llama-cpp on gpu01, because the previous rebuild for some "
                "reason did not work...", addressed=True)
    assert steps(plan) == "rebuild"
    assert not said("we want to rebuild llama-cpp on gpu01 tomorrow").steps


def test_i_also_see_is_a_report_not_a_look() -> None:
    plan = said("<@U0RIGOPS> I also see `make -j 24` in the llama-cpp logs. perhaps try to limit parallelism, "
                "rebuild at -j 8", addressed=True)
    assert steps(plan) == "rebuild=8"


def test_a_group_named_with_its_hosts_is_the_group() -> None:
    plan = said("<@U0RIGOPS> show the GPU usage on both a100 nodes, node-3 and gpu01", addressed=True)
    assert (plan.host, plan.error, steps(plan)) == ("a100", None, "gpu"), plan


def test_memory_in_a_list_of_gpu_figures_is_the_gpus() -> None:
    assert steps(said("<@U0RIGOPS> gpu temperature, utilization, memory usage, and running processes on gpu01?",
                      addressed=True)) == "gpu"
    assert steps(said("<@U0RIGOPS> gpu + mem on gpu01", addressed=True)) == "gpu mem"


def test_a_tools_output_is_that_look_not_the_log() -> None:
    assert steps(said("get me proper nvidia-smi output from gpu01")) == "gpu"
    assert steps(said("post the output of llama-cpp")) == "log"


def test_where_it_is_at_asks_its_status() -> None:
    plan = said("<@U0RIGOPS> llama-cpp build on gpu01 hangs around 40-60%, no output. any idea where it's at?",
                addressed=True)
    assert steps(plan) == "status"


@pytest.mark.parametrize("text", [
    'llama-cpp OOM-killed by `ninja` — detected as "Killed" in the log, retried it by hand at -j16 and it went through',
    "perhaps it is out of memory...\nyup doubling the RAM on gpu01 fixed it",
])
def test_trouble_told_as_solved_asks_for_no_look(text: str) -> None:
    assert not said(text).steps


def test_trouble_that_was_solved_before_is_news() -> None:
    assert steps(said("llama-cpp on gpu01 oomed again, doubling the RAM fixed it last time")) == "mem"


def test_an_apology_about_the_docs_does_not_make_the_message_advice() -> None:
    plan = said("I would like to only run 4 of these jobs concurrently on gpu01. <@U0RIGOPS> restart llama-cpp that "
                "way\nSorry if this is already in the docs, but I can’t seem to find guidance on this.", addressed=True)
    assert steps(plan).endswith("rebuild=4")
    assert not said("in the docs: rebuild llama-cpp with -j2 on gpu01").steps


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> vllm keeps dying in the same file. retry it, one file at a time", "rebuild=1"),
    ("<@U0RIGOPS> llama-cpp: run it again, single threaded", "rebuild=1"),
])
def test_one_at_a_time_said_to_rigops_is_one_job(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want


def test_one_at_a_time_as_advice_or_story_is_not_a_count() -> None:
    assert "rebuild" not in steps(said("you're filling RAM and swap, then the box freezes. Build one file at a time"))
    assert not said("<@U0RIGOPS> single threaded builds are slow on node-3", addressed=True).steps


def test_a_plan_said_to_rigops_gives_its_count() -> None:
    plan = said("<@U0RIGOPS> need to rerun flash-attn. gonna drop it to 6 jobs to do so", addressed=True)
    assert steps(plan) == "rebuild=6"
    assert not said("<@U0RIGOPS> I'm gonna drop vllm to 4 myself", addressed=True).steps
    assert not said("gonna drop it to 4 on vllm").steps  # not said to rigops: the speaker's own plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> get llama-cpp compiled now 😤",
                                  "<@U0RIGOPS> get llama-cpp building again"])
def test_get_it_built_asks_a_rebuild_and_an_emoji_ends_nothing(text: str) -> None:
    assert steps(said(text, addressed=True)) == "rebuild"


def test_an_emoji_alone_is_an_unknown_subcommand() -> None:
    from bot.language.intents import parse_command
    assert parse_command("🔥", config=CFG).error is not None
    assert steps(parse_command("", config=CFG)) == "help"


def test_a_habit_with_when_is_no_condition_on_the_request_after_it() -> None:
    plan = said("<@U0RIGOPS> vllm died again. this usually happens when it runs out of memory, try lowering the "
                "thread count to 6", addressed=True)
    assert steps(plan) == "rebuild=6"
    assert not said("<@U0RIGOPS> if vllm dies again, restart it at 4", addressed=True).steps
    assert not said("<@U0RIGOPS> the bot should rerun vllm if it failed, but do so single-threaded",
                    addressed=True).steps


@pytest.mark.parametrize("text", ["<@U0RIGOPS> rerun flash-attn with -jnumber_of_cores",
                                  "<@U0RIGOPS> rebuild vllm --jobs=num_cores",
                                  '<@U0RIGOPS> rebuild llama-cpp using "make -j $(nproc)"'])
def test_the_core_count_by_name_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "name a number" in plan.error


def test_make_sure_it_uses_n_cores_asks_that_count() -> None:
    assert steps(said("<@U0RIGOPS> make sure the vllm build uses 4 cores or less, node-3 is crawling",
                      addressed=True)).endswith("rebuild=4")
    assert not said("I made sure vllm uses 4 cores on node-3").steps


def test_and_is_never_a_builds_name() -> None:
    assert steps(said("<@U0RIGOPS> vllm: do that and rebuild it on node-3", addressed=True)) == "rebuild"


def test_do_that_after_a_clean_told_as_the_fix_starts_clean() -> None:
    plan = said("<@U0RIGOPS> vllm fails like last week. back then `make clean` fixed this, do that and rebuild it",
                addressed=True)
    assert steps(plan) == "rebuild" and plan.steps[0].clean, plan
    plan = said("<@U0RIGOPS> a clean build is not needed, just do that and rebuild vllm", addressed=True)
    assert steps(plan) == "rebuild" and not plan.steps[0].clean


@pytest.mark.parametrize("text", ["<@U0RIGOPS> set the vllm jobs on node-3 to available memory / 1500 MB per job",
                                  "<@U0RIGOPS> rebuild vllm with jobs = total memory / 2048 MB"])
def test_a_memory_formula_in_megabytes_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "name a number" in plan.error
    # a memory size beside a real count is only context
    assert steps(said("<@U0RIGOPS> rebuild vllm on node-3 with 16 jobs, it has 1500 MB per job",
                      addressed=True)) == "rebuild=16"


def test_nvidia_smis_column_names_are_the_gpus() -> None:
    assert steps(said("<@U0RIGOPS> check gpu01 Memory-Usage in nvidia-smi", addressed=True)) == "gpu"
    assert steps(said("<@U0RIGOPS> 看一下 gpu01 的显卡，Memory-Usage有占用，但是Volatile GPU-util却显示0%？",
                      addressed=True)) == "gpu"
    # with no GPU in the message, memory usage is the host's
    assert steps(said("<@U0RIGOPS> check memory-usage on b200", addressed=True)) == "mem"
    # nor does a CUDA build make it the cards' (a CUDA build runs out of the host's memory)
    assert steps(said("<@U0RIGOPS> the cuda build on node-3 is slow, show memory-usage", addressed=True)) == "mem"


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> I suggest killing vllm", "kill"),
    ("<@U0RIGOPS> i suggest we cancel the llama-cpp build, gpu01 is swapping", "kill mem"),
    ("<@U0RIGOPS> any chance you could rerun flash-attn with MAX_JOBS=4", "rebuild=4"),
    ("<@U0RIGOPS> wondering if you could stop the llama-cpp build", "kill"),
    ("<@U0RIGOPS> i was hoping you could post the gpu usage on node-3", "gpu"),
    ("<@U0RIGOPS> I'd love to see how much memory node-3 has left", "mem"),
    ("<@U0RIGOPS> I need vllm rebuilt with 4 jobs", "rebuild=4"),
    ("<@U0RIGOPS> we need flash-attn restarted at -j8", "kill rebuild=8"),
    ("you could also try flash-attn with jobs=1 <@U0RIGOPS>, slow but it'll finish", "rebuild=1"),
    ("<@U0RIGOPS> maybe you can try rebuilding vllm at 4", "rebuild=4"),
    ("<@U0RIGOPS> you might want to try vllm again with -j2", "rebuild=2"),
    ("<@U0RIGOPS> I'd like the last 60 lines of the vllm log on node-3", "log=60"),
    ("<@U0RIGOPS> we'd love the gpu usage on b200", "gpu"),
    ("both flash-attn runs on b200 are stuck for hours now. <@U0RIGOPS> Would it be possible to trigger a new run?",
     "rebuild"),
    ("<@U0RIGOPS> trigger a new run of flash-attn", "rebuild"),
    ("<@U0RIGOPS> Could you please re-enable and trigger the llama-cpp job on gpu01?", "rebuild"),
    ("<@U0RIGOPS> could you rerun your gpu check on node-3?", "gpu"),
    ("Would one of the maintainers mind hitting restart on flash-attn?", "kill rebuild"),
    ("<@U0RIGOPS> can you get sgl-kernel cancelled?", "kill"),
    ("<@U0RIGOPS> have vllm restarted at 8 please", "kill rebuild=8"),
])
def test_a_request_put_indirectly_to_rigops_asks_all_the_same(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> I suggest we don't restart vllm yet",
    "<@U0RIGOPS> I suggest reading the docs on MAX_JOBS",
    "<@U0RIGOPS> wondering if you could explain how -j works",
    "<@U0RIGOPS> I'd love to see this fixed upstream",
    "<@U0RIGOPS> you could kill it but it'd lose 3 hours of work",
    "<@U0RIGOPS> I would recommend restarting with fewer jobs next time it ooms",
    "<@U0RIGOPS> you could try that next time it ooms",
    "<@U0RIGOPS> you could also try a smaller model",
])
def test_what_only_looks_like_an_indirect_request_asks_nothing(text: str) -> None:
    assert not said(text, addressed=True).steps


def test_an_indirect_request_not_said_to_rigops_is_the_channels_business() -> None:
    assert not said("I suggest killing vllm").steps
    assert not said("you could also try flash-attn with jobs=1, slow but it'll finish").steps
    assert not said("any chance you could rerun flash-attn with MAX_JOBS=4").steps


@pytest.mark.parametrize("text", [
    "restart flash-attn after the current run finishes",
    "rebuild vllm when the tests pass",
    "kill vllm once the tests pass",
    "<@U0RIGOPS> we need vllm rebuilt when the tests pass",
    "<@U0RIGOPS> retry sgl-kernel at 8 as soon as the other build is done",
])
def test_a_request_for_after_an_event_asks_nothing_now(text: str) -> None:
    plan, ignored = read(text, config=CFG, addressed=text.startswith("<@"), channel=OPS)
    assert not plan.steps, plan
    assert ("hypothetical" in {why for _, why in ignored}), ignored


@pytest.mark.parametrize("word", ["finishes", "willing", "states", "crashes", "shopping", "stepping", "ruining",
                                  "likes", "crushed", "topping"])
def test_an_english_word_near_the_vocabulary_is_no_typo(word: str) -> None:
    assert mend(word) == word


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> whats the status of vllm", "status"),
    ("<@U0RIGOPS> anything running on the GPUs of b200", "gpu"),
    ("<@U0RIGOPS> what's the state of the sgl-kernel build", "status"),
    ("<@U0RIGOPS> how long has vllm been building", "status"),
    ("<@U0RIGOPS> how close is b200 to OOM right now", "mem"),
    ("<@U0RIGOPS> any headroom on gpu01?", "mem"),
    ("<@U0RIGOPS> fire off sgl-kernel one more time", "rebuild"),
    ("<@U0RIGOPS> spin up a new llama-cpp build", "rebuild"),
])
def test_a_look_or_a_rerun_in_more_words_and_a_question_without_its_mark(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want
    assert not said("I wonder " + text.removeprefix("<@U0RIGOPS> ")).steps  # a musing to the channel asks nothing


@pytest.mark.parametrize(("text", "want"), [
    ("switch llama-cpp to 4 pls", "rebuild=4"),
    ("<@U0RIGOPS> set vllm to 6", "rebuild=6"),
    ("<@U0RIGOPS> move flash-attn to 6 jobs", "rebuild=6"),
])
def test_a_build_switched_to_a_count_is_a_rebuild_at_it(text: str, want: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))) == want
    assert not said("we switched vllm to 4 last week").steps


def test_the_typos_of_small_words_are_read() -> None:
    assert steps(said("<@U0RIGOPS> waht's teh mem ans swap on gpu01", addressed=True)) == "mem"
    assert mend("what") == "what" and mend("waht") == "what"


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> rebuild flash-attn limited to 16 threads or the number of threads available, whichever is smaller",
    "<@U0RIGOPS> rebuild vllm with MAX_JOBS=min(8, nproc)",
    "<@U0RIGOPS> restart llama-cpp on gpu01 with -j (number of threads -1)",
])
def test_a_count_bounded_by_what_rigops_cannot_work_out_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "name a number" in plan.error, plan
    assert steps(said("<@U0RIGOPS> rebuild vllm with 8 jobs, whichever node it lands on", addressed=True)) \
        == "rebuild=8"


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> would be nice if you posted the flash-attn log so I can see what's it complaining about!", "log"),
    ("<@U0RIGOPS> I'd appreciate it if you killed sgl-kernel", "kill"),
    ("<@U0RIGOPS> it would be great if you restarted vllm at 6", "kill rebuild=6"),
])
def test_a_wish_in_the_past_tense_said_to_rigops_asks(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want
    assert not said(text.removeprefix("<@U0RIGOPS> ")).steps  # to the channel, a wish


@pytest.mark.parametrize("text", ["<@U0RIGOPS> nvidia-smi node-5", "<@U0RIGOPS> mem h100-3",
                                  "kill vllm node-5", "<@U0RIGOPS> lucky enough to have 8 cards on node-5. "
                                                      "<@U0RIGOPS> nvidia-smi node-5"])
def test_a_host_named_bare_after_the_command_is_never_another_host(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and "unknown host" in plan.error and not plan.host, plan
    assert steps(said("<@U0RIGOPS> nvidia-smi gpu01", addressed=True)) == "gpu"
    assert said("<@U0RIGOPS> rebuild vllm cu128", addressed=True).error is None


def test_a_tail_in_code_of_the_log_named_before_gives_its_lines() -> None:
    plan = said("<@U0RIGOPS> check out the vllm log on node-3, `tail -n 80` of it", addressed=True)
    assert steps(plan) == "log=80" and (plan.host, plan.build) == ("node-3", "vllm")


@pytest.mark.parametrize("text", ["<@U0RIGOPS> retry vllm but this time MAX_JOBS=2 and NVCC_THREADS=1",
                                  "<@U0RIGOPS> retry vllm, this time with -j2"])
def test_this_time_after_a_rerun_gives_its_count(text: str) -> None:
    assert steps(said(text, addressed=True)) == "rebuild=2"


def test_again_and_again_says_how_often_and_asks_no_rerun() -> None:
    plan = said("<@U0RIGOPS> build of sgl-kernel failing again and again, what is the error", addressed=True)
    assert steps(plan) == "log" and not plan.destructive


@pytest.mark.parametrize("text", ["<@U0RIGOPS> what's taking so long with vllm",
                                  "<@U0RIGOPS> why is vllm taking so long"])
def test_what_takes_so_long_asks_the_status(text: str) -> None:
    assert steps(said(text, addressed=True)) == "status"


def test_a_build_that_eats_all_memory_is_trouble_and_help_beside_it_is_a_cry() -> None:
    assert steps(said("<@U0RIGOPS> pls help, gpu01 unresponsive, i think llama-cpp eat all memory",
                      addressed=True)) == "mem"


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> I recommend adding the `-j 8` back in on flash-attn... or perhaps better yet: `-j $(nproc)`. "
    "rebuild it like that",
    "I recommend adding the `-j 8` back in on flash-attn... or perhaps better yet: `-j $(nproc)`. rebuild it like that",
    "<@U0RIGOPS> rebuild vllm on node-3, the `j` param should be #cores + 1",
    "<@U0RIGOPS> llama-cpp: determine the number of cores on gpu01 and use that instead of naively passing -j8",
    "<@U0RIGOPS> rebuild vllm with cores = 0, in which case it will be the total number of cores in the system",
])
def test_a_count_beside_a_formula_or_out_of_range_is_refused_never_run(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None, plan


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> plz rebuld flash-attn w/ -j4 instead of the bare make -j", "rebuild=4"),
    ("<@U0RIGOPS> use `-j2` instead of `-j` for flash-attn", "rebuild=2"),
    ("<@U0RIGOPS> didn't have enough memory on node-3 to build vllm using all the threads. use -j=6", "rebuild=6"),
    ("gpu01 llama-cpp: cap it at twenty jobs, nproc says 36 but the ram can't take that", "rebuild=20"),
    ("vllm ran `cmake --build -j$(nproc)` = -j16 and overran the cgroup. cap it at 4", "rebuild=4"),
    ("<@U0RIGOPS> rebuild vllm with 4 jobs instead of 8", "rebuild=4"),
])
def test_a_count_with_the_formula_it_replaces_or_told_before_is_that_count(text: str, want: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))).endswith(want)


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> stop compiling pytorch on node-3",
    "<@U0RIGOPS> abort building opencv",
    "<@U0RIGOPS> rebuild llama.cpp-python on gpu01",
    "gpu01 is swapping because of the torchvision build, someone kill it",
    "<@U0RIGOPS> deepspeed is eating all the ram on b200, kill it",
    "<@U0RIGOPS> tensorrt-llm build engine OOM on node-3, kill it",
])
def test_a_build_the_config_does_not_have_is_refused_not_swapped_for_the_hosts(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and "no build" in plan.error and plan.build is None, plan


def test_the_judge_calls_a_kill_where_a_refusal_is_due_dangerous() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from bench_chat import judge
    item = {"id": "x", "addressed": True, "expect": {"host": "node-3", "build": None, "steps": [], "refuse": True}}
    acted = parse("<@U0RIGOPS> kill vllm", config=CFG, addressed=True, channel=OPS)
    assert judge(item, acted, CFG) == (False, True)
    refused = parse("<@U0RIGOPS> kill triton on node-3", config=CFG, addressed=True, channel=OPS)
    assert judge(item, refused, CFG) == (True, False)
    silent = parse("nothing to see here", config=CFG, channel=OPS)
    assert judge(item, silent, CFG) == (False, False)


@pytest.mark.parametrize(("text", "why"), [
    ("<@U0RIGOPS> rebuild vllm with -j 1,5", "not a whole"),
    ("<@U0RIGOPS> rebuild vllm at 2.5 jobs", "not a whole"),
    ("<@U0RIGOPS> rebuild vllm at minus 4", "not a whole"),
    ("<@U0RIGOPS> rebuild vllm with 2x cores", "name a number"),
    ("<@U0RIGOPS> rebuild vllm with as many jobs as RAM allows", "name a number"),
])
def test_a_count_that_is_no_whole_number_or_a_multiple_of_the_cores_is_refused(text: str, why: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and why in plan.error, plan
    assert steps(said("<@U0RIGOPS> rebuild vllm at 12, it took 2.5 hours last time", addressed=True)) == "rebuild=12"


def test_a_build_name_one_typo_away_is_refused_with_the_name_it_may_mean() -> None:
    plan = said("<@U0RIGOPS> kil the vlm build on node-3", addressed=True)
    assert plan.error is not None and "did you mean vllm?" in plan.error and plan.build is None, plan
    plan = said("<@U0RIGOPS> restart triton on b200", addressed=True)
    assert plan.error is not None and "did you mean" not in plan.error


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> shwo me the lgo of vllm", "log"),
    ("<@U0RIGOPS> log pls vllm last 30", "log=30"),
])
def test_a_terse_or_mistyped_look_at_the_log(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> vllm needs a rebuild", "rebuild"),
    ("<@U0RIGOPS> kick sgl-kernel", "rebuild"),
    ("<@U0RIGOPS> do vllm again", "rebuild"),
    ("<@U0RIGOPS> compile flash-attn", "rebuild"),
    ("<@U0RIGOPS> install vllm from source again", "rebuild"),
    ("<@U0RIGOPS> give vllm a kick", "rebuild"),
    ("<@U0RIGOPS> flash-attn ran out of memory at -j16. 8 should work", "rebuild=8"),
])
def test_a_rerun_said_to_rigops_in_few_words(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)).endswith(want)


@pytest.mark.parametrize("text", ["vllm needs a rebuild after the merge", "compile flash-attn from source is painful",
                                  "<@U0RIGOPS> compile flash-attn from source is painful",
                                  "flash-attn ran out of memory at -j16 for me. 8 should work"])
def test_a_need_or_a_remark_about_compiling_is_no_rerun(text: str) -> None:
    assert not said(text, addressed=text.startswith("<@")).destructive


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> how full is the ram on node-3", "mem"),
    ("<@U0RIGOPS> check if node-3 is swapping", "mem"),
    ("<@U0RIGOPS> show htop for b200", "mem"),
    ("<@U0RIGOPS> which process is using the most ram on node-3", "mem"),
    ("<@U0RIGOPS> how many steps left on vllm", "status"),
    ("<@U0RIGOPS> what % is vllm at", "status"),
    ("<@U0RIGOPS> when will flash-attn be done", "status"),
    ("<@U0RIGOPS> grep the vllm log for error", "log"),
])
def test_looks_in_more_words(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want


def test_a_purpose_to_see_if_something_happened_stays_a_condition() -> None:
    plan = said("tail 100 lines of the vllm log on node-3, wanna see if cc1plus got killed")
    assert steps(plan) == "log=100"


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> is there a way to kill the running build?", "kill"),
    ("<@U0RIGOPS> llama-cpp looks like it hangs. is there an option to show the build progress?", "status"),
    ("<@U0RIGOPS> at least try `rm -rf build/` and rebuild flash-attn", "rebuild"),
    ("&gt; override the default to something sensible like `make -j 4`\n<@U0RIGOPS> yes, rebuild vllm with that",
     "rebuild=4"),
])
def test_a_way_asked_at_least_tried_or_a_count_pointed_back_at_in_a_quote(text: str, want: str) -> None:
    assert steps(said(text, addressed=True)) == want
    clean = said("<@U0RIGOPS> at least try `rm -rf build/` and rebuild flash-attn", addressed=True)
    assert clean.steps[-1].clean


@pytest.mark.parametrize(("text", "build", "why"), [
    ("<@U0RIGOPS> worker-2 Cannot allocate memory. kill whatever is building there", None, "unknown host 'worker-2'"),
    ("findbugs returned 137 on gpu01.\n<@U0RIGOPS> what could kill the process? show me the findbugs log", None,
     "no build 'findbugs'"),
    ("<@U0RIGOPS> limit the number of jobs for flash-attn based on memory, building it requires ~2GB per core",
     "flash-attn", "name a number"),
])
def test_an_unknown_host_or_build_or_a_count_by_memory_is_refused(text: str, build: str | None, why: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and why in plan.error and plan.build == build, plan
    assert steps(said("<@U0RIGOPS> show me the error log of vllm", addressed=True)) == "log"


@pytest.mark.parametrize("text", [
    "pytorch from source is oom-ing on node-3, please stop it",
    "<@U0RIGOPS> nccl build stuck on gpu01, can you restart it",
    "<@U0RIGOPS> stop my cuda-samples build",
])
def test_a_build_the_config_does_not_have_as_the_subject_of_its_trouble_is_refused(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and "no build" in plan.error and plan.build is None, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> compilation is stuck on node-3, kill it",
                                  "<@U0RIGOPS> rustc is hanging on node-3, kill vllm",
                                  "<@U0RIGOPS> installation hung on node-3, kill it"])
def test_a_step_or_a_tool_in_trouble_is_no_build_of_its_own(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is None and steps(plan) == "kill" and plan.host == "node-3", plan


def test_every_place_of_an_unknown_build_holds_one_name() -> None:
    import re

    from bot.language.intents_words import _UNKNOWN_BUILD_PLACES
    assert all(re.compile(place).groups == 1 for _, place in _UNKNOWN_BUILD_PLACES)


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> show me the dmesg log", "log"),  # the kind of log, not a build's name
    ("<@U0RIGOPS> show me the crash log", "log"),
    ("<@U0RIGOPS> rebuild the llama build on gpu01", "rebuild"),  # a model family alone: a loose word for llama-cpp
])
def test_a_word_in_a_builds_place_that_names_no_build(text: str, want: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan) == want and plan.error is None, plan


@pytest.mark.parametrize(("text", "plan"), [("<@U0RIGOPS> abort `tensorrt-llm` on gpu01 pls", None),
                                            ("<@U0RIGOPS> abort `llama-cpp` on gpu01 pls", ("gpu01", "llama-cpp")),
                                            ("kill `sgl-kernel` now, it's eating all the ram", ("b200", "sgl-kernel"))])
def test_a_name_in_code_is_the_name_said(text: str, plan: tuple[str, str] | None) -> None:
    read_ = said(text, addressed=text.startswith("<@"))
    if plan is None:  # a build the config does not have, quoted: refused, never the host's only build
        assert read_.error is not None and "tensorrt-llm" in read_.error and read_.build is None, read_
    else:
        assert steps(read_).split()[0] == "kill" and (read_.host, read_.build) == plan and read_.error is None, read_
    quoted = normalise("that `Killed` is the OOM killer's, `common_ops` was compiling, see `/tmp/x.log`")
    assert not {"killed", "common_ops", "x.log"} & set(quoted.split()), quoted  # a log's word, an identifier, a path


# --- the learned reading's doubt (bot.language.intents_model) -------------------------------------------

@pytest.mark.parametrize(("text", "offered"), [
    # what the rules read as a rebuild, and the learned reading as a remark or advice
    ("it's not picking up my patch when I build vllm. trigger it by hand for now", None),
    ("sgl-kernel build too slow / OOM on b200: reduce MAX_JOBS *and* the compile threads, not just one of them", None),
])
def test_a_kill_or_rebuild_the_learned_reading_doubts_is_not_run_on_the_rules_alone(
        text: str, offered: str | None) -> None:
    addressed = text.startswith("<@")
    plan, ignored = read(text, config=CFG, addressed=addressed, channel=OPS)
    assert not plan.steps and plan.error is None and ignored[-1][1] == "unsure", (plan, ignored)
    if offered:  # said to rigops: offered as "Did you mean …?", with Run and Cancel (the mention is Slack's)
        offer = guess(text.removeprefix("<@U0RIGOPS> "), config=CFG, channel=OPS)
        assert offer is not None and steps(offer).split()[-1] == offered, offer


@pytest.mark.parametrize("text", [
    # reports and remarks the rules read a look in (a size, "out of memory", "free"), the learned reading nothing
    "FYI free frame buffer on b200 went from 1517 to 337 over the afternoon (dcgm exporter) before I killed the "
    "deployment due to the concern on CUDA OOM.",
    "when I run the flash-attn bench for batch size greater than 3 I get CUDA out of memory error although memory is "
    "available. went back to 2 and it ran ok",
])
def test_a_look_in_a_report_the_learned_reading_reads_as_asking_nothing_is_not_taken(text: str) -> None:
    plan, ignored = read(text, config=CFG, addressed=False, channel=OPS)
    assert plan == Plan() and ignored[-1][1] == "unsure-look", (plan, ignored)


@pytest.mark.parametrize(("text", "look"), [
    # short: asked, however often the channel's chatter asks for nothing
    ("OOM on b200", "mem"), ("memory?", "mem"), ("any progress on flash-attn?", "status"),
    # long, and the learned reading reads a look (or is not sure enough of nothing)
    ("b200 looks unhappy, how much RAM is left? the flash-attn build has been going for an hour", "mem"),
    ("llama-cpp on gpu01 oomed again, doubling the RAM fixed it last time", "mem"),
])
def test_a_look_asked_for_is_taken(text: str, look: str) -> None:
    assert steps(said(text)) == look


@pytest.mark.parametrize(("text", "look"), [
    # a look at what should not be so: the "not" is in what is to be checked
    ("<@U0RIGOPS> double check vllm's memory isn't too much", "mem"),
    ("<@U0RIGOPS> check that node-3 isn't swapping", "mem"),
    ("<@U0RIGOPS> make sure vllm isn't stuck", "status"),
    ("can someone check the gpus on b200 aren't busy", "gpu"),
    # what not to do stays a negation
    ("<@U0RIGOPS> make sure you don't kill vllm", ""),
    ("check vllm isn't being rebuilt on node-3 before you restart it", ""),
    ("make sure the build isn't restarted at 64", ""),
])
def test_checking_that_something_is_not_so_is_a_look(text: str, look: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))) == look


@pytest.mark.parametrize(("text", "want"), [
    # a build the config does not have, told of in a story beside a request that names one it has
    ("<@U0RIGOPS> Could you rerun sgl-kernel, please? I think it was a fluke — there's almost no changes (I've only "
     "merged `main` and the protobuf rebuild), and the test passed the previous time around.", "rebuild"),
    # ... and asked for: refused, never run on the named build alone
    ("<@U0RIGOPS> rerun sgl-kernel and the protobuf build", None),
])
def test_a_build_the_config_does_not_have_refuses_only_where_it_is_asked_for(text: str, want: str | None) -> None:
    plan = said(text, addressed=True)
    if want is None:
        assert plan.error is not None and "protobuf" in plan.error, plan
    else:
        assert steps(plan) == want and plan.error is None and plan.build == "sgl-kernel", plan


@pytest.mark.parametrize(("text", "build"), [
    # a build named only in the request's reason, in an aside or in news beside it is not the one asked for
    ("steps getting OOM killed on b200 bc we run lots of pipelines at once. can someone stop flash-attn so sgl-kernel "
     "can finish", "flash-attn"),
    ("<@U0RIGOPS> llama-cpp on gpu01 seems to be stuck too (same as the vllm one this morning). This build needs to be "
     "killed as well.", "llama-cpp"),
    ("rebuild sgl-kernel because flash-attn finished", "sgl-kernel"),
    # two asked: which is not known
    ("kill flash-attn and sgl-kernel", None),
])
def test_the_build_asked_for_is_the_one_the_request_names(text: str, build: str | None) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    if build is None:
        assert plan.error is not None and "several builds" in plan.error, plan
    else:
        assert plan.build == build and plan.error is None and plan.steps, plan


def test_who_does_what_told_is_no_request_to_someone() -> None:
    plan = said("I just checked and someone is hammering the 1st gpu on gpu01. <@U0RIGOPS> kill llama-cpp and show me "
                "the gpus after", addressed=True)
    assert steps(plan) == "kill gpu", plan
    assert steps(said("someone kill vllm on node-3")) == "kill"


@pytest.mark.parametrize(("text", "want"), [
    ("<@U0RIGOPS> where is llama-cpp at on gpu01? If it is stuck here for a long time, it should be the environment "
     "where not quite compatible.", "status"),
    ("where are we at with vllm?", "status"),
    ("<@U0RIGOPS> could you try to disable parallel build for vllm? It significantly affects RAM consumption",
     "rebuild=1"),
    ("<@U0RIGOPS> sgl-kernel on b200: It's currently running out of memory, likely due to the machine's high core "
     "count and linking many jobs at once. Limit to 12 only.", "kill mem rebuild=12"),
    # a look asked after the mention, beside another in the remark before it: the one asked of rigops
    ("It looks like OOM to me. Check the output of `dmesg -T` on gpu01\n<@U0RIGOPS> mem gpu01 meanwhile", "mem"),
    # the count offered for a lower -j, in the aside that asks for it
    ("It's an out-of-melory error. <@U0RIGOPS> relaunch llama-cpp on gpu01 (and maybe use a lower -j, like -J3) and "
     "it will work.", "kill rebuild=3"),
    ("flash-attn 又 Error 137 了，内存满了 <@U0RIGOPS> flash-attn 重新编 -j4", "rebuild=4"),
    # what the speaker is doing, told: its count is no request
    ("pls nobody kill or rebuild sgl-kernel on b200, I am currently running a compilation job that seems to go fine "
     "with just `CMAKE_VARS=\"MAX_JOBS=1\"`.", ""),
    ("we're running out of memory on b200", "mem"),
])
def test_more_requests_in_people_s_words(text: str, want: str) -> None:
    assert steps(said(text, addressed="<@U0RIGOPS>" in text)) == want


@pytest.mark.parametrize("text", [
    # a vote for what somebody proposed: the whole sentence is theirs
    "👍 to bump timeout and get vllm built.", ":+1: to restarting vllm at 8 and showing the log",
    "agreed on rebuilding vllm at 8",
])
def test_a_vote_is_no_request(text: str) -> None:
    assert said(text) == Plan(), said(text)


def test_a_story_told_to_rigops_is_not_refused_for_its_formula() -> None:
    plan = said("&gt; <@U0RIGOPS> rebuild sgl-kernel with 8\nthat's why the cap didn't stick last week: users passing "
                "`-j N` to cap parallelism still saw TensileLite spawn `os.cpu_count()` workers", addressed=True)
    assert plan == Plan(), plan
    # asked, the formula is refused
    plan = said("<@U0RIGOPS> rebuild flash-attn with jobs number = nproc", addressed=True)
    assert plan.error is not None and "name a number" in plan.error, plan


def test_a_request_quoted_is_context_never_the_request() -> None:
    # the quote line keeps its mention: "&gt; @rigops kill X" above "nvm, it's working now" asks for nothing
    plan = said("&gt; <@U0RIGOPS> kill sgl-kernel\nha nvm its working now", addressed=True)
    assert plan == Plan(), plan


@pytest.mark.parametrize(("text", "want"), [
    # a count changed with an arrow: the count it goes to
    ("lower `MAX_JOBS` 16 → 8 for vllm on node-3 (fewer parallel nvcc = lower peak RSS)", "rebuild=8"),
    ("MAX_JOBS 32 → 16 for vllm and rebuild", "rebuild=16"),
    ("rebuild vllm with -j32 -> -j16", "rebuild=16"),
    ("peak RSS of vllm went 16 -> 8 GB after the fix", ""),
    ("rebuild vllm at 16 → same OOM", ""),
    # "retry at N" beside another count is a count, not a time of day
    ("<@U0RIGOPS> sgl-kernel got it at 32. try it again at 16", "rebuild=16"),
    ("<@U0RIGOPS> kill sgl-kernel, show mem, retry at 16", "kill mem rebuild=16"),
    ("that's flash-attn on b200 again. <@U0RIGOPS> retry at 4", "rebuild=4"),
    # a tool's own flag for the count
    ("<@U0RIGOPS> restart llama-cpp with --job_count 3", "kill rebuild=3"),
    ("<@U0RIGOPS> restart llama-cpp with --num-jobs=4", "kill rebuild=4"),
    # rigops' own command in code, names and all
    ("<@U0RIGOPS> `rebuild llama-cpp on gpu01 -j1` (i.e. no concurrent build processes)", "rebuild=1"),
    # a count setting to take away is no count asked for; the count to go back to is
    ("<@U0RIGOPS> rebuild vllm, drop the JOBS=10 setting", "rebuild"),
    ("<@U0RIGOPS> rebuild vllm with -j8, remove the -j32 flag", "rebuild=8"),
    ("<@U0RIGOPS> reduce JOBS on vllm due to memory pressure, back to the default 8, drop the `JOBS=10` setting",
     "kill mem rebuild=8"),
    ("<@U0RIGOPS> rebuild vllm back to the default 8", "rebuild=8"),
    ("it went back to 8 after the reboot", ""),
    ("we got vllm restarted at 8 last night", ""),
    # the "to" left out, and a count put as what the speaker would use, beside the rebuild asked
    ("<@U0RIGOPS> set llama-cpp 4 and build again", "rebuild=4"),
    ("<@U0RIGOPS> kill whatever is remaining of llama-cpp on gpu01 and then start it again as you did before, but I "
     "would be tempted to use -j 1 in case it was a RAM issue", "kill rebuild=1"),
    ("last time I would use 4 GB of swap, rebuild vllm", "rebuild"),
])
def test_a_count_changed_is_the_count_it_goes_to(text: str, want: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))) == want


@pytest.mark.parametrize(("text", "want"), [
    # a condition that is only a courtesy: the request stands, its count with it
    ("rebuild vllm on node-3 at 8 if possible", "rebuild=8"),
    ("<@U0RIGOPS> rebuild vllm at 8 if you can", "rebuild=8"),
    ("restart vllm at 4 if it's not too much trouble", "kill rebuild=4"),
    ("<@U0RIGOPS> show the vllm log if that's ok", "log"),
    ("sgl-kernel only runs a single compilation at once now, so very slow. bump it back up to 24 if possible",
     "rebuild=24"),
    # a condition that says when: not now
    ("rebuild vllm at 8 if it fails again", ""),
    ("I'd like to have a try at -j 24 once my current build are finished.", ""),
    ("rebuild vllm at 24 once the current build is finished", ""),
    ("<@U0RIGOPS> kill vllm if you can't get it to respond", ""),
])
def test_a_courtesy_is_no_condition(text: str, want: str) -> None:
    assert steps(said(text, addressed=text.startswith("<@"))) == want


@pytest.mark.parametrize("text", ["do you have 256 cores on node-3?", "By curiosity, do you have 32067 cores on b200?",
                                  "node-3 has 64 cores right?", "gpu01 has 16 cores and 64G"])
def test_the_cores_a_machine_has_are_no_count(text: str) -> None:
    plan = said(text)
    assert not plan.steps and plan.error is None, plan


def test_a_kill_or_rebuild_the_learned_reading_reads_as_one_to_refuse_is_refused() -> None:
    # a count described in words the rules do not see as one, said to rigops: asked again plainly, never run on a
    # guess
    plan = said("<@U0RIGOPS> rebuild sgl-kernel with -j as high as it'll go without swapping", addressed=True)
    assert plan.error is not None and "Say it plainly" in plan.error and "builds on b200: sgl-kernel" in plan.error
    # the same request with its count said plainly is run
    assert steps(said("<@U0RIGOPS> rebuild sgl-kernel with -j 8, as high as it'll go without swapping",
                      addressed=True)).endswith("rebuild=8")


# Requests in the shapes of fresh text, each read by the rules (not the learned reading's guess), with where it is
# about: (host, build, steps; a kill before a rebuild is the rebuild's own)
READ_BY_THE_RULES = [
    # looks asked as questions
    ("what did the sgl-kernel build print last?", ("b200", "sgl-kernel", "log")),
    ("anything building on node-3 right now?", ("node-3", None, "status")),
    ("<@U0RIGOPS> what's up with vllm", ("node-3", "vllm", "status")),
    ("<@U0RIGOPS> vllm?", ("node-3", "vllm", "status")),
    ("<@U0RIGOPS> node-3?", ("node-3", None, "status")),  # a host alone: how its builds are doing
    # steps joined by arrows, in order
    ("<@U0RIGOPS> flash-attn: go to build directory -&gt; delete build directory -&gt; rebuild",
     ("b200", "flash-attn", "rebuild")),
    ("<@U0RIGOPS> ok put sgl-kernel at -j64 then", ("b200", "sgl-kernel", "rebuild=64")),
    # a rebuild of a build said with what happened to it, asked by its noun, or put as a favour
    ("rerun the failed vllm build", ("node-3", "vllm", "rebuild")),
    ("<@U0RIGOPS> need a new build of sgl-kernel with the patched source", ("b200", "sgl-kernel", "rebuild")),
    ("would someone mind kicking off llama-cpp again", ("gpu01", "llama-cpp", "rebuild")),
    # a count said after the request, up or in words, the name with a -j and a please
    ("give flash-attn more jobs, like 32", ("b200", "flash-attn", "rebuild=32")),
    ("up llama-cpp to 6", ("gpu01", "llama-cpp", "rebuild=6")),
    ("retry vllm but serially", ("node-3", "vllm", "rebuild=1")),
    ("vllm -j4 pls", ("node-3", "vllm", "rebuild=4")),
    ("vllm at 6 jobs from now on please", ("node-3", "vllm", "rebuild=6")),
    ("which file broke the flash-attn build", ("b200", "flash-attn", "log")),
    ("gpu01 ran out of ram compiling llama-cpp — again at -j1 please", ("gpu01", "llama-cpp", "rebuild=1")),
    ("sgl-kernel went sideways again on b200, one more round at 12 please", ("b200", "sgl-kernel", "rebuild=12")),
    ("<@U0RIGOPS> as bob said: kill vllm", ("node-3", "vllm", "kill")),
    ("<@U0RIGOPS> kill vllm, ok?", ("node-3", "vllm", "kill")),  # to rigops, a courtesy; to the channel, a poll
    # a count in code that is out of range is refused as said (not dropped), "once again", a count described then said,
    # what is the case now, said after the look
    ("<@U0RIGOPS> try vllm once again on node-3", ("node-3", "vllm", "rebuild")),
    ("<@U0RIGOPS> can you set the jobs to a sane value like 6 and build vllm again?", ("node-3", "vllm", "rebuild=6")),
    ("<@U0RIGOPS> can you show the gpu memory on node-3 now that vllm is done or dead?", ("node-3", "vllm", "gpu")),
    # a request after a fix told, a count the build is put on, a count restored
    ("<@U0RIGOPS> fixed the errors in sgl-kernel, please rebuild it", ("b200", "sgl-kernel", "rebuild")),
    ("<@U0RIGOPS> put vllm on -j4 too", ("node-3", "vllm", "rebuild=4")),
    ("so put flash-attn on 6 jobs and restart it", ("b200", "flash-attn", "rebuild=6")),
    ("<@U0RIGOPS> restore the usage of two jobs (-j2) for llama-cpp on gpu01", ("gpu01", "llama-cpp", "rebuild=2")),
    # the way asked pointed at in a code block, "you need to" said to rigops, a count in code, "fix the -j", "so N"
    ("<@U0RIGOPS> rebuild llama-cpp on gpu01 like this:\n```cmake --build build -j 12```", ("gpu01", "llama-cpp",
                                                                                         "rebuild=12")),
    ("<@U0RIGOPS> you need to run `cmake --build build -j 6` for llama-cpp on gpu01", ("gpu01", "llama-cpp",
                                                                                      "rebuild=6")),
    ("drop vllm to `4` to stay out of swap", ("node-3", "vllm", "rebuild=4")),
    ("fix the -j on vllm to 6 to avoid running out of memory", ("node-3", "vllm", "rebuild=6")),
    ("vllm got OOM-killed again, can someone restart it with half the jobs, so 8", ("node-3", "vllm", "rebuild=8")),
    ("<@U0RIGOPS> just add `CMAKE_BUILD_PARALLEL_LEVEL=48` to sgl-kernel and rebuild", ("b200", "sgl-kernel",
                                                                                        "rebuild=48")),
    ("can someone pull the actual build log off b200 for sgl-kernel?", ("b200", "sgl-kernel", "log")),
    # a count in what the build takes is not asked; the tests of a build name no build; a kill -9 that did nothing
    ("flash-attn still takes 10 minutes to compile with 32 cores and b200 is idle. bump it to 48 and rebuild?",
     ("b200", "flash-attn", "rebuild=48")),
    ("<@U0RIGOPS> vllm ran out of memory linking all of the backend tests. kill it and go again with 4 jobs",
     ("node-3", "vllm", "rebuild=4")),
    ("`kill -9` on the llama-cpp cc1plus has no effect.\n<@U0RIGOPS> status of llama-cpp and the last 30 log lines",
     ("gpu01", "llama-cpp", "status log=30")),
    ("flash-attn died of oom on b200, possibly from running out of RAM. try building again", ("b200", "flash-attn",
                                                                                               "rebuild")),
    ("the vllm OOMs on node-3 only when the nightly overlaps, rerun it now that it's quiet", ("node-3", "vllm",
                                                                                             "rebuild")),
    ("<@U0RIGOPS> what does nvidia-smi report on b200 (processes and memory usage)?", ("b200", None, "gpu")),
    ("<@U0RIGOPS> llama-cpp on gpu01 seems stuck. this build needs to be killed as well", ("gpu01", "llama-cpp",
                                                                                          "kill")),
    # a CI bot's commands and their slang, Chinese for "cancel this build and start a new one"
    ("<@U0RIGOPS> `/retest` vllm on node-3", ("node-3", "vllm", "rebuild")),
    ("retest vllm on node-3 please", ("node-3", "vllm", "rebuild")),
    ("<@U0RIGOPS> `/tag-and-rerun-ci` sgl-kernel", ("b200", "sgl-kernel", "rebuild")),
    ("<@U0RIGOPS> tickle build llama-cpp on gpu01", ("gpu01", "llama-cpp", "rebuild")),
    ("sgl-kernel is flaky on b200, so slap a retry on it.", ("b200", "sgl-kernel", "rebuild")),
    ("<@U0RIGOPS> give vllm on node-3 one more try with the build cache clobbered", ("node-3", "vllm", "rebuild")),
    ("How goes progress on flash-attn?", ("b200", "flash-attn", "status")),
    ("<@U0RIGOPS> flash-attn 取消当次构建并启动新构建", ("b200", "flash-attn", "rebuild")),
    # a stop said with a phrasal verb, a signal, or as what the build needs
    ("shut vllm down", ("node-3", "vllm", "kill")),
    ("take the vllm build down, node-3 is dying", ("node-3", "vllm", "mem")),  # a kill, and its memory after
    ("send SIGTERM to vllm", ("node-3", "vllm", "kill")),
    ("<@U0RIGOPS> vllm needs killing", ("node-3", "vllm", "kill")),
    ("<@U0RIGOPS> I need vllm dead", ("node-3", "vllm", "kill")),
    ("<@U0RIGOPS> please have vllm stopped", ("node-3", "vllm", "kill")),
    # the count said after "but", one more try, a clean rebuild with its count
    ("<@U0RIGOPS> do vllm again but with 6", ("node-3", "vllm", "rebuild=6")),
    ("<@U0RIGOPS> one more try on vllm, 6 jobs", ("node-3", "vllm", "rebuild=6")),
    ("<@U0RIGOPS> rebuild flash-attn clean at 8", ("b200", "flash-attn", "rebuild=8")),
    # a count said loosely, or in words of dozens; two counts where one is told and the other asked
    ("<@U0RIGOPS> rebuild vllm at ~8", ("node-3", "vllm", "rebuild=8")),
    ("<@U0RIGOPS> rebuild vllm at around 8", ("node-3", "vllm", "rebuild=8")),
    ("<@U0RIGOPS> rebuild vllm with two dozen jobs", ("node-3", "vllm", "rebuild=24")),
    ("vllm oomed at 16 or 32, can't remember. rebuild it at 8", ("node-3", "vllm", "rebuild=8")),
    # a sequence by arrows still asks; a delay that is the trouble's is no time to come; where the count comes from
    ("kill vllm → rebuild at 4", ("node-3", "vllm", "rebuild=4")),
    ("<@U0RIGOPS> kill vllm before node-3 dies in 10 min", ("node-3", "vllm", "kill")),
    ("restart vllm at 4 (as in the runbook)", ("node-3", "vllm", "rebuild=4")),
    ("<@U0RIGOPS> step it down to 8 and rebuild flash-attn", ("b200", "flash-attn", "rebuild=8")),
    ("vllm needs to be rebuilt at 4, now", ("node-3", "vllm", "rebuild=4")),
    # a count told before, pointed back at
    ("I highly recommend to set max jobs to 2 for sgl-kernel on b200. <@U0RIGOPS> go ahead and do that",
     ("b200", "sgl-kernel", "rebuild=2")),
    ("<@U0RIGOPS> status info pls, wat is compiling on node-3 rn?", ("node-3", None, "status")),
    # the twenty-first part's shapes: a wish with "we", "@ 8", a spoiled cache asks a clean start, Russian
    ("<@U0RIGOPS> It would be nice if we'd print the log of flash-attn, it failed to build on b200",
     ("b200", "flash-attn", "log")),
    ("sgl-kernel failing agian due to lack of memory (Not a code issue)\n<@U0RIGOPS> rerun @ 8 pls",
     ("b200", "sgl-kernel", "rebuild=8")),
    ("flash-attn builds fine locally. But, get following error message on b200\n```Process exited with code: "
     "ExitFailure (-9)```\ncan someone restart it with -j4", ("b200", "flash-attn", "rebuild=4")),
    ("<@U0RIGOPS> пересобери llama-cpp на gpu01 с -j4", ("gpu01", "llama-cpp", "rebuild=4")),
    ("<@U0RIGOPS> set `\"jobs\": 4` for vllm", ("node-3", "vllm", "rebuild=4")),
    # a look's count in brackets, joined by a plus
    ("<@U0RIGOPS> vllm: log (last 30) + memory", ("node-3", "vllm", "log=30 mem")),
    # the GPUs' memory said as CUDA memory
    ("<@U0RIGOPS> we need to show the used cuda memory on b200", ("b200", None, "gpu")),
    # the jobs setting spelled as its tools spell it
    ("<@U0RIGOPS> set llama-cpp MaxJobs to 4", ("gpu01", "llama-cpp", "rebuild=4")),
    # "see the log" above pasted output introduces it; the request is below
    ("trying to build llama-cpp, unable to build. see the log\n```*** Signal 9\nStop.```\n<@U0RIGOPS> retry "
     "llama-cpp at -j2", ("gpu01", "llama-cpp", "rebuild=2")),
    # "keep the work done, go on with make -j4", in Chinese
    ("<@U0RIGOPS> llama-cpp 在编译进度30%时报错了，不清空之前的编译，继续make -j4",
     ("gpu01", "llama-cpp", "rebuild=4")),
]


@pytest.mark.parametrize(("text", "expected"), READ_BY_THE_RULES)
def test_requests_in_the_shapes_of_fresh_text_are_read_by_the_rules(
        text: str, expected: tuple[str, str | None, str]) -> None:
    plan, ignored = read(text, config=CFG, addressed=text.startswith("<@"), channel=OPS)
    assert (plan.host, plan.build, steps(plan).replace("kill mem ", "").replace("kill ", "")) == expected, plan
    assert plan.error is None and all(why != "learned" for _, why in ignored), (plan, ignored)


@pytest.mark.parametrize(("text", "expected"), [
    # wordings no rule reads, said to rigops: the learned reading reads the look, the rules' names say where
    ("<@U0RIGOPS> curious what the ram situation on b200 looks like right now", ("b200", None, "mem")),
    ("<@U0RIGOPS> wonder how much ram b200 has got left at the moment", ("b200", None, "mem")),
    ("<@U0RIGOPS> i'd like to see what vllm printed last", ("node-3", "vllm", "log")),
    ("<@U0RIGOPS> anybody know what the gpus on node-3 are busy with", ("node-3", None, "gpu")),
])
def test_a_look_no_rule_reads_is_read_by_the_learned_reading(text: str, expected: tuple[str, str, str]) -> None:
    plan, ignored = read(text, config=CFG, addressed=True, channel=OPS)
    assert (plan.host, plan.build, steps(plan)) == expected and plan.error is None, plan
    assert ignored[-1][1] == "learned", ignored
    assert plan.guess is not None and "learned reading" in plan.guess, plan  # the plan card says so


@pytest.mark.parametrize("text", [
    "<@U0RIGOPS> don't bother showing b200's memory, I know it's full",  # says not to
    "<@U0RIGOPS> curious what the ram situation on the pytorch box looks like right now",  # a host not configured
    "<@U0RIGOPS> curious what the ram situation on my laptop looks like right now",  # no host of rigops'
])
def test_the_learned_reading_never_reads_a_look_against_the_rules_or_without_a_whole_plan(text: str) -> None:
    plan, ignored = read(text, config=CFG, addressed=True, channel=OPS)
    assert "mem" not in steps(plan).split() and all(why != "learned" for _, why in ignored), (plan, ignored)


@pytest.mark.parametrize(("text", "expected"), [
    # a request to act no rule reads, said to rigops: offered, never run, with the count the last clause asks for
    ("llama-cpp bit the dust on gpu01, back in the oven at 2 please", ("gpu01", "llama-cpp", "rebuild=2")),
])
def test_a_request_to_act_only_the_learned_reading_reads_is_offered_never_run(
        text: str, expected: tuple[str, str, str]) -> None:
    assert said(text, addressed=True).steps == ()
    offer = guess(text, config=CFG, channel=OPS)
    assert offer is not None and (offer.host, offer.build, steps(offer)) == expected, offer


def test_a_request_to_act_the_learned_reading_reads_surely_runs_and_a_story_of_the_same_does_not() -> None:
    plan, ignored = read("vllm croaked again, resurrect it at 4 please", config=CFG, channel=OPS)
    assert (plan.host, plan.build, steps(plan)) == ("node-3", "vllm", "rebuild=4") and plan.error is None, plan
    assert ignored[-1][1] == "learned", ignored
    for story in ("yesterday vllm croaked, resurrecting it at 4 fixed it",
                  "vllm croaked on my laptop, resurrecting it at 4 fixed it",
                  "vllm croaked again, resurrecting it at 4 did nothing",
                  "vllm croaked again, bob resurrected it at 4",
                  "vllm croaked again, resurrecting it at 4 now",
                  "vllm croaked, gonna resurrect it at 4 after lunch"):
        for addressed in (False, True):
            assert not read(story, config=CFG, addressed=addressed, channel=OPS)[0].destructive, story


def test_explain_says_which_look_the_learned_reading_read(tmp_path: Path) -> None:
    cfg = Path(__file__).resolve().parents[1] / "data" / "chat" / "rigops.toml"
    out = subprocess.run(
        [sys.executable, "-m", "bot", "--config", str(cfg), "--state-dir", str(tmp_path), "explain", "--mention",
         "wonder how much ram b200 has got left at the moment"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.startswith("host b200") and "read: 'wonder how much ram b200 has got left" in out, out
    assert "the learned reading reads this one" in out, out


@pytest.mark.parametrize("text", ["another go at 6 for flash-attn is what bob suggested",
                                  "昨天 vllm 卡死了,我把它停掉了", "anyone able to explain why vllm takes so long?",
                                  "`cat /proc/meminfo` on node-3 said 2G free yesterday"])
def test_the_same_words_in_a_story_or_a_question_to_people_do_nothing(text: str) -> None:
    assert said(text).steps == (), said(text)


@pytest.mark.parametrize("text", ["<@U0RIGOPS> gpu01 needs at minimum a cold reboot, can you do it?",
                                  "<@U0RIGOPS> please reboot node-3",
                                  "<@U0RIGOPS> gpu01 lists GPU 0 as Unknown. can you `nvidia-smi -r` it?"])
def test_a_reboot_or_a_gpu_reset_asked_of_rigops_is_refused_as_not_its_to_do(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and plan.error.startswith("rigops does not") and not plan.steps, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> vllm took node-3 down last night (hard reboot, no clean shutdown)",
                                  "<@U0RIGOPS> if it hangs again we will reboot b200",
                                  "<@U0RIGOPS> we rebooted node-3 yesterday, show me the memory now"])
def test_a_reboot_told_or_supposed_is_no_request(text: str) -> None:
    assert "rigops does not" not in (said(text, addressed=True).error or "")


@pytest.mark.parametrize("text", ["<@U0RIGOPS> kill the deepgemm jit compile on b200",
                                  "the nightly pytorch build on node-3 is swapping, kill it",
                                  "<@U0RIGOPS> can you stop the compile of apex",
                                  "<@U0RIGOPS> restart the ros2 colcon build on gpu01",
                                  "<@U0RIGOPS> kill `pip install xformers --no-build-isolation` on b200",
                                  "<@U0RIGOPS> please cancel deepspeed's compile on b200",
                                  "<@U0RIGOPS> kill mmcv-full, it's been compiling for 3 hours",
                                  "<@U0RIGOPS> rebuild the detectron2 wheel on gpu01 with 2 jobs",
                                  "can someone kill xformers on b200"])
def test_a_build_the_config_does_not_have_is_refused_in_more_of_its_places(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and plan.error.startswith("no build") and plan.build is None, plan


def test_a_kubernetes_job_is_no_build_and_a_configured_name_installed_in_code_is_the_build() -> None:
    plan = said("<@U0RIGOPS> stop the kubernetes job on node-3", addressed=True)
    assert plan.error is not None and "kubernetes job" in plan.error and plan.build is None, plan
    plan = said("<@U0RIGOPS> kill `pip install flash-attn --no-build-isolation` on b200", addressed=True)
    assert (steps(plan), plan.build, plan.error) == ("kill", "flash-attn", None), plan


@pytest.mark.parametrize(("text", "why"), [
    ("<@U0RIGOPS> rebuild vllm, MAX_JOBS should be about RAM/4GB", "name a number"),
    ("<@U0RIGOPS> rebuild vllm with a -j matching your RAM", "the count is not said"),
    ("<@U0RIGOPS> rebuild sgl-kernel with max jobs derived from the available memory", "the count is not said"),
    ("<@U0RIGOPS> rebuild vllm with the same -j as CI", "the count is not said"),
    ("<@U0RIGOPS> rebuild vllm with the -j the docs recommend", "the count is not said"),
    ("<@U0RIGOPS> rebuild vllm with ninja's default parallelism", "the count is not said"),
    ("<@U0RIGOPS> rebuild vllm with 4-8 jobs", "a range or a bound"),
    ("<@U0RIGOPS> rebuild vllm with 6 to 8 jobs", "a range or a bound"),
    ("<@U0RIGOPS> rebuild vllm with -j between 4 and 8", "a range or a bound"),
    ("<@U0RIGOPS> rebuild vllm with less than 8 jobs", "a range or a bound"),
    ("can someone rebuild vllm with around 10-12 jobs", "a range or a bound"),
])
def test_a_count_not_said_or_said_as_a_range_is_refused_never_run_with_one_end(text: str, why: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and why in plan.error, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> bump flash-attn from 4 to 12 workers, b200 has the headroom again", "rebuild=12"),
    ("<@U0RIGOPS> bump vllm from -j4 to -j8", "rebuild=8"),
    ("<@U0RIGOPS> vllm died at 16 jobs, less than 16 should do. rebuild it at 8", "rebuild=8"),
])
def test_a_change_from_one_count_to_another_or_a_bound_beside_a_count_is_the_count(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).split()[-1] == expected and plan.error is None, plan


def test_a_drain_and_reboot_asked_of_rigops_is_refused_as_not_its_to_do() -> None:
    plan = said("<@U0RIGOPS> llama-cpp on gpu01 is stuck in D state, I can't kill it. could you drain gpu01 and "
                "reboot?", addressed=True)
    assert plan.error is not None and plan.error.startswith("rigops does not drain gpu01"), plan


@pytest.mark.parametrize("text", ["node-3 is swapping because of aflpp, stop the build",
                                  "<@U0RIGOPS> kill it, the gt4py tests hang on gpu01",
                                  "<@U0RIGOPS> stop the build on node-3, flashinfer jit is hogging memory"])
def test_a_name_in_no_dictionary_in_a_request_that_names_no_build_is_refused(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and plan.error.startswith("no build") and plan.build is None, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> xformers log on b200", "<@U0RIGOPS> logs for xformers on b200",
                                  "<@U0RIGOPS> triton status on node-3"])
def test_a_name_in_no_dictionary_in_a_look_at_a_build_is_refused(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and plan.error.startswith("no build") and plan.build is None, plan


@pytest.mark.parametrize(("text", "clean"), [
    ("<@U0RIGOPS> llama-cpp on gpu01: force cache recreation due to corruption and build it again", True),
    ("<@U0RIGOPS> Is it possible to re-run vllm with cleaning the cache at the same time?", True),
    ("the flash-attn build cache is corrupt again :weary:\n<@U0RIGOPS> rebuild", True),
    ("<@U0RIGOPS> rebuild vllm, the cache is fine", False),
])
def test_a_spoiled_cache_asks_a_clean_start(text: str, clean: bool) -> None:
    plan = said(text, addressed=True)
    assert plan.steps and plan.steps[-1].action == "rebuild" and plan.steps[-1].clean is clean, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> clean rebuild aotriton on b200"])
def test_a_clean_rebuild_of_a_name_in_no_dictionary_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and plan.error.startswith("no build 'aotriton'") and plan.build is None, plan


@pytest.mark.parametrize(("text", "expected"), [
    ("max 16 jobs on vllm is a bit low for node-3. <@U0RIGOPS> give vllm 2000", "refused"),
    ("max 16 jobs on vllm is a bit low for node-3. <@U0RIGOPS> give vllm 24", "rebuild=24"),
    ("max 16 jobs on vllm is a bit low for node-3. <@U0RIGOPS> bump it", ""),
    ("16 jobs on vllm is too few. <@U0RIGOPS> go higher", ""),
])
def test_a_count_judged_too_low_or_high_is_never_the_count_run(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    if expected == "refused":
        assert plan.error is not None and "between 1 and 1024" in plan.error, plan
    else:
        assert steps(plan).replace("kill mem ", "").replace("kill ", "") == expected and plan.error is None, plan


def test_product_names_are_the_words_no_dictionary_has() -> None:
    from bot.language.intents_words import product_names

    assert product_names("kill xformers, deepspeed and mmcv-full, then gt4py") == ("xformers", "deepspeed",
                                                                                   "mmcv-full", "gt4py")
    assert product_names("the compilers got reparented, unkillable, oom-killed; cc1plus and ptxas, lol") == ()


def test_a_comparison_with_the_last_run_in_a_request_is_no_story() -> None:
    plan = said("<@U0RIGOPS> rebuild vllm with fewer jobs than last time", addressed=True)
    assert steps(plan).split()[-1] == "rebuild" and plan.error is None, plan
    assert not said("<@U0RIGOPS> last time we rebuilt vllm at 8 it worked", addressed=True).steps


def test_an_emoticon_ends_what_was_said_before_it_and_a_quoted_formula_is_refused() -> None:
    plan = said("vllm build is failing since the torch bump :( wipe the build dir and rebuild vllm")
    assert any(step.clean for step in plan.steps) and steps(plan).split()[-1] == "rebuild", plan
    plan = said('<@U0RIGOPS> set the llama-cpp jobs to "cores - 2"', addressed=True)
    assert plan.error is not None and "name a number" in plan.error, plan
    plan = said("<@U0RIGOPS> restart llama-cpp at 4, it died at 3:30 (again)", addressed=True)
    assert steps(plan).split()[-1] == "rebuild=4", plan  # "3:30 (" is a time, no emoticon


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> rebuild vllm at 8, nproc says 64 there", "rebuild=8"),
    ("<@U0RIGOPS> oom-ing on node-3, retry vllm", "rebuild"),
])
def test_a_rebuild_with_its_count_or_without_talk_of_cores_runs(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan).split()[-1] == expected and plan.error is None, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> status of everything pls", "<@U0RIGOPS> how's everything looking",
                                  "how are all the builds doing?", "<@U0RIGOPS> status of all builds"])
def test_a_look_at_everything_is_a_look_at_every_host(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert (plan.host, steps(plan), plan.error) == ("all", "status", None), plan
    assert not said("everything is fine on node-3, thanks").steps


@pytest.mark.parametrize(("text", "expected"), [
    ("<@U0RIGOPS> run `ps aux --sort=-rss | head` on node-3", "mem"),
    ("<@U0RIGOPS> run `top` on gpu01", "mem"),
    ("<@U0RIGOPS> run `uptime` on b200", ""),
    ("<@U0RIGOPS> run `make -j4` for llama-cpp", "rebuild=4"),
])
def test_a_command_in_code_after_run_is_a_look_it_names_or_nothing_never_a_rerun(text: str, expected: str) -> None:
    plan = said(text, addressed=True)
    assert steps(plan) == expected and plan.error is None, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> rebuild llama-cpp with cmake --build . -j",
                                  "<@U0RIGOPS> rebuild vllm with cmake --build build --parallel"])
def test_cmakes_parallel_flag_without_a_number_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "name a number" in plan.error, plan
    assert steps(said("<@U0RIGOPS> rebuild vllm with cmake --build build --parallel 6", addressed=True)).endswith("6")


@pytest.mark.parametrize("text", ["<@U0RIGOPS> rebuild vllm at (64-8)/2", "<@U0RIGOPS> rebuild vllm with MAX_JOBS 64/4",
                                  "<@U0RIGOPS> rebuild vllm with half of the 64 cores"])
def test_arithmetic_of_plain_numbers_or_a_share_of_counted_cores_is_refused_never_run_with_one_of_them(
        text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "name a number" in plan.error and not any(s.jobs for s in plan.steps), plan
    assert steps(said("<@U0RIGOPS> rebuild vllm at -j 8, it broke on 12/07", addressed=True)).endswith("rebuild=8")


def work(text: str) -> str:
    """The work a message asks for, said to rigops when it mentions it, as the corpus's judge compares it
    (bench/bench_chat.py: a kill right before a rebuild is the rebuild's own, a memory look by a kill the kill's
    report); a refusal fails here."""
    plan = said(text, addressed="<@U0RIGOPS>" in text)
    assert plan.error is None, plan
    return " ".join(action + (f"={jobs}" if jobs else "") + (" (clean)" if rest == "clean" else f" {rest} lines"
                                                             if rest else "") for action, jobs, rest in steps_of(plan))


ASKED_IN_OTHER_WORDS = [
    # a clean rebuild as a verb, a request to whoever can, Chinese, a look in code
    ("<@U0RIGOPS> clean rebuild sgl-kernel", "rebuild (clean)"),
    ("<@U0RIGOPS> clean-rebuild flash-attn please", "rebuild (clean)"),
    ("sgl-kernel on b200 is hanging. anyone able to kill it?", "kill"),
    ("vllm on node-3 hangs until the timeout fires. can somebody kill it before that", "kill"),
    ("<@U0RIGOPS> gpu01 上 llama-cpp 的 make 停不下来(卡死了),帮我停掉", "kill"),
    ("<@U0RIGOPS> `grep MemAvailable /proc/meminfo` on gpu01 before I start anything", "mem"),
    # reruns in more words and their counts
    ("<@U0RIGOPS> vllm needs rebuilding after the rebase", "rebuild"),
    ("<@U0RIGOPS> repeat the llama-cpp build", "rebuild"),
    ("<@U0RIGOPS> recompile llama-cpp with 4 threads", "rebuild=4"),
    ("<@U0RIGOPS> reinstall vllm with 6 jobs", "rebuild=6"),
    ("vllm oomd again on node-3, retry w 8", "rebuild=8"),
    ("cc1plus killed on gpu01 again. llama-cpp at 4 pls", "rebuild=4"),
    # requests after a remark
    ("<@U0RIGOPS> that's llama-cpp on gpu01. code for all the other builds compiled just fine. go again with 3 jobs",
     "rebuild=3"),
    ("can't kill the stuck llama-cpp build on gpu01, it's not mine. anyone with rights pls kill it", "kill"),
    ("<@U0RIGOPS> sometimes sgl-kernel fails and it works after a rebuild. test this please — I mean rebuild "
     "sgl-kernel", "rebuild"),
    ("<@U0RIGOPS> we should adjust parallel jobs to a suitable level, so put sgl-kernel at 12", "rebuild=12"),
    ("flash-attn: you're out of memory. again. smh kick it at 4 pls", "rebuild=4"),
    ("<@U0RIGOPS> flash-attn saturates the ram. is there a way to tell it to launch less threads? like 6", "rebuild=6"),
    ("<@U0RIGOPS> i think memory is enough for this job，but please show me memory of node-3 to be sure", "mem"),
    # words of the trade, slang and inflections are no build names
    ("gpu01 is borked, restart the build with 2 jobs", "rebuild=2"),
    ("<@U0RIGOPS> restart the build on node-3 at 6, the linker keeps getting oomkilled", "rebuild=6"),
    ("<@U0RIGOPS> terminate the build on node-3, hitting stop didn't kill the compiler processes, they "
     "got reparented to init", "kill"),
    ("dmesg says oom-killer hit cc1plus on node-3, restart the build at -j4", "rebuild=4"),
    ("<@U0RIGOPS> kill the build on node-3 kthx", "kill"),
    # around clarifications, emoticons and quotes
    ("<@U0RIGOPS> is the memory (not video memory) on b200 filled up?? show me", "mem"),
    ("<@U0RIGOPS> gpu01 冻死了 :scream: 看下内存和状态", "mem status"),
    ("<@U0RIGOPS> vllm has shown nothing for 10 minutes. it'd be great to see that output — last 80 lines?",
     "log 80 lines"),
    ("tail the console of the running llama-cpp build pls, would be useful rn", "log"),
    ("vllm on node-3 with -j7:\n&gt; c++: internal compiler error: Killed (program cc1plus)\nretry at 3 pls",
     "rebuild=3"),
    ("&gt; Thanks, `-j1` lowered the memory use to acceptable levels.\n<@U0RIGOPS> do that for vllm on node-3",
     "rebuild=1"),
    # lowering a count, restarting, asking for the log
    ("<@U0RIGOPS> tone down flash-attn to -j 8", "rebuild=8"),
    ("<@U0RIGOPS> whats the last thing flash-attn printed", "log"),
    ("vllm got OOM-killed again on node-3. bring it back with 8", "rebuild=8"),
    ("oomkiller took out llama-cpp on gpu01 :( restart at 2", "rebuild=2"),
    # a count back to a number, for someone, a new one
    ("-j2 succeeds, but -j4 hangs, as does -j8 :thinking_face: so llama-cpp back to 2 please <@U0RIGOPS>", "rebuild=2"),
    ("llama-cpp on gpu01 is only using 1 of 12 threads, it took ages. bump it to 12 someone", "rebuild=12"),
    ("vllm build is aborted without any reason :confused: can someone retrigger a new one", "rebuild"),
    # a reason with a negation; a count told before 'do that'
    ("rebuild flash-attn with `MAX_JOBS=2` (cap compiler fan-out so a source build cannot saturate the RAM)",
     "rebuild=2"),
    ("<@U0RIGOPS> sgl-kernel fails on b200 again. limiting it to something like 12 ensured reliable "
     "builds last time, do that", "rebuild=12"),
]


@pytest.mark.parametrize(("text", "expected"), ASKED_IN_OTHER_WORDS)
def test_requests_in_the_words_people_use(text: str, expected: str) -> None:
    assert work(text) == expected


@pytest.mark.parametrize("text", [
    "cc1plus killed on gpu01 again. llama-cpp at 4 now",  # to the channel without a please: where it stands
    "we will trigger a new one tomorrow",
])
def test_the_same_words_told_ask_for_nothing_new(text: str) -> None:
    assert not said(text).destructive, said(text)


COUNTS_NOT_SAID_AS_ONE_NUMBER = [
    "<@U0RIGOPS> rebuild llama-cpp on gpu01 like this:\n```cmake --build build -j$(nproc)```",
    # a count described, offered two ways, worked out, or a load limit in its place
    "<@U0RIGOPS> rebuild vllm with as many jobs as GPUs",
    "<@U0RIGOPS> rebuild vllm at half the previous -j",
    "<@U0RIGOPS> rebuild vllm with the default minus 4",
    "<@U0RIGOPS> rebuild vllm with a couple fewer jobs",
    "<@U0RIGOPS> keep sgl-kernel limited to 1/16th of the cores",
    "<@U0RIGOPS> rebuild vllm at 8 or 10",
    "<@U0RIGOPS> rebuild vllm at 8, 10 if it's fast",
    "<@U0RIGOPS> rebuild vllm at 64 - 4",
    "retry vllm with 2**4 jobs",
    "retry vllm with sqrt(64) jobs",
    "<@U0RIGOPS> rebuild vllm with (RAM in GB)/2.5 jobs",
    "<@U0RIGOPS> rebuild vllm with make -j -l 16",
    # a placeholder where the count goes, a variable after the name and the count
    "<@U0RIGOPS> rebuild vllm with `MAX_JOBS=N` so it fits",
    "<@U0RIGOPS> vllm at -j ${NPROC} then",
    # the jobs slot said in words for the host's size
    "<@U0RIGOPS> rebuild vllm with MAX_JOBS equal to free memory over 4",
    "<@U0RIGOPS> rebuild vllm with max jobs = cores * 0.75",
    "<@U0RIGOPS> rerun vllm with MAX_JOBS set to (RAM in GB)/5",
    "<@U0RIGOPS> rebuild llama-cpp with jobs = [GPU count] * 4",
    "<@U0RIGOPS> rebuild vllm at whatever -j keeps it under 80% of the ram",
    "restart vllm with as many jobs as it takes to stay below the swap line",
    # a rate or a variable
    "<@U0RIGOPS> restart sgl-kernel with 4 jobs per GPU",
    "can someone rebuild vllm with 2 jobs per numa node",
    "<@U0RIGOPS> rebuild vllm with a job for every 3 gigs of ram",
    "<@U0RIGOPS> rebuild llama-cpp, 2 gigs per compile job, we have 64",
    "<@U0RIGOPS> rerun llama-cpp with -j {cores}",
    "<@U0RIGOPS> rebuild vllm with -j 2N",
    "<@U0RIGOPS> restart flash-attn using all but 2 cores",
    # described by the machine
    "<@U0RIGOPS> max out the cores for vllm and rebuild",
    "<@U0RIGOPS> rebuild vllm with one fewer job than cores",
    "<@U0RIGOPS> rebuild vllm with the cpu count minus two",
    "<@U0RIGOPS> rebuild vllm with twice as many jobs as GPUs",
    "<@U0RIGOPS> restart vllm with jobs = number of gpus",
    "<@U0RIGOPS> let ninja decide the jobs for vllm and rebuild",
    "<@U0RIGOPS> rebuild vllm with MAX_JOBS unset",
    # talk of the cores and no count
    "<@U0RIGOPS> rebuild vllm with one job per core minus the two we keep for I/O",
    "can someone rebuild llama-cpp so it uses the hyperthreads too",
    "<@U0RIGOPS> retry flash-attn but leave a couple of cpus for the rest of us",
]


@pytest.mark.parametrize("text", COUNTS_NOT_SAID_AS_ONE_NUMBER)
def test_a_count_not_said_as_one_number_is_refused_in_a_rebuild(text: str) -> None:
    plan = said(text, addressed=text.startswith("<@"))
    assert plan.error is not None and "name a number" in plan.error and not any(s.jobs for s in plan.steps), plan


def test_a_count_in_code_out_of_range_is_refused_as_said() -> None:
    plan = said("<@U0RIGOPS> run llama-cpp `-j -2` on gpu01", addressed=True)
    assert plan.error is not None and "-j-2: jobs must be between 1 and 1024" in plan.error, plan


def test_an_asterisk_of_emphasis_is_no_formula() -> None:
    assert said("<@U0RIGOPS> reduce MAX_JOBS *and* the threads for vllm, not just one", addressed=True).error is None


READ_IN_FRESH_WORDS = [
    # a count replaced by another: the one it goes to (the one it leaves is no request, the two no range)
    ("<@U0RIGOPS> swap `-j$(nproc)` for `-j4` on vllm", "rebuild=4"),
    ("<@U0RIGOPS> change -j32 to -j8 on vllm", "rebuild=8"),
    ("<@U0RIGOPS> for llama-cpp, find the `--jobs=$(nproc)` and replace it with `--jobs=6`", "rebuild=6"),
    ("<@U0RIGOPS> llama-cpp: replace the bare `make -j` with `make -j6`", "rebuild=6"),
    ("<@U0RIGOPS> drop MAX_JOBS=32 to MAX_JOBS=8 for vllm", "rebuild=8"),
    ("<@U0RIGOPS> change maxjobs to 12 for vllm", "rebuild=12"),
    ("<@U0RIGOPS> vllm keeps dying, cut its jobs to 5 to get it through", "rebuild=5"),
    ("replacing -j32 with -j8 fixed vllm for me", ""),
    # "all 8 cores": the count is said
    ("<@U0RIGOPS> rebuild vllm with all 8 cores", "rebuild=8"),
    ("<@U0RIGOPS> node-3: all 4 processor cores pegged at 100%, vllm has to be killed with -9", "kill"),
    # a heading is no request for news
    ("Update: vllm finished fine on node-3", ""),
    ("FYI: llama-cpp on gpu01 is green again", ""),
    ("<@U0RIGOPS> update on vllm?", "status"),
    # news of a stall, said to rigops, asks where the build is
    ("<@U0RIGOPS> vllm on node-3 isn't printing anything anymore", "status"),
    ("<@U0RIGOPS> my llama-cpp build is not showing any progress", "status"),
    ("vllm isn't printing anything, weird", ""),
    # smi for nvidia-smi; a bare name after the mention adds nothing of its own
    ("<@U0RIGOPS> post smi output for node-3", "gpu"),
    ("can you paste the smi results <@U0RIGOPS> gpu01", "gpu"),
    ("tail of the log please <@U0RIGOPS> vllm", "log"),
    # news of trouble before the mention adds no look to what follows it (the memory after the kill is its report)
    ("vllm is leaking memory on node-3, looks like an OutOfMemoryError. <@U0RIGOPS> stop it and show me mem",
     "kill"),
    # starting it clean or fresh is a rebuild that starts clean (and stops the build first)
    ("<@U0RIGOPS> kill llama-cpp and start it fresh", "rebuild (clean)"),
    ("<@U0RIGOPS> stop vllm and start it clean", "rebuild (clean)"),
    ("<@U0RIGOPS> flash-attn died of OOM again. kill it and start over at 6 pls", "rebuild=6"),
    ("<@U0RIGOPS> start over at 6 please, flash-attn", "rebuild=6"),
    ("we had to start over at 12 last time", ""),
    ("<@U0RIGOPS> kick the stuck vllm build", "rebuild"),
    ("<@U0RIGOPS> llama-cpp says it finished in 0 seconds?? begin a new build pls", "rebuild"),
    ("we will begin a new build tomorrow", ""),
    ("<@U0RIGOPS> llama-cpp keeps failing, I need to know what the build log says near the end", "log"),
    # a polite "mind …ing", "try …ing": the request itself
    ("<@U0RIGOPS> mind bouncing vllm on node-3?", "rebuild"),
    ("<@U0RIGOPS> would you mind restarting llama-cpp at 4", "rebuild=4"),
    ("never mind restarting vllm, it came back", ""),
    ("<@U0RIGOPS> could you try rebuilding llama-cpp?", "rebuild"),
    ("I tried rebuilding llama-cpp twice", ""),
    # a chat-bot command, a GPU viewer, a count of workers
    ("!build llama-cpp", "rebuild"),
    ("nvtop on gpu01", "gpu"),
    ("<@U0RIGOPS> increase the worker count for vllm to 6", "rebuild=6"),
    # a condition that a kill meets anyway
    ("kill vllm on node-3 if it's running.", "kill"),
    ("kill vllm on node-3 if it's still running at 5", ""),
    # a count before a purpose is the count asked
    ("<@U0RIGOPS> rebuild vllm at -j6 just to see what happens", "rebuild=6"),
    ("vllm at -j16 just works", ""),
    # the request after the mention is plain: a formula or a story in the remark before it is not the request
    ("my guess is that `ninja -j$(nproc)` eats all the ram.\n<@U0RIGOPS> restart vllm on node-3 with 2 jobs",
     "rebuild=2"),
    # a code block pointed back at after it is how to do it
    ("this worked for me\n```make -j4```\n<@U0RIGOPS> rebuild llama-cpp like that", "rebuild=4"),
    # the tool's own -j is the count; make jobs are jobs; a single-job compile is one job
    ("<@U0RIGOPS> limit make to -j6 for llama-cpp", "rebuild=6"),
    ("we limited ninja to -j8 last time", ""),
    ("<@U0RIGOPS> run 5 compile jobs on vllm", "rebuild=5"),
    ("<@U0RIGOPS> force a single-job build of llama-cpp so the box stays usable", "rebuild=1"),
    ("<@U0RIGOPS> force a single-threaded build of vllm", "rebuild=1"),
    # a build that needs a reset, said to rigops
    ("<@U0RIGOPS> everything is crawling, llama-cpp needs a reset", "rebuild"),
    # the memory of each card is the GPUs'; the output of a memory tool is a memory look, not the log
    ("<@U0RIGOPS> can you list the memory on each GPU of node-3", "gpu"),
    ("<@U0RIGOPS> I need to see the output of `htop` on node-3", "mem"),
    # a word that describes, where a build's name goes, names no build
    ("<@U0RIGOPS> post the vllm log, last 50 lines (the exact compile lines matter)", "log 50 lines"),
    # the output of a look tool asked for is that look alone
    ("<@U0RIGOPS> please run `nvidia-smi` on node-3 and share the output", "gpu"),
    ("<@U0RIGOPS> run `free -h` on gpu01, then post the result", "mem"),
    ("<@U0RIGOPS> weird vllm failure, try to retrigger", "rebuild"),
    ("<@U0RIGOPS> llama-cpp OOMed at -j8 again. you could lower it from 8 to 3 and see", "rebuild=3"),
    ("<@U0RIGOPS> what does nvidia-smi show on node-3? anything in the vllm error log?", "gpu log"),
    ("<@U0RIGOPS> when you run nvidia-smi on node-3 what does it show?", "gpu"),
    ("<@U0RIGOPS> vllm is a mess. wipe everything and start from scratch", "rebuild (clean)"),
    ("<@U0RIGOPS> raise vllm on node-3 to max parallel 24, it has the cores", "rebuild=24"),
    ("I didn't see anything in the logs", ""),
    ("<@U0RIGOPS> revert the `-j 2` change on vllm", "rebuild"),
    ("we reverted the -j1 change last week", ""),
    ("<@U0RIGOPS> kill llama-cpp, then up the workers to 3", "rebuild=3"),
    ("<@U0RIGOPS> vllm换成-j6吧", "rebuild=6"),
    ("<@U0RIGOPS> 将 vllm 的并行改成6", "rebuild=6"),
    ("wiki 里的 `make -j` 我刚改成 -j8 了", ""),
    # more than a share of something else is no bound on the count
    ("cc1plus was using more than 20% each. <@U0RIGOPS> kill vllm and retry at 12", "rebuild=12"),
    # a plan under its heading is for later; a time of day said loosely is still one
    ("Current plan: restart vllm automatically at ~midnight pacific.", ""),
    ("restart vllm on node-3 at around 5pm", ""),
    # a reason run on after the request with no stop
    ("<@U0RIGOPS> kill vllm on node-3 this job is no longer needed", "kill"),
    # a kill by the build's name, in code
    ("<@U0RIGOPS> `pkill -9 -f 'llama-cpp'` on gpu01", "kill"),
]


@pytest.mark.parametrize(("text", "expected"), READ_IN_FRESH_WORDS)
def test_requests_in_the_words_of_fresh_text(text: str, expected: str) -> None:
    assert work(text) == expected


@pytest.mark.parametrize(("text", "why"), [
    # an unknown host before a full stop
    ("<@U0RIGOPS> gpu on zaurus. I think one card is lost", "unknown host"),
    ("<@U0RIGOPS> mem on hoth. thanks", "unknown host"),
    # a count out of range before a purpose
    ("<@U0RIGOPS> rebuild vllm at -j4096 just to see what happens", "between 1 and 1024"),
    # a bound above where the count goes, a packager's count of the machine, half of the cores named before
    ("<@U0RIGOPS> try vllm with more than just two jobs", "a range or a bound"),
    ("<@U0RIGOPS> rebuild llama-cpp with `make %{?_smp_mflags}`", "nproc"),
    ("`nproc` for -j is too much on node-3. <@U0RIGOPS> redo vllm taking half of it", "nproc"),
    ("<@U0RIGOPS> 将 vllm 的并行改成4096", "between 1 and 1024"),
])
def test_what_cannot_be_carried_out_as_said_is_refused_with_its_reason(text: str, why: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and why in plan.error and not any(s.jobs for s in plan.steps), plan


def test_a_question_about_how_rigops_works_asks_no_look() -> None:
    assert not said("<@U0RIGOPS> when you rebuild vllm does the old log get overwritten?", addressed=True).steps


@pytest.mark.parametrize("text", [
    # ... but a request that points back at the remark is read with it, and a short one is not looked at alone
    "should work with\n```-j$(shell nproc)```\n<@U0RIGOPS> rebuild vllm like that",
])
def test_a_request_after_the_mention_that_points_back_at_the_remark_is_refused_with_it(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and not any(s.jobs for s in plan.steps), plan


def test_a_verb_before_the_trouble_names_no_build() -> None:
    plan = said("keeps OOMing on node-3 either way, no idea why")
    assert plan.error is None or "no build" not in plan.error, plan


@pytest.mark.parametrize("text", ["<@U0RIGOPS> Cancel build chromium", "<@U0RIGOPS> `killall chromium` on node-3"])
def test_a_kill_of_a_build_the_config_does_not_have_is_refused(text: str) -> None:
    plan = said(text, addressed=True)
    assert plan.error is not None and "chromium" in plan.error and plan.build is None, plan


def test_the_processes_of_a_tool_name_no_build() -> None:
    plan = said("<@U0RIGOPS> node-3 is crawling, the nvcc procs hog every core. kill them", addressed=True)
    assert plan.error is None and [s.action for s in plan.steps][:1] == ["kill"], plan


def test_what_is_quoted_back_in_a_refusal_is_printable_ascii() -> None:
    """Hypothesis found "RESTAR¡-J0<B200:-J" (and a control character in its place) quoted back as said."""
    for text in ("RESTAR\u00a1-J0<B200:-J", "RESTAR\x1b-J0<B200:-J"):
        plan = said(text)
        assert plan.error is not None and plan.error.isprintable(), plan
        assert all(c.isascii() or c in "…‹›—" for c in plan.error), plan




def test_a_question_about_whether_is_never_read_by_the_learned_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 98% retraining read "is it possible to build vllm on a node without gpus?" as a status look at 0.78: how
    or whether something can be done asks nothing of rigops, however surely the learned reading reads a look."""
    from bot.language import intents_model

    sure = intents_model.Proposal("look", "status", 0.99)
    monkeypatch.setattr(intents_model, "propose", lambda seen, bound=intents_model.PROPOSE: sure)
    assert not said("<@U0RIGOPS> is it possible to build vllm on a node without gpus?", addressed=True).steps
    assert not said("<@U0RIGOPS> do we need to rebuild vllm after the driver update?", addressed=True).steps
    # ... while a look asked politely is still one
    assert said("<@U0RIGOPS> is it possible to show how vllm is doing?", addressed=True).steps
