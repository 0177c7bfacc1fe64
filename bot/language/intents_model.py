"""A second, learned reading of a message, for ``bot.language.intents``: does it ask rigops to stop or rebuild
something, ask to look, ask for nothing, or ask for what must be refused?

The rules of ``intents`` read a message into a plan: names, numbers, steps. They were written against the
development part of the chat corpus (tests/data/chat), and on messages nobody here wrote they act, now and then,
on a story, on advice or on a request that must be refused (a count given as a formula, a build the config does
not have). This model is their second opinion on the one thing that matters there: before a kill or a rebuild
is planned, it must also read the message as a request to act. Where it does not (:data:`DOUBT` below),
``intents`` does not act on the rules' plan alone: it refuses when the model reads a request it cannot carry out,
and otherwise leaves the message alone (said to rigops, the plan is then offered as *Did you mean …?* with Run
and Cancel).

The model is a multinomial logistic regression over word and word-pair features of the neutral text the rules
read (names of the config as ``HOST`` and ``BUILD``, counts as ``N``), with the opening words of each clause, a
question mark, whether the message is said to rigops, and whether it names a build or a host the config does not
have. Two heads say more of a request than its reading: which look a look asks for, and whether a request to act
asks for a kill or a rebuild; where the rules read nothing, :func:`propose` uses them. It is all trained by
``tools/train_acts.py`` on the development part only; the weights ship in
``acts_model.json`` and are read here with no dependency: deterministic, no network, a few dozen dictionary
look-ups per message.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

LABELS = ("act", "look", "nothing", "refuse")  # kill or rebuild; a look only; no request; a request refused
# Its two heads, each trained on the phrasings of one reading: which look a look asks for first, and whether a
# request to act asks for a rebuild (which stops the build first) or only a kill.
HEADS: dict[str, tuple[str, ...]] = {"look": ("mem", "status", "log", "gpu"), "act": ("kill", "rebuild")}
MODEL_PATH = Path(__file__).with_name("acts_model.json")

# A kill or a rebuild is planned only where the model gives a request to act at least this probability. Chosen
# on development material the rules had not seen (tools/train_acts.py): the reader of 20a5f50, frozen before seven
# later batches of the corpus, planned 151 kills or rebuilds on their development items, 26 of them dangerous; a
# model trained on the batches before them doubted 16 of the 151 at this bound (see doubts_act), 14 dangerous and 2
# right; at 0.1, 14 (12 and 2); at 0.2, 17 (15 and 2), with more of the plain requests of the tests doubted.
DOUBT = 0.15
LONG = 10
# ... and one shorter than this is not doubted at all: no development phrasing of fewer than 8 words was doubted, and
# at 4 or 5 words the reading of a plain request ("how about 10 workers") moved across the bound between two
# trainings of the same corpus.
SHORT = 6
# Where the rules read nothing, a look is proposed (see propose) when the model reads one with at least this
# probability. Chosen on development material the rules had not seen: the reader of 20a5f50 read nothing in 571
# development phrasings of the later batches fresh-7…18; with a model trained on the batches before them, at this
# bound the proposer (intents._proposed) read the right look in 8, a wrong one in 2 (one a reboot the rules now
# refuse), a look in none that asked for nothing, and offered the right kill or rebuild in 24 said to rigops (0.6:
# a look for a message that asked for nothing; 0.8: one right look fewer). The reader of 9dc7d58 on fresh-14…18:
# 2 right looks, 2 wrong (one a reboot), 6 right offers.
PROPOSE = 0.7
# ... and a kill or a rebuild is run on its reading alone (intents._proposed: the build named, no clause read as
# anything but a report) when the model reads it with at least this; below, said to rigops, it is only offered.
# On the same material: 11 right plans (20a5f50) and 4 (9dc7d58), no wrong one but a reboot the rules now refuse;
# at 0.8, a story and a request to refuse were acted on.
SURE = 0.9
# Where the rules read a look only, in a message long enough to tell something, it is not taken when
# the model reads no request at least this surely. Chosen on development material the rules had not seen: the
# reader of 5a30662 (its model trained on the batches before) on the 688 development phrasings of the ten parts
# after it (fresh-24…33), which it read 597 right: 5 looks at reports dropped, none of a look asked for (0.7: the
# same, and a look at news of trouble of the tests; 0.6: 2 asked for; 0.9: 4 dropped).
NO_LOOK = 0.8
# ... and only in a message of at least this many words: every report whose look was dropped there had 16 or more,
# and a 12-word news of trouble ("X oomed again, doubling the RAM fixed it last time") was read at 0.78, 0.83 and
# 0.87 by three trainings of a growing corpus.
REPORT_WORDS = 15

_TOKEN_RE = re.compile(r"HOST|BUILD|(?<![a-z])-?j ?=? ?\d+|\d+|[a-z][a-z'+-]*|\?")
_CLAUSE_RE = re.compile(r"[.!;\n]+|, (?=[a-z]+ )")


@dataclass(frozen=True)
class Seen:
    """What the rules found in a message that the model also reads: its neutral text, and what it names."""

    masked: str  # the neutral text: lower case, config names as HOST and BUILD
    addressed: bool
    unknown_build: bool = False  # a build-like name the config does not have
    unknown_build_slot: bool = False  # ... where the build goes ("restart the pytorch build")
    unknown_host: bool = False  # a host-like name the config does not have


def features(seen: Seen) -> set[str]:
    """The features of one message: its words and word pairs clause by clause, each clause's opening word and
    pair, a closing question mark, and what the rules found (said to rigops; names the config does not have)."""
    out = {"BIAS", "ADDR" if seen.addressed else "UNADDR"}
    if seen.unknown_build:
        out.add("UB" + ("own" if seen.unknown_build_slot else ""))
    if seen.unknown_host:
        out.add("UH")
    for clause in _CLAUSE_RE.split(seen.masked):
        tokens = [_number(t) if t[-1].isdigit() else t for t in _TOKEN_RE.findall(clause)]  # "j=6" is "-jN"
        if not tokens:
            continue
        out.add("^" + tokens[0])
        if len(tokens) > 1:
            out.add(f"^{tokens[0]}_{tokens[1]}")
        out.update(tokens)
        out.update(f"{a}_{b}" for a, b in itertools.pairwise(tokens))
        if tokens[-1] == "?":
            out.add("Q$")
    return out


def _number(token: str) -> str:
    """A count as the model sees it: "N" for one rigops could run, "N0" for none, "NBIG" for more than it ever
    would (with "-j" before each when it was said as -jN)."""
    digits = token.lstrip("-j =")
    value = int(digits) if len(digits) < 7 else 10**7
    shown = "N0" if value == 0 else "NBIG" if value > 1024 else "N"
    return ("-j" + shown) if token[0] in "-j" else shown


Weights = dict[str, tuple[float, ...]]


@functools.cache
def _model() -> dict[str, Weights]:
    """The weights of the reading ("") and of each head, by name; their labels checked against the code's."""
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    parts = {"": (data["labels"], data["weights"])} | {
        name: (head["labels"], head["weights"]) for name, head in data.get("heads", {}).items()}
    for name, labels in {"": LABELS, **HEADS}.items():
        if name not in parts or tuple(parts[name][0]) != labels:
            raise ValueError(f"{MODEL_PATH}: {name or 'the reading'} is not labelled {list(labels)}")
    return {name: {feature: tuple(float(x) for x in row) for feature, row in weights.items()}
            for name, (_, weights) in parts.items()}


# Features that say how often each reading comes, not what this message says: left out of the doubt (below).
PRIOR_FEATURES = frozenset(("BIAS", "ADDR", "UNADDR"))


def probabilities(seen: Seen, *, words_only: bool = False) -> dict[str, float]:
    """How likely each reading of :data:`LABELS` is, by the model; ``words_only``: by what the message says
    alone, without the intercepts of how often each reading comes (said to rigops or not)."""
    found = features(seen)
    return _softmax(found - PRIOR_FEATURES if words_only else found)


def _softmax(found: set[str] | frozenset[str], head: str = "") -> dict[str, float]:
    weights, labels = _model()[head], HEADS.get(head, LABELS)
    scores = [0.0] * len(labels)
    for name in found:
        row = weights.get(name)
        if row is not None:
            scores = [s + x for s, x in zip(scores, row, strict=True)]
    top = max(scores)
    exp = [math.exp(s - top) for s in scores]
    total = sum(exp)
    return {label: e / total for label, e in zip(labels, exp, strict=True)}


@dataclass(frozen=True)
class Proposal:
    """What the model reads a message as asking for, where the rules read nothing: a reading and its action."""

    reading: str  # "act" or "look"
    action: str  # one of HEADS[reading]
    probability: float  # of the reading


def propose(seen: Seen, *, bound: float = PROPOSE) -> Proposal | None:
    """The request the model reads in a message, when a request (to act, or to look) is its likeliest reading
    by at least ``bound``; its action is the likeliest of that reading's head. None otherwise.

    The model knows no names and no counts: the caller fills those from what the rules found; it runs a kill or
    a rebuild on the model's word only when it is read surely (:data:`SURE`), and otherwise offers it, said to
    rigops, as *Did you mean …?*."""
    found = features(seen)
    p = _softmax(found)
    reading = max(LABELS, key=lambda label: p[label])
    if reading not in HEADS or p[reading] < bound:
        return None
    q = _softmax(found, reading)
    return Proposal(reading, max(HEADS[reading], key=lambda action: q[action]), p[reading])


def doubts_look(seen: Seen) -> bool:
    """Whether the model reads a message the rules read a look in as asking for nothing, at least as surely as
    :data:`NO_LOOK`: only a message long enough to tell something (:data:`REPORT_WORDS` words); a short one ("mem?",
    "OOM on b200") is asked for a look however often the channel's chatter asks for none."""
    return len(seen.masked.split()) >= REPORT_WORDS and probabilities(seen)["nothing"] >= NO_LOOK


def doubts_act(seen: Seen) -> str | None:
    """None when the model reads a request to act (or may: at least :data:`DOUBT`); else what it reads instead,
    the likeliest of look, nothing and refuse.

    A message is doubted by its words alone, or, when it is long enough to tell a story (:data:`LONG` words), by
    its words and how often each reading comes. Among messages not said to rigops the corpus has ten times more
    chatter than requests: a short plain request there ("oom-ing pretty bad, try -j20") must not be doubted for
    being rare, and it is too short to be a story or advice. What it reads instead is read the way it was doubted:
    a long story doubted with how often each reading comes is read as the chatter it likely is, not as a request
    to refuse that its words alone lean to by a hair."""
    words = len(seen.masked.split())
    if words < SHORT:
        return None  # "how about 10 workers": too few words to read a story or advice in, however they lean
    found = features(seen)
    p = _softmax(found - PRIOR_FEATURES)
    if p["act"] >= DOUBT:
        if words < LONG:
            return None
        p = _softmax(found)  # a long message: doubted, and read instead, with how often each reading comes
        if p["act"] >= DOUBT:
            return None
    return max(("look", "nothing", "refuse"), key=lambda label: p[label])
