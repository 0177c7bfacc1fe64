"""Train the learned reading of ``bot.language.intents_model`` on the development part of the chat corpus.

    .venv/bin/python tools/train_acts.py            # writes bot/language/acts_model.json
    .venv/bin/python tools/train_acts.py --check    # trains, and fails if the shipped weights differ

Only the development part (bench/bench_chat.py's ``part_of``) is read: the held-out and fresh parts stay the
measure. Each phrasing's label comes from its expected plan: ``act`` (a kill or a rebuild), ``look`` (steps, none
of them destructive), ``nothing`` (no steps) or ``refuse``; the heads (``intents_model.HEADS``) learn, from the
phrasings of one reading, which look it asks for first and whether it asks for a rebuild or only a kill. A
multinomial logistic regression each, features seen at least twice, an L2 penalty, full-batch Adam from zero
weights: the same corpus gives the same weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_chat import CHAT, load, part_of  # noqa: E402
from bot import config as config_mod  # noqa: E402
from bot.language import intents  # noqa: E402
from bot.language.intents_model import HEADS, LABELS, MODEL_PATH, features  # noqa: E402

L2 = 1.0
STEPS = 300
RATE = 0.1
MIN_COUNT = 2
DIGITS = 5


def label(item: dict[str, Any]) -> int:
    want = item["expect"]
    if want.get("refuse"):
        return LABELS.index("refuse")
    actions = {s["action"] for s in want["steps"]}
    if actions & {"kill", "rebuild"}:
        return LABELS.index("act")
    return LABELS.index("look" if actions else "nothing")


def head_label(item: dict[str, Any], head: str) -> int | None:
    """The label of a phrasing for a head (``intents_model.HEADS``); None when it is not of that head's reading:
    the first look a look asks for; a rebuild (which stops the build first) or only a kill."""
    if item["expect"].get("refuse") or LABELS[label(item)] != head:
        return None
    actions = [s["action"] for s in item["expect"]["steps"]]
    if head == "act":
        return HEADS[head].index("rebuild" if "rebuild" in actions else "kill")
    return HEADS[head].index(next(a for a in actions if a in HEADS[head]))


def fit(rows: list[set[str]], labels: list[int] | np.ndarray, k: int = len(LABELS)) -> dict[str, list[float]]:
    counts = Counter(name for row in rows for name in row)
    names = sorted(name for name, count in counts.items() if count >= MIN_COUNT)
    index = {name: i for i, name in enumerate(names)}
    cols = [np.array(sorted(index[x] for x in row if x in index), dtype=np.int64) for row in rows]
    flat, lengths = np.concatenate(cols), np.array([len(c) for c in cols])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    target = np.eye(k)[labels]
    # each reading weighs the same in all: the corpus has more chatter than requests, and a request said plainly
    # ("oom-ing pretty bad, try -j20") must not be doubted for being rarer than chatter
    balance = len(labels) / (k * np.maximum(np.bincount(labels, minlength=k), 1))
    weights = np.zeros((len(names), k))
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    for t in range(1, STEPS + 1):
        scores = np.add.reduceat(weights[flat], starts, axis=0)
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        grad = np.zeros_like(weights)
        np.add.at(grad, flat, np.repeat((p - target) * balance[labels][:, None] / len(rows), lengths, axis=0))
        grad += L2 / len(rows) * weights
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        weights -= RATE * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return {name: [round(float(x), DIGITS) for x in weights[i]] for name, i in index.items()}


def train() -> dict[str, Any]:
    config = config_mod.load(CHAT / "rigops.toml")
    items = [item for item in load() if part_of(item) == "development"]
    rows = [features(intents.seen(item["text"], config=config, addressed=item["addressed"])) for item in items]
    heads = {}
    for head, labels in HEADS.items():
        mine = [(row, at) for row, item in zip(rows, items, strict=True)
                if (at := head_label(item, head)) is not None]
        heads[head] = {"labels": list(labels),
                       "weights": fit([row for row, _ in mine], np.array([at for _, at in mine]), len(labels))}
    return {"labels": list(LABELS), "trained_on": f"tests/data/chat/corpus.jsonl, development part ({len(items)})",
            "l2": L2, "steps": STEPS, "min_count": MIN_COUNT, "weights": fit(rows, np.array([label(i) for i in items])),
            "heads": heads}


def _differ(trained: dict[str, list[float]], shipped: dict[str, list[float]]) -> list[str]:
    return [k for k in trained.keys() | shipped.keys() if k not in trained or k not in shipped
            or max(abs(a - b) for a, b in zip(trained[k], shipped[k], strict=True)) > 1e-3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the shipped weights are not these")
    args = parser.parse_args()
    model = train()
    if args.check:
        shipped = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
        off = _differ(model["weights"], shipped["weights"]) + [
            f"{head}:{k}" for head in HEADS
            for k in _differ(model["heads"][head]["weights"],
                             shipped.get("heads", {}).get(head, {}).get("weights", {}))]
        print(f"{len(off)} features differ from {MODEL_PATH.name}" + (f", e.g. {sorted(off)[:5]}" if off else ""))
        return 1 if off else 0
    MODEL_PATH.write_text(json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{MODEL_PATH}: {len(model['weights'])} features (heads: "
          + ", ".join(f"{head} {len(part['weights'])}" for head, part in model["heads"].items())
          + f") from {model['trained_on']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
