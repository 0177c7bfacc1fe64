"""The learned reading (bot.language.intents_model): its weights are the ones tools/train_acts.py trains on the
development part of the chat corpus, and it reads plain requests, stories and formulas as they are. The examples
are written here; the corpus stays the measure (bench/bench_chat.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot import config
from bot.language import intents
from bot.language.intents_model import LABELS, doubts_act, features, probabilities, propose

ROOT = Path(__file__).resolve().parents[2]
CFG = config.load(ROOT / "tests" / "data" / "chat" / "rigops.toml")


def seen(text: str, addressed: bool = False) -> intents.model.Seen:
    return intents.seen(text, config=CFG, addressed=addressed)


def test_the_shipped_weights_are_the_ones_the_development_part_trains() -> None:
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "train_acts.py"), "--check"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.startswith("0 features differ"), run.stdout + run.stderr


def test_the_probabilities_are_a_distribution_over_the_readings() -> None:
    p = probabilities(seen("kill vllm on node-3"))
    assert tuple(p) == LABELS and abs(sum(p.values()) - 1) < 1e-9 and all(0 < x < 1 for x in p.values())


@pytest.mark.parametrize(("text", "addressed"), [
    ("oom-ing pretty bad on node-3, try -j20", False),
    ("<@U0RIGOPS> kill vllm, it's swapping", True),
    ("node-3 is thrashing, can someone stop vllm and restart it at 8 jobs", False),
])
def test_a_plain_request_to_act_is_not_doubted(text: str, addressed: bool) -> None:
    assert doubts_act(seen(text, addressed)) is None, probabilities(seen(text, addressed), words_only=True)


@pytest.mark.parametrize(("text", "reading"), [
    ("last week vllm blew up at -j32 on node-3, -j8 fixed it in the end", "nothing"),
    ("<@U0RIGOPS> rebuild vllm with one job for every 12 gigs of ram that node-3 has, rounded down", "refuse"),
])
def test_a_report_of_the_past_or_a_count_as_a_formula_is_doubted(text: str, reading: str) -> None:
    addressed = text.startswith("<@")
    assert doubts_act(seen(text, addressed)) == reading, probabilities(seen(text, addressed))


def test_counts_are_seen_by_what_rigops_could_run() -> None:
    assert {"-jN", "-jN0", "-jNBIG", "N"} <= features(seen("try -j8 or -j0 or -j5000, 12 jobs"))
    assert "UBown" in features(seen("restart the pytorch build on node-3"))


@pytest.mark.parametrize(("text", "reading", "action"), [
    ("<@U0RIGOPS> wonder how much ram node-3 has got left at the moment", "look", "mem"),
    ("<@U0RIGOPS> i'd like to see what vllm printed last", "look", "log"),
    ("<@U0RIGOPS> llama-cpp fell over again on gpu01, another round at 2 please", "act", "rebuild"),
])
def test_a_request_is_proposed_with_its_action(text: str, reading: str, action: str) -> None:
    proposal = propose(seen(text, addressed=True))
    assert proposal is not None and (proposal.reading, proposal.action) == (reading, action), proposal


@pytest.mark.parametrize("text", ["the ram on my desktop at home is great",
                                  "last night I asked for the memory on node-3 and it was fine",
                                  "<@U0RIGOPS> kill vllm with -j$(nproc)"])
def test_no_request_or_one_to_refuse_is_proposed(text: str) -> None:
    assert propose(seen(text, addressed=text.startswith("<@"))) is None, probabilities(seen(text))
