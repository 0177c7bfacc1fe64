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
have. It is trained by ``tools/train_acts.py`` on the development part only; the weights ship in
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
MODEL_PATH = Path(__file__).with_name("acts_model.json")

# A kill or a rebuild is planned only where the model gives a request to act at least this probability. Chosen
# on development material the rules had not seen (tools/train_acts.py): the reader of 20a5f50, frozen before seven
# later batches of the corpus, planned 151 kills or rebuilds on their development items, 26 of them dangerous; a
# model trained on the batches before them doubted 16 of the 151 at this bound (see doubts_act), 14 dangerous and 2
# right; at 0.1, 14 (12 and 2); at 0.2, 17 (15 and 2), with more of the plain requests of the tests doubted.
DOUBT = 0.15
LONG = 10

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


@functools.cache
def _weights() -> dict[str, tuple[float, ...]]:
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    if tuple(data["labels"]) != LABELS:
        raise ValueError(f"{MODEL_PATH}: labels {data['labels']} are not {list(LABELS)}")
    return {name: tuple(float(x) for x in row) for name, row in data["weights"].items()}


# Features that say how often each reading comes, not what this message says: left out of the doubt (below).
PRIOR_FEATURES = frozenset(("BIAS", "ADDR", "UNADDR"))


def probabilities(seen: Seen, *, words_only: bool = False) -> dict[str, float]:
    """How likely each reading of :data:`LABELS` is, by the model; ``words_only``: by what the message says
    alone, without the intercepts of how often each reading comes (said to rigops or not)."""
    found = features(seen)
    return _softmax(found - PRIOR_FEATURES if words_only else found)


def _softmax(found: set[str] | frozenset[str]) -> dict[str, float]:
    weights = _weights()
    scores = [0.0] * len(LABELS)
    for name in found:
        row = weights.get(name)
        if row is not None:
            scores = [s + x for s, x in zip(scores, row, strict=True)]
    top = max(scores)
    exp = [math.exp(s - top) for s in scores]
    total = sum(exp)
    return {label: e / total for label, e in zip(LABELS, exp, strict=True)}


def doubts_act(seen: Seen) -> str | None:
    """None when the model reads a request to act (or may: at least :data:`DOUBT`); else what it reads instead,
    the likeliest of look, nothing and refuse.

    A message is doubted by its words alone, or, when it is long enough to tell a story (:data:`LONG` words), by
    its words and how often each reading comes. Among messages not said to rigops the corpus has ten times more
    chatter than requests: a short plain request there ("oom-ing pretty bad, try -j20") must not be doubted for
    being rare, and it is too short to be a story or advice."""
    found = features(seen)
    p = _softmax(found - PRIOR_FEATURES)
    if p["act"] >= DOUBT and (len(seen.masked.split()) < LONG or _softmax(found)["act"] >= DOUBT):
        return None
    return max(("look", "nothing", "refuse"), key=lambda label: p[label])
