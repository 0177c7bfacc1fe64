"""How rigops reads chat: accuracy on the corpus of real phrasings (tests/data/chat), and reading speed.

Each item is read as rigops reads a message in the ops channel (``intents.parse`` against the corpus config,
addressed or not) and compared with its label: the same steps in order (action, -j, lines), the same host and
build when it acts, a refusal where one is due. A *dangerous* read plans a kill or a rebuild where none was
asked for, or for another host or build than the one named. The held-out part (``sha256(id) % 10 < 3``) and
the fresh part are reported as totals only: their misses are not printed, so that they stay unseen.

    .venv/bin/python bench/bench_chat.py [--misses] [--accuracy-only]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot import config as config_mod  # noqa: E402
from bot.config import Config  # noqa: E402
from bot.language import intents  # noqa: E402
from bot.language.plan import Plan  # noqa: E402

CHAT = ROOT / "tests" / "data" / "chat"
DESTRUCTIVE = {"kill", "rebuild"}


def part_of(item: dict[str, Any]) -> str:
    if item.get("fresh"):
        return "fresh"
    return "held out" if int(hashlib.sha256(item["id"].encode()).hexdigest(), 16) % 10 < 3 else "development"


def load() -> list[dict[str, Any]]:
    path = CHAT / "corpus.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


Steps = list[tuple[str, int | None, int | str | None]]  # (action, -j, lines; for a rebuild "clean" or None)


def steps_of(plan: Plan) -> Steps:
    return _same_work([(s.action, s.jobs, "clean" if s.clean else s.lines) for s in plan.steps])


def expected_steps(item: dict[str, Any]) -> Steps:
    return _same_work([(s["action"], s.get("jobs"), "clean" if s.get("clean") else s.get("lines"))
                       for s in item["expect"]["steps"]])


def _same_work(steps: Steps) -> Steps:
    """Steps that do the same work compare the same:
    - a kill right before a rebuild is the rebuild's own first step (a rebuild stops the running build first):
      "restart it at -j2" read as kill + rebuild or as rebuild does the same;
    - a memory look right before or after a kill is the kill's own report (a kill posts the memory before it and,
      once it has come back, after): "oom-ing, kill it" read as kill, as kill + mem or as mem + kill does the same;
      so is one right before a rebuild, which stops the build first ("show mem, then restart X at 4" read as mem +
      rebuild or as mem + kill + rebuild); a memory look after a rebuild is not ("restart X, and how much swap is
      there?")."""
    return [step for i, step in enumerate(steps)
            if not (step[0] == "kill" and any(a == "rebuild" for a, _, _ in steps[i + 1:]))
            and not (step[0] == "mem" and ("kill" in {a for a, _, _ in steps[max(i - 1, 0):i + 2]}
                                           or (i + 1 < len(steps) and steps[i + 1][0] == "rebuild")))]


def judge(item: dict[str, Any], plan: Plan, config: Config | None = None) -> tuple[bool, bool]:
    """(right, dangerous) for one item's reading. A look (no kill, no rebuild) at a host without naming the
    build is the look at that build when it is the host's only one; a request that names no build, on a host with
    several, asked back which build is meant, is right when the label names none either. Where a refusal is due, a
    kill or a rebuild planned instead is dangerous (another build than the unknown one named, a count not asked
    for)."""
    want = item["expect"]
    refused = plan.error is not None
    if want.get("refuse"):  # a kill or a rebuild planned where rigops must refuse acts on what was not asked
        return refused, not refused and bool({a for a, _, _ in steps_of(plan)} & DESTRUCTIVE)
    got, expected = steps_of(plan), expected_steps(item)
    acts = {a for a, _, _ in got} & DESTRUCTIVE
    wanted_acts = {a for a, _, _ in expected} & DESTRUCTIVE
    if "rebuild" in wanted_acts:
        wanted_acts.add("kill")
    dangerous = bool(acts - wanted_acts) or bool(acts and expected and (
        (want.get("host") and plan.host not in (want["host"], None))
        or (want.get("build") and plan.build not in (want["build"], None))))
    # a request that names no build, on a host with several, is asked "which build?": what the label asks (build null)
    asked_which = plan.question is not None and plan.question.kind == "build" and want.get("build") is None
    right = got == expected and (not refused or asked_which)
    if right and asked_which and want.get("host") is not None:
        right = plan.host == want["host"]
    if right and expected and want.get("host") is not None and plan.question is None:
        only = (config is not None and plan.build is None and plan.host in config.hosts
                and not plan.destructive and tuple(config.hosts[plan.host].builds) == (want.get("build"),))
        right = plan.host == want["host"] and (want.get("build") is None or plan.build == want["build"] or only)
    return right, dangerous and not refused


def accuracy(items: list[dict[str, Any]], *, misses: bool, by_class: str | None = None) -> None:
    config = config_mod.load(CHAT / "rigops.toml")
    right: dict[str, Counter[str]] = {}
    shown: list[str] = []
    for item in items:
        plan = intents.parse(item["text"], config=config, addressed=item["addressed"], channel="C0OPS")
        ok, dangerous = judge(item, plan, config)
        offer = (intents.guess(item["text"], config=config, channel="C0OPS")
                 if item["addressed"] and not plan.steps and plan.error is None else None)
        offered = offer is not None and judge(item, offer, config)[0]
        part = part_of(item)
        for group in ("all", part, f"class {item['class']}" if part == (by_class or "development") else None):
            if group:
                right.setdefault(group, Counter()).update(n=1, right=ok, dangerous=dangerous, offered=offered,
                                                          amiss=offer is not None and not offered)
        if misses and part == "development" and not ok:
            shown.append(f"  {item['id']} [{item['class']}] {item['text'][:110]!r}\n    want "
                         f"{item['expect']}\n    got  host={plan.host} build={plan.build} {steps_of(plan)} "
                         f"error={plan.error!r}" + ("  DANGEROUS" if dangerous else ""))
    print(f"chat corpus: {len(items)} phrasings ({CHAT})")
    print("offered: said to rigops and read as nothing, the labelled plan is offered as 'Did you mean …?' (Run or "
          "Cancel); amiss: another plan is offered. Neither counts as right.")
    print(f"{'':32} {'items':>6} {'right':>7} {'dangerous':>10} {'offered':>8} {'amiss':>6}")
    parts = [p for p in ("all", "development", "held out", "fresh") if p in right]
    for group in [*parts, *sorted(set(right) - set(parts))]:
        c = right[group]
        print(f"{group:32} {c['n']:6} {c['right'] / c['n']:7.0%} {c['dangerous']:10} {c['offered']:8} {c['amiss']:6}")
    if misses:
        print("development misses:" if shown else "development misses: none", *shown, sep="\n")


def speed(items: list[dict[str, Any]]) -> None:
    config = config_mod.load(CHAT / "rigops.toml")
    times = []
    for item in items:
        start = time.perf_counter()
        intents.parse(item["text"], config=config, addressed=item["addressed"], channel="C0OPS")
        times.append((time.perf_counter() - start) * 1000)
    print(f"reading one message: p50 {statistics.median(times):.2f} ms, p99 "
          f"{sorted(times)[int(len(times) * 0.99)]:.2f} ms over {len(times)} messages (target: p50 < 5 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the development part's misses")
    parser.add_argument("--accuracy-only", action="store_true")
    parser.add_argument("--by-class", metavar="PART", choices=("development", "held out", "fresh"),
                        help="the totals by class of this part (default: development); never its items")
    args = parser.parse_args()
    items = load()
    accuracy(items, misses=args.misses, by_class=args.by_class)
    if not args.accuracy_only:
        speed(items)


if __name__ == "__main__":
    main()
