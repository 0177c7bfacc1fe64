"""rigops host agent: a stdlib-only Python 3 (>= 3.8) package, run on build hosts, which have no ``bot``.

The bot starts it once per host, over one SSH channel as ``python3 -u -c '<bootstrap>'`` or locally as a
subprocess, and keeps it running. The bootstrap (``bot.hosts.base.agent_bootstrap``) carries this package's
modules, compressed, as ``rigops_agent`` (an importer of its own serves them from memory, as ansible's
AnsiballZ ships modules), and calls ``rigops_agent.server.main(supervisor)`` with the build supervisor's source
(``supervisor.py``), which spawn writes to a file on the host and runs. The modules import nothing from
``bot``, nothing outside the standard library and each other only relatively; the bootstrap must stay well
under 128 KiB (one command-line argument). The bot imports ``protocol`` alone (the tool names, error types).

Modules: ``protocol`` (what bot and agent agree on), ``procs`` (/proc), ``args`` (request arguments),
``trees`` (process trees), ``cgroups``, ``looks``, ``kill``, ``spawn`` and ``sample`` (the ops), ``server``
(the protocol loop), ``supervisor`` (run by spawn, one per build).

Protocol: JSON lines. Request ``{"id": <int>, "op": <str>, ...args}``; response
``{"id": <same>, "ok": true, "result": {...}}`` or
``{"id": <same>, "ok": false, "error": {"type": <code>, "message": <text>}}``; id null when the line was not a
JSON object. Requests run concurrently (a thread each; ``ping`` is answered inline), so responses may come
out of order. Only protocol lines go to stdout (fd 1 is pointed at stderr at startup); diagnostics go to
stderr, which the reader must drain. Blank lines are ignored. EOF on stdin: finish the requests in flight,
then exit 0; spawned builds keep running. Times are seconds (floats), sizes bytes (ints). A process's
identity is (pid, start), start being field 22 of /proc/<pid>/stat (clock ticks after boot): meaningful
only together with boot_id.

Error types: ERROR_CODES (bot/util/errors.py says what each means); every error answer has one.

hello -> agent_version (1), pid, python "3.x.y", psutil (importable), pidfd (race-free signals), hostname,
    cores, boot_id, uid, user, clock_ticks, page_size, free_used ("available": free's "used" is
    MemTotal-MemAvailable, procps-ng >= 4 or no free; "classic": MemTotal-MemFree-Buffers-Cached-SReclaimable),
    procps_version (str|null), build_tool_names.
ping -> time.
snapshot {top=5, user=null, names=BUILD_TOOL_NAMES, roots=[]} -> time, meminfo (every /proc/meminfo key; kB
    values in bytes, HugePages_* counts as they are), loadavg [1, 5, 15], cores,
    top: the `top` largest processes by RSS [{pid, ppid, name, user, rss, start}],
    tools: every live process whose tool name is in names (owned by user, if given)
    [{pid, ppid, name, user, rss, start, cmd (argv joined, <= 200 chars), root ([pid, start] of the root in
    roots whose tree holds it; absent when none does)}], oom_kill (/proc/vmstat's counter, null where the
    kernel has none), boot_id, limit (the memory limit a build started from the agent runs under: its cgroup's
    or an ancestor's, in bytes | null).
    Kernel threads are never listed.
kill {roots=[[pid, start]...], names=[] (NB: no default list), fallback_names=[], spare=[[pid, start]...],
      user=null (= the agent's user), grace=3, timeout=30, settle=5} (roots or names required) ->
    targets [{pid, start, name, user, rss, signal "TERM"|"KILL"|null, via "tree"|"cgroup"|"name"}],
    counts {name: n} (signalled targets), termed (ended after SIGTERM), killed (needed SIGKILL),
    survivors [target...] (alive at the timeout), denied [target...] (EPERM),
    skipped [{pid, start, name, user, reason "protected"|"other_user"|"spared", via, spared_by [pid, start]
    (reason "spared": the spared root whose tree holds it)}], stale_roots [[pid, start]...] (no such process:
    refused), tree (a root was alive), by_name (processes were matched by name), cgroups [path...] (the
    build's own memory cgroups, whose processes were targets), spare_alive [[pid, start]...] (the spared roots
    alive at the end), elapsed, stop_elapsed, meminfo_before, meminfo_after.
    Targets: every process of each root's tree; every process of a memory cgroup that a tree process moved
    into (its parent is in another one: the build's own cgroup; never the root cgroup, the agent's or one
    above it); every process named in names, and in fallback_names when no root is alive (a build whose tree
    is gone or was never known); all owned by user. Never the agent, its parent chain, pid 1, kernel threads,
    nor any process whose ancestry reaches a spare root by identity (other builds running there). Collected,
    frozen (SIGSTOP) and re-scanned for late children, then SIGTERM + SIGCONT each; SIGKILL after grace;
    every signal identity-checked (pidfd where available). A zombie counts as gone. Then MemAvailable is
    polled every 50 ms until two readings differ by < 0.5% of MemTotal or settle seconds pass (skipped when
    nothing was signalled).
spawn {workdir, command (run by /bin/sh -c), env {k: v} (added), log, exit_file (relative paths: under
      workdir), keep? {dir, setup, setup_file, clean} (the build directory kept between runs: removed first when
      asked to or when the build's setup changed, the log then opening with why)}
    -> pid (the shell: the root to kill), start, supervisor_pid, log, exit_file (absolute),
    started. The build runs detached: a supervisor (session leader; supervisor.py) runs the command
    in its own process group, stdin /dev/null, stdout+stderr appended to the log (truncated first; an old exit
    file is removed), and writes exit_file atomically: {exit_status: int|null, signal: int|null, ended, pid};
    on start it writes <exit_file>.start: {pid, start, supervisor_pid}, for a caller that died before the
    answer.
status {runs: [{pid, start, exit_file?, log?}]} -> runs [{pid, start, alive, exit (exit file JSON|null),
    log_size (int|null)}], boot_id.
tail {path, lines=40, max_bytes=1 MiB} -> lines [str], size, truncated (max_bytes reached before `lines`
    lines were found: the first line may be partial), bytes_read. Reads backwards from the end.
gpu {timeout=10} -> {available: true, gpus_csv, apps_csv} (nvidia-smi's CSV, unparsed) or
    {available: false, reason}.
disk {paths: [str...] (at most DISK_PATHS)} -> places [{path (as asked), at (the path measured: the nearest
    existing one, for a directory not made yet), exists (at is the path itself), mount (the mount point holding
    it), device, total, used, free
    (bytes: statvfs's f_blocks, f_blocks - f_bfree, f_bavail, as df counts them)} | {path, error}].
pause / resume {targets: [[pid, start]...], user=null (= the agent's user)} -> SIGSTOP / SIGCONT each target
    (not its children), owned by user: signalled, skipped (each with reason "protected"|"other_user"), denied
    (EPERM), all [{pid, ppid, name, user, rss, start}]; stale [[pid, start]...]. Same identity rules as kill.
sample {roots=[] ([pid, start] of the build's trees), spare=[] (roots of other builds' trees), user=null (the
    build user), cgroup=true} -> time, mem_total, mem_available, swap_total, swap_free, psi
    ({some,full}_{avg10,avg60,total} from /proc/pressure/memory) | null, classes {driver|compiler|linker:
    {count, rss, max_rss}} over the processes in the trees or owned by user (the user's outside the trees: those a
    full /proc scan at most FULL_SCAN_EVERY=10 s old found, as they are now), never those in a spare root's
    tree (drivers: ninja make gmake cmake; linkers: ld ld.gold ld.lld collect2;
    compilers: COMPILER_NAMES), top_compilers (`top`=5 by RSS) [{pid, ppid, name, user, rss, start, job (pid
    of the compile job's driver: its outermost compiler ancestor, through shells; itself when none)}],
    ended [{pid, start, name, peak_rss}] (compilers gone since this build's last sample: the highest RSS seen),
    oom_kill (/proc/vmstat; null before Linux 4.13), cgroup {version 1|2, path, current, working_set (current
    less the unmapped file cache), peak|null, limit|null (its own or an ancestor's, the tightest), oom (v2)|null,
    oom_kill|null, exclusive (every process in it is in the trees)} | null (no live root, cgroup=false or
    unreadable): the root's memory cgroup, or the heaviest compiler's where that one leaves less room,
    kernel [{victim_pid, victim_name, user, cgroup (task_memcg), oom_cgroup,
    in_tree (victim was in the trees at this or the last sample), spared_by ([pid, start] of the spare root
    whose tree held the victim then, else null), line}] (OOM kills logged since this build's last sample; []
    on its first) | null (neither /dev/kmsg nor dmesg readable), tree (process count), stale_roots, others
    [{root, tools, compilers, rss}] (the build tools in each spare root's tree, where it has any), scan_age
    (seconds since that full scan began; 0 when this sample made it: a build's first sample always does).
    Per-build state is kept for the last 32 (roots, user) pairs.
"""
