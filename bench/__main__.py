"""`make bench`: run every benchmark in one go and write the figures to docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import time

from bench.common import ROOT, machine

BENCHES = ("bench.bench_probe", "bench.bench_seed", "bench.bench_slack", "bench.bench_diagnose", "bench.bench_chat",
           "bench.bench_tail", "bench.bench_watch",
           "bench.bench_fleet", "bench.bench_agent", "bench.bench_digest", "bench.bench_replicas", "bench.bench_resume")


def main() -> int:
    sections = []
    for name in BENCHES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        print(f"== {name}", flush=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            module.main()
        print(out.getvalue(), end="", flush=True)
        doc = (module.__doc__ or "").strip().splitlines()[0]
        sections.append(f"## {name.removeprefix('bench.')}\n{doc}\n\n```\n{out.getvalue().rstrip()}\n```\n")
    report = ROOT / "docs" / "benchmarks.md"
    report.parent.mkdir(exist_ok=True)
    report.write_text(f"# Benchmarks\n\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
                      f"{machine()}, with `make bench`.\n\n" + "\n".join(sections))
    print(f"written to {report.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
