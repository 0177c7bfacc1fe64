"""Build progress, phase and ETA from a log that arrives a chunk at a time.

Pure: no I/O. The follower calls ``tracker.feed(chunk, now=time)`` as bytes arrive (decoded with
``errors="replace"``, so a chunk may end mid-line) and reads ``tracker.progress()`` / ``tracker.eta(now)``
for the live status card.

How it reads a log:

* Lines end at ``\\n``, ``\\r\\n`` or a bare ``\\r`` (ninja on a smart terminal, progress bars); a trailing partial
  line is buffered. Only the first ``_MAX_LINE`` characters of a line are kept, so memory stays bounded
  and the work done is proportional to the new text: nothing is ever re-scanned.
* Each line loses ANSI escapes and wrapper prefixes (ISO / bracketed / syslog timestamps, Docker BuildKit
  ``#12 34.5``, Kubernetes ``stdout F``, ``[build]``-style tags, uv's ``DEBUG``, dmesg times) and its indent
  (pip, uv and scikit-build-core indent nested output). What is left is matched *at its start* only, so
  numbers in file names, ``[-Wunused]``, ``a[1/2]`` in quoted source or ``[ERROR]`` mean nothing.
* Counters: ninja ``[done/total] description`` (the latest one wins, total included; a smaller ``done``, or
  any counter after ``[0/2] Re-checking globbed directories...`` / ``Re-running CMake...``, starts a new run)
  and CMake/make ``[ 45%] description`` (the maximum within a run, as parallel make can print percentages
  slightly out of order; a drop of more than ``_MAKE_DROP`` points is a new run). Also ``[12/345 41.3s]``
  (``NINJA_STATUS`` with elapsed time). Docker BuildKit step headers (``[4/9] RUN ...``) are not counters.
* A partial line that is already a whole counter (``[12/345]``) counts at once; its phase and text wait for
  the line end, except for ninja's terminal status lines (``\r[12/345] ...ESC[K``), which are whole.
* Phase comes from the most recent signal: the counter line's description (``Building CXX object`` ->
  compiling, ``Linking`` -> linking, ...), CMake configure lines, scikit-build-core ``***`` lines, pip, uv
  and setuptools messages, compiler command lines and terminal failures (see ``_SIGNALS``).
* A CMake configure (``-- The CXX compiler identification``, ``*** Configuring CMake``, ``-- Configuring
  done``, ...) clears the counters: what follows is a new build.
* Where a build's counter started (``tracker.start()``: ``[4/193]``; not ninja's ``[0/2] Re-checking globbed
  directories...``) and what drives it (scikit-build-core's ``***`` lines, setuptools' ``running build_ext``,
  plain CMake): ``from_scratch`` tells a retry that began again from nothing after a run that had got far.
* ETA: the rate of the counter over a sliding window (the last ``_WINDOW`` seconds, stretched back to hold
  at least ``_MIN_SAMPLES`` samples). Between steps the ETA counts down for as long as the usual gap between
  steps; time beyond that is a stall and slows the rate down. Samples are taken
  once per ``feed`` (a chunk full of lines is one sample), and an interval that gained far more than the
  window's typical rate (a burst of cached objects, a stream that was held back) is capped, so one burst
  does not make the rest of the build look fast.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace
from itertools import islice, pairwise
from statistics import median

__all__ = ["BuildStart", "Progress", "ProgressTracker", "from_scratch"]

_MAX_LINE = 2048        # characters of a line that are kept and looked at
_LAST_LINE = 200        # Progress.last_line is at most this long
_WINDOW = 300.0         # seconds of samples the ETA rate is taken over
_MIN_SAMPLES = 4        # ... but never fewer than this many samples, however old
_MIN_SPAN = 5.0         # the samples must span at least this many seconds
_MAX_SAMPLES = 1024     # hard bound on samples kept
_BURST = 3.0            # an interval's progress counts at most this many times the window's typical rate
_MAKE_DROP = 25.0       # a make percentage this far below the maximum starts a new run
_SCRATCH = 10.0         # a build whose first counter is at most this percent started from scratch ...
_SCRATCH_STEPS = 3      # ... or at most this many steps of the same ninja total (a small build's [1/9] is 11%) ...
_FURTHER = 25.0         # ... when the run before it had reached at least this many points further

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
_PREFIX = re.compile(r"""\s*(?:(?:
    \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?     # 2025-06-01T12:00:00.123Z
  | \[\d{4}-\d\d-\d\d[T\ ][^\]\n]{0,40}\]                                 # [2025-06-01 12:00:00]
  | \[\d\d:\d\d:\d\d(?:[.,]\d+)?\]                                        # [12:00:00.123]
  | \[\s*\d+\.\d+\]                                                       # dmesg [12345.678901]
  | [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ \S+\ [\w./@-]+(?:\[\d+\])?:    # Jun  1 12:00:00 host unit[12]:
  | \#\d+\ \d+(?:\.\d+)?(?=\s)                                            # Docker BuildKit: #12 34.5
  | (?:stdout|stderr)\ [FP](?=\s)                                         # Kubernetes CRI: stdout F
  | \[[A-Za-z][\w.-]*\](?=\s)                                             # [build]
  | (?:DEBUG|TRACE|INFO:?)(?=\s)                                          # uv -v, loggers
)\s*)*""", re.X)

_NINJA = re.compile(r"\[(\d{1,9})/(\d{1,9})(?:\ +\d+(?:\.\d+)?s)?\](?:\s+(.*))?$")
_MAKE = re.compile(r"\[\s{0,2}(\d{1,3})%\](?:\s+(.*))?$")
_DOCKER_STEP = re.compile(r"(?:RUN|COPY|ADD|FROM|WORKDIR|ENV|ARG|CMD|ENTRYPOINT|LABEL|USER|EXPOSE|VOLUME|SHELL"
                          r"|ONBUILD|HEALTHCHECK|STOPSIGNAL)\b")

# A compiler, archiver or linker command line: setuptools echoes them, ninja -v uses them as descriptions.
_COMMAND = (r"(?:(?:cd\ \S+|:)\ &&\ )?(?:\S*(?:ccache|sccache|distcc)\s+)?"
            r"(?:\"?[^\s\"]*[/\\])?(?:(?P<cc>nvcc|hipcc|nvc\+\+|icpx|icx|(?:[\w.]+-)*(?:g\+\+|gcc|c\+\+|cc|clang\+\+"
            r"|clang)(?:-\d+(?:\.\d+)*)?)(?:\.exe)?\"?\s+-|(?P<ar>(?:[\w.]+-)*(?:ar|ranlib)\s))")
COMMAND_RE = re.compile(_COMMAND, re.X)  # also bot.builds.diagnose's: a command line is never the error

_DESC = re.compile(r"""(?:
    (?P<compiling>Building\ \w+\ object|Compiling\ |Precompiling)
  | (?P<linking>Linking\ |Creating\ library)
  | (?P<generating>Generating\ |Automatic\ MOC|Automatic\ RCC)
  | (?P<configuring>Re-running\ CMake|Re-checking\ globbed)
  | (?P<installing>Install\ the\ project|Installing\ )
  | (?P<keep>Built\ target|Scanning\ dependencies|Consolidate\ compiler)
)""", re.X)

# Whole-line signals, tried in this order at the start of the cleaned line. The group name is the rule.
_SIGNALS = re.compile(r"""(?:
    (?P<failed>ninja:\ build\ stopped|ninja:\ error:|\*\*\*\ CMake\ (?:build|configuration)\ failed
        |--\ Configuring\ incomplete|g?make:\ \*\*\*\ |error:\ subprocess-exited-with-error
        |ERROR:\ (?:Failed\ (?:building|to\ build)|Could\ not\ (?:build|install))|Failed\ to\ build\s
        |error:\ Failed\ to\ (?:build|install)|×\ .*(?:did\ not\ run\ successfully|Failed\ to\ build)
        |error:\ command\ .*\ failed)
  | (?P<uptodate>ninja:\ no\ work\ to\ do|g?make:\ Nothing\ to\ be\ done\ for\ .all)
  | (?P<configure>--\ The\ \w+\ compiler\ identification|\*\*\*\ Configuring\ CMake|--\ Configuring\ done
        |--\ Generating\ done|Re-running\ CMake)
  | (?P<configured>--\ Build\ files\ have\ been\ written\ to)
  | (?P<cminstall>--\ (?:Install\ configuration|Installing:|Up-to-date:|Set\ runtime\ path
        |Set\ non-toolchain\ portion))
  | (?P<cmweak>--\ \S|loading\ initial\ cache\ file|CMake\ (?:Deprecation\ )?Warning)
  | (?P<skbuild>\*\*\*\ (?:Building\ project\ with|Installing\ project\ into|Making|Created)|Created\ wheel\ for)
  | (?P<builddeps>(?:Running\ command\ )?(?:Installing\ (?:build|backend)\ dependencies
        |pip\ subprocess\ to\ install\ (?:build|backend)\ dependencies))
  | (?P<metadata>(?:Running\ command\ )?(?:Checking\ if\ build\ backend\ supports|Getting\ requirements\ to\ build
        |Preparing\ (?:editable\ )?metadata)|running\ (?:egg_info|dist_info))
  | (?P<editable>(?:Running\ command\ )?Building\ editable\ for)
  | (?P<wheel>(?:Running\ command\ )?Building\ wheels?\ for|Running\ setup\.py\ bdist_wheel
        |running\ bdist_(?:wheel|egg)|Building\ wheel\b|Building\ [\w.-]+\ @\ |Building\ [\w.-]+==)
  | (?P<sdist>Building\ source\ distribution|running\ sdist)
  | (?P<built>Successfully\ built|Built\ [\w.-]+\ @\ |Built\ [\w.-]+==)
  | (?P<installing>Installing\ collected\ packages|Attempting\ uninstall|Found\ existing\ installation
        |Uninstalling\ |Uninstalled\ \d+\ packages?|Running\ setup\.py\ (?:install|develop)
        |running\ (?:install|develop)\b)
  | (?P<installed>Successfully\ installed|Installed\ \d+\ packages?\ in|Audited\ \d+\ packages?)
  | (?P<resolved>Resolved\ \d+\ packages?)
  | (?P<prepared>Prepared\ \d+\ packages?)
  | (?P<resolving>Collecting\ |Obtaining\ |Processing\ (?!triggers))
  | (?P<downloading>Download(?:ing|ed)\ )
  | (?P<compiling>running\ build_ext|building\ '[^']+'\ extension)
  | (?P<copying>copying\ \S|running\ build_py)
  | (?P<command>""" + _COMMAND + r""")
)""", re.X)

_PHASE_OF = {
    "failed": "failed", "uptodate": "up to date", "configure": "configuring", "configured": "configured",
    "cmweak": "configuring", "builddeps": "installing build dependencies", "metadata": "preparing metadata",
    "editable": "building editable", "wheel": "building wheel", "sdist": "building sdist", "built": "built",
    "installing": "installing", "installed": "installed", "resolved": "resolved", "prepared": "prepared",
    "resolving": "resolving", "downloading": "downloading", "compiling": "compiling", "copying": "copying files",
}
_BUILDING = frozenset({"compiling", "linking", "generating", "building"})
_RECHECK = re.compile(r"Re-checking\ globbed|Re-running\ CMake")
_SYSTEMS = ("scikit-build-core", "setuptools", "cmake")  # what drives the build, the first one seen winning
_SETUPTOOLS_RULES = frozenset({"compiling", "metadata", "wheel", "installing", "copying"})  # "running build_ext"
_WHEEL = frozenset({"building wheel", "building editable"})
_TERMINAL = frozenset({"failed", "up to date"})


@dataclass(frozen=True)
class Progress:
    """What the status card shows. ``percent`` is 0..100; ``done``/``total`` only for ninja counters."""

    done: int | None
    total: int | None
    percent: float | None
    phase: str | None
    last_line: str
    compiling: str = ""  # the source file the build last started compiling, shortened ("ggml/src/ggml.c")


@dataclass(frozen=True)
class BuildStart:
    """Where a build's counter started ([4/193]: done 4 of total 193, percent 2.1; make has only a percent),
    and what drives the build, from its log: "scikit-build-core", "setuptools", "cmake" or None."""

    done: int | None
    total: int | None
    percent: float
    system: str | None


@dataclass(slots=True)
class _State:
    kind: str | None = None       # "ninja" or "make" while a counter is active
    done: int | None = None
    total: int | None = None
    pct: float | None = None
    run: int = 0                  # bumped whenever a new build (counter sequence) starts
    phase: str | None = None
    last_line: str = ""
    compiling: str = ""
    wheel: str = "building wheel"  # what pip or uv said it is building: a wheel or an editable
    start_done: int | None = None
    start_total: int | None = None
    start_pct: float | None = None
    system: str | None = None

    def complete(self) -> bool:
        return (self.done is not None and self.done == self.total) or self.pct == 100.0

    def new_run(self) -> None:
        self.kind = None
        self.done = self.total = None
        self.pct = None
        self.start_done = self.start_total = self.start_pct = None
        self.run += 1

    def started(self) -> None:
        """The counter just read is the first of a build: where it started."""
        self.start_done, self.start_total, self.start_pct = self.done, self.total, self.pct

    def built_by(self, system: str) -> None:
        if self.system is None or _SYSTEMS.index(system) < _SYSTEMS.index(self.system):
            self.system = system


def _short(text: str) -> str:
    return text if len(text) <= _LAST_LINE else text[:_LAST_LINE - 1] + "…"


def _command_phase(m: re.Match[str], text: str) -> str:
    """Compiling or linking, from a compiler/archiver command line (possibly cut at ``_MAX_LINE``)."""
    if m.group("ar") or text.startswith(": && "):      # CMake's ninja link rules run ": && link && :"
        return "linking"
    if " -c " in text or text.endswith(" -c"):
        return "compiling"
    if " -shared" in text or "-Wl," in text:
        return "linking"
    return "compiling" if len(text) >= _MAX_LINE - 200 else "linking"   # a long line cut before its "-c"


def _desc_phase(desc: str, current: str | None) -> str | None:
    m = _DESC.match(desc)
    if m is not None:
        name = m.lastgroup
        if name != "keep":
            return name
    else:
        c = COMMAND_RE.match(desc)
        if c is not None:
            return _command_phase(c, desc)
    return current if current in _BUILDING else "building"


def _apply(st: _State, raw: str, *, partial: bool = False) -> None:
    """Update ``st`` from one line. A ``partial`` line (no line end yet) only counts if it is a counter line;
    its phase and text only once it is a whole terminal status (ninja ends those with an erase, ESC [K)."""
    describe = not partial or raw.endswith("\x1b[K")
    line = raw[:_MAX_LINE]
    if "\x1b" in line:
        line = _ANSI.sub("", line).replace("\x1b", "")
    prefix = _PREFIX.match(line)
    start = prefix.end() if prefix else 0
    is_counter = line.startswith("[", start)
    if partial and not is_counter:
        return
    body = line[start:].rstrip()
    if not body:
        return
    if is_counter and describe:
        st.compiling = source_of(body) or ""  # "[9/10] Linking …": nothing compiles any more
    elif not partial and (source := source_of(body)):
        st.compiling = source
    if is_counter:
        m = _NINJA.match(body)
        if m is not None:
            done, total, desc = int(m[1]), int(m[2]), m[3] or ""
            if total == 0 or done > total or _DOCKER_STEP.match(desc):
                return
            first = st.kind != "ninja" or st.done is None or done < st.done or st.phase == "configuring"
            if first:
                # after "[0/2] Re-checking globbed directories..." ninja restarts on the real build.ninja
                st.new_run()
                st.kind = "ninja"
            st.done, st.total, st.pct = done, total, 100.0 * done / total
            if first and not _RECHECK.match(desc):  # "[0/2] Re-checking globbed directories...": not the build
                st.started()
            if describe:
                st.phase = _desc_phase(desc, st.phase)
                st.last_line = _short(body)
            return
        m = _MAKE.match(body)
        if m is not None:
            pct = float(m[1])
            if pct > 100:
                return
            if st.kind != "make" or st.pct is None or pct < st.pct - _MAKE_DROP:
                st.new_run()
                st.kind = "make"
                st.pct = pct
                st.started()
            else:
                st.pct = max(st.pct, pct)
            if describe:
                st.phase = _desc_phase(m[2] or "", st.phase)
                st.last_line = _short(body)
            return
    if partial:
        return
    s = _SIGNALS.match(body)
    if s is None:
        return
    rule = s.lastgroup
    phase = st.phase
    if body.startswith("*** "):
        st.built_by("scikit-build-core")
    elif rule in _SETUPTOOLS_RULES and body.startswith(("running ", "building '", "Running setup.py")):
        st.built_by("setuptools")
    elif rule in ("configure", "configured"):
        st.built_by("cmake")
    if rule in ("configure", "configured"):
        st.new_run()
        phase = _PHASE_OF[rule]
    elif rule == "cminstall":
        phase = phase if phase in _WHEEL else "installing"
    elif rule in ("cmweak", "command") and st.kind is not None and not st.complete():
        return              # a script's "-- " message or a verbose command line mid-build: counters say more
    elif rule == "cmweak":
        phase = "configuring"
    elif rule == "command":
        phase = _command_phase(s, body)
    elif rule == "skbuild":
        if body.startswith("*** Building"):
            phase = "building"
        elif body.startswith("*** Making editable"):
            phase = st.wheel = "building editable"
        else:
            phase = st.wheel
    elif rule in ("metadata", "editable", "wheel", "builddeps") and body.endswith("finished with status 'error'"):
        phase = "failed"
    else:
        phase = _PHASE_OF.get(rule or "", phase)
        if rule in ("editable", "wheel"):
            st.wheel = phase or st.wheel
    st.phase = phase
    st.last_line = _short(body)


_SOURCE_EXT = r"(?:c|cc|cpp|cxx|c\+\+|cu|cuh|m|mm|f|f90|F90|s|S|asm|sx|cl|hip|mlir|swift)"
_OBJECT = re.compile(r"\bBuilding (?:C|CXX|CUDA|HIP|Fortran|ASM[\w-]*|OBJC|OBJCXX|Swift|ISPC) object "
                     rf"(\S+?\.{_SOURCE_EXT})\.(?:o|obj)\b")
_DASH_C = re.compile(rf"(?:^|\s)-c\s+[\"']?([^\s\"']+\.{_SOURCE_EXT})[\"']?(?=\s|$)")
_CMAKE_TARGET_DIR = re.compile(r"^(?:.*/)?CMakeFiles/[^/]+\.dir/")
SOURCE_PARTS = 3  # path components of a source file the card keeps


def from_scratch(start: BuildStart, before: Progress) -> bool:
    """Whether a build that started at ``start`` started over from nothing, where the run before it had reached
    ``before``: it began near 0 of the same total (ninja: its first few steps) or near 0% (make), the other far
    on. A build that kept its build directory starts where the last run stopped, or counts only what is left."""
    near_start = start.percent <= _SCRATCH or (start.done is not None and start.done <= _SCRATCH_STEPS)
    if before.percent is None or not near_start or start.total != before.total:
        return False
    return before.percent - start.percent >= _FURTHER


def resumed(start: BuildStart, before: Progress) -> int | None:
    """How many steps a build that started at ``start`` found already built, where the run before it counted
    ``before.total``: ninja in a kept build directory counts only what is left, from [1/left]; None when it did
    not resume (it counted everything again, or there is nothing to compare)."""
    if start.total is None or not before.total or start.done is None or start.done > _SCRATCH_STEPS:
        return None
    return before.total - start.total if start.total < before.total else None


def source_of(line: str) -> str | None:
    """The source file a log line starts compiling — from CMake's "Building CXX object …", or a compiler's
    ``-c FILE`` — shortened to its last few path components; None for any other line."""
    if "Building " in line and (m := _OBJECT.search(line)):
        path = _CMAKE_TARGET_DIR.sub("", m[1])
    elif " -c " in line and (m := _DASH_C.search(line)):
        path = m[1]
    else:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return "/".join(parts[-SOURCE_PARTS:]) or None


class ProgressTracker:
    """Feed it a build log incrementally; ask it for :class:`Progress` and an ETA at any time."""

    def __init__(self) -> None:
        self._state = _State()
        self._partial = ""              # the trailing partial line, at most _MAX_LINE characters
        self._cr_pending = False        # the last chunk ended in "\r": a "\n" starting the next is the same break
        self._lines = 0
        self._samples: deque[tuple[float, float]] = deque(maxlen=_MAX_SAMPLES)   # (time, done or percent)
        self._sample_run = -1

    @property
    def lines_seen(self) -> int:
        """Complete lines read so far (``\\r`` and ``\\r\\n`` count as one line end each)."""
        return self._lines

    def feed(self, chunk: str, *, now: float) -> None:
        """Read the next piece of the log, which arrived at time ``now`` (seconds, any monotonic clock)."""
        if chunk and self._cr_pending:
            self._cr_pending = False
            if chunk[0] == "\n":
                chunk = chunk[1:]
        if chunk:
            self._cr_pending = chunk[-1] == "\r"
            if "\r" in chunk:
                chunk = chunk.replace("\r\n", "\n").replace("\r", "\n")
            if "\n" in chunk:
                lines = chunk.split("\n")
                tail = lines.pop()
                if self._partial:
                    lines[0] = self._partial + lines[0][:_MAX_LINE]
                st = self._state
                for line in lines:
                    _apply(st, line)
                self._lines += len(lines)
                self._partial = tail[:_MAX_LINE]
            elif len(self._partial) < _MAX_LINE:
                self._partial += chunk[:_MAX_LINE - len(self._partial)]
        self._sample(now)

    def progress(self) -> Progress:
        st = self._current()
        return Progress(done=st.done, total=st.total, percent=st.pct, phase=st.phase, last_line=st.last_line,
                        compiling=st.compiling)

    def start(self) -> BuildStart | None:
        """Where the current build's counter started; None before its first counter."""
        st = self._current()
        if st.start_pct is None:
            return None
        return BuildStart(done=st.start_done, total=st.start_total, percent=st.start_pct, system=st.system)

    def eta(self, now: float) -> float | None:
        """Seconds until the counter reaches its total, or None: no counter, too little signal, done or failed."""
        st = self._current()
        if st.kind is None or st.phase in _TERMINAL or st.run != self._sample_run:
            return None
        done, total = (float(st.done or 0), float(st.total or 0)) if st.kind == "ninja" else (st.pct or 0.0, 100.0)
        samples = self._samples
        if done >= total or len(samples) < 2:
            return None
        t1, d1 = samples[-1]
        now = max(now, t1)
        start, limit = 0, len(samples) - _MIN_SAMPLES
        while start < limit and samples[start + 1][0] <= now - _WINDOW:
            start += 1
        t0, d0 = samples[start]
        if t1 - t0 < _MIN_SPAN or d1 <= d0:
            return None
        window = list(islice(samples, start, None))
        steps = [(d_b - d_a, t_b - t_a) for (t_a, d_a), (t_b, d_b) in pairwise(window)]
        typical_rate = median(dd / dt for dd, dt in steps)
        typical_step = median(dd for dd, _ in steps)
        typical_gap = median(dt for _, dt in steps)
        # A burst (many steps at once: cached objects, a buffered stream) counts as at most _BURST times the
        # typical rate over its interval, or one typical step; everything else is the plain average.
        gained = sum(min(dd, max(_BURST * typical_rate * dt, typical_step)) for dd, dt in steps)
        # Time since the last step counts as a stall only beyond the usual gap between steps; within it,
        # the work goes on unseen and the ETA counts down.
        since = now - t1
        busy = (t1 - t0) + max(0.0, since - typical_gap)
        return max(0.0, (total - done) * busy / gained - min(since, typical_gap))

    def _current(self) -> _State:
        """The state of the complete lines, updated by the partial line if that is already a counter line
        (ninja on a terminal ends each status with the ``\\r`` of the next one)."""
        if not self._partial:
            return self._state
        st = replace(self._state)
        _apply(st, self._partial, partial=True)
        return st

    def _sample(self, now: float) -> None:
        st = self._current()
        samples = self._samples
        if st.run != self._sample_run:
            samples.clear()
            self._sample_run = st.run
        value = float(st.done) if st.kind == "ninja" and st.done is not None else st.pct
        if value is None or (samples and samples[-1][1] == value):
            return
        if samples and samples[-1][0] >= now:
            samples[-1] = (samples[-1][0], value)     # a burst at one instant is one sample
        else:
            samples.append((now, value))
        while len(samples) > _MIN_SAMPLES and samples[1][0] <= now - _WINDOW:
            samples.popleft()


@dataclass(frozen=True)
class CacheStats:
    """What a compiler cache did for one run: of ``compiles`` it was asked to cache, ``hits`` came from it."""

    hits: int
    compiles: int


def cache_stats(text: str) -> CacheStats | None:
    """ccache's stats log of one run (``CCACHE_STATSLOG``: a ``# <source>`` line per call, then its counters):
    how many compiles were answered from the cache. Calls it could not cache (a link, a preprocessor-only
    call) count for neither; None when the log holds no compile."""
    hits = misses = 0
    for call in text.split("\n# "):
        counters = set(call.split())
        if counters & {"direct_cache_hit", "preprocessed_cache_hit"}:
            hits += 1
        elif "cache_miss" in counters:
            misses += 1
    return CacheStats(hits, hits + misses) if hits + misses else None
