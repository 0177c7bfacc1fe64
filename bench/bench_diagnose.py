"""How right and how fast `diagnose` is: accuracy on the corpus of real logs, speed on big logs.

Accuracy: every real build-failure log in tests/data/logs (the entries of expected.toml with a `source`)
is diagnosed; the category and the exact line are compared with the expected ones, for the whole corpus,
the part kept out of sight while the rules were written (`held_out = true`; `fresh = true` for the batch
collected after they were written) and the rest, per category and per build system. The logs without a
visible error (expected `unknown`: successful builds with scary lines, wrapper-only excerpts) give the
false-alarm count. `--misses` lists what is still wrong.

Speed: generates realistic 200,000-line sgl-kernel build logs (ninja progress lines, verbose nvcc command lines
with -Werror, nvcc and gcc warnings that mention "error", error_handling.cu file names, scikit-build-core
and pip wrapper output), with the real error near the end or near the start, and with every line behind
a Docker BuildKit prefix. Times `diagnose` over several repetitions and compares it with a baseline
measured in the same run: reading the same text from disk and splitting it into lines.

    .venv/bin/python bench/bench_diagnose.py [--lines N] [--repeat N] [--misses] [--accuracy-only]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.builds.diagnose import Rules, diagnose, diagnose_file, load_rules

LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs"

ERROR_LINE = '/root/sglang/sgl-kernel/csrc/moe/moe_align_kernel.cu(211): error: identifier "tok" is undefined'
KERNELS = ["gemm/fp8_blockwise_gemm_kernel", "gemm/per_token_group_quant_8bit", "moe/moe_align_kernel",
           "attention/cutlass_mla_kernel", "allreduce/custom_all_reduce", "common/error_handling",
           "elementwise/fused_add_rms_norm_kernel", "speculative/eagle_utils", "gemm/nvfp4_scaled_mm_kernels"]
NVCC = ("/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFLASHINFER_ENABLE_BF16 -DNDEBUG "
        "-I/root/sglang/sgl-kernel/include -I/root/sglang/sgl-kernel/build/_deps/repo-cutlass-src/include "
        "-O3 -Xcompiler=-fPIC -Xcompiler=-Werror=format -Xcompiler=-Wno-error=deprecated-declarations "
        "--expt-relaxed-constexpr -gencode=arch=compute_100a,code=sm_100a -std=c++17 -MD -MT {obj} "
        "-c {src} -o {obj}")
HEAD = """Obtaining file:///root/sglang/sgl-kernel
  Checking if build backend supports build_editable: started
  Running command Building editable for sgl-kernel (pyproject.toml)
  *** scikit-build-core 0.11.1 using CMake 3.31.6 (editable)
  *** Configuring CMake...
  -- The CXX compiler identification is GNU 12.2.0
  -- The CUDA compiler identification is NVIDIA 12.8.93
  -- Could NOT find NUMA (missing: NUMA_LIBRARY)
  -- Configuring done (12.4s)
  *** Building project with Ninja...""".splitlines()


def build_log(lines: int, error_at: float, *, verbose: bool = False, prefix: bool = False,
              seed: int = 7) -> str:
    """A realistic ninja + nvcc build log of `lines` lines whose real error is at `error_at` (0..1):
    progress lines, warnings, and with `verbose` every nvcc command line; `prefix`: Docker BuildKit."""
    rng = random.Random(seed)
    out, total = list(HEAD), lines // (3 if verbose else 2)
    step, failed = 0, False
    while len(out) < lines:
        step += 1
        name = f"{rng.choice(KERNELS)}_{step}"
        obj = f"CMakeFiles/common_ops_sm100_build.dir/csrc/{name}.cu.o"
        out.append(f"  [{step}/{total}] Building CUDA object {obj}")
        if verbose:
            out.append("  " + NVCC.format(obj=obj, src=f"/root/sglang/sgl-kernel/csrc/{name}.cu"))
        if step % 4 == 0:
            out += [f"  /root/sglang/sgl-kernel/csrc/{name}.cu(57): warning #177-D: variable \"error_code\" "
                    "was declared but never referenced",
                    "        int error_code = 0;", "            ^", "",
                    "  Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"", ""]
        if step % 9 == 0:
            out.append("  /root/sglang/sgl-kernel/include/utils.h:88:3: warning: 'error: unchecked' [-Wcpp]")
        if len(out) >= lines * error_at and not failed:
            failed = True
            out += ["  FAILED: [code=1] " + obj, "  " + ERROR_LINE, "",
                    f"  1 error detected in the compilation of \"/root/sglang/sgl-kernel/csrc/{name}.cu\"."]
    out += ["  ninja: build stopped: subcommand failed.", "  *** CMake build failed",
            "  error: subprocess-exited-with-error", "  ERROR: Failed building editable for sgl-kernel"]
    out = out[:lines - 4] + out[-4:]
    if prefix:
        out = [f"#14 {100 + i / 1000:.1f} {line}" for i, line in enumerate(out)]
    return "\n".join(out) + "\n"


def read_lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").splitlines()


def naive_scan(text: str, rules: Rules) -> int | None:
    """The obvious way, for comparison: every rule's every regex on every line, first hit wins."""
    patterns = [pattern for rule in rules.rules if not rule.follow_on for pattern in rule.patterns]
    for number, line in enumerate(text.splitlines(), 1):
        if any(pattern.search(line) for pattern in patterns):
            return number
    return None


def best_ms(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return min(times), statistics.median(times)


def corpus_accuracy(rules: Rules, *, misses: bool) -> None:
    """Category and line accuracy on the real logs: all, held out, the rest; by category and build."""
    expected = tomllib.loads((LOGS / "expected.toml").read_text(encoding="utf-8"))
    corpus = {name: entry for name, entry in expected.items() if "source" in entry}
    right: dict[str, Counter[str]] = {}
    wrong: list[str] = []
    false_alarms = quiet = 0
    for name, entry in sorted(corpus.items()):
        found = diagnose_file(LOGS / f"{name}.log", rules=rules)
        category, line = found.category == entry["category"], found.line == entry["line"]
        part = "fresh" if entry.get("fresh") else "held out" if entry["held_out"] else "rest"
        for group in ("all", part, f"category {entry['category']}", f"build {entry['build']}"):
            right.setdefault(group, Counter()).update(n=1, category=category, line=line)
        if entry["category"] == "unknown":
            quiet += 1
            false_alarms += found.category != "unknown"
        if not (category and line):
            wrong.append(f"  {name} ({part}): expected "
                         f"{entry['category']} {entry['line'][:100]!r}\n    got {found.category} "
                         f"{found.line[:100]!r}")
    print(f"corpus: {len(corpus)} real build-failure logs from public issue trackers ({LOGS})")
    print(f"{'':28} {'logs':>5} {'category':>9} {'line':>6}")
    parts = [part for part in ("all", "held out", "fresh", "rest") if part in right]
    for group in [*parts, *sorted(set(right) - set(parts))]:
        counts = right[group]
        print(f"{group:28} {counts['n']:5} {counts['category'] / counts['n']:9.0%} "
              f"{counts['line'] / counts['n']:6.0%}")
    print(f"false alarms on logs without a visible error: {false_alarms} of {quiet}")
    if misses:
        print("misses:" if wrong else "misses: none", *wrong, sep="\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--misses", action="store_true", help="list the corpus logs diagnosed wrong")
    parser.add_argument("--accuracy-only", action="store_true", help="skip the speed measurements")
    args = parser.parse_args()
    rules = load_rules()
    corpus_accuracy(rules, misses=args.misses)
    if args.accuracy_only:
        return
    print()
    print(f"{args.lines} lines; baseline = read the file + decode + splitlines; best of {args.repeat} runs")
    sample = build_log(args.lines // 10, 0.98)
    naive, _ = best_ms(partial(naive_scan, sample, rules), 1)
    print(f"naive regex-per-line scan (every rule on every line): ~{naive * 10:.0f} ms for {args.lines} "
          f"lines (measured on {args.lines // 10} lines, x10)")
    print(f"{'log':38} {'MB':>5} {'baseline ms':>12} {'diagnose ms':>12} {'ratio':>6}  found")
    with tempfile.TemporaryDirectory() as tmp:
        for label, error_at, verbose, prefix in [
                ("error near the end", 0.98, False, False), ("error near the start", 0.02, False, False),
                ("verbose (-v), error near the end", 0.98, True, False),
                ("verbose, docker prefix, error at end", 0.98, True, True)]:
            text = build_log(args.lines, error_at, verbose=verbose, prefix=prefix)
            path = Path(tmp, "build.log")
            path.write_text(text, encoding="utf-8")
            found = diagnose(text, rules=rules)
            assert found.category == "compile_error" and found.line.endswith(ERROR_LINE), found
            base, _ = best_ms(partial(read_lines, path), args.repeat)
            best, median = best_ms(partial(diagnose, text, rules=rules), args.repeat)
            print(f"{label:38} {len(text) / 1e6:5.1f} {base:12.1f} {best:12.1f} {best / base:6.2f}  "
                  f"line {found.line_number} (median {median:.1f} ms)")


if __name__ == "__main__":
    main()
