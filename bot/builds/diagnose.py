"""Find the first real error in a build log, and the known fix for it.

``diagnose(text)`` is pure: log text in, :class:`Diagnosis` out. What log lines mean and what to do about
them is data — ``bot/builds/rules/diagnose.toml`` (its format is documented there) plus an optional user rules
file; this module is the generic engine:

1. Pre-filter. A few short triggers ("rror", "not", "Killed", ...) are searched for over the whole text,
   each with one regex that also checks the rules' keywords at every hit (``-Werror`` holds "rror" but
   no keyword such as ``": error:"``), so the tens of thousands of progress and command lines never
   reach Python code. Only the rules with a keyword in a candidate line run their regexes.
2. A candidate line loses its prefixes (timestamps, Docker BuildKit step, ``[build]``, dmesg time), and
   the first rule that matches, in precedence order (user rules, then priority, then file order), is
   the line's rule.
3. The earliest line whose rule is not a follow-on is the answer; a block rule (``CMake Error at ...:``)
   reports the block's message line. Follow-on summaries (pip, ninja, collect2) are only a fallback.
   Lines that only quote code (gcc's ``  129 | ...`` context, a traceback's source line) and the message of a
   ``CMake Warning at ...:`` block are never the answer. Two refinements keep a line that *says* an error
   happened from hiding the line that *is* it:
   a generic rule's line (``RuntimeError: ...``) yields to a more specific rule's line in the few lines
   after it (``defer``), and a rule may name categories whose evidence anywhere in the log is stronger
   than its own (``yields_to``: a compiler "Killed" yields to the kernel's OOM-killer report).
4. Nothing found: ``unknown``, with a fix that says where to look instead (log cut, still building, ...).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.builds.diagnose_rules import CATEGORIES, Rule, Rules, load_rules
from bot.builds.progress import COMMAND_RE

__all__ = ["CATEGORIES", "Diagnosis", "Rule", "Rules", "diagnose", "diagnose_file", "load_rules"]

_BLOCK_LINES = 200        # how far below a block header its message is looked for
_WRAP_WIDTH = 60          # a line this long may be one a console wrapped
_WRAP_MAX = 512           # a longer one is a tool's own (a compiler's command line): no console wraps there
_MESSAGE_ENDS = set(".)]}!?\"';:>`|")   # ... unless it ends like this (a wrapped one ends anywhere)
# A whole line in double quotes that a sentence goes on or ends after ("...". / "...",) is a person quoting an
# error in prose; the log line it quotes is elsewhere.
_QUOTED_IN_PROSE = re.compile(r'"[^"]+"[.,;:!?]+\s*$')
# The end of a line that a wrap cut right after ld's location of a message ("x.c:14: ", "(.text+0x1f): ").
_LD_LOCATION_END = re.compile(r"\S(?::\d+|\(\.\w+(?:\+0x[0-9a-f]+)?\)):\s*$")
_WHOLE_MIN = 40            # a message this long, typed again later with more after it, is that later line
_WINDOW = 1 << 20         # characters pre-filtered at a time, so an early error returns early
# A compiler's command line as a verbose build prints it (`make VERBOSE=1`, `ninja -v`, `pip -v`, nvcc's own): most
# of such a log's bytes, and never an error — the compiler says that on lines of its own. Long ones (as progress
# reads them: bot.builds.progress.COMMAND_RE) are found by their output option and left out of the keyword scan;
# the lines around them are still read whole.
_COMMAND_OUTPUT = " -o "   # every compile and link command names its output
_COMMAND_MIN = 512
_COMMON = " etaoinsr-lcd/._hmup\tf0b1g2x3C=4M5y6k7\"w8v9ADEFIBULSNOTRP'GH,:;()[]"   # in build logs, roughly
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTINUED = re.compile(r'\s+(?:\d+ +)?\||\s+File "|\s+from ')   # source context, traceback, include chain
_QUOTED_SOURCE = re.compile(r"\d+ +\| |\| ")                        # gcc/clang: "  129 | #error ..."
_TRACEBACK_FRAME = re.compile(r'(\s*)File "[^"\n]*", line \d+')       # a deeper next line quotes source
_PROGRESS = re.compile(r"\[\s*(?:(?P<step>\d{1,9})/(?P<total>\d{1,9})|(?P<percent>\d{1,3})%)\]")
_PREFIX = re.compile(r"""(?:              # each eats one separating space: the tool's own indent stays
    \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\ ?     # 2025-06-01T12:00:00.123Z
  | \[\d{4}-\d\d-\d\d[T\ ][^\]\n]{0,40}\]\ ?                                    # [2025-06-01 12:00:00]
  | \[\d\d:\d\d:\d\d(?:[.,]\d+)?\]\ ?                                            # [12:00:00.123]
  | \[\s*\d+\.\d+\]\ ?                                                           # dmesg [12345.678901]
  | [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ [\w.-]+\ [\w./-]+(?:\[\d+\])?:\ ?  # Jun  1 12:00:00 host kernel:
  | [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ (?=\S)                              # Jenkins, Dr. CI: "Dec 14 19:26:14 "
  | \#\d+\ \d+(?:\.\d+)?\ ?                                                       # Docker BuildKit: #12 34.5
  | \d{1,5}\.\d\ (?=\S)                                                          # BuildKit, its step cut: "138.5 "
  | \ {0,3}\d{1,5}:\d\d\.\d\d\ (?=\S)                                               # Mozilla's mach: " 0:05.12 "
  | Step\ \#\d+(?:\ -\ "[^"\n]{0,80}")?:\ ?                                      # Cloud Build: Step #18 - "x":
  | \[[A-Za-z][\w.-]*\]\                                                        # [build]
  | (?:DEBUG|TRACE)\ (?=\S)                                                      # uv -v
  | \|\ (?=\s*\S)                                                               # Yocto/BitBake task: "| "
  | \ {4,}>\ (?=\s*\S)                                                          # nix's last log lines: "       > "
  | >\ (?=\s*\S)                                                                # quoted in Markdown, or nix's: "> "
  | \d{1,3}>(?=\S)                                                              # MSBuild's project: "2>"
  | [\u2502\u250c\u2514\u251c]\ (?=\S)                                            # Julia's log box: "│ "
  | (?:\u274c|\u25b8|\u26a0\ufe0f?|\u2716|\u2717)\ +(?=\S)                            # xcpretty: "❌  ", "▸ "
)+""", re.X)


# A line a logging library marked as a warning or a notice (glog/absl "W0501 12:00:00.1 123 file.cc:12] ", TF's
# "...: W tensorflow/x.cc:12] "): what it says is not the build failing, even when it quotes "ptxas fatal".
_NOT_AN_ERROR = re.compile(r"^(?::\s*)?(?:[WI]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+|[WI]\s+)[\w./+-]+\.\w+:\d+\]\s")
# A CMake feature check's source or header, in the commands above a line of its output (kept in CMakeError.log).
_FEATURE_PROBE = re.compile(r"\bCheck(?:Symbol|Function|Include|Library|Type|Prototype|Struct|Variable|C|CXX|Fortran)"
                            r"\w*\.(?:c|cxx|cpp|cc)\b|Determining if (?:the |files )?\S+ exists? failed"
                            r"|Performing (?:C|CXX|C\+\+) SOURCE FILE Test \S+ failed")
_PROBE_LOOKBACK = 1500    # characters above a line where the probe's own commands are looked for
# The tag a program's log record opens with: "earlyoom[800]: ", "kernel: ", "ld.lld: ".
_RECORD_TAG = re.compile(r"[\w.+-]+(?:\[\d+\])?: ")
# A level tag among the prefixes (Maven's "[WARNING] ", "[INFO] ", a logger's "[warn]"), or a journal record of a
# daemon that is no build ("… sshd[45727]: error: kex_…"): the line is no error.
_PREFIX_NOT_AN_ERROR = re.compile(r"\[(?:WARNING|WARN|INFO|DEBUG|TRACE|NOTICE|warning|warn|info|debug|notice)\]"
                                  r"|\s(?:sshd|sudo|su|cron|CRON|crond|dbus-daemon|dbus-broker|NetworkManager|polkitd"
                                  r"|systemd-logind|systemd-resolved|chronyd|avahi-daemon|gdm-\w+|pulseaudio|snapd"
                                  r"|rsyslogd|auditd?)(?:\[\d+\])?:\s*$")
# The header of a CMake warning block ("CMake Warning at x.txt:12 (find_package):", "CMake Warning (dev) in ...:",
# "CMake Deprecation Warning at ...:", "CMake Warning:"): the more-indented lines below it are a warning's message,
# even when they say "Could not find a package configuration file" the way an error block's message does.
_WARNING_BLOCK = re.compile(r"CMake (?:Deprecation )?Warning(?: \(dev\))?(?: (?:at|in) .*)?:\s*$")
_ANY_WARNING_BLOCK = re.compile(r"CMake (?:Deprecation )?Warning\b")
# Full-width punctuation (Chinese and Japanese compilers' messages) read as ASCII: the same length, so lines and
# offsets stay those of the log as written.
_WIDE = str.maketrans({"\uff1a": ":", "\uff08": "(", "\uff09": ")", "\uff0c": ",", "\uff1b": ";", "\uff3b": "[",
                       "\uff3d": "]", "\uff02": '"', "\uff07": "'", "\u3000": " "})
_WIDE_CHARS = "\uff1a\uff08\uff09\uff0c\uff1b\uff3b\uff3d\uff02\uff07\u3000"


@dataclass(frozen=True)
class Diagnosis:
    category: str
    line: str
    fix: str
    line_number: int | None = None

    def to_json(self) -> dict[str, str]:
        return {"category": self.category, "line": self.line, "fix": self.fix}


def diagnose(text: str, *, rules: Rules | None = None) -> Diagnosis:
    """The first real error in a build log, its category and the known fix."""
    return _Log(text, rules or load_rules()).diagnosis()


def diagnose_file(path: Path, *, rules: Rules | None = None) -> Diagnosis:
    """:func:`diagnose` for a log file, read in one go as bytes; bad UTF-8 never stops it."""
    return diagnose(Path(path).read_bytes().decode("utf-8", errors="replace"), rules=rules)


# --- the scan -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Hit:
    rule: Rule
    match: re.Match[str]
    start: int                # offset of the reported line
    near: re.Match[str] | None = None   # the rule's `near` evidence, whose named groups its fix may use too


class _Log:
    def __init__(self, text: str, rules: Rules) -> None:
        self.raw, self.rules = text, rules
        self.text = _ANSI.sub("", text) if "\x1b" in text else text     # same lines, same count
        if any(char in self.text for char in _WIDE_CHARS):
            self.text = self.text.translate(_WIDE)                        # same characters, same count
        self.warned = " Warning" in self.text and _ANY_WARNING_BLOCK.search(self.text) is not None
        self.probed = "cmTC_" in self.text or "CMakeTmp" in self.text or "CMakeScratch" in self.text

    def diagnosis(self) -> Diagnosis:
        found = self._first_error()
        if found.category != "unknown" and (done := self._succeeded()) is not None:
            # the build went on past what looked like an error (a configure check's, a retried step's)
            return Diagnosis("unknown", "", self.rules.unknown["succeeded_despite"].format(
                last=done, seen=found.line.strip()[:200]))
        return found

    def _succeeded(self) -> str | None:
        """The last line, when the log ends the way a successful build ends (pip's "Successfully installed",
        ninja's [N/N], CMake's "Built target" ...)."""
        tail = [_strip_prefix(line).strip() for line in self.text[-3000:].split("\n")[-12:] if line.strip()]
        if tail and any(done.search(line) for done in self.rules.success for line in tail[-4:]):
            return tail[-1]
        return None

    def _first_error(self) -> Diagnosis:
        follow_ons: list[_Hit] = []
        found: _Hit | None = None      # the first real error, while it waits for stronger evidence
        for start, triggers in self._candidates():
            line = self._line_at(start)[0]
            rules = self._rules_for(line, triggers)
            hit = self._match(line, start, rules) or (self._joined(start, rules) if rules else None)
            if hit is None:
                continue
            if found is not None:
                if hit.rule.category in found.rule.yields_to and not hit.rule.follow_on:
                    return self._diagnosis(hit)
                follow_ons.append(hit)
            elif not hit.rule.follow_on:
                found = self._whole(self._unwrapped(self._sharper(self._in_block(hit) if hit.rule.block else hit)))
                if not found.rule.yields_to:
                    return self._diagnosis(found)
            else:
                follow_ons.append(hit)
        if found is not None:
            stronger = _best(hit for hit in follow_ons if hit.rule.category in found.rule.yields_to)
            return self._diagnosis(stronger or found)
        fallback = _best(follow_ons)
        if fallback is not None and fallback.rule.category != "unknown":
            return self._diagnosis(fallback)
        return Diagnosis("unknown", "", self._where_to_look(fallback))

    def _candidates(self) -> Iterator[tuple[int, list[str]]]:
        """Lines holding a keyword, in order: their start offset and triggers. A window at a time."""
        text, size, begin = self.text, len(self.text), 0
        while begin < size:
            end = text.find("\n", min(begin + _WINDOW, size))
            end = size if end < 0 else end + 1
            scan, starts, origins = self._without_commands(begin, end)
            found: dict[int, list[str]] = {}
            for trigger, finder in self.rules.finders.items():
                for at in _find_all(scan, trigger, finder, 0, len(scan)):
                    piece = bisect_right(starts, at) - 1
                    at = origins[piece] + at - starts[piece]
                    triggers = found.setdefault(text.rfind("\n", begin, at) + 1 or begin, [])
                    if trigger not in triggers:
                        triggers.append(trigger)
            yield from sorted(found.items())
            begin = end

    def _without_commands(self, begin: int, end: int) -> tuple[str, list[int], list[int]]:
        """text[begin:end] less its long compiler command lines, with where each piece of it starts there and
        in the text."""
        text = self.text
        pieces, starts, origins, kept, length = [], [], [], begin, 0
        at = text.find(_COMMAND_OUTPUT, begin, end)
        while at >= 0:                              # one line at a time, in order
            start = text.rfind("\n", begin, at) + 1 or begin
            stop = text.find("\n", at, end)
            stop = end if stop < 0 else stop + 1
            if stop - start >= _COMMAND_MIN and COMMAND_RE.match(_strip_prefix(text[start:stop]).lstrip()):
                if start > kept:
                    pieces.append(text[kept:start])
                    starts.append(length)
                    origins.append(kept)
                    length += start - kept
                kept = stop
            at = text.find(_COMMAND_OUTPUT, stop, end)
        pieces.append(text[kept:end])
        starts.append(length)
        origins.append(kept)
        return "".join(pieces), starts, origins

    def _rules_for(self, line: str, triggers: list[str]) -> list[Rule]:
        """The rules with a keyword in `line` (which holds `triggers`), in precedence order."""
        keywords = self.rules.keywords
        present = {keyword for trigger in triggers for keyword in keywords[trigger] if keyword in line}
        return [self.rules.rules[i] for i in sorted({i for k in present for i in self.rules.rules_of[k]})]

    def _match(self, line: str, start: int, rules: Sequence[Rule]) -> _Hit | None:
        body = _strip_prefix(line).lstrip()
        if (_QUOTED_SOURCE.match(body) or _NOT_AN_ERROR.match(body) or _QUOTED_IN_PROSE.match(body)
                or _PREFIX_NOT_AN_ERROR.search(line[:len(line) - len(body)]) or self._after_traceback_frame(start)
                or (self.probed and self._in_feature_probe(start))):
            return None
        for rule in rules:
            for pattern in rule.patterns:
                match = pattern.search(body)
                if match is None or _in_code_span(body, match):
                    continue
                if rule.near is None:
                    return None if self._in_warning_block(start) else _Hit(rule, match, start)
                if (near := self._near(start, rule.near, rule.within)) is not None:
                    return None if self._in_warning_block(start) else _Hit(rule, match, start, near)
        return None

    def _in_warning_block(self, start: int) -> bool:
        """Is the line at `start` part of a CMake warning's message: below a ``CMake Warning at ...:`` header, in
        the lines indented deeper than it? Its parents (each nearest line above indented less than the last) are
        looked at, up to the first one that is not indented or after as many lines as a block may hold."""
        if not self.warned:
            return False
        indent = _indent(_strip_prefix(self._line_at(start)[0]))
        pos = start
        for _ in range(_BLOCK_LINES):
            if indent == 0 or pos == 0:
                return False
            pos = self.text.rfind("\n", 0, pos - 1) + 1
            body = _strip_prefix(self._line_at(pos)[0])
            if body.strip() and _indent(body) < indent:
                if _WARNING_BLOCK.match(body.lstrip()):
                    return True
                indent = _indent(body)
        return False

    def _in_feature_probe(self, start: int) -> bool:
        """Is the line at `start` the output of one of CMake's feature checks (CheckSymbolExists, CheckIncludeFile,
        CheckCSourceCompiles, … as CMakeError.log or CMakeConfigureLog.yaml keep them), whose failing is an answer —
        "no pthread_create in libc" — and not the build failing? (A failing compiler test, CMakeCUDACompilerId or
        testCCompiler, is no feature check: its error is the cause.)"""
        above = self.text[max(0, start - _PROBE_LOOKBACK):start]
        return _FEATURE_PROBE.search(above) is not None and ("cmTC_" in above or "CMakeTmp" in above
                                                             or "CMakeScratch" in above)

    def _after_traceback_frame(self, start: int) -> bool:
        """Is the line at `start` the source line that a Python traceback quotes, indented deeper than its
        ``File "...", line N`` line? (A frame without source is followed by the next frame or the error.)"""
        if start == 0:
            return False
        previous = self.text.rfind("\n", 0, start - 1) + 1
        frame = _TRACEBACK_FRAME.match(_strip_prefix(self.text[previous:start]))
        return frame is not None and _indent(_strip_prefix(self._line_at(start)[0])) > len(frame[1])

    def _sharper(self, hit: _Hit) -> _Hit:
        """`hit`, or the line of a more specific rule (higher priority, not a follow-on) in the `defer`
        lines below it: ``PTXASError: PTXAS error`` says that something failed, the ptxas line says what."""
        pos = self._line_at(hit.start)[1]
        for _ in range(hit.rule.defer):
            if pos >= len(self.text):
                break
            line, following = self._line_at(pos)
            rules = [rule for rule in self.rules.rules if rule.priority > hit.rule.priority
                     and not rule.follow_on and any(keyword in line for keyword in rule.keywords)]
            better = self._match(line, pos, rules) if rules else None
            if better is not None:
                return self._in_block(better) if better.rule.block else better
            pos = following
        return hit

    def _unwrapped(self, hit: _Hit) -> _Hit:
        """`hit`, or a sharper rule's match on the lines around it joined (see :meth:`_joined`)."""
        if hit.rule.category == "linker_error" and not hit.rule.block:
            return self._after_location(hit)
        if hit.rule.category != "compile_error" or hit.rule.block:
            return hit
        rules = [rule for rule in self.rules.rules if rule.priority > hit.rule.priority]
        return self._joined(hit.start, rules) or hit

    def _whole(self, hit: _Hit) -> _Hit:
        """`hit`, or the same message printed whole further down: a person often types the start of the error
        into an issue's description above the pasted log ("What happened? #error -- unsupported GNU version!"),
        and the log line is the one that goes on where the typed copy stops."""
        body = _strip_prefix(self._line_at(hit.start)[0]).strip()
        if len(body) < _WHOLE_MIN:
            return hit
        at = self.text.find(body, self._line_at(hit.start)[1])
        if at < 0:
            return hit
        begin = self.text.rfind("\n", 0, at) + 1
        line = self._line_at(begin)[0]
        head, rest = line[:at - begin], line[at - begin + len(body):]
        if _strip_prefix(head).strip() or len(rest.strip()) < _WHOLE_MIN // 2:
            return hit
        return self._match(line, begin, [hit.rule]) or hit

    def _after_location(self, hit: _Hit) -> _Hit:
        """ld's "file:line: undefined reference to ..." wrapped after the location (spack's and CI's 80 columns): the
        message starts on the line above, the location, and is reported there."""
        if hit.start == 0:
            return hit
        line = _strip_prefix(self._line_at(hit.start)[0])
        if not line[:1].isspace() or hit.match.start() != 0:
            return hit
        before = self.text.rfind("\n", 0, hit.start - 1) + 1
        previous = self.text[before:hit.start - 1].rstrip("\r")
        if _cut(previous) and _LD_LOCATION_END.search(previous):
            return _Hit(hit.rule, hit.match, before, hit.near)
        return hit

    def _joined(self, start: int, rules: Sequence[Rule]) -> _Hit | None:
        """A match of one of `rules` on the line at `start` joined with the lines around it: a console that
        wraps at a fixed width (MSVC's, a CI's) splits one message over several lines — nvcc's host_config.h
        check then reads as a plain compile error, or as nothing. Reported at the message's first line."""
        line, following = self._line_at(start)
        before = self.text.rfind("\n", 0, max(start - 1, 0)) + 1 if start else start
        previous = self.text[before:max(start - 1, before)].rstrip("\r")
        if not (_cut(line) or _cut(previous)):
            return None
        parts = [_strip_prefix(previous), _strip_prefix(line),
                 _strip_prefix(self._line_at(following)[0]) if following < len(self.text) else ""]
        body = parts[1].lstrip()
        if (_QUOTED_SOURCE.match(body) or _NOT_AN_ERROR.match(body) or _QUOTED_IN_PROSE.match(body)
                or _PREFIX_NOT_AN_ERROR.search(line[:len(line) - len(body)])):
            return None
        # A console cuts at a column, in a word; a tool that wraps its own text (uv, CMake, textwrap) cuts at a
        # space and drops it, and the next line's indent is not the space either.
        pieces = [part.rstrip("\r") for part in parts]
        spaced = [pieces[0], *(piece.lstrip() for piece in pieces[1:])]
        for joined, line_end in (("".join(pieces), len(pieces[0]) + len(pieces[1])),
                                 (" ".join(spaced), len(spaced[0]) + 1 + len(spaced[1]))):
            for rule in rules:
                if rule.follow_on or rule.block or rule.near is not None:
                    continue
                if any(keyword in joined for keyword in rule.keywords):
                    # past the line above; and when it lies in the line below, that line goes on this one's
                    # message rather than starting a record of its own ("earlyoom[1]: ..." twice)
                    match = next((m for p in rule.patterns if (m := p.search(joined)) is not None), None)
                    if (match is not None and len(parts[0]) < match.end()
                            and (match.start() < line_end or not _new_record(parts[1], parts[2]))
                            and not _in_code_span(joined, match)):
                        at = before if _cut(parts[0]) else start
                        return None if self._in_warning_block(at) else _Hit(rule, match, at)
        return None

    def _near(self, start: int, near: re.Pattern[str], within: int) -> re.Match[str] | None:
        """Where `near` matches in the line at `start` or the `within` lines before or after it: the match
        closest above the line's end (ninja prints a step's output below its ``FAILED:`` line), else the
        first below."""
        end = self._line_at(start)[1]
        low, high = start, end
        for _ in range(within):
            low = self.text.rfind("\n", 0, max(low - 1, 0)) + 1
            high = self._line_at(high)[1]
        found = None
        for match in near.finditer(self.text, low, high):
            if found is not None and match.start() >= end:
                break
            found = match
        return found

    def _in_block(self, header: _Hit) -> _Hit:
        """The message of a block: its first more-indented line that a rule knows, else its first line."""
        indent = _indent(_strip_prefix(self._line_at(header.start)[0]))
        pos, first = self._line_at(header.start)[1], None
        for _ in range(_BLOCK_LINES):
            line, following = self._line_at(pos)
            body = _strip_prefix(line)
            if pos >= len(self.text) or (body.strip() and _indent(body) <= indent):
                break
            hit = self._match(line, pos, self.rules.rules) if body.strip() else None
            if hit is not None and not hit.rule.follow_on and not hit.rule.block:
                return hit
            first = pos if first is None and body.strip() else first
            pos = following
        if first is None and pos < len(self.text):
            # pasted flat, the message lost its indent: the line right below, when a sharper rule knows it
            line = self._line_at(pos)[0]
            rules = [rule for rule in self.rules.rules if rule.priority > header.rule.priority
                     and not rule.follow_on and not rule.block and any(k in line for k in rule.keywords)]
            hit = self._match(line, pos, rules) if rules else None
            if hit is not None:
                return hit
        return header if first is None else _Hit(header.rule, header.match, first)

    def _line_at(self, start: int) -> tuple[str, int]:
        """The line starting at `start` without its line end, and where the next line starts."""
        end = self.text.find("\n", start)
        end = len(self.text) if end < 0 else end
        return self.text[start:end].rstrip("\r"), end + 1

    def _diagnosis(self, hit: _Hit) -> Diagnosis:
        number = self.text.count("\n", 0, hit.start) + 1
        line = self._line_at(hit.start)[0] if self.text is self.raw else self.raw.split("\n")[number - 1]
        return Diagnosis(hit.rule.category, line.rstrip("\r"), self._fix(hit), number)

    def _fix(self, hit: _Hit) -> str:
        groups = {**(hit.near.groupdict() if hit.near is not None else {}), **hit.match.groupdict()}
        values = {name: value or "?" for name, value in groups.items()}
        if "module" in values:
            top = values["module"].split(".")[0]
            packages = self.rules.packages
            values["package"] = packages.get(values["module"]) or packages.get(top) or top
        return hit.rule.fix.format_map(values)

    def _where_to_look(self, fallback: _Hit | None) -> str:
        """The fix of a log without an error: what its follow-on lines and its shape tell."""
        texts, said = self.rules.unknown, [self._fix(fallback)] if fallback else []
        head = [_strip_prefix(line) for line in self.text.split("\n", 40)[:40] if line.strip()]
        tail = [_strip_prefix(line).strip() for line in self.text[-3000:].split("\n")[-12:] if line.strip()]
        if not head or not tail:
            return texts["empty"]
        done = fallback is None and any(done.search(line) for done in self.rules.success for line in tail)
        if not done and (_CONTINUED.match(head[0]) or _progress(head[0].lstrip(), started=True)):
            said.append(texts["starts_late"].format(first=head[0].strip()))
        if _progress(tail[-1], started=False):
            said.append(texts["still_building"].format(last=tail[-1]))
        elif done:
            said.append(texts["succeeded"].format(last=tail[-1]))
        elif fallback is None and (warnings := self.text.lower().count("warning")):
            said.append(texts["only_warnings"].format(warnings=warnings))
        return " ".join(said) or texts["no_error"]


def _find_all(text: str, trigger: str, finder: re.Pattern[str], begin: int, end: int) -> Iterator[int]:
    """Where `finder` (the trigger followed or preceded by one of its keywords) matches in text[begin:end].

    Searching for one character is memchr, ~10x faster than a regex or str.find for a short string: when
    the trigger's rarest-looking character is rare in this part of the log too, that character is searched
    for and the finder tried where it is; once it proves common, the finder scans the rest itself."""
    anchor = max(trigger, key=lambda char: _COMMON.find(char) if char in _COMMON else len(_COMMON))
    offset, budget = trigger.index(anchor), (end - begin) >> 11
    common = text.count(anchor, begin, begin + 8192) > 4
    at = begin + offset if common else text.find(anchor, begin + offset, end)
    while at >= 0 and budget > 0 and not common:
        budget -= 1
        if finder.match(text, at - offset, end):
            yield at - offset
        at = text.find(anchor, at + 1, end)
    if at >= 0 and (len(trigger) < 8 or finder.pattern != re.escape(trigger)):   # re beats str.find here
        yield from (hit.start() for hit in finder.finditer(text, at - offset, end))
    elif at >= 0:
        at = text.find(trigger, at - offset, end)
        while at >= 0:
            yield at
            at = text.find(trigger, at + 1, end)


def _cut(line: str) -> bool:
    """Does the line look cut by a console's wrap: long (as a console is wide), and not ending the way a message
    ends?"""
    return _WRAP_WIDTH <= len(line) <= _WRAP_MAX and line.rstrip("\r")[-1:] not in _MESSAGE_ENDS


def _in_code_span(body: str, match: re.Match[str]) -> bool:
    """Is the match inside Markdown backticks within prose, a person quoting an error ("anyone seen `No space left
    on device` here?")? Old make and ld quote `like this' themselves: a span holding a ' is theirs, not Markdown."""
    if "`" not in body:
        return False
    left, right = body.rfind("`", 0, match.start()), body.find("`", match.end())
    if left < 0 or right < 0 or "'" in body[left:right]:
        return False
    return bool(body[:left].strip() or body[right + 1:].strip())  # a whole line in backticks is a pasted log line


def _new_record(line: str, following: str) -> bool:
    """Does `following` open a record of its own, with the tag `line` opens with ("earlyoom[800]: ")?"""
    tag = _RECORD_TAG.match(line.lstrip())
    return tag is not None and following.lstrip().startswith(tag.group(0))


def _strip_prefix(line: str) -> str:
    prefix = _PREFIX.match(line)
    return line[prefix.end():] if prefix else line


def _indent(body: str) -> int:
    return len(body) - len(body.lstrip())


def _progress(body: str, *, started: bool) -> bool:
    """Is `body` a progress line past the first step (started) / short of the last one (not started)?"""
    found = _PROGRESS.match(body)
    if found is None:
        return False
    if found["percent"] is not None:
        return int(found["percent"]) > 0 if started else int(found["percent"]) < 100
    return int(found["step"]) > 1 if started else int(found["step"]) < int(found["total"])


def _rank(hit: _Hit) -> tuple[bool, int]:
    """Which follow-on line is the better fallback: one with a real category, then by priority."""
    return hit.rule.category != "unknown", hit.rule.priority


def _best(hits: Iterable[_Hit]) -> _Hit | None:
    """The best-ranked hit, the earliest of equals."""
    best: _Hit | None = None
    for hit in hits:
        if best is None or _rank(hit) > _rank(best):
            best = hit
    return best
