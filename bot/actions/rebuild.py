"""Start the configured build, detached, at a given parallelism; stop a still-running one first."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from bot.actions import ActionContext
from bot.actions.kill import Stopped, kill_build, kill_summary, live_runs
from bot.actions.registry import ActionSpec, Reading
from bot.config import BuildConfig
from bot.hosts.models import KeptDir, Snapshot, Spawned
from bot.language.commands import Command
from bot.language.plan import Step
from bot.memory.advisor import Advice, advise_build, first_advice, looks_like_cuda, nvcc_threads, shares_of
from bot.store import BuildRun
from bot.util.errors import ActionFailed, HostError, HostKeyError, HostUnreachable, PlanError

DEFAULT_LOG_DIR = "~/.local/state/rigops/logs"
FAR_ABOVE = 2  # configured jobs above this many times a first run's estimate get a warning


# What a build's environment holds that never changes what its objects are: parallelism, where caches and logs go.
NOT_SETUP = frozenset(("MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "MAKEFLAGS", "NVCC_THREADS", "NINJA_STATUS",
                       "CCACHE_DIR", "CCACHE_STATSLOG", "SCCACHE_DIR"))


@dataclass(frozen=True)
class RebuildResult:
    run: BuildRun
    command: str
    jobs: int
    stopped_first: Stopped | None
    warnings: tuple[str, ...] = ()
    advice: Advice | None = None  # the advisor's -j, when the request named none (runs 0: a first run's estimate)


def build_env(build: BuildConfig, jobs: int, *, log: str | None = None, run_id: int = 0) -> dict[str, str]:
    """The build's configured environment plus the parallelism every common build tool reads, and, unless the
    build opts out (``resume = "never"``) or names its own, a build directory scikit-build-core keeps between
    runs (it builds in a new temporary one each time otherwise, and a restart after an OOM starts from
    nothing): other build tools ignore the variable. With ``cache``, the compiler cache in front of CMake's C,
    C++ and CUDA compilers (read when CMake configures a build directory for the first time); ccache also
    writes what each compile found (hit or miss) beside the run's ``log``, for the result to count."""
    env = {**build.env, "MAX_JOBS": str(jobs), "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs), "MAKEFLAGS": f"-j{jobs}"}
    if build.kept_dir is not None:  # one per wheel tag: scikit-build-core fills in {wheel_tag}
        env["SKBUILD_BUILD_DIR"] = f"{build.kept_dir}/{{wheel_tag}}"
    if build.cache != "none":
        for lang in ("C", "CXX", "CUDA"):
            env.setdefault(f"CMAKE_{lang}_COMPILER_LAUNCHER", build.cache)
        if build.cache == "ccache" and log is not None:
            env.setdefault("CCACHE_STATSLOG", cache_log(build, log, run_id))
    return env


def cache_log(build: BuildConfig, log: str, run_id: int) -> str:
    """Where ccache writes each compile's outcome for run ``run_id`` logging to ``log``: beside it, absolute (the
    agent resolves a leading ``~/``), as every compile reads it from its own directory; ccache appends to it, so
    it is the run's own."""
    path = f"{log}.run{run_id}.ccache"
    if path.startswith(("/", "~/")):
        return path
    return f"{build.workdir.rstrip('/')}/{path}"


def setup_of(build: BuildConfig) -> dict[str, str]:
    """What the objects in a kept build directory depend on, by name, as digests (the env may hold secrets, and
    the agent records this on the host): the command (``{jobs}`` left in, so that another -j is the same setup),
    each variable of the env but those that only say how fast or where caches go, and the compiler cache (CMake
    reads its launcher only when it first configures a build directory)."""
    def digest(value: str) -> str:
        return hashlib.sha256(value.encode()).hexdigest()[:16]

    setup = {"command": digest(build.command), "cache": build.cache}
    setup.update({k: digest(v) for k, v in sorted(build.env.items()) if k not in NOT_SETUP})
    return setup


def kept_dir(build: BuildConfig, *, clean: bool) -> KeptDir | None:
    """The build directory rigops keeps for ``build``, as the agent is told of it at a spawn; None when it keeps
    none (``resume = "never"``, or the build names its own)."""
    if build.kept_dir is None:
        return None
    return KeptDir(dir=build.kept_dir, setup=setup_of(build), clean=clean,
                   setup_file=f"{(build.log_dir or DEFAULT_LOG_DIR).rstrip('/')}/{build.name}.setup.json")


def build_command(build: BuildConfig, jobs: int) -> str:
    """The configured command with ``{jobs}`` replaced; no chat text ever gets here."""
    return build.command.replace("{jobs}", str(int(jobs)))


def log_path(build: BuildConfig, *, now: float) -> str:
    """``<log_dir>/<build>-YYYYmmdd-HHMMSS-mmm.log``: to the millisecond, so that a run started in the second
    another one ended (a Retry right after a fast failure, the guard's restart) does not write over its log."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"
    return f"{(build.log_dir or DEFAULT_LOG_DIR).rstrip('/')}/{build.name}-{stamp}.log"


async def rebuild(ctx: ActionContext, *, jobs: int | None, clean: bool = False) -> RebuildResult:
    """Restart the target build at ``jobs`` (``clean``: with the build directory rigops keeps for it removed
    first; it is also removed when the build's command or env changed since the run that built it); without
    a -j, at the advisor's -j once past runs gave it data,
    else the configured jobs (with a warning when far more than a first estimate lets fit), else as many as a
    conservative first estimate lets fit in memory (never more than the host's cores). Memory is the tightest of
    the host's, the limit builds run under there and the limit the build's last run ran under.

    Raises PlanError when the target has no build, HostError when the host fails.
    """
    target = ctx.target
    build = target.build
    if build is None:
        raise PlanError(f"no build to start on {target.config.name}: name one from the config")
    info = await target.host.info()
    mine, others = live_runs(ctx)
    snap = await target.host.snapshot(user=target.build_user, top=0,
                                      roots=[r.proc_id for r in (*mine, *others) if r.pid > 0])
    advice, warnings = _advice(ctx, build, cores=info.cores, snap=snap, others=others) if jobs is None else (None, [])
    jobs = jobs or (advice.jobs if advice else None) or build.jobs or info.cores
    if jobs > info.cores:
        warnings.append(f"-j{jobs} is more than the {info.cores} cores of {target.config.name}")
    stopped = await _stop_if_running(ctx, mine, snap)
    now = time.time()
    log = log_path(build, now=now)
    command = build_command(build, jobs)
    ctx.store.audit("spawn", user=ctx.requester.user, channel=ctx.requester.channel,
                    thread_id=ctx.requester.thread_id, host=target.config.name, build=build.name,
                    detail={"jobs": jobs, "command": command, "log": log, **({"clean": True} if clean else {})})
    # The row goes in first: a bot killed during the spawn finds it on restart and adopts the build.
    begun = ctx.store.begin_run(host=target.config.name, build=build.name, jobs=jobs, log=log,
                                exit_file=f"{log}.exit", boot_id=info.boot_id, started_by=ctx.requester.user,
                                channel=ctx.requester.channel, thread_id=ctx.requester.thread_id)
    try:
        spawned = await target.host.spawn(workdir=build.workdir, command=command,
                                          env=build_env(build, jobs, log=log, run_id=begun.id), log_path=log,
                                          exit_file=begun.exit_file, keep=kept_dir(build, clean=clean))
    except HostError as exc:
        if _nothing_started(exc):
            ctx.store.forget_run(begun.id)
            raise
        # the answer was lost, or the agent failed midway: the build may be running all the same
        found = await _started_anyway(ctx, begun)
        if found is None:
            raise HostError(f"{exc.reason}; the build may have started: rigops will look for it again when it "
                            "restarts, and `status` shows what runs", host=exc.host) from exc
        spawned = found
        warnings.append("the host was slow to answer the start, but the build is running")
    run = ctx.store.started_run(begun.id, pid=spawned.pid, start=spawned.start,
                                supervisor_pid=spawned.supervisor_pid, log=spawned.log, exit_file=spawned.exit_file)
    return RebuildResult(run=run, command=command, jobs=jobs, stopped_first=stopped, warnings=tuple(warnings),
                         advice=advice)


def _advice(ctx: ActionContext, build: BuildConfig, *, cores: int, snap: Snapshot,
            others: list[BuildRun]) -> tuple[Advice | None, list[str]]:
    """The -j for a rebuild that named none: from the build's past runs, else (with no configured jobs) a first
    run's estimate; a warning when the configured jobs are far above that estimate. Raises StateError."""
    host = ctx.target.config.name
    threads = nvcc_threads(build.command, build.env, cores=cores)
    reserve, shares = ctx.target.config.memory_reserve, shares_of(ctx.store, host, others, snap.tools)
    advice = advise_build(ctx.store, host, build.name, mem_total=snap.memory.total, cores=cores, reserve=reserve,
                          nvcc_threads=threads, others=shares, limit=snap.limit)
    if advice is not None:
        return advice, []
    cuda = looks_like_cuda(build.command, build.env, names=(build.name, build.workdir), nvcc_threads=threads)
    first = first_advice(cuda=cuda, mem_total=snap.memory.total, cores=cores, reserve=reserve, nvcc_threads=threads,
                         others=shares, limit=snap.limit)
    if first is None or build.jobs is None:
        return first, []
    if build.jobs > FAR_ABOVE * max(1, first.usable_bytes // first.per_job_bytes):  # what fits, cores aside
        return None, [f"-j{build.jobs} from the config may not fit in memory: {first.reasoning}"]
    return None, []


def _nothing_started(exc: HostError) -> bool:
    """The host was never asked, or its agent refused the spawn. An agent that failed unexpectedly
    ("internal") may have started the build before it did."""
    if isinstance(exc, ActionFailed):
        return exc.code != "internal"
    return isinstance(exc, HostUnreachable | HostKeyError)


async def _started_anyway(ctx: ActionContext, run: BuildRun) -> Spawned | None:
    """The build a lost spawn answer started, from its start record; forgets the run when it started nothing."""
    assert ctx.target.build is not None
    try:
        found = await ctx.target.host.started(workdir=ctx.target.build.workdir, log_path=run.log,
                                              exit_file=run.exit_file)
    except HostError:
        return None  # still unreachable: the row stays "starting" for the next start of rigops to settle
    if found is None:
        ctx.store.forget_run(run.id)
    return found


async def _stop_if_running(ctx: ActionContext, mine: list[BuildRun], snap: Snapshot) -> Stopped | None:
    """Two builds in one tree fight over it: stop what still runs there first — the build's own runs, or
    build tools of the build user that belong to no build rigops knows (a build started by hand). Other
    builds' tools are theirs: they never make this build stop anything."""
    if not mine and all(p.root is not None for p in snap.tools):
        return None
    return await kill_build(ctx)


async def _run(ctx: ActionContext, step: Step) -> RebuildResult:
    return await rebuild(ctx, jobs=step.jobs, clean=step.clean)


def _describe(step: Step, build: str) -> str:
    line = f"start {build} at -j{step.jobs}" if step.jobs else f"start {build} at its default -j"
    return line + (", clean: the build directory rigops keeps for it is removed first" if step.clean else "")


def rebuild_summary(result: RebuildResult) -> str:
    run = result.run
    text = f"started `{run.build}` at -j{result.jobs} (pid {run.pid}); log `{run.log}`"
    if result.advice is not None:  # from past runs' memory, or a first run's estimate (which says so itself)
        lead = "-j from memory of past runs: " if result.advice.runs else ""
        text += f"\n:bulb: {lead}{result.advice.reasoning}"
    if result.stopped_first is not None and result.stopped_first.result.targets:
        text = f"first {kill_summary(result.stopped_first)}; then {text}"
    elif result.stopped_first is not None and result.stopped_first.still_running:
        running = ", ".join(f"`{b}`" for b in result.stopped_first.still_running)
        text += f"; {running} still running, untouched"
    return text + "".join(f"\n:warning: {w}" for w in result.warnings)


SPEC = ActionSpec(
    Command("rebuild", ("retry", "restart"), "[host] [build] [-jN] [--clean]",
            "start the build again, first stopping it if it runs (other builds go on); `--clean` removes the "
            "build directory rigops keeps for it first", role="operator", destructive=True, hosts="one",
            build_default=True, rank=20, params=("jobs", "clean"), hint="rebuild [-jN]", describe=_describe),
    run=_run, reads=lambda result: Reading(summary=rebuild_summary(result)))
